"""Slot layouts of the float64 vectors that cross into the jitted performance model.

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
M_ATTN_KERNELS = 18  # dependent kernels of one layer's attention part (data/kernels.yaml)
M_DENSE_FFN_KERNELS = 19  # of one dense FFN
M_MOE_KERNELS = 20  # of one MoE block (router, dispatch, expert GEMMs, combine, shared experts)
M_SAMPLES = 21  # 1 where this part samples the next token, so pays the per-step overhead (0: an FFN part; a drafter samples each draft token, so 1)
M_ATTN_HEADS = 22  # query heads: one softmax exponential per head per query token per cached token (MODEL.md 2.6)
# hybrid linear attention (MODEL.md 2.10): layers that keep a fixed-size recurrent state per stream, no KV cache
M_LINEAR_LAYERS = 23  # linear-attention layers (gated DeltaNet, lightning attention); the rest attend over a cache
M_STATE_BYTES = 24  # bytes of one stream's state in one linear layer (recurrent state and convolution window)
M_STATE_HEADS = 25  # heads the state splits over: tensor parallelism shards it no further
M_LINEAR_FLOPS = 26  # FLOPs of one token through one linear layer's state (update and readout), whatever the context
# DeepSeek sparse attention (MODEL.md 2.10): full-attention layers hold every token but read only the top k
M_TOPK = 27  # cached tokens a full-attention layer's query reads (0: all of them)
M_INDEX_ELEMS = 28  # the lightning indexer's key elements per token per full-attention layer (held and read whole)
M_INDEX_FLOPS = 29  # indexer FLOPs per query token per cached token per full-attention layer
N_MODEL = 30

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
H_KERNEL_S = 22  # fixed latency of one dependent kernel or dataflow operation (launch, sync, pipeline fill)
H_COLL_LAT_S = 23  # fixed latency of one collective (all-reduce or all-to-all)
H_MEM_USABLE = 24  # share of each tier's capacity usable for weights and KV
H_ATTN_PEAK_FLOPS = 25  # dense peak FLOP/s for attention arithmetic, at the KV cache's precision
H_SERVING_TIERS = 26  # the leading tiers inference serves weights and KV from (the rest only stream: MemoryX, model-switching DDR)
H_STEP_S = 27  # fixed overhead of one decode step or prompt pass: scheduling, sampling, host work
H_ATTN_STREAM_S = 28  # fixed seconds of one stream's attention in one layer's kernel (its block table, its CTA) (MODEL.md 2.8)
H_SPEC_STREAM_S = 29  # speculative decoding: seconds of per-stream work each verify step (acceptance, KV and draft state)
H_MAX_STREAMS_PER_RANK = 30  # the serving stack's scheduler bound on streams per rank (inf: none) (MODEL.md 3.5)
H_PREFILL_TOKENS_PER_PASS = 31  # the stack's prompt-token budget of one prefill pass (0: one prompt a pass) (MODEL.md 4)
H_GROUPED_GEMM_FACTOR = 32  # share of the dense matmuls' achieved rate the routed experts' grouped matmuls reach (2.6)
# power curve (MODEL.md 14): draw = design power x min(1, idle + memory x memory-busy share + compute x compute-busy share)
H_IDLE_POWER_SHARE = 33  # share of design power drawn with the model loaded and no work
H_MEMORY_POWER_SHARE = 34  # share added when memory reads fill the whole step
H_COMPUTE_POWER_SHARE = 35  # share added when matmuls fill the whole step
H_EXP_PER_S = 36  # softmax exponentials per second per chip (special-function units); 0: not a limit (MODEL.md 2.6)
H_PREFILL_KERNEL_S = 37  # H_KERNEL_S in a prompt pass: engines launch prompt passes' kernels outside CUDA graphs (2.8)
N_HW = 38

# ---- decode / prefill breakdown -----------------------------------------------------------------------------
# Times are per token interval of one stream (decode) or for one prompt (prefill), summed over pipeline stages.
B_TIME_S = 0  # decode: time between two steps of one stream; prefill: time to first token
B_MEMORY_S = 1  # memory-read part (every kernel group's reads)
B_COMPUTE_S = 2  # compute part (every kernel group's matmuls and exponentials)
B_ROOFLINE_S = 3  # sum over kernel groups of max(memory, compute): within a group the two overlap (MODEL.md 3.2)
B_COMM_S = 4  # collectives and pipeline hops
B_FLOOR_S = 5  # fixed latencies: kernels x per-kernel latency, the per-step overhead, each stream's attention fixed cost
B_TPS_PER_USER = 6  # decode: accepted tokens/s one stream sees
B_TOKENS_PER_S = 7  # decode: output tokens/s of the replica; prefill: prompt tokens/s, prompts batched per pass
B_FITS = 8  # 1.0 if weights + KV fit the replica's usable memory
B_WEIGHT_BYTES_PER_CHIP = 9  # weights held per chip
B_KV_BYTES_PER_CHIP = 10  # KV cache held per chip at the longest context
B_USABLE_BYTES_PER_CHIP = 11
B_BOUND = 12  # the binding term: 0 memory, 1 compute, 2 communication, 3 floor
B_POWER_W = 13  # what the replica's chips draw while it works (their rack power share on the power curve)
B_BYTES_READ_PER_CHIP = 14  # per stage step
B_FLOPS_PER_CHIP = 15  # per stage step
B_DRAFT_S = 16  # speculative decoding: the drafter's part of B_TIME_S (K draft steps per interval)
N_BREAKDOWN = 17

BOUND_NAMES = ("memory", "compute", "communication", "floor")

PRECISION_CODES = {"fp4": 0, "fp8": 1, "bf16": 2}

# ---- workload vector (one workload's question to the engine; planner.perf.pack.workload_vector) --------------
W_INPUT_TOKENS = 0  # mean prompt tokens per call (its KV cache crosses to the decode pool)
W_PREFILL_TOKENS = 1  # prompt tokens per call still to compute after prefix-cache hits
W_OUTPUT_TOKENS = 2  # tokens generated per call (output + reasoning)
W_CONTEXT_AVG = 3  # mean context a decode step attends to: input + output / 2
W_CONTEXT_MAX = 4  # longest context, whose KV cache must fit: input + output
W_MIN_TPS_PER_USER = 5  # the tier: output tokens/s each stream must see
W_TTFT_S = 6  # time-to-first-token target (inf: none)
W_TTFT_QUANTILE = 7  # share of requests that must meet it, 0..1
W_RESIDENT_S_PER_TOKEN = 8  # agentic: tool-call wait per generated token while the KV cache stays resident
N_WORKLOAD = 9

# ---- engine result columns (solvers.perf.sweep.best_decode_per_layout) ----------------------------------------
E_TOKENS_PER_S = 0  # best output tokens/s per replica (0 if no batch qualifies)
E_BATCH = 1
E_TPS_PER_USER = 2
E_TTFT_S = 3  # colocated: the TTFT quantile at that load
E_PREFILL_SHARE = 4  # colocated: share of the replica's time spent prefilling
N_ENGINE = 5

# ---- frontier point columns (solvers.perf.sweep.colocated_points) --------------------------------------------
P_TPS_PER_USER = 0  # per-user speed with the replica prefilling its own requests
P_TOKENS_PER_S = 1  # output tokens/s of the replica, its own prefill included
P_TTFT_S = 2  # one prompt's prefill alone (no queueing)
P_DECODE_TPS_PER_USER = 3  # decode alone
P_DECODE_TOKENS_PER_S = 4
P_POWER_W = 5
P_FITS = 6
P_BOUND = 7  # the decode breakdown's binding term
N_POINT = 8

# ---- attention/FFN split breakdown (solvers.perf.split) ------------------------------------------------------
S_TIME_S = 0  # token interval of one stream: one cycle of all micro-batches
S_ATTENTION_S = 1  # A side, one micro-batch through all layers
S_FFN_S = 2  # F side, one micro-batch through all layers (its own collectives excluded: the crossing replaces them)
S_CROSSING_S = 3  # activations A -> F -> A, all layers, one micro-batch
S_TPS_PER_USER = 4
S_TOKENS_PER_S = 5
S_FITS_ATTENTION = 6
S_FITS_FFN = 7
S_POWER_W = 8
S_BOUND = 9  # 0 attention, 1 ffn, 2 crossing, 3 latency (one micro-batch's round trip)
N_SPLIT = 10

SPLIT_BOUND_NAMES = ("attention", "ffn", "crossing", "latency")

# ---- per-layout decode coefficients (solvers.perf.sweep.layout_coefficients) ---------------------------------
C_PP = 0
C_HELD_W = 1  # weight bytes held per chip
C_READ_W0 = 2  # weight bytes read per step of the weights split over the tp chips (routed experts and DP attention apart)
C_READ_W1 = 3  # bytes of one routed expert's share per chip, summed over the stage's MoE layers
C_EXPERTS = 4
C_LOG_MISS = 5  # ln(1 - k/E): the chance one token misses a given expert, in logs
C_KV_HELD = 6  # KV bytes held per chip per stream (longest context)
C_KV_READ = 7  # KV bytes read per chip per micro-batch stream (mean context)
C_COMPUTE = 8  # compute seconds per token of the weights split over the tp chips (LM head included)
C_COMM0 = 9  # communication seconds per stage step at zero tokens (latencies)
C_COMM1 = 10  # communication seconds per token
C_FLOOR = 11  # fixed seconds per stage step (kernels, the step overhead's 1/pp share)
C_USABLE = 12  # usable bytes per chip
C_CHIPS = 13
C_POWER_W = 14
C_EXPERT_COMPUTE = 15  # compute seconds per token-to-expert assignment on the busiest expert group's chips
C_GROUPS = 16  # expert groups R (1 without expert parallelism): the busiest-group factors apply when > 1
C_EXPERTS_PER_TOKEN = 17
C_ATTW_READ = 18  # data-parallel attention: attention weight bytes every chip reads per step (0 without it)
C_ATTW_COMPUTE = 19  # its compute seconds per token of the step (each chip multiplies 1 / tp of the tokens)
C_STREAM_CAP = 20  # streams the replica's scheduler admits (kernels.stream_cap)
C_ATT_COMPUTE = 21  # attention's compute seconds per query token at the mean context (matmuls or exponentials)
C_STREAM_S = 22  # fixed attention seconds per stream of the micro-batch (H_ATTN_STREAM_S x the stage's layers)
N_COEF = 23
