"""koboldcpp's command line for a planned llama.cpp configuration.

``-r koboldcpp`` is sized as llama.cpp (koboldcpp bundles it and drives it through the C API:
:data:`oomkit.estimate.llamacpp_outputs.C_API_APPS`), but it is started as ``python
koboldcpp.py`` (``koboldcpp.exe`` on Windows) with flags of its own. The command is written for
koboldcpp 1.102 (:data:`KOBOLDCPP_RELEASE`; LostRuins/koboldcpp ``koboldcpp.py`` at commit
000115dd, ``parser.add_argument`` and ``load_model``), and says so in its first comment line:

* ``--model FILE``;
* ``--usecublas`` (``nargs='*'``, bare means every GPU; 1.102 spells it ``--usecuda``, with
  ``--usecublas``/``--usehipblas`` as aliases): the CUDA library, or the hipBLAS one when only
  that is present (a ROCm build such as YellowRoseCx's fork); ``--usevulkan`` (``nargs='*'``,
  bare means every GPU) for a plan on ``--backend vulkan`` (and Intel cards: no SYCL flag);
  Apple builds use Metal without a flag;
* ``--contextsize N`` (``check_range(int, 256, 262144)``);
* ``--gpulayers N`` (passed to llama.cpp as ``n_gpu_layers``; -1 autodetects, which the plan
  does not want);
* ``--tensor_split R1 R2`` (``nargs='+'``, space separated);
* ``--blasbatchsize N``: 1.102's ``--batchsize``, with ``--blasbatchsize`` kept as an alias,
  ``choices=[-1,16,32,64,128,256,512,1024,2048,4096]`` (1.76 had -1, 32 ... 2048);
  ``gpttype_adapter.cpp`` sets ``n_ubatch = n_batch`` from it;
* mmap: 1.102's ``load_model`` sets ``inputs.use_mmap = args.usemmap`` (``--usemmap``,
  ``store_true``): off unless given. ``--nommap`` is a hidden deprecated flag there (``help=
  argparse.SUPPRESS``, in one mutually exclusive group with ``--usemmap``). 1.76 was the other
  way round (``inputs.use_mmap = (not args.nommap)``, no ``--usemmap``). The plan is sized
  with llama.cpp's mmap on unless it says otherwise, so the command carries ``--usemmap``;
* ``--flashattention`` (``store_true``: off unless given, :func:`oomkit.api` notes it);
* ``--quantkv 0|1|2`` (f16, q8_0, q4_0). 1.102's ``load_model``: with ``--flashattention``
  ``inputs.quant_k = inputs.quant_v = args.quantkv``; without it ``inputs.quant_k =
  args.quantkv``, ``inputs.quant_v = 0`` ("Only K cache can be quantized"). So a cache
  quantized alike for K and V comes with ``--flashattention``, and a q8_0/q4_0 K cache over
  an f16 V cache without flash attention is ``--quantkv`` alone. (1.76 exited with "Using
  --quantkv requires --flashattention" instead.)

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

Settings the plan uses that this parser has no flag for (parallel slots, a K/V pair
``--quantkv`` cannot say), or that the emitter does not carry over (a draft model) get one
comment line each, as the LM Studio emitter does; ``#``
starts a comment in PowerShell too.
"""

from __future__ import annotations

import shlex

from oomkit.spec.settings import InferenceSettings

__all__ = [
    "KOBOLDCPP_BATCH_SIZES",
    "KOBOLDCPP_NAMES",
    "KOBOLDCPP_QUANTKV",
    "KOBOLDCPP_RELEASE",
    "MOECPU_SINCE",
    "koboldcpp_command",
    "koboldcpp_cpu_moe_flags",
]

