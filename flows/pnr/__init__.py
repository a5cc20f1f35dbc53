"""Place and route on the OSU 0.18 um cells: qflow (graywolf, qrouter, magic, netgen) and OpenSTA.

:mod:`~flows.pnr.netlist` (the mapped netlist with tool-safe names), :mod:`~flows.pnr.qflow`
(placement, routing, DRC, LVS), :mod:`~flows.pnr.parasitics` (qrouter's RC trees as SPEF),
:mod:`~flows.pnr.layout` (die, core, utilization, wirelength, vias from the DEF),
:mod:`~flows.pnr.opensta` (post-route timing), :mod:`~flows.pnr.sta_netlist` and
:mod:`~flows.pnr.crosscheck` (OpenSTA on the pre-route netlist, flat or by blocks: the signoff
cross-check of our STA; black-box macros through :mod:`~flows.pnr.macro_lib`),
:mod:`~flows.pnr.tools` (the Debian packages),
:mod:`~flows.pnr.flow` (one run, ``make pnr``) and :mod:`~flows.pnr.hierflow` (``make pnr HIER=1``:
a block hardened once into a macro, :mod:`~flows.pnr.abstract` for its pins and LEF abstract,
:mod:`~flows.pnr.charlib` for its timing model, :mod:`~flows.pnr.top` for the top's floorplan
and check, :mod:`~flows.pnr.place` for its placement, :mod:`~flows.pnr.extract` for the top's
parasitics, :mod:`~flows.pnr.defdb` reading DEF and LEF geometry). Layer: above
:mod:`flows.synth`, below the reports.
"""
