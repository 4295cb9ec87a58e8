"""llama.cpp run parameters resolved from :class:`InferenceSettings` with llama.cpp's defaults.

Models the llama.cpp behaviour of late 2025 (build b7000 and later, the version vendored by
llama-cpp-python 0.3.3x): ``common_params`` defaults (``-c 4096``, ``-b 2048``, ``-ub 512``,
``-fa auto``, ``-ngl`` all layers, f16 KV cache) and the context set-up of
``llama_context::llama_context`` in src/llama-context.cpp (``n_ctx`` padded to 256,
``n_ubatch <= n_batch``, per-sequence ``n_ctx_seq = n_ctx / n_seq_max`` when the KV cache is
not unified).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from oomkit.errors import InvalidSettingError
from oomkit.quant.ggml_types import GGML_TYPES
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "BUFFER_ALIGNMENT",
    "DEFAULT_N_BATCH",
    "DEFAULT_N_BATCH_PRE_UBATCH",
    "DEFAULT_N_CTX",
    "DEFAULT_N_UBATCH",
    "KV_CACHE_TYPES",
    "MATRIX_ROW_PADDING",
    "N_CTX_PAD",
    "SERVER_AUTO_SLOTS",
    "LlamaCppOptions",
    "LlamaCppParams",
    "backend_alloc_bytes",
    "resolve_llamacpp_params",
]

#: common_params.n_ctx (common/common.h) before PR #16653 (Dec 2025), which made it 0 (the
#: model's trained context, then lowered by --fit: :mod:`oomkit.estimate.llamacpp_fit`)
DEFAULT_N_CTX = 4096
#: llama-server's slots when ``-np`` is not given (tools/server/server.cpp, PR #16736)
SERVER_AUTO_SLOTS = 4
DEFAULT_N_BATCH = 2048  # common_params.n_batch
DEFAULT_N_UBATCH = 512  # common_params.n_ubatch
#: builds before PR #6017 (b2413, 2024-03-13) had one batch size: ``gpt_params.n_batch = 512``
#: (common/common.h), "batch size for prompt processing", and no ``-ub``
DEFAULT_N_BATCH_PRE_UBATCH = 512
#: llama_context: ``cparams.n_ctx = GGML_PAD(cparams.n_ctx, 256)`` (src/llama-context.cpp)
N_CTX_PAD = 256

#: ``--cache-type-k/-v`` values accepted by llama.cpp (common/arg.cpp kv_cache_types)
KV_CACHE_TYPES: tuple[str, ...] = (
    "f32",
    "f16",
    "bf16",
    "q8_0",
    "q4_0",
    "q4_1",
    "iq4_nl",
    "q5_0",
    "q5_1",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class LlamaCppOptions:
    """Knobs that :class:`InferenceSettings` does not carry (API callers, the oracle, Ollama).

    ``repack``: CPU weights of repackable types go to the ``CPU_REPACK`` buffer
    (llama.cpp ``use_extra_bufts``, default on); ``mla_v_cache``: MLA models also keep a V cache
    (older llama.cpp); ``n_outputs_max``: outputs reserved in the output buffer
    (None = ``n_seq_max``, llama.cpp's default when logits for all tokens are not requested).
    """

    repack: bool = True
    mla_v_cache: bool = False
    n_outputs_max: int | None = None
    no_host: bool = False
    #: builds since ~b6600 (autumn 2025) create the KQ mask as an f16 input under flash
    #: attention; older builds used an f32 input plus an f16 cast node
    kq_mask_f16: bool = True
    #: builds since ~b5900 (mid 2025) store K/V with ggml_set_rows and index inputs (k_idxs,
    #: v_idxs); older builds copied into cache views (no index inputs)
    set_rows: bool = True
    #: outputs in the worst-case reserve graph (None: n_tokens, llama.cpp's graph_reserve;
    #: Ollama's own engine reserves logits for ``num_parallel`` outputs only)
    reserve_outputs: int | None = None
    #: the context is llama-server's MTP draft context (``ctx_type = LLAMA_CONTEXT_TYPE_MTP``):
    #: its graph starts with the MTP head's input stage (:mod:`oomkit.estimate.llamacpp_mtp`)
    mtp_head: bool = False
    #: runtime generation (oomkit.estimate.generations): False = builds before PR #12801 cache
    #: DeepSeek-V2/V3 as full K/V heads instead of the MLA latent
    mla_cache: bool = True
    #: False = builds before PR #25871 (July 2026): an MLA model takes a K cache type other
    #: than V's (-ctk q8_0 with the default f16 V); from it llama_init_from_model refuses it
    mla_kv_types_equal: bool = True
    #: False = builds before PR #13194: sliding-window layers cache the whole context
    swa_cache: bool = True
    #: False = builds before PR #14363: one unified KV stream whatever -np
    kv_streams: bool = True
    #: cells padding without flash attention (32 from PR #7257 until PR #16812; None = 256)
    n_ctx_pad_no_fa: int | None = None
    #: flash attention when -fa is not given: False before PR #15434 (Aug 2025, "-fa auto")
    flash_attn_default: bool = True
    #: builds from PR #3776 (Oct 2023) until PR #8075 (Jun 2024): quantized matmuls over more
    #: than 32 tokens dequantize the weight into the CUDA pool for cuBLAS on ``"all"`` NVIDIA
    #: GPUs (until PR #4682) or on ``"tensor_cores"`` ones (cc >= 7.0); None: MMQ
    #: (:mod:`oomkit.estimate.llamacpp_pool`); ``"volta"`` from PR #8075 on: only GPUs with
    #: FP16 but no int8 tensor cores (V100), for batches of 64 tokens or more
    cublas_pool: str | None = "volta"
    #: builds before PR #6122 (Mar 2024) compute the logits of every batch token
    all_logits: bool = False
    #: builds from PR #3749 (Oct 2023) batch the attention GEMMs through FP16 buffers of the
    #: legacy CUDA pool, one larger buffer per prompt step (``"all"`` NVIDIA GPUs until PR
    #: #3882, then ``"tensor_cores"`` ones until the VMM pool of PR #4606); None: not modelled
    #: (:func:`oomkit.estimate.llamacpp_pool.attention_pool_growth_bytes`)
    attn_pool: str | None = None
    #: False = builds before PR #6017 (b2413, 2024-03-13): no micro-batch; each prompt step
    #: (and the worst-case graph, ``n_tokens = min(n_ctx, n_batch)``) is ``-b`` tokens, 512 by
    #: default, and ``-ub`` does not exist
    ubatch_split: bool = True
    #: built with GGML_CUDA_FORCE_MMQ (Ollama's Linux CUDA build, 0.1.23-0.2.1): MMQ for
    #: every batch, no dequantized weights in the pool whatever ``cublas_pool`` says
    force_mmq: bool = False
    #: True = builds before PR #10026 (commit c5b0f4b, 2024-10-30): with ``-sm row`` every
    #: offloaded layer, its KV cache and the compute graph belong to the main GPU; from that
    #: PR on they are split over the GPUs by ``--tensor-split`` as in ``-sm layer``
    #: (:func:`oomkit.estimate.llamacpp_placement.place_weights`)
    row_main_gpu: bool = False
    #: False = builds before PR #15815 (autumn 2025): ggml-alloc reserves a backend's compute
    #: buffer as one buffer; True: split into chunks of at most the backend's max buffer size
    #: (:mod:`oomkit.estimate.llamacpp_maxalloc`)
    compute_chunks: bool = True
    #: True = builds b4069-b4126 (PR #10257, 2024-11-13, until its revert PR #10385,
    #: 2024-11-19): ggml-sycl refuses a permuted MUL_MAT, so without flash attention the KQ
    #: product runs on the CPU and the SYCL compute buffer holds it a second time
    #: (:mod:`oomkit.estimate.llamacpp_sycl`)
    sycl_kq_on_cpu: bool = False
    #: builds from PR #25952 (commit 3466812d, 2026-09): the CUDA backend's graph_optimize keeps
    #: the inputs of its fused MoE kernels alive (add_alloc_dep, PR #27301), so a MoE layer's
    #: weighted expert outputs no longer reuse the expert outputs' memory
    #: (:func:`oomkit.estimate.llamacpp_compute._keep_reduction`)
    cuda_moe_fusion_deps: bool = True
    #: builds from PR #4766 (2024-01-12, ggml_backend_sched): a CPU weight's large-batch matmul
    #: runs on the main GPU from a copy in the scheduler's compute buffer (one CPU layer's
    #: weights, the output head); before, ggml-cuda copied one tensor at a time into its pool
    sched_staging: bool = True
    #: builds from PR #6083 (2024-03-18, 'backend : offload large batches to GPU'): the
    #: scheduler starts a split at each offloaded weight, so the main GPU holds one weight copy
    #: at a time (:mod:`oomkit.estimate.llamacpp_offload_splits`)
    offload_op_splits: bool = True
    #: builds from llama.cpp PR #15995 (2025-09-20): ggml-metal's ``offload_op`` accepts
    #: large-batch matmuls, so a Metal partial offload stages CPU weights as CUDA does; before,
    #: it refused every op (:mod:`oomkit.estimate.llamacpp_unified`)
    metal_op_offload: bool = True
    #: builds from PR #23861 (June 2026): llama-server caps the context's ``n_outputs_max`` at
    #: its ``-np`` sequences, so the reserve graph sizes that many output rows
    #: (:mod:`oomkit.estimate.llamacpp_outputs`, read only with ``settings.llama_server``)
    server_outputs: bool = True
    #: False = builds before PR #16736 (about 2025-11-01): llama-server without ``-np`` runs
    #: common_params' one sequence; from it ``-np`` defaults to -1 (auto) and
    #: tools/server/server.cpp turns that into 4 slots with ``kv_unified = true``
    server_auto_slots: bool = True
    #: False = builds before PR #1826 (2023-06-18): ggml-metal makes each buffer (the whole
    #: model file, KV, compute) ONE Metal buffer, refused above maxBufferLength
    #: (:mod:`oomkit.estimate.llamacpp_metal`); True: larger buffers are split into views
    metal_views: bool = True
    #: True = builds before PR #2325 (2023-07-22): the Metal compute memory is the fixed
    #: 'eval' + 'scr0' + 'scr1' buffers sized by model type (MEM_REQ_EVAL/SCRATCH0/SCRATCH1)
    metal_scratch: bool = False
    #: a 2023 Q2_K mix (:mod:`oomkit.quant.llamacpp_q2k_legacy`): ``"k-quants-2023-06"``
    #: before PR #2707 (Aug 2023), ``"3bit-2023-08"`` until January 2024; None: today's
    q2k_mix: str | None = None
    #: ``"pre-4872"``: a k-quant MoE file as llama-quantize mixed it before PR #4872
    #: (:mod:`oomkit.quant.llamacpp_moe_legacy`); None: today's
    moe_mix: str | None = None
    #: True = builds before PR #6505 (April 2024, "group all experts in a single
    #: ggml_mul_mat_id"): the MoE graph loops over the ``n_expert_used`` slots, one
    #: ``n_ff x n_tokens`` up/gate/down per slot (:func:`oomkit.estimate.llamacpp_compute._moe`)
    moe_slot_loop: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class LlamaCppParams:
    """Effective llama.cpp context/model parameters (names as in llama_cparams)."""

    n_ctx_requested: int
    n_ctx: int  # after padding and rounding to a multiple of n_seq_max
    n_ctx_seq: int  # cells per stream
    n_seq_max: int
    n_stream: int  # 1 when the KV cache is unified, else n_seq_max
    n_batch: int
    n_ubatch: int
    flash_attn: bool
    flash_attn_auto: bool
    type_k: str  # ggml type name, upper case ("F16", "Q8_0")
    type_v: str
    kv_unified: bool
    swa_full: bool
    n_gpu_layers: int
    mmap: bool
    options: LlamaCppOptions
    assumptions: tuple[str, ...] = ()


def _kv_type(value: str | None, setting: str) -> str:
    if value is None:
        return "F16"
    key = value.strip().lower()
    if key not in KV_CACHE_TYPES:
        raise InvalidSettingError(
            f"Unsupported KV cache type for '{setting}' ({value!r}): llama.cpp accepts "
            f"{', '.join(KV_CACHE_TYPES)}. Pick one of those.",
            setting=setting,
            value=value,
        )
    name = key.upper()
    assert name in GGML_TYPES
    return name


def resolve_llamacpp_params(
    settings: InferenceSettings,
    *,
    n_layer: int,
    has_gpu: bool,
    default_swa_full: bool = False,
    options: LlamaCppOptions | None = None,
) -> LlamaCppParams:
    """Apply llama.cpp's defaults and context set-up rules to ``settings``.

    Raises:
        InvalidSettingError: an impossible combination (e.g. quantized V cache without flash
            attention, which llama.cpp refuses at context creation).
    """
    opts = options or LlamaCppOptions()
    notes: list[str] = []
    n_ctx_req = settings.ctx if settings.ctx is not None else DEFAULT_N_CTX
    if settings.ctx is None:
        notes.append(f"n_ctx not given: llama.cpp default -c {DEFAULT_N_CTX}")
    if n_ctx_req <= 0:
        raise InvalidSettingError(
            f"Invalid context size for 'ctx' ({n_ctx_req}): must be positive. "
            "Pass --ctx with a token count such as 8192.",
            setting="ctx",
            value=n_ctx_req,
        )
    n_seq = settings.parallel or 1
    auto_slots = settings.parallel is None and bool(settings.llama_server)
    if auto_slots and opts.server_auto_slots:
        # tools/server/server.cpp (PR #16736): "n_parallel is set to auto, using n_parallel = 4
        # and kv_unified = true" when -np is not given (common/arg.cpp: -np default -1)
        n_seq = SERVER_AUTO_SLOTS
        notes.append(
            f"parallel not given: llama-server's -np auto, {SERVER_AUTO_SLOTS} slots sharing one "
            "unified KV cache of n_ctx cells (PR #16736; the KV size of one sequence)"
        )
    elif settings.parallel is None:
        notes.append(
            "parallel not given: 1 sequence (common_params.n_parallel; llama-server of this "
            "build too)"
            if auto_slots
            else "parallel not given: 1 sequence (common_params.n_parallel and the C API's "
            "default; llama-server since PR #16736 runs 4 slots on a unified KV cache of the "
            "same size: --llama-server)"
        )
    if opts.ubatch_split:
        n_batch = settings.batch_size or DEFAULT_N_BATCH
        ubatch = settings.ubatch or DEFAULT_N_UBATCH
    else:
        # before PR #6017 the physical batch was -b (cparams.n_batch = params.n_batch)
        n_batch = settings.batch_size or DEFAULT_N_BATCH_PRE_UBATCH
        ubatch = n_batch
        if settings.ubatch is not None:
            notes.append(
                f"ubatch {settings.ubatch} ignored: -ub arrived with PR #6017 (b2413, "
                f"2024-03-13); a prompt step of this build is -b {n_batch} tokens"
            )
    kv_unified = (
        bool(settings.kv_unified)
        or not opts.kv_streams
        or (auto_slots and opts.server_auto_slots and settings.kv_unified is None)
    )
    n_stream = 1 if kv_unified else n_seq
    fa_auto = settings.flash_attn is None and opts.flash_attn_default
    pad = N_CTX_PAD
    if opts.n_ctx_pad_no_fa is not None and not fa_auto and not settings.flash_attn:
        # FA off (explicitly, or by an old build's default): the smaller padding
        pad = opts.n_ctx_pad_no_fa
    # llama_context: pad n_ctx to 256, then split into equal per-sequence streams
    n_ctx = -(-n_ctx_req // pad) * pad
    if kv_unified:
        n_ctx_seq = n_ctx
    else:
        # each stream gets n_ctx / n_seq_max cells, padded again to 256 (llama_kv_cache size
        # per stream; e.g. -c 8192 -np 3 gives 3 x 2816 cells)
        n_ctx_seq = -(-(n_ctx // n_seq) // pad) * pad
        n_ctx = n_ctx_seq * n_seq
    if n_ctx_seq <= 0:
        raise InvalidSettingError(
            f"Context too small for 'parallel' ({n_seq}): n_ctx {n_ctx_req} gives no cells per "
            "sequence. Raise --ctx or lower --parallel.",
            setting="parallel",
            value=n_seq,
        )
    # with causal attention no batch exceeds the context: llama_context caps
    # ``cparams.n_batch = causal_attn ? min(n_ctx, n_batch) : n_batch`` and
    # ``n_ubatch = min(n_batch, n_ubatch)`` (PR #6017, src/llama-context.cpp today); before it
    # the worst-case graph was ``n_tokens = min(n_ctx, n_batch)`` and llama_decode asserted
    # ``n_tokens <= n_batch`` while the KV cache holds n_ctx cells
    n_batch = min(n_ctx, n_batch)
    n_ubatch = min(n_batch, ubatch)
    type_k = _kv_type(settings.cache_type_k, "cache_type_k")
    type_v = _kv_type(settings.cache_type_v, "cache_type_v")
    # -fa auto: enabled when every device that holds attention supports the FA op; the CPU,
    # CUDA and Metal backends do for the usual head sizes (llama_context: flash_attn_type auto)
    flash_attn = True if fa_auto else bool(settings.flash_attn)
    if fa_auto:
        notes.append("flash attention 'auto': assumed enabled (supported by CPU/CUDA/Metal)")
    elif settings.flash_attn is None:
        notes.append("flash attention off: the default of builds before PR #15434 (Aug 2025)")
    if type_v not in ("F16", "F32", "BF16") and not flash_attn:
        raise InvalidSettingError(
            f"Quantized V cache for 'cache_type_v' ({type_v.lower()}) needs flash attention: "
            "llama.cpp fails with 'V cache quantization requires flash_attn'. "
            "Enable --flash-attn or use an f16 V cache.",
            setting="cache_type_v",
            value=type_v.lower(),
        )
    if settings.n_gpu_layers is None:
        ngl = n_layer + 1 if has_gpu else 0
    else:
        ngl = max(0, settings.n_gpu_layers)
    if not has_gpu:
        ngl = 0
    swa_full = default_swa_full if settings.swa_full is None else settings.swa_full
    if not opts.swa_cache:
        swa_full = True  # before PR #13194 every layer cached the whole context
    mmap = True if settings.mmap is None else settings.mmap
    return LlamaCppParams(
        n_ctx_requested=n_ctx_req,
        n_ctx=n_ctx,
        n_ctx_seq=n_ctx_seq,
        n_seq_max=n_seq,
        n_stream=n_stream,
        n_batch=n_batch,
        n_ubatch=n_ubatch,
        flash_attn=flash_attn,
        flash_attn_auto=fa_auto,
        type_k=type_k,
        type_v=type_v,
        kv_unified=kv_unified,
        swa_full=swa_full,
        n_gpu_layers=ngl,
        mmap=mmap,
        options=opts,
        assumptions=tuple(notes),
    )


#: Buffer alignment per backend: ggml-backend.cpp TENSOR_ALIGNMENT (CPU, 32), CUDA/ROCm
#: ``ggml_backend_cuda_buffer_type_get_alignment`` (128), Metal 32, Vulkan (device
#: minStorageBufferOffsetAlignment, typically 64; 128 assumed).
BUFFER_ALIGNMENT: dict[str, int] = {"cpu": 32, "cuda": 128, "rocm": 128, "metal": 32, "vulkan": 128}
#: ggml-cuda MATRIX_ROW_PADDING: quantized tensors get one partial row of padding
MATRIX_ROW_PADDING = 512


@lru_cache(maxsize=4096)
def backend_alloc_bytes(type_name: str, ne0: int, n_bytes: int, backend: str) -> int:
    """Bytes a backend buffer reserves for one tensor (alloc size padded to the alignment).

    Models ``ggml_backend_buft_get_alloc_size`` (CUDA adds ``ggml_row_size(type, 512 - ne0 % 512)``
    to quantized tensors whose rows are not a multiple of 512) and the per-tensor alignment of
    ``ggml_backend_alloc_ctx_tensors_from_buft`` (ggml/src/ggml-alloc.c).
    """
    size = n_bytes
    gt = GGML_TYPES.get(type_name.upper())
    if (
        backend in ("cuda", "rocm")
        and gt is not None
        and gt.block_size > 1
        and ne0 % MATRIX_ROW_PADDING != 0
    ):
        pad = MATRIX_ROW_PADDING - ne0 % MATRIX_ROW_PADDING
        size += -(-pad // gt.block_size) * gt.type_size
    align = BUFFER_ALIGNMENT.get(backend, 32)
    return -(-size // align) * align
