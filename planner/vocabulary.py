"""The planner's vocabulary, each word defined once: tiers, precisions, roles, option kinds, objectives, solvers,
statuses and the calendar constants. The scenario schema, the CLI's choices, the report and the checks read them
from here (``docs/INTERFACE.md`` lists them for users)."""

from __future__ import annotations

from typing import Final, Literal

# Output tokens per second each user sees, by latency tier (interface contract).
TIERS: dict[str, float] = {"standard": 100.0, "high": 200.0, "premium": 400.0, "ultra": 1000.0}

# Serving precisions, fastest first (``Hardware.precision_or_best`` picks the first a system supports). w4a16 is
# weight-only 4-bit (MXFP4 or INT4 weights, 16-bit activations and arithmetic): what a 4-bit checkpoint runs as on a
# chip without 4-bit arithmetic (gpt-oss on Hopper), never chosen for a 16-bit model (catalog.runnable_precisions).
PRECISIONS: tuple[str, ...] = ("fp4", "fp8", "bf16", "w4a16")
FOUR_BIT: tuple[str, ...] = ("fp4", "w4a16")

# A hosted API offer as an option (OPTIMIZER.md 10): one "replica" serves its workload's whole (sized) demand with
# no chips, at the offer's prices on the tokens it serves; its allocation row's role is API_KIND and its hardware
# API_PREFIX + the offer's name.
API_KIND = "api"
ONE_SITE = "site"  # the name of a scenario's one site (site:, not sites:)
SITE_SEP = "@"  # a rack type of a plan over several sites is named system@site (docs/OPTIMIZER.md 21)
API_PREFIX = "api:"

# Roles a catalog system can take, and the roles of allocation rows in a plan.
HARDWARE_ROLES: tuple[str, ...] = ("prefill", "decode", "attention", "ffn")
ALLOCATION_ROLES: tuple[str, ...] = ("prefill", "decode", "colocated", "attention", "ffn", "api")
# Roles whose rows carry a workload's output tokens (the ffn half of a split counts them on its attention row; a
# hosted API's row, its share of the workload, carries both).
DECODE_ROLES: tuple[str, ...] = ("decode", "colocated", "attention", "api")
# Roles whose rows carry prompt tokens.
PREFILL_ROLES: tuple[str, ...] = ("prefill", "colocated", "api")

# How a system can be obtained: racks anyone can buy, capacity rented from one cloud only, or racks sold to a few
# customers. A plan buys merchant systems unless the scenario allows more (hardware.acquisition, hardware.allow).
ACQUISITIONS: tuple[str, ...] = ("merchant", "cloud", "select")
DEFAULT_ACQUISITION: tuple[Literal["merchant"], ...] = ("merchant",)  # typed as its words: the schema's default

# Objectives of the fleet MILP (docs/OPTIMIZER.md 1; their arithmetic: ``solvers.objectives``), its solvers
# (OR-Tools MathOpt) and the statuses a plan can have: defined beside the optimizer, which never imports planner/.
from solvers.vocabulary import OBJECTIVES, SOLVERS, STATUSES  # noqa: E402,F401

# Final: the defaults are the literal words (their Literal types) that the schema's fields take
DEFAULT_OBJECTIVE: Final = "min_cost"
DEFAULT_SOLVER: Final = "scip"

# Output formats of the commands.
FORMATS: tuple[str, ...] = ("table", "json")

# Speculative decoding (MODEL.md 3.4): the drafter of each method, and the draft lengths ``auto`` searches.
SPECULATIVE_METHODS: tuple[str, ...] = ("none", "mtp", "eagle", "draft_model")
# A workload's `speculative: auto` (the default): the plan considers no drafting and each drafter the model ships
# or has a published head for (MODEL.md 3.4), and keeps per option whichever serves it best.
AUTO_SPECULATIVE = "auto"
AUTO_DRAFT_TOKENS: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6)
MAX_DRAFT_TOKENS = 16

# Serving stacks a plan may assume (MODEL.md 5.3): vendor-best (the efficiencies fitted to the vendors' own best
# figures, TensorRT-LLM's on NVIDIA GPUs) or an engine's own, where the corpus has that engine's figures. A
# calibration point's engine names its stack; engines with no stack of their own are vendor-best.
SERVING_STACKS: tuple[str, ...] = ("vendor-best", "vllm", "sglang", "trtllm")
DEFAULT_SERVING_STACK = "vendor-best"
ENGINE_STACKS: dict[str, str] = {"sglang": "sglang", "vllm": "vllm", "trtllm": "trtllm"}
# Which replica layouts a plan may use (MODEL.md 2.9): those a public engine of the serving stack runs, or any
# the model can cost (each plan row then names the engines that run it, none where none does).
LAYOUT_POLICIES: tuple[str, ...] = ("supported", "any")

# The order in which the curtailment table sheds workloads at the peak (OPTIMIZER.md 13; the sort keys:
# ``planner.fleet.curtail.CURTAILMENT_ORDERS``): the slowest tier first, or the least revenue lost per MW first.
CURTAILMENT_ORDERS: tuple[str, ...] = ("tier", "revenue")
DEFAULT_CURTAILMENT_ORDER: Final = "tier"

# The accuracy ledger (MODEL.md 13): its classes of published figure, the splits of its corpus, the share of each
# class kept out of every fit, the weight of a vendor's claim beside a measurement in the fit's loss, and how far a
# class's median error may grow against the committed ledger before CI fails.
LEDGER_CLASSES: tuple[str, ...] = ("gpu-dense", "gpu-moe", "speculative", "ttft", "sram", "non-nvidia")
# The regimes a point's streams fall in (MODEL.md 13): a lone stream to a few, interactive batches, throughput
# batches, and a system's maximum throughput (no per-user limit, or more than 512 streams).
LEDGER_REGIMES: tuple[str, ...] = ("1-4", "5-64", "65-512", "max")
LEDGER_SPLITS: tuple[str, ...] = ("fitted", "held_out", "shown")
FIGURE_KINDS: tuple[str, ...] = ("measured", "claim")
HOLDOUT_SHARE = 0.25
CLAIM_WEIGHT = 0.25
LEDGER_GROWTH_LIMIT = 1.10

SECONDS_PER_YEAR = 365.0 * 86400.0
HOURS_PER_YEAR = 8760.0

# Defaults of a single deployment question (planner estimate / frontier, and their library calls).
DEFAULT_INPUT_TOKENS = 1000
DEFAULT_OUTPUT_TOKENS = 1000
DEFAULT_BATCH = 1
DEFAULT_SPECULATIVE = "none"
DEFAULT_DRAFT_TOKENS = None  # with a method: "auto"; without: 0
DEFAULT_ACCEPTANCE = 0.7  # per draft token; used only with a method


def tier_of(tps_per_user: float) -> str:
    """The fastest tier a per-user speed reaches ("below-standard" under standard)."""
    reached = [name for name, speed in TIERS.items() if tps_per_user >= speed]
    return reached[-1] if reached else "below-standard"
