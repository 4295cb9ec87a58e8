"""The knobs the planner turns, per runtime, and the order it prefers them in.

A :class:`Candidate` is one point of the search space: weight quant, KV cache type, context,
and where the layers live (all on the GPU, MoE experts of the first ``n_cpu_moe`` layers on
the CPU, or only ``n_gpu_layers`` on the GPU). Its *level* names where the layers live:
everything on the GPU (quantizing the KV cache or shortening the context stays at level 0) →
MoE experts on the CPU → partial layer offload. How candidates are ranked (levers by cost
class, what the user typed kept first) is :mod:`oomkit.planner.ranking`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from oomkit.errors import InvalidSettingError
from oomkit.planner.ranking import rank_key
from oomkit.spec.hardware import DeviceTarget
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "CHECKPOINT",
    "FA_F16",
    "GGUF_LADDER",
    "HF_LADDER",
    "LEVEL_EXPERTS_CPU",
    "LEVEL_GPU",
    "LEVEL_LAYERS_CPU",
    "Candidate",
    "fp8_marlin_ok",
    "kv_ladder",
    "llamacpp_flash_off",
    "native_precisions",
    "quant_ladder",
    "rank_key",
    "upgrade_kvs",
]

LEVEL_GPU = 0
LEVEL_EXPERTS_CPU = 1
LEVEL_LAYERS_CPU = 2
LEVEL_NAMES = ("all on GPU", "MoE experts on CPU", "layers on CPU")

#: GGUF file types the planner proposes (the common published files; ternary and F16/BF16
#: are only used when named)
_GGUF_CANDIDATES: tuple[str, ...] = (
    "Q8_0",
    "Q6_K",
    "Q5_K_M",
    "Q5_K_S",
    "Q4_K_M",
    "Q4_K_S",
    "IQ4_XS",
    "Q3_K_L",
    "Q3_K_M",
    "IQ3_M",
    "IQ3_XXS",
    "Q2_K",
    "IQ2_M",
    "IQ2_XS",
    "IQ2_XXS",
    "IQ1_M",
    "IQ1_S",
)


def _by_quality(names: tuple[str, ...]) -> tuple[str, ...]:
    """Best quality first, by the published KL-divergence table (:mod:`oomkit.planner.quality`:
    llama.cpp's LLaMA-3-8B scoreboard, tools/perplexity/README.md)."""
    from oomkit.planner.quality import quality_rank_key

    return tuple(sorted(names, key=quality_rank_key))


#: the candidates best first: IQ4_XS ranks above Q4_K_S and IQ2_M above Q2_K (imatrix quants)
GGUF_LADDER: tuple[str, ...] = _by_quality(_GGUF_CANDIDATES)
#: the default start for GGUF runtimes when the user names no quant: quants above it are
#: proposed only when they fit entirely on the GPU at the asked context (nobody wants Q8_0
#: at 2 tok/s when Q4_K_M runs at 40)
GGUF_DEFAULT = "Q4_K_M"
#: the quant name of "the checkpoint's own format" (a pre-quantized HF checkpoint)
CHECKPOINT = "checkpoint"
#: vLLM / SGLang / transformers weight formats, best quality first; the first entry is
#: replaced by the checkpoint's own dtype
HF_LADDER: tuple[str, ...] = ("bf16", "fp8", "awq", "gptq", "nf4")
_HF_RUNTIME_FORMATS: dict[str, tuple[str, ...]] = {
    "vllm": ("bf16", "fp8", "awq", "gptq"),
    "sglang": ("bf16", "fp8", "awq", "gptq"),
    "transformers": ("bf16", "int8", "nf4"),
}

#: KV cache types per runtime, best quality first
_KV_TYPES: dict[str, tuple[str, ...]] = {
    "llama.cpp": ("f16", "q8_0", "q4_0"),
    "ollama": ("f16", "q8_0", "q4_0"),
    "vllm": ("auto", "fp8"),
    "sglang": ("auto", "fp8"),
    "transformers": ("auto",),
}


#: llama.cpp: an f16 KV cache with flash attention turned on, the planner's knob when the run
#: has it off (``--no-flash-attn``, or a build before PR #15434 where it was off by default):
#: flash attention drops the n_head x n_ubatch x n_kv f32 KQ matrix from the compute buffer
#: and costs no quality, so it is tried before a quantized KV cache
FA_F16 = "f16+fa"


def kv_ladder(
    runtime: str, *, flash_off: bool = False, pinned: str | None = None
) -> tuple[str, ...]:
    """KV cache types ``runtime`` accepts, best first (with :data:`FA_F16` after f16 when a
    llama.cpp run has flash attention off); only ``pinned`` when the user named one."""
    kvs = _KV_TYPES[runtime]
    if pinned is not None:
        if pinned.strip().lower() not in kvs:
            raise InvalidSettingError(
                f"KV cache type {pinned!r}: the planner uses {', '.join(kvs)} for {runtime}",
                setting="kv",
                value=pinned,
            )
        return (pinned.strip().lower(),)
    if flash_off and runtime == "llama.cpp":
        return (kvs[0], FA_F16, *kvs[1:])
    return kvs


#: the most compact KV cache type a quant *above* the default (an upgrade, proposed only all on
#: the GPU at the asked context) may use. llama.cpp PR #7412 (JohannesGaessler's table,
#: LLaMA-3-8B F16 weights, WikiText-2): a q8_0 K and V cache has KLD 0.000980 vs the F16
#: model, 0.000189 with an f16 cache: +0.0008, below every step between the ladder's weight
#: types (data/quant_quality.json: Q8_0 0.0014, Q6_K 0.0055, Q5_K_M 0.0108, Q5_K_S 0.0166,
#: Q4_K_M 0.0313), so Q6_K with a q8_0 cache beats Q5_K_M with f16 and the quant ranks first.
#: A q4_0 cache (no published figure held) is left to the default quant and below, except
#: where the default quant itself needs it at the asked context (``default_fits``): then an
#: upgrade with the same q4_0 cache is the same KV with better weights, a strictly better plan
#: (review 22: Llama-3.1-8B on an RTX 3060 at 131072 tokens, Q5_K_M + q4_0 fits where the plan
#: was Q4_K_M + q4_0). Every upgrade is larger than the default quant, so where the default
#: needs q4_0 no upgrade fits with q8_0: a q4_0 upgrade is only ever compared with q4_0 plans.
#: vLLM/SGLang upgrades keep the checkpoint's own KV dtype.
_UPGRADE_KV_FLOOR: dict[str, str] = {"llama.cpp": "q8_0", "ollama": "q8_0"}


def upgrade_kvs(
    runtime: str, kvs: Sequence[str], default_fits: Callable[[str], bool] | None = None
) -> tuple[str, ...]:
    """The KV types an upgrade quant may use, best first (see ``_UPGRADE_KV_FLOOR``).
    ``default_fits(kv)``: whether the default quant fits at the asked context with cache ``kv``
    (None: the floor alone); where it does not with the floor's type, every type is allowed."""
    floor = _UPGRADE_KV_FLOOR.get(runtime)
    if floor is None or floor not in kvs:
        return tuple(kvs[:1])
    free = tuple(kvs[: list(kvs).index(floor) + 1])
    if default_fits is None or len(free) == len(kvs) or default_fits(free[-1]):
        return free
    return tuple(kvs)


def llamacpp_flash_off(settings: InferenceSettings) -> bool:
    """Whether a llama.cpp run has flash attention off: ``--no-flash-attn``, or ``-fa`` not
    given on a build whose default was off (before PR #15434, 2025-08-30)."""
    if settings.flash_attn is not None:
        return not settings.flash_attn
    from oomkit.estimate.generations import generation_effect, resolve_generation

    gen = resolve_generation("llama.cpp", settings.runtime_version)
    return not bool(generation_effect(gen, "flash_attn_default", True))


def _gguf_ladder(start: str | None, spec: ModelSpec) -> tuple[tuple[str, ...], int]:
    """(ladder, index of the default start) for a GGUF runtime."""
    from oomkit.quant.llamacpp_ftypes import llamacpp_ftype

    if spec.source == "gguf":
        # a .gguf file runs with the tensor types it holds: the estimators read them from its
        # header whatever quant is named, so the plan proposes the file as it is
        if start is not None:
            raise InvalidSettingError(
                f"--quant {start} does not apply to a .gguf file: llama.cpp runs the tensor types "
                "the file holds; drop --quant (or plan the model by name to compare quants)",
                setting="quant",
                value=start,
            )
        return (CHECKPOINT,), 0
    if start is not None:
        name = llamacpp_ftype(start).name
        if name in GGUF_LADDER:
            ladder = GGUF_LADDER[GGUF_LADDER.index(name) :]
        else:  # a quant outside the ladder (F16, MXFP4_MOE, UD-*): it, then the ladder below
            ladder = (name, *_below(name))
        return ladder, 0
    if spec.quantization is not None and spec.quantization.method == "mxfp4":
        # gpt-oss ships MXFP4 experts; its GGUFs keep them (smaller quants barely shrink it)
        return ("MXFP4_MOE",), 0
    return GGUF_LADDER, GGUF_LADDER.index(GGUF_DEFAULT)


def _below(name: str) -> tuple[str, ...]:
    """Ladder entries with fewer bits per weight than ``name`` (for quants off the ladder)."""
    from oomkit.quant.ggml_types import ggml_type
    from oomkit.quant.llamacpp_ftypes import llamacpp_ftype

    def bpw(q: str) -> float:
        t = ggml_type(llamacpp_ftype(q).default_type)
        return 8 * t.type_size / t.block_size

    mine = bpw(name)
    return tuple(q for q in GGUF_LADDER if bpw(q) < mine)


def quant_ladder(
    runtime: str,
    spec: ModelSpec,
    start: str | None,
    min_quant: str | None,
    published: Collection[str] | None = None,
) -> tuple[tuple[str, ...], int]:
    """(quants to try best first, index of the first one the user would accept by default).

    Entries before the index are *upgrades*: proposed only when they fit on the GPU at the
    asked context with the default KV cache. ``published`` (Ollama, no ``--quant``): the
    quantizations the model's library family publishes (:func:`~oomkit.planner.ollama_tags.
    published_quants`); only those are tried, so the plan's ``FROM`` is a tag ``ollama pull``
    finds (qwen3:8b has Q4_K_M, Q8_0 and F16 only: a Q6_K plan would need an imported GGUF).
    """
    if runtime in ("llama.cpp", "ollama"):
        ladder, default = _gguf_ladder(start, spec)
        if min_quant is not None:
            from oomkit.quant.llamacpp_ftypes import llamacpp_ftype

            floor = llamacpp_ftype(min_quant).name
            if floor in ladder:
                ladder = ladder[: ladder.index(floor) + 1]
        if published is not None and start is None:
            kept = tuple(q for q in ladder if q in published)
            if kept:  # (none published on the ladder: the search stays as it was)
                default = sum(1 for q in ladder[:default] if q in published)
                ladder = kept
        return ladder, min(default, len(ladder) - 1)
    formats = _HF_RUNTIME_FORMATS[runtime]
    if start is not None:
        key = start.strip().lower()
        ladder = formats[formats.index(key) :] if key in formats else (key,)
    elif spec.quantization is not None:
        ladder = (CHECKPOINT,)  # a pre-quantized checkpoint runs as it is
    else:
        ladder = formats
    if min_quant is not None and min_quant.strip().lower() in ladder:
        ladder = ladder[: ladder.index(min_quant.strip().lower()) + 1]
    return ladder, 0


@dataclass(frozen=True, slots=True)
class Candidate:
    """One configuration: the knobs the planner set (None: the runtime's default)."""

    quant: str
    kv: str
    ctx: int
    level: int = LEVEL_GPU
    #: llama.cpp: layers on the GPU (None: all); vLLM: unused
    n_gpu_layers: int | None = None
    n_cpu_moe: int = 0
    tp: int | None = None
    #: vLLM ``--max-num-seqs`` / SGLang ``--max-running-requests`` lowered by the planner
    #: (None: the runtime's default, or the user's own value)
    max_num_seqs: int | None = None
    #: transformers ``attn_implementation`` set by the planner (None: the run's own)
    attn: str | None = None
    #: transformers ``device_map`` set by the planner ("none": no device_map, ``.to("cuda")``)
    device_map: str | None = None

    def apply(self, base: InferenceSettings) -> InferenceSettings:
        """``base`` with this candidate's knobs set."""
        kv_type = "f16" if self.kv == FA_F16 else self.kv
        kv = None if kv_type in ("auto", "f16") and base.cache_type_k is None else kv_type
        flash = base.flash_attn
        if self.kv == FA_F16 or (not flash and self.kv in ("q8_0", "q4_0")):
            flash = True  # llama.cpp: "V cache quantization requires flash_attn"
        ctx = self.ctx
        if (
            base.runtime == "llama.cpp"
            and base.parallel
            and base.parallel > 1
            and not base.kv_unified
        ):
            # the planner's context is per sequence; llama-server's -c is shared by -np slots
            # (split into n_ctx / n_seq per slot; with --kv-unified every slot may use all of
            # it: llama_context n_ctx_seq = kv_unified ? n_ctx : n_ctx / n_seq_max)
            ctx = self.ctx * base.parallel
        seqs = self.max_num_seqs
        batch = base.parallel
        if base.runtime == "transformers" and seqs is not None:
            batch, seqs = seqs, None  # transformers' lever is the generate() batch
        return dataclasses.replace(
            base,
            parallel=batch,
            attn_implementation=self.attn or base.attn_implementation,
            device_map=self.device_map or base.device_map,
            flash_attn=flash,
            quant=None if self.quant == CHECKPOINT else self.quant,
            ctx=ctx,
            cache_type_k=kv,
            cache_type_v=kv,
            n_gpu_layers=self.n_gpu_layers,
            n_cpu_moe=self.n_cpu_moe or None,
            tp=self.tp if self.tp is not None else base.tp,
            max_num_seqs=seqs if seqs is not None else base.max_num_seqs,
        )

    def offload_amount(self, n_layer: int) -> int:
        if self.level == LEVEL_EXPERTS_CPU:
            return self.n_cpu_moe
        if self.level == LEVEL_LAYERS_CPU and self.n_gpu_layers is not None:
            return n_layer + 1 - self.n_gpu_layers
        return 0


#: vLLM runs ``--quantization fp8`` on CUDA GPUs without native FP8 as weight-only W8A16
#: through FP8 Marlin (vllm-project/vllm PR #5975, first in v0.5.1: "Enables FP8 quantization
#: on ... SM 8.0 and 8.7, Ampere"): ``utils/marlin_utils_fp8.py`` ``is_fp8_marlin_supported``
#: is ``current_platform.has_device_capability(80)`` and ``fp8.py`` ``Fp8Config.
#: get_min_capability`` returns 80. ``prepare_fp8_layer_for_marlin`` repacks the FP8 weight
#: into int32 words (the same bytes) with per-channel scales, so the estimate's 1 byte/param
#: fp8 weights price it. MoE layers followed in PR #16850 (Marlin in ``Fp8MoEMethod``,
#: fixed by PR #18026, 2025-05, first in v0.9.0); before it the Triton fused-MoE kernel needed
#: SM 8.9 (vllm#7322: "There is not currently a workaround for this").
_FP8_MARLIN_CC = (8, 0)
_FP8_MARLIN_DENSE = (0, 5, 1)
_FP8_MARLIN_MOE = (0, 9, 0)


def _capability(device: DeviceTarget) -> tuple[int, int] | None:
    cc = (device.compute_capability or "").strip()
    major, _, minor = cc.partition(".")
    if not (major.isdigit() and (minor or "0").isdigit()):
        return None
    return int(major), int(minor or "0")


def cuda_capability(device: DeviceTarget) -> tuple[int, int] | None:
    """``device``'s CUDA compute capability, or None (not an NVIDIA GPU, or not known)."""
    return _capability(device) if device.backend == "cuda" else None


def fp8_marlin_ok(
    runtime: str, gpus: Sequence[DeviceTarget], *, moe: bool, version: str | None
) -> bool:
    """Whether vLLM runs ``--quantization fp8`` weight-only on every one of ``gpus`` (NVIDIA,
    compute capability 8.0+, without native FP8), at release ``version`` (None or a date: the
    newest)."""
    if runtime != "vllm" or not gpus:
        return False
    for d in gpus:
        cc = _capability(d)
        if d.backend != "cuda" or cc is None or cc < _FP8_MARLIN_CC:
            return False
    if version and version.strip():
        from oomkit.estimate.generations import parse_runtime_version

        try:
            when = parse_runtime_version("vllm", version)
        except InvalidSettingError:
            return True
        if isinstance(when, tuple):
            return when >= (_FP8_MARLIN_MOE if moe else _FP8_MARLIN_DENSE)
    return True


def native_precisions(
    ladder: tuple[str, ...],
    gpus: Sequence[DeviceTarget],
    notes: list[str],
    *,
    runtime: str = "",
    moe: bool = False,
    version: str | None = None,
) -> tuple[str, ...]:
    """Hardware-aware formats: bf16 from Ampere (fp16 before: vLLM and transformers cast a
    bf16 checkpoint to fp16 on compute capability < 8.0), fp8 only where the GPU computes
    it natively (Ada, Hopper, Blackwell, MI300) or, for vLLM, where FP8 Marlin runs it
    weight-only (:func:`fp8_marlin_ok`); what changed is appended to ``notes``."""
    known = [d for d in gpus if d.native_dtypes]  # anonymous --vram GPUs: no filter
    if not known:
        return ladder
    out: list[str] = []
    for q in ladder:
        if q == "bf16" and not all("bf16" in d.native_dtypes for d in known):
            notes.append("no native bf16 on this GPU: fp16 weights")
            q = "fp16"
        if q == "fp8" and not all("fp8" in d.native_dtypes for d in known):
            if fp8_marlin_ok(runtime, known, moe=moe, version=version):
                notes.append(
                    "no native fp8 on this GPU: fp8 weights run weight-only (W8A16, FP8 Marlin;"
                    " activations stay 16-bit)"
                )
            elif fp8_marlin_ok(runtime, known, moe=moe, version=None):
                first = ".".join(map(str, _FP8_MARLIN_MOE if moe else _FP8_MARLIN_DENSE))
                what = "MoE layers" if moe else "weights"
                notes.append(
                    f"no native fp8 on this GPU: fp8 weights not proposed (vLLM {version} has no"
                    f" FP8 Marlin for {what}; {first}+ runs them weight-only)"
                )
                continue
            else:
                notes.append("no native fp8 on this GPU: fp8 weights not proposed")
                continue
        out.append(q)
    return tuple(out) or ladder
