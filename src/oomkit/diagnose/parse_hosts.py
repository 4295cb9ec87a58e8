"""Memory kills reported by operating systems and cluster schedulers, and runtimes that drop a
request for lack of cache memory, read when no runtime parser matched (issue 9).

Each family is the reporter's own wording, cited to the file that prints it:

* macOS / iOS jetsam (``apple-oss-distributions/xnu:bsd/kern/kern_memorystatus.c``):
  ``memorystatus: killing_specific_process pid <pid> [<name>] (<cause> <priority> ...)
  <footprint>KB - memorystatus_available_pages: <n>`` (also ``killing_top_process``,
  ``killing_highwater_process``, ``killing_idle_process``), and the limit report of
  ``memorystatus_log_exception``: ``EXC_RESOURCE -> <name>[<pid>] exceeded mem limit:
  ActiveHard <n> MB (fatal)``; ``osanalyticshelper`` then writes ``Process <name> [<pid>] killed
  by jetsam reason <cause>``. Only memory causes are kills for memory
  (``memorystatus_kill_cause_name``): ``idle-exit`` is a daemon reaped while idle,
  ``vnode-limit`` / ``disk-space-shortage`` are not memory, and a ``Soft`` limit is
  ``non-fatal`` (a warning, nothing is killed).
* Android's in-kernel low-memory killer (``drivers/staging/android/lowmemorykiller.c``
  ``lowmem_scan``): ``Killing '<comm>' (<pid>), adj <n>, to free <n>kB on behalf of ...``, and
  its userspace successor lmkd (AOSP ``system/memory/lmkd/lmkd.cpp`` ``kill_one_process``):
  ``Kill '<name>' (<pid>), uid <n>, oom_score_adj <n> to free <n>kB rss, <n>kB swap; reason:
  ...`` (ports print ``(pid=<pid>, uid=<n>, oom_score_adj=<n>)``). An app that reads its own
  last exit (``ApplicationExitInfo``, API 30+) logs ``reason=3 (LOW_MEMORY)``
  (``frameworks/base/core/java/android/app/ApplicationExitInfo.java``: ``REASON_LOW_MEMORY = 3``,
  ``toString`` prints ``reason=<n> (<reasonCodeToString>)``): the system killed it to reclaim
  memory (docpost26, heldout51).
* cgroup memory events (``torvalds/linux:mm/memcontrol.c``: v2 ``memory_events_show`` prints
  ``oom <n>`` / ``oom_kill <n>`` / ``oom_group_kill <n>``; v1 ``memory.oom_control`` prints
  ``under_oom <0|1>`` and ``oom_kill <n>``): a count above zero means the cgroup hit its limit
  and the kernel killed in it. A zero count is the normal state (see the generic fallback's
  negatives). Kernels before 4.19 named the cgroup whose limit the kill enforced, ``Task in
  <cgroup> killed as a result of limit of <cgroup>`` (``mm/memcontrol.c``
  ``mem_cgroup_print_oom_info``); containerd's CRI plugin logs the cgroup's OOM event it received,
  ``TaskOOM event &TaskOOM{ContainerID:<id>,...}`` (newer: ``TaskOOM event container_id:"<id>"``;
  ``containerd/containerd:internal/cri/server/events.go``, earlier ``pkg/cri/server/events.go``,
  ``log.Infof("TaskOOM event %+v", e)``): the container's memory limit was hit.
* Ray's memory monitor (``ray-project/ray:src/ray/raylet/node_manager.cc``
  ``CreateOomKillMessageDetails``): ``ray.exceptions.OutOfMemoryError: Task was killed due to the
  node running low on memory.`` and ``<n> worker(s) were killed due to the node running low on
  memory``: Ray kills a worker when the node's host RAM passes ``memory_usage_threshold``.
* Kubernetes' kubelet (``kubernetes/kubernetes:pkg/kubelet/eviction/helpers.go``
  ``nodeConditionMessageFmt``): a pod evicted or refused with ``The node had condition:
  [MemoryPressure].`` (the node's RAM crossed the eviction threshold); and the eviction itself,
  ``nodeLowMessageFmt`` ``The node was low on resource: memory.`` with ``containerMessageFmt``
  ``Container <name> was using <q>, request is <q>, has larger consumption of memory.`` (older
  releases: ``..., which exceeds its request of <q>.``): the container's usage and request.
* OpenVINO GenAI continuous batching (``openvinotoolkit/openvino.genai``): a request that the
  scheduler could not fit into the KV-cache budget ends with ``GenerationStatus::IGNORED``
  (``generation_handle.hpp``: "generation run into out-of-memory condition"); the LLM pipeline
  adapter then asserts ``Got unfinished GenerationStatus``
  (``src/cpp/src/llm/pipeline_continuous_batching_adapter.hpp``), newer releases say ``Request
  <n> was dropped by the scheduler because it did not fit in the available cache budget (out of
  memory)`` (``src/cpp/src/utils.hpp`` ``assert_request_was_scheduled``). The budget is
  ``cache_size`` / ``num_kv_blocks``.
* MindSpore on Ascend at start-up (``mindspore-ai/mindspore``, the Ascend memory adapter):
  ``Malloc device memory failed, free memory size is less than half of total memory size.Device
  <d> Device HBM total size:<n> Device HBM free size:<n> may be other processes occupying this
  card`` (``MOC`` on newer chips): MindSpore reserves a share of the *free* device memory and
  refuses to start when another process holds more than half.
* Batch schedulers' own memory-limit kills: HTCondor's starter puts a job on hold with ``Job has
  gone over memory limit of <n> megabytes. Peak usage: <n> megabytes.`` (cgroup OOM event,
  ``htcondor/htcondor:src/condor_starter.V6.1/vanilla_proc.cpp`` ``outOfMemoryEvent``) or
  ``Docker job has gone over memory limit of <n> Mb`` (``docker_proc.cpp``, the container's
  ``OOMKilled``); IBM Spectrum LSF ends the job with the exit reason ``TERM_MEMLIMIT: job killed
  after reaching LSF memory usage limit.`` (closed source; the exit reasons are listed in LSF's
  "Job exit information" documentation). The limit is the job's host RAM request.
* Node-level killers: kubelet's OOM watcher records the kernel's kills as a ``SystemOOM`` event,
  ``System OOM encountered, victim process: <name>, pid: <pid>``
  (``kubernetes/kubernetes:pkg/kubelet/oom/oom_watcher_linux.go``); systemd-oomd kills a whole
  cgroup, ``Killed <cgroup> due to memory used (<n>) / total (<n>) and swap used ...``
  (``systemd/systemd:src/oom/oomd-util.c``; its memory-pressure kill is read by the generic
  fallback); earlyoom, ``low memory! at or below SIGTERM limits`` then ``sending SIGTERM to
  process <pid> uid <n> "<name>": badness <n>, VmRSS <n> MiB`` (``rfjakob/earlyoom:main.c``,
  ``kill.c``). All three are host RAM.
* ggml's context arena (``ggml-org/ggml:src/ggml.c`` ``ggml_init``): ``GGML_ASSERT(ctx->mem_buffer
  != NULL)`` fails when the host malloc of a context (``ggml_aligned_malloc(mem_size)``) returned
  NULL: host RAM (or the Windows commit limit), whichever backend holds the tensors.

Every pattern is a literal or a bounded repetition: linear time on any line.
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import scan_events
from oomkit.diagnose.sizes import to_bytes, to_int
from oomkit.diagnose.text import Lines, needles_re, window

__all__ = ["JETSAM_MEMORY_CAUSES", "parse_hosts"]

#: ``memorystatus_kill_cause_name`` entries that are a lack of memory (xnu
#: ``kern_memorystatus.c``); ``idle-exit``, ``vnode-limit``, ``disk-space-shortage`` are not.
JETSAM_MEMORY_CAUSES = frozenset(
    {
        "jettisoned",
        "highwater",
        "vm-pageshortage",
        "proc-thrashing",
        "fc-thrashing",
        "per-process-limit",
        "zone-map-exhaustion",
        "vm-compressor-thrashing",
        "vm-compressor-space-shortage",
        "low-swap",
        "sustained-memory-pressure",
        "memory-pressure",
    }
)

_JETSAM_KILL = re.compile(
    r"memorystatus: killing_[a-z_]{1,30}?_process\w{0,12} pid (?P<pid>\d{1,10}) "
    r"\[(?P<name>[^\]\n]{0,100})\] \((?P<cause>[a-z-]{1,40})"
)
_JETSAM_KB = re.compile(r"\)\s{0,4}(?P<kb>\d{1,15}) ?KB\b")
_JETSAM_LIMIT = re.compile(
    r"(?:EXC_RESOURCE -> |memorystatus: )(?P<name>[^\[\n]{1,100})\[(?P<pid>\d{1,10})\] exceeded "
    r"mem limit: (?:Active|Inactive)(?P<kind>Hard|Soft) (?P<mb>\d{1,9}) MB \((?P<fatal>fatal|"
    r"non-fatal)\)"
)
_JETSAM_REASON = re.compile(
    r"Process (?P<name>\S{1,100}) \[(?P<pid>\d{1,10})\] killed by jetsam reason "
    r"(?P<cause>[a-z-]{1,40})"
)
_LOW_SWAP = re.compile(
    r"low swap: killing largest compressed process with pid (?P<pid>\d{1,10}) "
    r"\((?P<name>[^)\n]{0,100})\) and size (?P<mb>\d{1,9}) MB"
)
_MEMCG_TASK = re.compile(
    r"Task in (?P<cg>/\S{0,300}) killed as a result of limit of (?P<limit>/\S{0,300})"
)
_TASK_OOM = re.compile(
    r"TaskOOM event (?:&TaskOOM\{ContainerID:|container_id:\\?\"?)(?P<id>[0-9a-f]{6,64})"
)
_LMK = re.compile(
    r"Killing '(?P<name>[^'\n]{0,100})' \((?P<pid>\d{1,10})\)(?: \(tgid \d{1,10}\))?, adj"
)
_LMKD = re.compile(
    r"Kill '(?P<name>[^'\n]{0,100})' \((?:pid=)?(?P<pid>\d{1,10})(?:\), |, )uid[ =]\d{1,10}, "
    r"oom_score_adj[ =]-?\d{1,5}\)? to free (?P<kb>\d{1,15})kB rss"
)
# ApplicationExitInfo.toString: " reason=" + mReason + " (" + reasonCodeToString(mReason) + ")"
_EXIT_INFO = re.compile(r"\breason=3 \(LOW_MEMORY\)")
_LMK_FREE = re.compile(r"to free (?P<kb>\d{1,15})kB on behalf of")
_CGROUP_EVENT = re.compile(
    r"^\s{0,8}(?P<key>oom_kill|oom_group_kill|under_oom|oom) {1,4}(?P<n>[1-9]\d{0,12})\s{0,8}$"
)
_RAY = re.compile(
    r"(?:(?P<n>\d{1,6}) worker\(s\) were|Task was|Actor was|Worker was|task was|were) killed due "
    r"to the node running low on memory"
)
# kubelet eviction / admission (kubernetes/kubernetes:pkg/kubelet/eviction/helpers.go
# nodeConditionMessageFmt): "The node had condition: [MemoryPressure]. "
_KUBELET_PRESSURE = re.compile(r"The node had condition: \[[A-Za-z, ]{0,80}MemoryPressure")
_KUBELET_LOW = re.compile(r"The node was low on resource: memory\b")
_KUBELET_CONTAINER = re.compile(
    r"Container (?P<name>[\w.-]{1,100}) was using (?P<used>\d{1,12}(?:\.\d{1,6})?)"
    r"(?P<used_u>Ki|Mi|Gi|Ti)?,? (?:request is|which exceeds its request of) "
    r"(?P<req>\d{1,12}(?:\.\d{1,6})?)(?P<req_u>Ki|Mi|Gi|Ti)?"
)
_OV_STATUS = re.compile(r"Got unfinished GenerationStatus")
_OV_DROPPED = re.compile(
    r"was dropped by the scheduler because it did not fit in the available cache budget"
)
_MS_HALF = re.compile(
    r"free memory size is less than half of total memory size\.? ?Device (?P<dev>\d{1,3}) "
    r"Device (?:HBM|MOC) total size: ?(?P<total>\d{1,20}) Device (?:HBM|MOC) free size: ?"
    r"(?P<free>\d{1,20})",
    re.IGNORECASE,
)
_CONDOR = re.compile(
    r"[Jj]ob has gone over memory limit of (?P<mb>\d{1,9}) (?:megabytes|Mb)"
    r"(?:\. Peak usage: (?P<peak>\d{1,9}) megabytes)?"
)
_LSF = re.compile(r"TERM_MEMLIMIT: job killed after reaching LSF memory usage limit")
# Dask's nanny terminating a worker above its memory limit (dask/distributed:
# distributed/worker_memory.py NannyMemoryManager.memory_monitor, "Worker %s (pid=%s) exceeded
# %d%% memory budget. Restarting...", older distributed/nanny.py "Worker exceeded %d%% memory
# budget. Restarting"); not its 80 % "Pausing worker" warning, where nothing is killed
_DASK_NANNY = re.compile(
    r"Worker (?:\S{1,200} )?(?:\(pid=(?P<pid>\d{1,10})\) )?exceeded (?P<pct>\d{1,3})% memory "
    r"budget\. Restarting"
)
# ggml's context arena (ggml-org/ggml:src/ggml.c ggml_init: ``ctx->mem_buffer = params.mem_buffer
# ? params.mem_buffer : ggml_aligned_malloc(mem_size); GGML_ASSERT(ctx->mem_buffer != NULL);``):
# the host malloc of a context's metadata/arena returned NULL. 2023 ggml prints "GGML_ASSERT:
# ggml.c:4411: ctx->mem_buffer != NULL", current ggml "ggml.c:1685: GGML_ASSERT(ctx->mem_buffer
# != NULL) failed"; the arena is always host RAM, whatever backend holds the tensors
_GGML_INIT = re.compile(r"\bGGML_ASSERT\b.{0,300}?\bctx->mem_buffer != NULL\b")
# the node-level killers: kubelet's OOM watcher reads the kernel's kills from /dev/kmsg and
# records a SystemOOM event (kubernetes/kubernetes:pkg/kubelet/oom/oom_watcher_linux.go: "System
# OOM encountered" + ", victim process: %s, pid: %d"); systemd-oomd kills a whole cgroup when
# the system's memory and swap are both nearly used (systemd/systemd:src/oom/oomd-util.c: "Killed
# %s due to memory used (%lu) / total (%lu) and swap used (%lu) / total (%lu) being more than
# %.2f%%", newer "Marked %s for killing due to ..."); earlyoom signals the largest process when
# available RAM and swap fall below its limits (rfjakob/earlyoom:main.c "low memory! at or below
# SIGTERM limits: mem %, swap %", kill.c "sending SIGTERM to process %d uid %d \"%s\": badness %d,
# VmRSS %lld MiB", newer "oom_score %d, oom_score_adj %d, VmRSS ...")
_KUBELET_SYSTEM_OOM = re.compile(
    r"\bSystem OOM encountered\b(?:, victim process: (?P<name>[^,\n]{1,100})(?:, pid: "
    r"(?P<pid>\d{1,10}))?)?"
)
_OOMD_USED = re.compile(
    r"(?:Killed|Marked) (?P<cg>\S{1,400}) (?:for killing )?due to memory used \((?P<used>\d{1,20})"
    r"\) / total \((?P<total>\d{1,20})\)"
)
_EARLYOOM_LOW = re.compile(r"low memory! at or below SIG(?:TERM|KILL) limits")
_EARLYOOM_KILL = re.compile(
    r"sending SIG(?:TERM|KILL) to process (?P<pid>\d{1,10}) uid \d{1,10} \"(?P<name>[^\"\n]{0,100})"
    r"\": (?:badness|oom_score) -?\d{1,6}(?:, oom_score_adj -?\d{1,5})?, VmRSS (?P<mib>\d{1,9}) MiB"
)
_PREFILTER = needles_re(
    (
        "System OOM encountered",
        "due to memory used (",
        "at or below SIG",
        "sending SIG",
        "gone over memory limit",
        "TERM_MEMLIMIT",
        "memory budget",
        "memorystatus:",
        "low swap: killing",
        "killed as a result of limit of",
        "TaskOOM event",
        "exceeded mem limit",
        "killed by jetsam",
        "Killing '",
        "Kill '",
        "(LOW_MEMORY)",
        "oom",
        "running low on memory",
        "MemoryPressure",
        "low on resource: memory",
        "GenerationStatus",
        "available cache budget",
        "less than half of total memory",
        "mem_buffer != NULL",
    )
)


def _ev(runtime: str, kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=text[:600], **kw)


def _kib(text: str) -> int | None:
    value = to_int(text)
    return value * 1024 if value is not None else None


def _apple(line: str, n: int) -> OomEvent | None:
    m = _JETSAM_KILL.search(line) if "memorystatus: killing_" in line else None
    if m is not None and m["cause"] in JETSAM_MEMORY_CAUSES:
        kb = _JETSAM_KB.search(line, m.end())
        return _ev(
            "macos",
            "killed",
            "macos_jetsam_kill",
            line,
            n,
            pid=int(m["pid"]),
            process_name=m["name"] or None,
            anon_rss_bytes=_kib(kb["kb"]) if kb else None,
            detail=f"jetsam {m['cause']}",
        )
    m2 = _JETSAM_LIMIT.search(line) if "exceeded mem limit" in line else None
    if m2 is not None and m2["fatal"] == "fatal":
        return _ev(
            "macos",
            "killed",
            "macos_jetsam_limit",
            line,
            n,
            pid=int(m2["pid"]),
            process_name=m2["name"].strip() or None,
            detail=f"per-process memory limit {m2['mb']} MB",
        )
    m4 = _LOW_SWAP.search(line) if "low swap: killing" in line else None
    if m4 is not None:
        return _ev(
            "macos",
            "killed",
            "macos_low_swap_kill",
            line,
            n,
            pid=int(m4["pid"]),
            process_name=m4["name"] or None,
            anon_rss_bytes=int(m4["mb"]) << 20,
            detail="jetsam low-swap: the largest compressed process",
        )
    m3 = _JETSAM_REASON.search(line) if "killed by jetsam" in line else None
    if m3 is not None and m3["cause"] in JETSAM_MEMORY_CAUSES:
        return _ev(
            "macos",
            "killed",
            "macos_jetsam_kill",
            line,
            n,
            pid=int(m3["pid"]),
            process_name=m3["name"],
            detail=f"jetsam {m3['cause']}",
        )
    return None


def _event(lines: Lines, i: int, line: str) -> OomEvent | None:
    n = lines.number[i]
    apple = _apple(line, n)
    if apple is not None:
        return apple
    m = _LMK.search(line) if "Killing '" in line else None
    if m is not None:
        freed = _LMK_FREE.search(window(lines, i, max_lines=2))
        return _ev(
            "android",
            "killed",
            "android_lowmemorykiller",
            line,
            n,
            pid=int(m["pid"]),
            process_name=m["name"] or None,
            anon_rss_bytes=_kib(freed["kb"]) if freed else None,
        )
    m4 = _LMKD.search(line) if "Kill '" in line else None
    if m4 is not None:
        return _ev(
            "android",
            "killed",
            "android_lmkd",
            line,
            n,
            pid=int(m4["pid"]),
            process_name=m4["name"] or None,
            anon_rss_bytes=_kib(m4["kb"]),
        )
    if "(LOW_MEMORY)" in line and _EXIT_INFO.search(line):
        return _ev("android", "killed", "android_exit_info_low_memory", line, n)
    m2 = _CGROUP_EVENT.search(line) if "oom" in line else None
    if m2 is not None:
        return _ev(
            "linux",
            "oom_killer",
            "cgroup_memory_events",
            line,
            n,
            cgroup=True,
            detail=f"{m2['key']} {m2['n']}",
        )
    if "MemoryPressure" in line and _KUBELET_PRESSURE.search(line):
        return _ev("kubernetes", "host_oom", "kubelet_memory_pressure", line, n)
    if "low on resource: memory" in line and _KUBELET_LOW.search(line):
        c = _KUBELET_CONTAINER.search(window(lines, i, max_lines=2))
        used = to_bytes(c["used"], c["used_u"] or "b", "kubernetes") if c else None
        return _ev(
            "kubernetes",
            "host_oom",
            "kubelet_eviction_memory",
            line,
            n,
            process_name=c["name"] if c else None,
            anon_rss_bytes=used,
            # the pod's scheduling request, as printed (not an allocation: requested_bytes)
            detail=f"request {c['req']}{c['req_u'] or ''}" if c else None,
        )
    if "running low on memory" in line and _RAY.search(line):
        return _ev("ray", "host_oom", "ray_memory_monitor_kill", line, n)
    if ("GenerationStatus" in line and _OV_STATUS.search(line)) or (
        "available cache budget" in line and _OV_DROPPED.search(line)
    ):
        return _ev(
            "openvino",
            "kv_cache_full",
            "openvino_genai_request_ignored",
            line,
            n,
            stage="kv_cache",
        )
    found = _schedulers(line, n)
    if found is not None:
        return found
    return _node_killer(line, n)


def _node_killer(line: str, n: int) -> OomEvent | None:
    """kubelet's SystemOOM event, systemd-oomd's and earlyoom's kills, a memory cgroup's kill
    and containerd's OOM event (see the patterns)."""
    m0 = _MEMCG_TASK.search(line) if "killed as a result of limit of" in line else None
    if m0 is not None:
        return _ev(
            "linux",
            "host_oom",
            "memcg_task_killed",
            line,
            n,
            cgroup=True,
            detail=m0["limit"][-120:],
        )
    m0 = _TASK_OOM.search(line) if "TaskOOM event" in line else None
    if m0 is not None:
        return _ev(
            "linux",
            "host_oom",
            "containerd_task_oom",
            line,
            n,
            cgroup=True,
            detail=f"container {m0['id'][:12]} hit its memory limit",
        )
    m = _KUBELET_SYSTEM_OOM.search(line) if "System OOM" in line else None
    if m is not None:
        return _ev(
            "kubernetes",
            "host_oom",
            "kubelet_system_oom",
            line,
            n,
            pid=int(m["pid"]) if m["pid"] else None,
            process_name=m["name"],
        )
    m = _OOMD_USED.search(line) if "due to memory used" in line else None
    if m is not None:
        return _ev(
            "linux",
            "host_oom",
            "systemd_oomd_kill",
            line,
            n,
            cgroup=True,
            total_bytes=to_int(m["total"]),
            process_in_use_bytes=to_int(m["used"]),
            detail=m["cg"][-120:],
        )
    m = _EARLYOOM_KILL.search(line) if "sending SIG" in line else None
    if m is not None:
        return _ev(
            "linux",
            "killed",
            "earlyoom_kill",
            line,
            n,
            pid=int(m["pid"]),
            process_name=m["name"] or None,
            anon_rss_bytes=int(m["mib"]) << 20,
        )
    if "at or below SIG" in line and _EARLYOOM_LOW.search(line):
        return _ev("linux", "host_oom", "earlyoom_low_memory", line, n)
    return None


