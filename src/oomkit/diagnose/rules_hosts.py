"""Analysis for the families of :mod:`oomkit.diagnose.parse_hosts` that the generic host-RAM rule
(``rules_serving.analyze_other``) does not answer: a request dropped for lack of KV-cache budget
(OpenVINO GenAI), a device another process already half fills (MindSpore on Ascend), and the
kills of macOS/iOS jetsam and Android's low-memory killer, whose fixes are not Linux's (no
swap file to add; on Apple silicon the GPU's memory is the same RAM) and whose size is the
process's footprint or RSS, not Linux's anon-rss.

The other OS and scheduler kills of that module (cgroup events, Ray, kubelet) carry kind
``killed`` / ``oom_killer`` / ``host_oom`` and are host RAM by the generic rule.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic, size_text
from oomkit.units import k8s_quantity

__all__ = ["analyze_hosts", "pod_oomkilled"]


def pod_oomkilled(e: OomEvent) -> Analysis:
    """A Kubernetes container the kernel killed at its memory limit (``kubectl describe pod``:
    ``Reason: OOMKilled``, ``Exit Code: 137``, ``Limits: memory: <q>``).

    The kubelet sets the container cgroup's ``memory.max`` to ``resources.limits.memory``
    (kubernetes pkg/kubelet/cm ``ResourceConfigForPod``) and the kernel's cgroup OOM killer ends
    the container when its RAM crosses it: host RAM of that pod, settled by the reason itself.
    The levers are the limit and the process's own RAM; swap files and pagefiles are not (a
    Linux pod; the kubelet runs pods without swap by default).
    """
    limit = e.allowed_bytes
    assert limit is not None
    more = limit * 2
    return Analysis(
        cause="host_ram",
        confidence=0.9,
        explanation=f"Kubernetes ended the container with OOMKilled (exit code 137): its RAM "
        f"crossed the pod's resources.limits.memory of {k8s_quantity(limit)} "
        f"({size_text(limit)}), the memory cgroup the kubelet set, so the kernel's OOM killer "
        "ended it. It is the container's host RAM, not the GPU's memory.",
        fixes=(
            Fix(
                title=f"Raise the container's memory limit above {k8s_quantity(limit)}",
                why=f"the container used all of its {k8s_quantity(limit)}; twice that "
                f"({k8s_quantity(more)}) leaves room for loading (the node must have it free).",
                commands=(
                    f"resources: {{limits: {{memory: {k8s_quantity(more)}}}, requests: "
                    f"{{memory: {k8s_quantity(more)}}}}}   # the pod spec's container",
                    f"kubectl set resources deployment/<name> -c <container> "
                    f"--limits=memory={k8s_quantity(more)} --requests=memory={k8s_quantity(more)}",
                ),
                expected_saving_bytes=None,
            ),
            generic(
                "Use less RAM inside the container",
                "weights loaded through a full copy in RAM, or several workers each holding one, "
                "cross the limit first; mmap'd safetensors and streamed loading do not.",
                (
                    "from_pretrained(name, low_cpu_mem_usage=True, device_map='auto', "
                    "torch_dtype='auto')",
                ),
            ),
        ),
    )


def _openvino_kv() -> Analysis:
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.6,
        explanation="OpenVINO GenAI's continuous-batching scheduler dropped the request "
        "(GenerationStatus::IGNORED, 'generation run into out-of-memory condition'): the "
        "prompt plus its generated tokens did not fit the KV-cache budget (cache_size / "
        "num_kv_blocks), which is fixed when the pipeline starts, not the device memory.",
        fixes=(
            generic(
                "Give the KV cache a larger budget",
                "the scheduler's block pool is sized once from cache_size; a sequence longer "
                "than the pool holds is dropped.",
                ("SchedulerConfig.cache_size = 16  # GB", "--cache-size-gb 16"),
            ),
            generic(
                "Shorten the prompt or max_new_tokens",
                "the KV cache a sequence needs is linear in its length.",
                ("max_new_tokens=512",),
            ),
        ),
    )


def _mindspore_half(e: OomEvent) -> Analysis:
    free, total = e.free_bytes, e.total_bytes
    held = f" ({size_text(free)} of {size_text(total)} free)" if free and total else ""
    return Analysis(
        cause="other_process_holding_memory",
        confidence=0.6,
        explanation="MindSpore reserves its memory pool from the device's free memory and "
        f"refuses to start when less than half of it is free{held}: another process (an "
        "earlier run, a data-augmentation worker on the same card) holds the rest.",
        fixes=(
            generic(
                "Stop what else holds the NPU, or run on a free card",
                "the pool is a share of free memory at start-up.",
                ("npu-smi info", "ps -ef | grep python", "export DEVICE_ID=<free card>"),
            ),
        ),
    )


def _own_limit(e: OomEvent) -> bool:
    """A jetsam kill for crossing the process's own limit (``per-process-limit`` cause, or a
    fatal ``EXC_RESOURCE`` hard limit), not for the machine's memory pressure."""
    return e.format == "macos_jetsam_limit" or (e.detail or "") == "jetsam per-process-limit"


