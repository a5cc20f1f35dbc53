"""The clocked loop every cocotb testbench runs on, with its one clock-edge rule.

The rule
--------
* The clock is cocotb's C++ clock (``impl="gpi"``): no Python wake-up per edge unless a test
  awaits one.
* **Every input of the design is written at a falling edge**, with ``Immediate`` writes: half a
  period before the rising edge that samples it, so no write can race a clock edge (writes in a
  rising edge's own callback can reach that edge's flops with Verilator) and no ReadWrite phase is
  scheduled for them.
* **What a rising edge transfers is decided before it**: after the writes of the falling edge, in
  the ReadOnly phase of the same time step, every combinational path has settled to the values the
  edge samples (``ready`` may depend on the same cycle's ``valid``/``payload``). Parts whose inputs
  to that decision are registered outputs (a sink reading a registered ``valid``/``payload``; a
  record of the transfers the design keeps itself, such as the matrix unit's beat counters or the
  BF16 sim top's monitor word) may skip the ReadOnly phase: the loop then costs one trigger per
  cycle instead of two (``settle=False``).
* At the next falling edge the loop first *books* the edge that just passed (``step``), then
  drives the next cycle.

Per cycle, :meth:`Clocked.run` does::

    await FallingEdge(clk)
    stop = step()                 # book the rising edge that just passed; True ends the run
    for p in drive: p.drive()     # write the inputs for the next rising edge
    if stop: return
    if settle: await ReadOnly()   # combinational paths settled for the next rising edge
    for p in sample: p.sample()   # decide what that edge transfers
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cocotb.clock import Clock
from cocotb.handle import Immediate
from cocotb.triggers import FallingEdge, ReadOnly

__all__ = ["Clocked", "write"]


def write(handle, value: int) -> None:
    """Write ``value`` to a design input now (``Immediate``); only at a falling edge (the rule)."""
    handle.set(Immediate(int(value)))


class Clocked:
    """The clock, the reset and the per-cycle loop of one testbench.

    Parameters
    ----------
    dut : cocotb handle
    period_ns : int or float
        Clock period.
    clk, rst : str
        Clock and synchronous active-high reset port names.

    Attributes
    ----------
    cycles : int
        Rising edges booked by :meth:`run` so far (over all runs).
    """

    def __init__(self, dut, period_ns: float = 10, clk: str = "clk", rst: str = "rst"):
        self.dut = dut
        self.period_ns = period_ns
        self.clk = getattr(dut, clk)
        self.rst = getattr(dut, rst)
        self._clock = None
        self._falling = FallingEdge(self.clk)
        self._settled = ReadOnly()
        self.cycles = 0

    async def reset(self, cycles: int = 3, idle: Sequence = ()) -> None:
        """Hold reset for ``cycles`` rising edges with ``idle`` inputs at 0; start the clock first.

        Returns at a falling edge with reset released: the next rising edge is the first one out of
        reset, and registered outputs still show their reset values.
        """
        write(self.rst, 1)
        for h in idle:
            write(h, 0)
        if self._clock is None:
            self._clock = Clock(self.clk, self.period_ns, unit="ns", impl="gpi")
            self._clock.start()
        for _ in range(cycles):
            await self._falling
        write(self.rst, 0)

    async def run(self, step: Callable[[], bool], drive: Sequence = (), sample: Sequence = (),
                  settle: bool = True) -> int:
        """Run the loop of the module docstring until ``step`` returns True.

        Parameters
        ----------
        step : callable returning bool
            Called at every falling edge first: books the rising edge that just passed (nothing
            has passed yet on the first call); True stops the run after this cycle's ``drive``.
        drive : sequence of objects with ``drive()``
            Write the inputs for the next rising edge, in order.
        sample : sequence of objects with ``sample()``
            Decide what the next rising edge transfers (in the ReadOnly phase if ``settle``).
        settle : bool
            Wait for the ReadOnly phase before sampling (two triggers per cycle); False only when
            every sampled value is registered (see the rule).

        Returns
        -------
        int
            Rising edges booked by this run (``step`` calls after the first).

        Must be called at a falling edge or after one in the same time step (after :meth:`reset`
        or another ``run``); it returns at a falling edge, inputs driven. The rising edge between
        that call and the first ``step`` is not booked (inputs as the caller left them).
        """
        falling, settled = self._falling, self._settled
        drives = [p.drive for p in drive]          # bound once: this loop runs every cycle
        samples = [p.sample for p in sample]
        n = -1
        while True:
            await falling
            n += 1
            stop = step()
            for f in drives:
                f()
            if stop:
                self.cycles += n
                return n
            if settle:
                await settled
            for f in samples:
                f()