#: the ``--runtime`` names whose commands are koboldcpp's (sized as llama.cpp)
KOBOLDCPP_NAMES = frozenset({"koboldcpp"})
#: the koboldcpp release whose ``koboldcpp.py`` parser the command is written for (000115dd)
KOBOLDCPP_RELEASE = "1.102"
#: ``--quantkv``'s levels (``choices=[0,1,2]``; gpttype_adapter.cpp: 1 -> GGML_TYPE_Q8_0,
#: 2 -> GGML_TYPE_Q4_0)
KOBOLDCPP_QUANTKV = {"f16": 0, "q8_0": 1, "q4_0": 2}
#: ``--batchsize``/``--blasbatchsize`` choices in 1.102 (16 and 4096 are not in 1.76's)
KOBOLDCPP_BATCH_SIZES = (-1, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
_MAX_CONTEXT = 262144  # check_range(int, 256, 262144)
#: the koboldcpp release that added ``--moecpu`` (and whose ``--overridetensors`` it sits beside)
MOECPU_SINCE = "1.97"
_MOECPU_MAX = 200  # load_model: inputs.moecpu = (200 if args.moecpu > 200 else args.moecpu)


def koboldcpp_cpu_moe_flags(n_cpu_moe: int, override_tensor: tuple[str, ...] | None) -> list[str]:
    """koboldcpp's flags that keep the experts of the first ``n_cpu_moe`` layers on the CPU:
    ``--moecpu N``, or ``--overridetensors RULES`` when ``override_tensor`` moves only some of
    each layer's expert tensors (what ``--moecpu`` would not reproduce;
    :func:`oomkit.planner.cpu_experts.partial_expert_rules`, which llama-server's ``-ot`` uses).

    >>> koboldcpp_cpu_moe_flags(32, None)
    ['--moecpu', '32']
    >>> koboldcpp_cpu_moe_flags(4, ("ffn_(up|down)_exps=CPU", "ffn_norm_exps=CPU"))
    ['--overridetensors', "'ffn_(up|down)_exps=CPU,ffn_norm_exps=CPU'"]
    >>> koboldcpp_cpu_moe_flags(48, ("exps=CPU",))  # every expert tensor: --moecpu says it
    ['--moecpu', '48']
    """
    from oomkit.planner.cpu_experts import partial_expert_rules

    rules = partial_expert_rules(override_tensor)  # the same test as llama-server's -ot
    if rules is not None:
        return ["--overridetensors", shlex.quote(rules)]
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
        if device_kind == "rocm":  # (1.76 lines 351-360) cublas, else the hipBLAS library
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
        if batch in KOBOLDCPP_BATCH_SIZES:
            parts += ["--blasbatchsize", str(batch)]
        else:
            notes.append(f"# batch {batch}: --blasbatchsize takes only {KOBOLDCPP_BATCH_SIZES}")
        if settings.batch_size and settings.ubatch and settings.batch_size != settings.ubatch:
            notes.append(
                f"# koboldcpp runs n_ubatch = n_batch = --blasbatchsize (planned -b "
                f"{settings.batch_size} -ub {settings.ubatch})"
            )
    if settings.mmap is not False:  # 1.102: mmap off unless --usemmap; the plan has it on
        parts.append("--usemmap")
    parts += _quantkv_flags(settings, flash, notes)
    if settings.n_cpu_moe:
        moe = koboldcpp_cpu_moe_flags(settings.n_cpu_moe, settings.override_tensor)
        parts += moe
        notes.append(
            f"# experts of the first {settings.n_cpu_moe} layers on the CPU: {moe[0]} needs "
            f"koboldcpp {MOECPU_SINCE} or newer (older parsers refuse it)"
        )
    if settings.parallel and settings.parallel > 1:
        notes.append(
            f"# {settings.parallel} parallel sequences: koboldcpp serves one at a time "
            "(--multiuser queues requests), so the memory planned for the others is unused"
        )
    if settings.draft_model:
        notes.append(
            "# draft model: sized as llama-server's -md; koboldcpp's --draftmodel is not "
            "written here: run -r llama.cpp"
        )
    release = f"# koboldcpp {KOBOLDCPP_RELEASE}'s flags (koboldcpp.py at 000115dd)"
    if "--usemmap" in parts:
        release += "; a 1.76-era koboldcpp refuses --usemmap (its mmap was on unless --nommap)"
    return "\n".join([release, *notes, " ".join(parts)])


def _quantkv_flags(settings: InferenceSettings, flash: bool, notes: list[str]) -> list[str]:
    """``--flashattention`` and ``--quantkv`` for the plan's flash attention and K/V types, as
    1.102's ``load_model`` reads them (module docstring); a pair it cannot make: a note."""
    kv = (settings.cache_type_k or "f16").lower()
    kv_v = (settings.cache_type_v or kv).lower()
    level = KOBOLDCPP_QUANTKV.get(kv)
    if kv == kv_v and level is not None:  # with flash attention --quantkv sets K and V alike
        if level:
            return ["--flashattention", "--quantkv", str(level)]
        return ["--flashattention"] if flash else []
    if kv_v == "f16" and level and not flash:  # K only: what 1.102 does without FA
        notes.append(
            f"# --quantkv {level} without --flashattention: koboldcpp {KOBOLDCPP_RELEASE} "
            f"quantizes K only ({kv}; V stays f16), as planned"
        )
        return ["--quantkv", str(level)]
    notes.append(
        f"# KV cache {kv}/{kv_v}: --quantkv sets K and V alike to f16, q8_0 or q4_0 (with "
        "--flashattention), or K alone without it; run the llama-server plan (-r llama.cpp) "
        "for this cache"
    )
    return ["--flashattention"] if flash else []