def _mobile_kill(e: OomEvent) -> Analysis:
    """macOS/iOS jetsam (xnu ``kern_memorystatus.c``) or Android lmk/lmkd killed the process."""
    who = "the process" if e.pid is None else f"PID {e.pid}"
    who += f" ({e.process_name})" if e.process_name else ""
    held = e.anon_rss_bytes
    smaller = generic(
        "Use less memory: a smaller quant or model, a shorter context",
        (f"the killed process held {size_text(held)}; " if held else "")
        + "weights, KV cache and compute buffers are all in this RAM.",
        ("a 4-bit quant (Q4_K_M) or a smaller model", "-c 4096 / num_ctx 4096"),
    )
    if e.runtime == "android":
        return Analysis(
            cause="host_ram",
            confidence=0.7,
            explanation=f"Android's low-memory killer ended {who} to free memory"
            + (f" ({size_text(held)} of resident memory)" if held else "")
            + ": the device ran short of RAM, which the model shares with every other app.",
            fixes=(
                smaller,
                generic(
                    "Close background apps before loading the model",
                    "lmkd kills by oom_score_adj; fewer cached apps leave the model more RAM.",
                    ("adb shell dumpsys meminfo", "adb shell am kill-all"),
                ),
            ),
        )
    footprint = f", its memory footprint {size_text(held)}" if held else ""
    if _own_limit(e):
        limit = f" ({e.detail})" if e.format == "macos_jetsam_limit" and e.detail else ""
        expl = (
            f"jetsam killed {who} for crossing its own memory limit{limit}{footprint}: the "
            "limit the OS sets for that process, not the machine's RAM running out."
        )
        extra = generic(
            "Raise the process's limit where the platform allows it",
            "iOS apps get a per-app limit; the increased-memory-limit entitlement raises it.",
            ("com.apple.developer.kernel.increased-memory-limit (iOS entitlement)",),
        )
    else:
        expl = (
            f"macOS jetsam killed {who} under memory pressure ({e.detail or 'jetsam'})"
            f"{footprint}: the Mac ran out of RAM; on Apple silicon the GPU's memory is this "
            "same RAM."
        )
        extra = generic(
            "Quit other apps holding memory",
            "jetsam kills when free pages run out; other apps' memory counts against the model.",
            ("memory_pressure", "vm_stat", "Activity Monitor > Memory"),
        )
    return Analysis(cause="host_ram", confidence=0.7, explanation=expl, fixes=(smaller, extra))


def _kubelet(e: OomEvent) -> Analysis:
    """The kubelet evicted the pod (or refused it) because the node ran low on memory."""
    used = e.anon_rss_bytes
    who = f"container {e.process_name}" if e.process_name else "the pod"
    usage = ""
    if used is not None:
        usage = f"; {who} was using {size_text(used)}"
        usage += f" against its {e.detail}" if e.detail else ""
        usage += ", and pods above their request are evicted first"
    request = f"{-(-used // 2**30)}Gi" if used else "<what it uses>"
    what = (
        "evicted the pod"
        if e.format == "kubelet_eviction_memory"
        else "evicted or refused the pod (MemoryPressure)"
    )
    return Analysis(
        cause="host_ram",
        confidence=0.85,
        explanation=f"Kubernetes' kubelet {what}: the node's memory crossed the eviction "
        f"threshold (host RAM, not the GPU){usage}.",
        fixes=(
            Fix(
                title="Request the memory the pod really uses",
                why="the scheduler then places it on a node with that much RAM free, and the "
                "kubelet evicts pods above their request first.",
                commands=(
                    f"resources: {{requests: {{memory: {request}}}, "
                    f"limits: {{memory: {request}}}}}",
                ),
                expected_saving_bytes=None,
                generic=used is None,
            ),
            generic(
                "Load the model without a full copy in host RAM",
                "low_cpu_mem_usage / device_map stream safetensors shards to the GPU.",
                ("from_pretrained(name, low_cpu_mem_usage=True, device_map='auto')",),
            ),
        ),
    )


def analyze_hosts(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis for the families above, or ``None`` for other events."""
    del ctx  # these messages are read on their own
    if e.runtime == "kubernetes" and e.format in (
        "kubelet_eviction_memory",
        "kubelet_memory_pressure",
    ):
        return _kubelet(e)
    if e.runtime in ("macos", "android") and e.kind == "killed":
        return _mobile_kill(e)
    if e.format == "openvino_genai_request_ignored":
        return _openvino_kv()
    if e.format == "mindspore_free_less_than_half":
        return _mindspore_half(e)
    return None
