"""The metric names of ``metrics.json``, in ORFS METRICS2.1 style (``stage__object__metric__qualifier``).

Every module that writes or reads a metric (the flow, the gate, the reports, the tests) imports its
name from here, so a rename happens in one place. Areas are in the liberty's area unit (um^2 for
real libraries, gate equivalents for the generic one), delays in ps.
"""

__all__ = ["AREA", "GE", "CELLS", "SEQ", "CP_PS", "CP_LV", "CP_KIND", "DEPTH", "FMAX", "YOSYS_TIME",
           "RUNTIME", "MEMORY", "CACHE_HIT", "BLOCK_AREA", "block_area", "MACRO_AREA", "AREA_WITH_MACROS",
           "MACROS", "CP_PS_TOP_OWN", "CP_LV_TOP_OWN", "SETUP_WS", "SETUP_STATUS", "MACS",
           "AREA_PER_MAC", "PEAK_GMACS", "NETLIST_SHA", "PNR_TARGET_UTIL", "DIE_AREA", "CORE_AREA",
           "UTIL", "DIE_WIDTH", "DIE_HEIGHT", "X_PIN_LOADS", "ROUTE_UNROUTED",
           "ROUTE_WL", "ROUTE_VIAS", "ROUTE_FAILED", "ROUTE_FAILED_STAGE1", "ROUTE_NETS",
           "ROUTE_SPEF_NETS",
           "ROUTE_WIRE_CAP", "DRC_ERRORS", "LVS_MATCH", "LVS_ERRORS", "ROUTE_WS", "ROUTE_CP_PS",
           "ROUTE_FMAX", "ROUTE_CP_PS_NOWIRE", "PNR_RUNTIME", "CP_PS_OPENSTA", "CP_DIFF_OPENSTA",
           "OPENSTA_TIME", "OPENSTA_VERSION", "OPENSTA_MACROS", "OPENSTA_SKIPPED", "CLOCK_GATES",
           "CLOCK_GATE_AREA"]

#: Standard-cell area of the whole design.
AREA = "synth__design__instance__area__stdcell"
#: The same area in NAND2 gate equivalents.
GE = "synth__design__instance__area__ge"
#: Number of standard cells.
CELLS = "synth__design__instance__count__stdcell"
#: Area of the sequential cells (flip-flops, latches).
SEQ = "synth__design__instance__area__sequential"
#: Clock gates instantiated by the generator (``hw.clock_gate``: one latch each), all instances.
CLOCK_GATES = "synth__design__instance__count__clock_gate"
#: Area of the clock gates' cells and their clock buffers (in :data:`AREA`).
CLOCK_GATE_AREA = "synth__design__instance__area__clock_gate"
#: Worst path delay (None with the generic library, whose delays are levels).
CP_PS = "synth__timing__critical_path__delay_ps"
#: Logic levels on the worst path.
CP_LV = "synth__timing__critical_path__levels"
#: ``reg->reg``, ``in->reg``, ``reg->out`` or ``in->out``.
CP_KIND = "synth__timing__critical_path__kind"
#: Yosys ``ltp`` depth over its generic gates, before technology mapping.
DEPTH = "synth__timing__logic_depth__generic"
#: 1 / worst delay.
FMAX = "synth__timing__fmax_mhz"
#: Time spent in Yosys (all blocks; kept from the first run when cached).
YOSYS_TIME = "synth__runtime__yosys_seconds"
#: Wall time of the whole flow run.
RUNTIME = "flow__runtime__seconds"
#: Peak resident memory of Yosys.
MEMORY = "flow__memory__peak_mb"
#: Whether every Yosys run came from the content-hashed cache.
CACHE_HIT = "flow__cache__hit"
#: Prefix of the per-block area (all instances of a block, own logic only): ``BLOCK_AREA + name``.
BLOCK_AREA = AREA + "__"
#: Modelled area of the black-box macros (not in :data:`AREA`).
MACRO_AREA = "synth__design__instance__area__macros"
#: :data:`AREA` plus :data:`MACRO_AREA`.
AREA_WITH_MACROS = "synth__design__instance__area__stdcell_plus_macros"
#: The list of black-box macros with their modelled areas.
MACROS = "synth__design__macros"
#: Worst path of a hierarchical top's own logic (the blocks' internal reg->reg paths left out).
CP_PS_TOP_OWN = CP_PS + "__top_own"
CP_LV_TOP_OWN = CP_LV + "__top_own"


def block_area(block: str) -> str:
    """Name of the per-block area metric of module ``block``."""
    return BLOCK_AREA + block

