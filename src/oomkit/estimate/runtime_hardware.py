"""Whether a runtime runs on the GPUs named at all: the hardware side of its start-up checks.

* vLLM and SGLang have no Apple (Metal) backend and are not modelled on a CPU-only target:
  refused (:func:`runtime_hardware_refusal`, :func:`check_runtime_hardware`);
* vLLM's release wheels carry no kernels below compute capability 7.0: caveated, not refused
  (:func:`vllm_kernel_caveat`).

Shared by :func:`oomkit.estimate.checks.check_run` and the planner, so a plan never prints a
command estimate refuses.
"""

from __future__ import annotations

from oomkit.errors import InvalidSettingError
from oomkit.spec.hardware import Hardware

__all__ = [
    "VLLM_MIN_COMPUTE_CAPABILITY",
    "check_runtime_hardware",
    "runtime_hardware_refusal",
    "vllm_kernel_caveat",
]

#: the oldest NVIDIA GPU vLLM's CUDA builds run on. Its installation docs of every release
#: list "GPU: compute capability 7.0 or higher (e.g., V100, T4, RTX20xx, A100, L4, H100,
#: etc.)" (docs/getting_started/installation.rst, v0.3-v0.6; gpu.cuda.inc.md since, which
#: later raised it to 7.5): its kernels are not compiled for Pascal (P40, P100, GTX 10xx), so
#: `vllm serve` stops with "no kernel image is available for execution on the device".
VLLM_MIN_COMPUTE_CAPABILITY = 7.0


def runtime_hardware_refusal(hardware: Hardware, runtime: str) -> str | None:
    """Why ``runtime`` cannot run on these GPUs at all, or None: vLLM/SGLang on an Apple GPU
    (no Metal backend). Shared by :func:`check_run` and the planner, so a plan never prints a
    command estimate refuses. vLLM below compute capability 7.0 is not refused but caveated
    (:func:`vllm_kernel_caveat`): it runs from source builds and community forks."""
    if runtime not in ("vllm", "sglang"):
        return None
    name = "vLLM" if runtime == "vllm" else "SGLang"
    if any(d.backend == "metal" for d in hardware.devices):
        return (
            f"{name} does not run on Apple GPUs (no Metal backend); use --runtime llama.cpp, "
            "ollama or transformers"
        )
    return None


def vllm_kernel_caveat(hardware: Hardware, runtime: str) -> str | None:
    """A note for vLLM on an NVIDIA GPU below ``VLLM_MIN_COMPUTE_CAPABILITY`` (a GPU whose
    capability is unknown, as ``--vram`` gives, gets none), else None.

    vLLM's installation docs of every release: "GPU: compute capability 7.0 or higher"; its
    release wheels carry no sm_60/sm_61 kernels ("no kernel image is available for execution on
    the device"). Such cards still run vLLM from a source build with their arch or a community
    fork (the pascal-pkgs-ci builds; vllm#6567 ran 0.5.1 on two Tesla P40s; verdict runs of
    heldout16/17), so the run is estimated and this is said, not refused; the planner leaves
    vLLM out where it picks the runtime itself (``-r any``, ``gpus --for``, ``models --fits``).
    """
    if runtime != "vllm":
        return None
    for d in hardware.devices:
        if d.backend != "cuda" or not d.compute_capability:
            continue
        try:
            cc = float(d.compute_capability)
        except ValueError:
            continue
        if cc < VLLM_MIN_COMPUTE_CAPABILITY:
            return (
                f"vLLM's release wheels need compute capability 7.0 or higher (its installation "
                f"docs); {d.name} has compute capability {d.compute_capability}: this run needs "
                "a source build for that arch or a community fork (e.g. pascal-pkgs-ci); the "
                "memory is sized as upstream vLLM's"
            )
    return None


def check_runtime_hardware(hardware: Hardware, runtime: str) -> tuple[int, tuple[str, ...]]:
    """The GPUs (non-CPU devices) vLLM/SGLang will use, and the notes on them.

    Raises:
        InvalidSettingError: an Apple GPU (:func:`runtime_hardware_refusal`) or no GPU at all.
    """
    name = "vLLM" if runtime == "vllm" else "SGLang"
    refusal = runtime_hardware_refusal(hardware, runtime)
    if refusal is not None:
        raise InvalidSettingError(refusal, setting="runtime", value=runtime)
    caveat = vllm_kernel_caveat(hardware, runtime)
    n_gpus = sum(1 for d in hardware.devices if d.backend != "cpu")
    if n_gpus == 0:
        raise InvalidSettingError(
            f"{name} on a CPU-only target is not modelled (its CPU backend sizes memory "
            "differently); name a GPU, or use --runtime llama.cpp, ollama or transformers",
            setting="runtime",
            value=runtime,
        )
    return n_gpus, (caveat,) if caveat else ()