def _schedulers(line: str, n: int) -> OomEvent | None:
    """HTCondor's, LSF's and Dask's memory-limit kills, ggml's host arena, MindSpore's half
    rule."""
    m4 = _CONDOR.search(line) if "gone over memory limit" in line else None
    if m4 is not None:
        peak = m4["peak"]
        return _ev(
            "htcondor",
            "host_oom",
            "htcondor_memory_limit_hold",
            line,
            n,
            allowed_bytes=int(m4["mb"]) << 20,
            process_in_use_bytes=int(peak) << 20 if peak else None,
        )
    if "TERM_MEMLIMIT" in line and _LSF.search(line):
        return _ev("lsf", "host_oom", "lsf_term_memlimit", line, n)
    m5 = _DASK_NANNY.search(line) if "memory budget" in line else None
    if m5 is not None:
        return _ev(
            "dask",
            "host_oom",
            "dask_nanny_memory_restart",
            line,
            n,
            pid=int(m5["pid"]) if m5["pid"] else None,
        )
    if "mem_buffer != NULL" in line and _GGML_INIT.search(line):
        return _ev(
            "ggml",
            "host_oom",
            "ggml_init_mem_buffer_null",
            line,
            n,
            detail="ggml_init: the context's host malloc returned NULL",
        )
    m3 = _MS_HALF.search(line) if "less than half" in line else None
    if m3 is not None:
        return _ev(
            "mindspore",
            "device_busy",
            "mindspore_free_less_than_half",
            line,
            n,
            device=int(m3["dev"]),
            total_bytes=to_int(m3["total"]),
            free_bytes=to_int(m3["free"]),
            stage="startup",
            detail="Malloc device memory: free < half of total",
        )
    return None


def parse_hosts(lines: Lines) -> list[OomEvent]:
    """Events of the families in the module docstring (every match, in log order). Never raises.

    The caller runs this only when no specific parser found an event.
    """
    return scan_events(lines, _PREFILTER, lambda ls, i: _event(ls, i, ls.cleaned(i)))
