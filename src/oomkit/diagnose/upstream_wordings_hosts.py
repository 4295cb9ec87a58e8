"""Harvested OOM wordings of operating systems' memory killers, cluster schedulers and the
inference runtimes added in issue 9's sixth widening (see :mod:`oomkit.diagnose.upstream_wordings`;
parsed by :mod:`oomkit.diagnose.parse_hosts` and the generic fallback).
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["HOSTS", "HOSTS_NEAR_MISSES"]

_XNU = "apple-oss-distributions/xnu:bsd/kern/kern_memorystatus.c"
_OV = "openvinotoolkit/openvino.genai:src/cpp/src"

HOSTS: tuple[Wording, ...] = (
    _w(
        "macos",
        f"{_XNU} (memorystatus_kill_specific_process; cause = memorystatus_kill_cause_name)",
        "%lu.%03d memorystatus: killing_specific_process pid %d [%s] (%s %d %llus rf:%s) %lluKB "
        "- memorystatus_available_pages: %llu",
        "kernel: 1401.082 memorystatus: killing_specific_process pid 449 [python3.11] "
        "(per-process-limit 3 12s rf:-) 2331079KB - memorystatus_available_pages: 50117",
    ),
    _w(
        "macos",
        f"{_XNU} (memorystatus_kill_top_process: the system-wide page shortage)",
        "%lu.%03d memorystatus: killing_top_process pid %d [%s] (%s %d) %lluKB - "
        "memorystatus_available_pages: %llu",
        "kernel: 8810.416 memorystatus: killing_top_process pid 901 [ollama] (vm-pageshortage 0) "
        "31457280KB - memorystatus_available_pages: 1204",
    ),
    _w(
        "macos",
        f"{_XNU} (memorystatus_log_exception)",
        "EXC_RESOURCE -> %s[%d] exceeded mem limit: %s%s %d MB (%s)",
        "kernel: EXC_RESOURCE -> LM Studio Helper[4410] exceeded mem limit: ActiveHard 3072 MB "
        "(fatal)",
    ),
    _w(
        "macos",
        "macOS / iOS osanalyticshelper (closed source; logged after the kernel's jetsam line)",
        "Process %s [%d] killed by jetsam reason %s",
        "osanalyticshelper: Process python3 [1452] killed by jetsam reason per-process-limit",
    ),
    _w(
        "android",
        "torvalds/linux (<= 4.12):drivers/staging/android/lowmemorykiller.c (lowmem_scan)",
        "Killing '%s' (%d), adj %hd,\\n   to free %ldkB on behalf of '%s' (%d) because\\n   "
        "cache %ldkB is below limit %ldkB for oom_score_adj %hd",
        "lowmemorykiller: Killing 'com.termux' (8123), adj 900,\n   to free 3145728kB on behalf "
        "of 'kswapd0' (97) because\n   cache 112340kB is below limit 184320kB for oom_score_adj "
        "900",
    ),
    _w(
        "android",
        "AOSP system/memory/lmkd/lmkd.cpp (kill_one_process)",
        "Kill '%s' (%d), uid %d, oom_score_adj %d to free %ldkB rss, %ldkB swap; reason: %s",
        "lowmemorykiller: Kill 'com.termux' (8123), uid 10231, oom_score_adj 900 to free "
        "3145728kB rss, 0kB swap; reason: low watermark is breached",
    ),
    _w(
        "linux",
        "torvalds/linux:mm/memcontrol.c (memory_events_show: cgroup v2 memory.events)",
        "oom %lu\\noom_kill %lu",
        "$ cat /sys/fs/cgroup/system.slice/llm.service/memory.events\nlow 0\nhigh 0\nmax 1532\n"
        "oom 3\noom_kill 3",
    ),
    _w(
        "linux",
        "torvalds/linux:mm/memcontrol.c (mem_cgroup_oom_control_read: cgroup v1 "
        "memory.oom_control)",
        "oom_kill_disable %d\\nunder_oom %d\\noom_kill %lu",
        "oom_kill_disable 0\nunder_oom 0\noom_kill 1",
    ),
    _w(
        "docker",
        "moby/moby:api/types/container (State.OOMKilled, docker inspect)",
        '"OOMKilled": %t',
        '"State": {"Status": "exited", "Running": false, "OOMKilled": true, "ExitCode": 137}',
    ),
    _w(
        "ray",
        "ray-project/ray:src/ray/raylet/node_manager.cc (CreateOomKillMessageDetails)",
        "Task was killed due to the node running low on memory.\\nMemory on the node (IP: %s, ID: "
        "%s) where the task (%s) was running was %s / %s (%f), which exceeds the memory usage "
        "threshold of %f.",
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on "
        "memory.\nMemory on the node (IP: 10.0.22.131, ID: 6416deba) where the task (task ID: "
        "f8fb, name=generate, pid=606, memory used=3.33GB) was running was 51.33GB / 54.00GB "
        "(0.950537), which exceeds the memory usage threshold of 0.95.",
    ),
    _w(
        "ray",
        "ray-project/ray:src/ray/raylet/node_manager.cc (the worker-killing policy's summary)",
        "%d worker(s) were killed due to the node running low on memory.",
        "(raylet) [2025-03-01 10:00:00] 2 worker(s) were killed due to the node running low on "
        "memory.",
    ),
    _w(
        "kubernetes",
        "kubernetes/kubernetes:pkg/kubelet/eviction/helpers.go (nodeConditionMessageFmt)",
        "The node had condition: %v. ",
        "Status: Failed\nReason: Evicted\nMessage: The node had condition: [MemoryPressure].",
    ),
    _w(
        "candle",
        "huggingface/candle:candle-metal-kernels/src/err.rs (MetalKernelError::"
        "FailedToCreateResource: MTLDevice newBuffer returned nil)",
        "Failed to create metal resource: {0}",
        "Error: Metal error Failed to create metal resource: Buffer",
    ),
    _w(
        "openvino-genai",
        f"{_OV}/llm/pipeline_continuous_batching_adapter.hpp (GenerationStatus::IGNORED)",
        "Check 'res.m_status == GenerationStatus::FINISHED || ...' failed at %s:%d:\\nGot "
        "unfinished GenerationStatus",
        "RuntimeError: Check 'res.m_status == GenerationStatus::FINISHED || res.m_status == "
        "GenerationStatus::STOP || res.m_status == GenerationStatus::CANCEL' failed at "
        "src/cpp/src/llm/pipeline_continuous_batching_adapter.hpp:175:\nGot unfinished "
        "GenerationStatus",
    ),
    _w(
        "openvino-genai",
        f"{_OV}/utils.hpp (assert_request_was_scheduled)",
        "Request %d was dropped by the scheduler because it did not fit in the available cache "
        "budget (out of memory). Increase cache_size / num_kv_blocks, ...",
        "RuntimeError: Request 0 was dropped by the scheduler because it did not fit in the "
        "available cache budget (out of memory). Increase cache_size / num_kv_blocks, reduce the "
        "prompt or generation length.",
    ),
    _w(
        "mindspore",
        "mindspore-ai/mindspore:mindspore/ccsrc (Ascend memory adapter, Initialize)",
        "Malloc device memory failed, free memory size is less than half of total memory "
        "size.Device %d Device HBM total size:%zu Device HBM free size:%zu may be other processes "
        "occupying this card, check as: ps -ef|grep python",
        "RuntimeError: Ascend kernel runtime initialization failed. The details refer to 'Ascend "
        "Error Message'.\n- Framework Error Message:\nMalloc device memory failed, free memory "
        "size is less than half of total memory size.Device 0 Device MOC total size:34359738368 "
        "Device MOC free size:2140602368 may be other processes occupying this card, check as: "
        "ps -ef|grep python",
        total=34359738368,
        free=2140602368,
    ),
    _w(
        "ggml",
        "Acly/vision.cpp:src/visp/ml.cpp (compute_graph_allocate: ggml_gallocr_alloc_graph failed)",
        "Failed to allocate buffer for graph",
        "Error during image processing: Failed to allocate buffer for graph",
    ),
    _w(
        "sycl",
        "ggml-org/llama.cpp:ggml/src/ggml-sycl/ggml-sycl.cpp "
        "(ggml_backend_sycl_buffer_type_alloc_buffer)",
        "%s: can't allocate %lu Bytes of memory on device",
        "ggml_backend_sycl_buffer_type_alloc_buffer: can't allocate 3503030272 Bytes of memory "
        "on device",
    ),
    _w(
        "xpu",
        "intel/intel-extension-for-pytorch (DPCPP_EXCEP_CATCH: a sycl::exception carrying "
        "PI_ERROR_OUT_OF_RESOURCES is rethrown as this runtime_error)",
        "Allocation is out of device memory on current platform.",
        "RuntimeError: Allocation is out of device memory on current platform.",
    ),
    _w(
        "mlc-llm",
        "mlc-ai/mlc-llm:cpp/serve/config.cc (EstimateMemoryUsageOnMode)",
        "Insufficient GPU memory error: The available single GPU memory is %s MB, which is less "
        "than the sum of model weight size (%s MB) and temporary buffer size (%s MB).",
        "TVMError: Insufficient GPU memory error: The available single GPU memory is 6635.520 "
        "MB, which is less than the sum of model weight size (4308.133 MB) and temporary buffer "
        "size (2458.285 MB).",
    ),
    _w(
        "exllamav2",
        "turboderp-org/exllamav2:exllamav2/model.py (load_autosplit_gen)",
        "Insufficient VRAM for model and cache",
        "RuntimeError: Insufficient VRAM for model and cache",
    ),
    _w(
        "exllamav3",
        "turboderp-org/exllamav3 (layer-by-layer load and TPAllocator.initial_split)",
        "Insufficient VRAM in split for model and cache",
        "RuntimeError: Insufficient VRAM in split for model and cache",
    ),
    _w(
        "candle",
        "coreylowman/cudarc:src/driver/result.rs (DriverError's Debug: name and cuGetErrorString)",
        'DriverError(%s, "%s")',
        'Error: DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")',
    ),
    # issue 9, docrec17: container and kernel kills still missing (heldout18's KServe record
    # showed the pod status; the others are their siblings)
    _w(
        "kubernetes",
        "kubernetes/api:core/v1/types.go (ContainerStateTerminated: ExitCode int32 "
        '`json:"exitCode"`; KServe\'s lastFailureInfo copies it)',
        "exitCode: %d",
        "    lastState:\n      terminated:\n        exitCode: 137\n        reason: Error",
    ),
    _w(
        "kubernetes",
        "kubernetes/api:core/v1/types.go (ContainerStateTerminated, as kubectl -o json prints it)",
        '"exitCode": %d',
        '"lastState": {"terminated": {"exitCode": 137, "reason": "Error"}}',
    ),
    _w(
        "macos",
        f"{_XNU} (no_paging_space_action: the compressor's swap is full)",
        "low swap: killing largest compressed process with pid %d (%s) and size %llu MB",
        "kernel: low swap: killing largest compressed process with pid 29670 (python3.11) and "
        "size 20480 MB",
    ),
    _w(
        "linux",
        "torvalds/linux:mm/memcontrol.c (mem_cgroup_print_oom_info, kernels before 4.19)",
        "Task in %s killed as a result of limit of %s",
        "[14808.063986] Task in /docker/34186d9bd077 killed as a result of limit of "
        "/docker/34186d9bd077",
    ),
    _w(
        "docker",
        'containerd/containerd:internal/cri/server/events.go (log.Infof("TaskOOM event %+v", e); '
        "earlier pkg/cri/server/events.go)",
        "TaskOOM event %+v",
        'containerd[2723]: level=info msg="TaskOOM event &TaskOOM{ContainerID:a38973e2086019e6'
        '411254a3b9e2b8885929f005f4c814414739227673df7e56,XXX_unrecognized:[],}"',
    ),
    _w(
        "docker",
        "containerd/containerd:internal/cri/server/events.go (the protobuf text form of newer "
        "releases)",
        "TaskOOM event %+v",
        'containerd[2723]: time="2025-05-19T18:14:43.578Z" level=info msg="TaskOOM event '
        'container_id:\\"9192cb33411ff69d015a3577db136757f5b145064a1703efea3d0e12e8a64987\\""',
    ),
)

#: Same words, nothing killed or failed: zero counters, idle exits, soft limits, settings.
HOSTS_NEAR_MISSES: tuple[str, ...] = (
    "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0",
    "oom_kill_disable 0\nunder_oom 0\noom_kill 0",
    '"State": {"Status": "exited", "OOMKilled": false, "ExitCode": 0}',
    "echo -1000 > /proc/self/oom_score_adj",
    "kernel: memorystatus: killing_idle_process pid 312 [cloudd] (idle-exit 0) 2048KB - "
    "memorystatus_available_pages: 90000",
    "kernel: EXC_RESOURCE -> Safari[880] exceeded mem limit: ActiveSoft 3000 MB (non-fatal)",
    "Check 'res.m_status == GenerationStatus::FINISHED' passed",
    "AddressSanitizer: stack-buffer-overflow on address 0x7ffd",
    "RuntimeError: value cannot be converted to type int without overflow",
    "My free API credits were used up, so I switched to a local model",
    "16G显存够用吗？",
    "Process was killed by signal 11 (SIGSEGV)",
    "tried to allocate a new session id",
    "The node had condition: [DiskPressure].",
    "Error: Metal error Failed to create metal resource: CommandQueue",
    # a pod that ended by itself or failed for another reason; containerd's exit event
    "    lastState:\n      terminated:\n        exitCode: 0\n        reason: Completed",
    '"state": {"terminated": {"exitCode": 1, "reason": "Error"}}',
    'level=info msg="TaskExit event container_id:\\"9192cb33411f\\" exit_status:0"',
    "low swap: 2048 MB of compressed memory in use",
    "Task in /docker/34186d9bd077 finished",
)
