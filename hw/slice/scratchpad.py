"""The slice's scratchpad: two synchronous read ports and one write port, behavioral or a macro.

Behavioral (simulation): an :class:`amaranth.lib.memory.Memory`. Macro (synthesis): an empty
placeholder module ``spad_sram_{words}x{bits}_2r1w`` (:class:`ScratchpadParams`) that the slice
places with
:func:`hw.hier.place`, so the hierarchical flow synthesizes the slice with the SRAM as a black box
(its own area is ~0) and the SRAM's area comes from :func:`sram_area_um2` instead.

SRAM area model (documented in ``docs/slice.md``): ``600 lambda^2`` per bit, the rule of thumb for
an SRAM bit cell quoted with the CACTI models in D. J. Greaves, *System-on-Chip Design and
Modelling*, University of Cambridge lecture notes ("45nm SRAM Memory Area and Power Consumption"),
with lambda taken as the feature size as in that slide: at 0.18 um that is 19.4 um^2 per bit. A
real 0.18 um 6T cell is ~4-5 um^2, so the figure is read as cell plus periphery; it is an estimate,
not a macro's datasheet value. Two read ports and one write port are charged 2x a single-port
array: a rough multi-port factor of our own, not from the source.
"""

from dataclasses import dataclass
from typing import ClassVar

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..hier import BlockParams

__all__ = ["Scratchpad", "ScratchpadParams", "sram_area_um2", "SRAM_UM2_PER_BIT_180NM",
           "SRAM_MODEL_NOTE"]

#: 600 lambda^2 per bit with lambda = 0.18 um (see the module docstring for the source).
SRAM_UM2_PER_BIT_180NM = 600 * 0.18 ** 2
#: Area factor for two read ports and one write port against a single-port array.
PORT_FACTOR_2R1W = 2.0
#: One line naming the model and its source, copied into the QoR metrics next to the number.
SRAM_MODEL_NOTE = ("modelled, not synthesized: 600 lambda^2 per bit (SRAM bit-cell rule of thumb "
                   "with the CACTI models, D. J. Greaves, System-on-Chip Design and Modelling, Univ. "
                   "of Cambridge lecture notes, slide '45nm SRAM Memory Area and Power Consumption', "
                   "lambda = feature size) at 0.18 um = 19.44 um^2/bit, x 2.0 for 2 read + 1 write "
                   "ports (our rough factor); an estimate, not a macro datasheet; no SRAM timing")


@dataclass(frozen=True)
class ScratchpadParams(BlockParams):
    """Everything that changes a :class:`Scratchpad` (and its module name): the black-box macro
    is ``spad_sram_{words}x{bits}_2r1w``, a behavioral one has ``_mem`` appended."""

    MODULE: ClassVar[str] = "spad_sram_{words}x{bits}_2r1w{macro}"
    TAGS: ClassVar[dict] = {"macro": lambda v: "" if v else "_mem"}
    words: int
    bits: int
    macro: bool = True


def sram_area_um2(words: int, bits: int, *, per_bit: float = SRAM_UM2_PER_BIT_180NM,
                  port_factor: float = PORT_FACTOR_2R1W) -> float:
    """Modelled area of a ``words x bits`` 2R1W SRAM in um^2 (0.18 um by default)."""
    return words * bits * per_bit * port_factor


class Scratchpad(wiring.Component):
    """``words`` words of ``bits`` bits; read ports ``r0``, ``r1`` (data one cycle after an enabled
    address, held while ``en`` is low) and write port ``w``.

    Parameters
    ----------
    words, bits : int
    macro : bool
        Emit an empty placeholder instead of the memory (for synthesis with a black-box SRAM).
    """

    def __init__(self, words: int, bits: int, *, macro: bool = False):
        self.words, self.bits, self.macro = words, bits, macro
        self.params = ScratchpadParams(words, bits, bool(macro))
        aw = max(1, (words - 1).bit_length())
        super().__init__({
            "r0_addr": In(aw), "r0_en": In(1), "r0_data": Out(bits),
            "r1_addr": In(aw), "r1_en": In(1), "r1_data": Out(bits),
            "w_addr": In(aw), "w_en": In(1), "w_data": In(bits),
        })

    #: Read data appears the cycle after an enabled address.
    latency = 1

    def elaborate(self, platform):
        m = Module()
        if self.macro:
            return m   # black box: outputs undriven (0); the parent keeps every input
        m.submodules.mem = mem = Memory(shape=self.bits, depth=self.words, init=[])
        wr = mem.write_port()
        m.d.comb += [wr.addr.eq(self.w_addr), wr.data.eq(self.w_data), wr.en.eq(self.w_en)]
        for i in range(2):
            rd = mem.read_port()
            m.d.comb += [rd.addr.eq(getattr(self, f"r{i}_addr")), rd.en.eq(getattr(self, f"r{i}_en")),
                         getattr(self, f"r{i}_data").eq(rd.data)]
        return m