# ---- signoff cross-check (flows.sweep.opensta): OpenSTA on the same repaired netlist, pre-route
#: OpenSTA's critical path of the netlist :data:`CP_PS` was measured on, under our STA's assumptions.
CP_PS_OPENSTA = CP_PS + "__opensta"
#: 100 x (:data:`CP_PS_OPENSTA` - :data:`CP_PS`) / :data:`CP_PS`, percent.
CP_DIFF_OPENSTA = "synth__timing__critical_path__diff_pct__opensta"
#: Wall time of the OpenSTA run (reading, linking and timing), s.
OPENSTA_TIME = "synth__runtime__opensta_seconds"
#: OpenSTA's version (``sta -version``).
OPENSTA_VERSION = "flow__opensta__version"
#: The black-box macros OpenSTA timed through their liberty model (:mod:`flows.pnr.macro_lib`).
OPENSTA_MACROS = "flow__opensta__macro_models"
#: Why OpenSTA could not time the point here (e.g. the flattened design exceeds the machine's memory).
OPENSTA_SKIPPED = "flow__opensta__not_run"

#: Setup slack of the worst path against ``CLOCK_PS`` (ps; negative: the target is missed).
SETUP_WS = "synth__timing__setup__ws"
#: ``MET`` or ``VIOLATED`` (only with ``CLOCK_PS``).
SETUP_STATUS = "synth__timing__setup__status"
#: Multiply(-accumulate)s per clock cycle at full rate (designs with a known MAC rate).
MACS = "synth__design__macs_per_cycle"
#: :data:`AREA` / :data:`MACS` (um^2 per MAC of one cycle; not under :data:`BLOCK_AREA`).
AREA_PER_MAC = "synth__design__instance__area_per_mac__stdcell"
#: :data:`MACS` x :data:`FMAX` / 1000 (GMAC/s at fmax, Yosys-only timing).
PEAK_GMACS = "synth__design__throughput__peak_gmacs"
#: sha256 (first 16 hex digits) of the mapped netlists (every block's, in order, for a
#: hierarchical run): equal hashes mean identical netlists, e.g. with and without ``CLOCK_PS``.
NETLIST_SHA = "synth__design__netlist__sha256"
# ---- place and route (flows.pnr): post-route numbers beside the pre-route ones above
#: Target utilization given to the placer (qflow ``initial_density``).
PNR_TARGET_UTIL = "place__design__instance__utilization__target"
#: Die area (the DEF's DIEAREA), um^2.
DIE_AREA = "place__design__die__area"
#: Core area (the standard-cell rows, fill cells included), um^2.
CORE_AREA = "place__design__core__area"
#: Cell area (LEF footprints, fill cells excluded) / core area.
UTIL = "place__design__instance__utilization"
#: The die's width and height (the DEF's DIEAREA), um.
DIE_WIDTH = "place__design__die__width_um"
DIE_HEIGHT = "place__design__die__height_um"
#: Per bit of a column macro's activation input ``x``: the load it presents inside the routed macro
#: (its net's routed wire capacitance plus its sinks' pin capacitances), pF.
X_PIN_LOADS = "route__port__x__load_pf"
#: Names of the nets qrouter left unrouted (its ``fail.out``).
ROUTE_UNROUTED = "route__net__unrouted_names"
#: Total routed wire length of the signal nets, um.
ROUTE_WL = "route__wirelength"
#: Vias on the signal nets.
ROUTE_VIAS = "route__vias"
#: Nets qrouter failed to route.
ROUTE_FAILED = "route__net__failed"
#: Nets qrouter's first pass (no rip-up) left unrouted: the congestion the later passes resolved.
ROUTE_FAILED_STAGE1 = "route__net__failed__stage1"
#: Routed nets.
ROUTE_NETS = "route__net__count"
#: Nets with parasitics in the SPEF OpenSTA read (each must be annotated: equal to ROUTE_NETS).
ROUTE_SPEF_NETS = "route__net__annotated"
#: Total extracted wire capacitance, pF.
ROUTE_WIRE_CAP = "route__wire__capacitance_pf"
#: magic DRC errors on the routed layout (cells as LEF abstracts).
DRC_ERRORS = "route__drc_errors"
#: netgen LVS: layout and synthesized netlist match uniquely.
LVS_MATCH = "route__lvs__match"
#: netgen LVS error count.
LVS_ERRORS = "route__lvs__errors"
#: OpenSTA worst setup slack against a clock of the pre-route critical path, ps.
ROUTE_WS = "route__timing__setup__ws"
#: Post-route critical path (OpenSTA, SPEF), ps.
ROUTE_CP_PS = "route__timing__critical_path__delay_ps"
#: 1 / post-route critical path.
ROUTE_FMAX = "route__timing__fmax_mhz"
#: OpenSTA on the same routed netlist without the SPEF (pin capacitances only), ps.
ROUTE_CP_PS_NOWIRE = "route__timing__critical_path__delay_ps__no_wires"
#: Wall time of placement, routing, checks and timing, s.
PNR_RUNTIME = "route__runtime__seconds"
