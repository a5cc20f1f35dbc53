"""The knee sweep's bookkeeping (no simulation): the CSV layouts users' scripts read, the slice it
builds per format and the models of its columns, worked by hand."""

import csv
import dataclasses
import io
from fractions import Fraction

import pytest

from tb.slice import knee

#: The committed layouts (``reports/knee.csv``, ``reports/knee_mx.csv``), spelled out here.
HEADERS = {
    "plain": "width,feed_bytes_per_cycle,measured_macs_per_cycle,model_macs_per_cycle,acc,unit,"
             "revision,date",
    "block": "fmt,width,units,feed_bytes_per_cycle,rate_over_knee,knee_feed,slice_knee_feed,"
             "measured_macs_per_cycle,model_macs_per_cycle,model_without_scales,acc,unit,revision,"
             "date",
}
TEXT = {"fmt", "acc", "unit", "revision", "date"}


def _measured(row: dict, kind: str) -> dict:
    """A committed row as :func:`knee.measure` returns it: numbers typed, and every column of the
    other layout present too (the writer must leave those out)."""
    out = {k: v if k in TEXT else int(v) if k in ("width", "units") else float(v)
           for k, v in row.items()}
    out.setdefault("fmt", knee.PLAIN_FMT)
    other = HEADERS["block" if kind == "plain" else "plain"].split(",")
    out.update({k: "not-this-layout" for k in other if k not in out})
    return out


@pytest.mark.quick
@pytest.mark.parametrize("kind", ["plain", "block"])
def test_writer_reproduces_the_committed_csv(kind):
    """Rows as measured, given in reverse order and carrying the other layout's columns, come out as
    the committed file byte for byte (header, column order, number formatting, CRLF, row order); so
    do those rows when half of them are kept as read back from the file."""
    sw = knee.SWEEPS[kind]
    committed = sw.csv.read_bytes().decode()
    assert committed.split("\r\n", 1)[0] == HEADERS[kind]
    read = list(csv.DictReader(io.StringIO(committed, newline="")))
    assert len(read) >= 4
    rows = [_measured(r, kind) for r in read]
    assert knee.csv_text(knee.ordered(rows[::-1]), sw.columns) == committed
    mixed = read[::2] + rows[1::2]
    assert knee.csv_text(knee.ordered(mixed[::-1]), sw.columns) == committed


@pytest.mark.quick
def test_formats_pick_their_sweep():
    assert knee.sweep_of("fp8_e4m3").csv.name == "knee.csv"
    assert knee.sweep_of("mxfp8_e4m3").csv.name == "knee_mx.csv"
    assert knee.sweep_of("mxfp4_e2m1").csv.name == "knee_mx.csv"
    with pytest.raises(ValueError, match="fmt column in reports/knee.csv"):
        knee.sweep_of("fp8_e5m2")


@pytest.mark.quick
@pytest.mark.parametrize("fmt, width, units, feed, spad, acc, stages", [
    ("fp8_e4m3", 32, 1, 64, 16384, "exact", 2),     # 2 * D bytes: one byte per element
    ("fp8_e4m3", 128, 1, 256, 32768, "exact", 3),   # scratchpad 4 * D * 64 bytes from D = 64 up
    ("mxfp8_e4m3", 32, 2, 132, 16384, "exact", 4),  # 2 * 2 * 32 * (8 + 8/32) / 8; MX: the window
    ("mxfp4_e2m1", 32, 2, 68, 16384, "exact", 4),   # 2 * 2 * 32 * (4 + 8/32) / 8
    ("nvfp4", 32, 2, 72, 16384, "exact", 4),        # 2 * 2 * 32 * (4 + 8/16) / 8
    ("nvfp4", 64, 2, 144, 16384, "exact", 4),       # the recommended unit's stages in each mode
])
def test_slice_beats_are_twice_the_knee(fmt, width, units, feed, spad, acc, stages):
    assert knee.slice_params(fmt, width, units) == {
        "units": units, "width": width, "fmt": fmt, "feed_bytes": feed, "spad_bytes": spad,
        "acc": acc, "stages": stages}


@pytest.mark.quick
@pytest.mark.parametrize("fmt, bits, block", [("mxfp8_e4m3", 8, 32), ("mxfp4_e2m1", 4, 32),
                                               ("nvfp4", 4, 16)])
def test_block_model_counts_scales_not_scale_cycles(fmt, bits, block):
    """Two block-scaled units of D = 32: starved, MACs = feed / bytes per MAC with one scale byte
    per B elements; fed, a tile holds the slice for its 32 element rows (the scale rows ride
    beside them), so the two units' peak of 64 MACs per cycle."""
    per_mac = Fraction(bits, 8) + Fraction(1, block)
    knee_feed = 64 * per_mac
    assert knee.model_macs(float(knee_feed * Fraction(9, 10)), 32, 2, fmt) == pytest.approx(57.6)
    assert knee.model_macs(float(Fraction(11, 10) * knee_feed), 32, 2, fmt) == pytest.approx(64)


@pytest.mark.quick
def test_cli_writes_only_the_sweep_of_its_formats(tmp_path, monkeypatch):
    """``--fmts mxfp8_e4m3`` replaces that format's D = 32 rows of the block CSV, keeps the other
    rows (other formats, other widths) and leaves the plain CSV alone; ``measure`` is replaced by
    fixed rows (no simulation)."""
    committed = knee.SWEEPS["block"].csv.read_bytes()
    plain = tmp_path / "knee.csv"
    plain.write_bytes(b"untouched")
    monkeypatch.setitem(knee.SWEEPS, "block", dataclasses.replace(knee.SWEEPS["block"],
                                                                  csv=tmp_path / "knee_mx.csv"))
    monkeypatch.setitem(knee.SWEEPS, "plain", dataclasses.replace(knee.SWEEPS["plain"], csv=plain))
    (tmp_path / "knee_mx.csv").write_bytes(committed)
    read = list(csv.DictReader(io.StringIO(committed.decode(), newline="")))
    calls = []

    def fake_measure(fmt, width, rates, **kw):
        calls.append((fmt, width, tuple(rates)))
        return [_measured(r, "block") for r in read if (r["fmt"], int(r["width"])) == (fmt, width)]
    monkeypatch.setattr(knee, "measure", fake_measure)
    assert knee.main(["--fmts", "mxfp8_e4m3"]) == 0
    assert calls == [("mxfp8_e4m3", 32, (0.9, 1.1))]
    assert (tmp_path / "knee_mx.csv").read_bytes() == committed
    assert plain.read_bytes() == b"untouched"
