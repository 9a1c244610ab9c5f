"""Index layouts of the float64 vectors that cross into the jitted performance model.

A model, a hardware system (at one precision, with its calibrated efficiencies) and a result breakdown are each one
flat float64 vector; these module constants name the slots. Numba treats module-level ints as compile-time
constants, so indexing by name costs nothing.
"""

# ---- model vector (derived from the public config by planner.catalog.Model) --------------------------------
M_LAYERS = 0
M_DENSE_LAYERS = 1  # layers with a dense FFN
M_MOE_LAYERS = 2
M_HIDDEN = 3
M_ATTN_PARAMS = 4  # attention weights per layer
M_DENSE_FFN_PARAMS = 5  # dense FFN weights per dense layer
M_EXPERT_PARAMS = 6  # one routed expert
M_EXPERTS = 7  # routed experts per MoE layer (0 for dense)
M_EXPERTS_PER_TOKEN = 8
M_SHARED_PARAMS = 9  # shared experts + router per MoE layer
M_EMBED_PARAMS = 10  # stored embedding + LM head weights
M_LM_HEAD_PARAMS = 11  # LM head weights read per generated token
M_KV_ELEMS = 12  # KV elements per token per layer
M_WINDOW_LAYERS = 13  # sliding-window layers
M_WINDOW_TOKENS = 14  # their window (0 if none)
M_ATTN_FLOPS = 15  # decode attention FLOPs per query token per cached token per layer
M_PREFILL_ATTN_FLOPS = 16  # the same in prefill (MLA runs un-absorbed there)
M_KV_HEADS = 17  # KV heads (1 for MLA's shared latent): tensor parallelism cannot split the cache further
N_MODEL = 18

# ---- hardware vector (one system at one precision, efficiencies applied in the kernel) ----------------------
MAX_TIERS = 4
H_N_TIERS = 0
H_CAP = 1  # H_CAP + i: capacity of tier i in bytes, per chip (fastest first)
H_BW = 5  # H_BW + i: bandwidth of tier i in bytes/s, per chip
H_PEAK_FLOPS = 9  # dense peak FLOP/s per chip at the chosen precision
H_WEIGHT_BYTES = 10  # bytes per weight element at the chosen precision
H_KV_BYTES = 11  # bytes per KV element
H_ACT_BYTES = 12  # bytes per activation element crossing a link
H_SU_DOMAIN = 13  # chips in one scale-up domain
H_SU_BW = 14  # scale-up bandwidth per chip, one direction, bytes/s
H_SU_LAT = 15  # scale-up hop latency, s
H_SO_BW = 16  # scale-out bandwidth per chip, bytes/s
H_SO_LAT = 17  # scale-out hop latency, s
H_CHIPS_PER_RACK = 18
H_RACK_POWER_W = 19
H_BW_EFF = 20  # achieved share of memory bandwidth
H_FLOPS_EFF = 21  # achieved share of dense peak FLOP/s
H_LAYER_FLOOR_S = 22  # fixed time per layer per step (kernel launch, synchronisation, dataflow latency)
H_COLL_LAT_S = 23  # fixed latency of one collective (all-reduce or all-to-all)
H_MEM_USABLE = 24  # share of each tier's capacity usable for weights and KV
H_ATTN_PEAK_FLOPS = 25  # dense peak FLOP/s for attention arithmetic, at the KV cache's precision
N_HW = 26

# ---- decode / prefill breakdown -----------------------------------------------------------------------------
# Times are per token interval of one stream (decode) or for one prompt (prefill), summed over pipeline stages.
B_TIME_S = 0  # decode: time between two steps of one stream; prefill: time to first token
B_MEMORY_S = 1  # memory-read part
B_COMPUTE_S = 2  # compute part
B_ROOFLINE_S = 3  # max(memory, compute): the two overlap
B_COMM_S = 4  # collectives and pipeline hops
B_FLOOR_S = 5  # per-layer fixed latency
B_TPS_PER_USER = 6  # decode: accepted tokens/s one stream sees
B_TOKENS_PER_S = 7  # decode: output tokens/s of the replica; prefill: prompt tokens/s with stages pipelined
B_FITS = 8  # 1.0 if weights + KV fit the replica's usable memory
B_WEIGHT_BYTES_PER_CHIP = 9  # weights held per chip
B_KV_BYTES_PER_CHIP = 10  # KV cache held per chip at the longest context
B_USABLE_BYTES_PER_CHIP = 11
B_BOUND = 12  # the binding term: 0 memory, 1 compute, 2 communication, 3 floor
B_POWER_W = 13  # rack power share of the replica's chips
B_BYTES_READ_PER_CHIP = 14  # per stage step
B_FLOPS_PER_CHIP = 15  # per stage step
N_BREAKDOWN = 16

BOUND_NAMES = ("memory", "compute", "communication", "floor")

PRECISION_CODES = {"fp4": 0, "fp8": 1, "bf16": 2}
