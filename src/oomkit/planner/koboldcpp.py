"""koboldcpp's command line for a planned llama.cpp configuration.

``-r koboldcpp`` is sized as llama.cpp (koboldcpp bundles it and drives it through the C API:
:data:`oomkit.estimate.llamacpp_outputs.C_API_APPS`), but it is started as ``python
koboldcpp.py`` (``koboldcpp.exe`` on Windows) with flags of its own. Read from LostRuins/koboldcpp
``koboldcpp.py`` (version 1.76, commit 2da346a, ``parser.add_argument``):

* ``--model FILE`` (line 4405);
* ``--usecublas`` (4416, ``nargs='*'``, bare means every GPU): the CUDA library, or the hipBLAS
  one when only that is present (lines 351-360: a ROCm build such as YellowRoseCx's fork);
  ``--usevulkan`` (4417, ``nargs='*'``, bare means every GPU) for a plan on ``--backend
  vulkan`` (and Intel cards: no SYCL flag); Apple builds use Metal without a flag;
* ``--contextsize N`` (4420, ``check_range(int, 256, 262144)``);
* ``--gpulayers N`` (4421, passed to llama.cpp as ``n_gpu_layers``; -1 autodetects, which the
  plan does not want);
* ``--tensor_split R1 R2`` (4422, ``nargs='+'``, space separated);
* ``--blasbatchsize N`` (4427, choices -1, 32 ... 2048, default 512); ``gpttype_adapter.cpp``
  sets ``n_ubatch = n_batch`` from it (``kcpp_data->n_ubatch = kcpp_data->n_batch``);
* ``--nommap`` (4431);
* ``--flashattention`` (4451, ``store_true``: off unless given, :func:`oomkit.api` notes it);
* ``--quantkv 0|1|2`` (4452: f16, q8_0, q4_0 for K and V alike, ``inputs.quant_k =
  inputs.quant_v``); it "requires Flash Attention": koboldcpp exits with "Using --quantkv
  requires --flashattention" otherwise (line 3870), so a quantized cache always comes with it.

Experts on the CPU (llama.cpp ``--n-cpu-moe N``) are ``--moecpu N``: absent from 1.76/1.77
(2da346a, 94a5a27), added in koboldcpp 1.97 (release notes: "Allow MoE layers to be easily kept
on CPU with --moecpu (layercount) flag"), read at 1.102 (commit 000115dd, ``advparser.add_argument(
"--moecpu","--n-cpu-moe","-ncmoe", ..., help="Keep the Mixture of Experts (MoE) weights of the
first N layers in the CPU ...", nargs='?', const=999, type=int, default=0)``; ``load_model``
passes ``inputs.moecpu = min(moecpu, 200)`` to the bundled llama.cpp, which adds the same
``blk.i.ffn_(up|down|gate)_exps`` -> CPU overrides as llama-server's option). Rules that move only
some expert tensors (``-ot 'ffn_(up|down)_exps=CPU'``, kept in ``settings.override_tensor``) go
through ``--overridetensors``/``-ot`` (same file: "tensor_name_regex_pattern=buffer_type, same as
in llama.cpp", passed through as one string), comma-joined as llama.cpp's ``-ot`` takes them.

Settings the plan uses that this parser has no flag for (parallel slots, a draft model, a K/V
type other than f16/q8_0/q4_0) get one comment line each, as the LM Studio emitter does; ``#``
starts a comment in PowerShell too.
"""

from __future__ import annotations

import shlex

from oomkit.spec.settings import InferenceSettings

__all__ = [
    "KOBOLDCPP_NAMES",
    "KOBOLDCPP_QUANTKV",
    "MOECPU_SINCE",
    "koboldcpp_command",
    "koboldcpp_cpu_moe_flags",
]

#: the ``--runtime`` names whose commands are koboldcpp's (sized as llama.cpp)
KOBOLDCPP_NAMES = frozenset({"koboldcpp"})
#: ``--quantkv``'s levels (koboldcpp.py line 4452; gpttype_adapter.cpp: 1 -> GGML_TYPE_Q8_0,
#: 2 -> GGML_TYPE_Q4_0)
KOBOLDCPP_QUANTKV = {"f16": 0, "q8_0": 1, "q4_0": 2}
_BLAS_BATCH_SIZES = (-1, 32, 64, 128, 256, 512, 1024, 2048)
_MAX_CONTEXT = 262144  # check_range(int, 256, 262144)
#: the koboldcpp release that added ``--moecpu`` (and whose ``--overridetensors`` it sits beside)
MOECPU_SINCE = "1.97"
_MOECPU_MAX = 200  # load_model: inputs.moecpu = (200 if args.moecpu > 200 else args.moecpu)


