"""Place and route on the OSU 0.18 um cells: qflow (graywolf, qrouter, magic, netgen) and OpenSTA.

:mod:`~flows.pnr.netlist` (the mapped netlist with tool-safe names), :mod:`~flows.pnr.qflow`
(placement, routing, DRC, LVS), :mod:`~flows.pnr.parasitics` (qrouter's RC trees as SPEF),
:mod:`~flows.pnr.layout` (die, core, utilization, wirelength, vias from the DEF),
:mod:`~flows.pnr.opensta` (post-route timing), :mod:`~flows.pnr.sta_netlist` and
:mod:`~flows.pnr.crosscheck` (OpenSTA on the pre-route netlist, flat or by blocks: the signoff
cross-check of our STA; black-box macros through :mod:`~flows.pnr.macro_lib`),
:mod:`~flows.pnr.tools` (the Debian packages) and
:mod:`~flows.pnr.flow` (one run, ``make pnr``). Layer: above :mod:`flows.synth`, below the reports.
"""