def koboldcpp_cpu_moe_flags(n_cpu_moe: int, override_tensor: tuple[str, ...] | None) -> list[str]:
    """koboldcpp's flags that keep the experts of the first ``n_cpu_moe`` layers on the CPU:
    ``--moecpu N``, or ``--overridetensors RULES`` when ``override_tensor`` moves only some of
    each layer's expert tensors (what ``--moecpu`` would not reproduce).

    >>> koboldcpp_cpu_moe_flags(32, None)
    ['--moecpu', '32']
    >>> koboldcpp_cpu_moe_flags(4, ("ffn_(up|down)_exps=CPU", "ffn_norm_exps=CPU"))
    ['--overridetensors', "'ffn_(up|down)_exps=CPU,ffn_norm_exps=CPU'"]
    """
    if override_tensor:
        return ["--overridetensors", shlex.quote(",".join(override_tensor))]
    return ["--moecpu", str(min(n_cpu_moe, _MOECPU_MAX))]


def koboldcpp_command(
    settings: InferenceSettings,
    gguf: str,
    n_layers: int,
    flash: bool,
    *,
    device_kind: str = "cuda",
    os: str | None = None,
) -> str:
    """The lines that start ``settings`` in koboldcpp: ``gguf`` is the planned file,
    ``n_layers`` the offloadable layer count (blocks + output), ``flash`` whether the estimate
    ran with flash attention, ``device_kind`` the GPUs' backend (``cuda``, ``rocm``,
    ``vulkan``, ``metal``/``mps``), ``os`` ``windows`` for ``koboldcpp.exe``."""
    notes: list[str] = []
    program = ["koboldcpp.exe"] if os == "windows" else ["python", "koboldcpp.py"]
    parts = [*program, "--model", shlex.quote(gguf)]
    if device_kind in ("cuda", "rocm"):
        parts.append("--usecublas")
        if device_kind == "rocm":  # koboldcpp.py lines 351-360: cublas, else the hipBLAS lib
            notes.append(
                "# ROCm: --usecublas loads koboldcpp_hipblas when there is no CUDA library (a "
                "hipBLAS build, e.g. YellowRoseCx/koboldcpp-rocm); mainline builds: plan with "
                "--backend vulkan (--usevulkan)"
            )
    elif device_kind in ("vulkan", "xpu"):
        parts.append("--usevulkan")
        if device_kind == "xpu":
            notes.append("# Intel: koboldcpp.py has no SYCL flag; --usevulkan (sized as SYCL)")
    ctx = settings.ctx or 4096
    parts += ["--contextsize", str(ctx)]
    if ctx > _MAX_CONTEXT:
        notes.append(f"# --contextsize above {_MAX_CONTEXT} is refused by koboldcpp.py's parser")
    ngl = settings.n_gpu_layers
    parts += ["--gpulayers", str(n_layers if ngl is None or ngl > n_layers else ngl)]
    if settings.tensor_split:
        parts += ["--tensor_split", *(f"{r:g}" for r in settings.tensor_split)]
    batch = settings.ubatch or settings.batch_size
    if batch is not None:
        if batch in _BLAS_BATCH_SIZES:
            parts += ["--blasbatchsize", str(batch)]
        else:
            notes.append(f"# batch {batch}: --blasbatchsize takes only {_BLAS_BATCH_SIZES}")
        if settings.batch_size and settings.ubatch and settings.batch_size != settings.ubatch:
            notes.append(
                f"# koboldcpp runs n_ubatch = n_batch = --blasbatchsize (planned -b "
                f"{settings.batch_size} -ub {settings.ubatch})"
            )
    if settings.mmap is False:
        parts.append("--nommap")
    kv = (settings.cache_type_k or "f16").lower()
    kv_v = (settings.cache_type_v or kv).lower()
    level = KOBOLDCPP_QUANTKV.get(kv) if kv == kv_v else None
    if flash or level:
        parts.append("--flashattention")  # --quantkv requires it (koboldcpp.py line 3870)
    if level:
        parts += ["--quantkv", str(level)]
    elif level is None:
        notes.append(
            f"# KV cache {kv}/{kv_v}: --quantkv sets K and V alike to f16, q8_0 or q4_0 only; "
            "run the llama-server plan (-r llama.cpp) for this cache"
        )
    if settings.n_cpu_moe:
        parts += koboldcpp_cpu_moe_flags(settings.n_cpu_moe, settings.override_tensor)
        notes.append(
            f"# experts of the first {settings.n_cpu_moe} layers on the CPU: "
            f"{'--overridetensors' if settings.override_tensor else '--moecpu'} needs "
            f"koboldcpp {MOECPU_SINCE} or newer (older parsers refuse it)"
        )
    if settings.parallel and settings.parallel > 1:
        notes.append(
            f"# {settings.parallel} parallel sequences: koboldcpp serves one at a time "
            "(--multiuser queues requests), so the memory planned for the others is unused"
        )
    if settings.draft_model:
        notes.append("# draft model: no flag in koboldcpp.py 1.76's parser; run -r llama.cpp")
    return "\n".join([*notes, " ".join(parts)])
