"""OS / scheduler memory kills, dropped requests, prose OOMs and Markdown-emphasised pastes
(issue 9: ``parse_hosts``, the generic fallback's prose families, ``normalize``).

The table entries themselves (with their upstream files) are checked by
``tests/test_doctor_upstream_wordings.py``; these tests pin what the events carry and the
neighbours that must stay out.
"""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.normalize import normalize_line
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.parse_hosts import JETSAM_MEMORY_CAUSES


def _primary(text: str) -> object:
    d = diagnose_text(text)
    assert d.oom_found, text
    return d.primary


def test_jetsam_kill_carries_pid_name_footprint_and_cause() -> None:
    e = parse_log(
        "kernel: 1401.082 memorystatus: killing_specific_process pid 449 [python3] "
        "(per-process-limit 3) 2331079KB - memorystatus_available_pages: 50117"
    ).events[0]
    assert (e.runtime, e.pid, e.process_name) == ("macos", 449, "python3")
    assert e.anon_rss_bytes == 2331079 * 1024
    assert e.detail == "jetsam per-process-limit"


@pytest.mark.parametrize("cause", ["idle-exit", "vnode-limit", "disk-space-shortage"])
def test_jetsam_kills_that_are_not_memory_are_not_an_oom(cause: str) -> None:
    assert cause not in JETSAM_MEMORY_CAUSES
    text = (
        f"memorystatus: killing_idle_process pid 312 [cloudd] ({cause} 0) 2048KB - "
        "memorystatus_available_pages: 90000"
    )
    assert not diagnose_text(text).oom_found


def test_jetsam_hard_limit_is_a_kill_and_soft_limit_is_not() -> None:
    hard = "EXC_RESOURCE -> python3[77] exceeded mem limit: InactiveHard 6 MB (fatal)"
    soft = "EXC_RESOURCE -> python3[77] exceeded mem limit: ActiveSoft 6 MB (non-fatal)"
    assert diagnose_text(hard).cause == "host_ram"
    assert not diagnose_text(soft).oom_found


def test_android_low_memory_killer_reads_the_freed_size() -> None:
    e = parse_log(
        "lowmemorykiller: Killing 'com.termux' (8123), adj 900,\n   to free 3145728kB on "
        "behalf of 'kswapd0' (97) because"
    ).events[0]
    assert (e.runtime, e.pid, e.anon_rss_bytes) == ("android", 8123, 3145728 * 1024)
    assert diagnose_text("Kill 'llm' (pid=9, uid=0, oom_score_adj=0) to free 12kB rss").oom_found


_LINUX_ONLY = ("swapfile", "docker run --memory", "anon-rss", "pagefile")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "memorystatus: killing_specific_process pid 449 [python3] (per-process-limit 3) "
            "2331079KB - memorystatus_available_pages: 50117",
            "its own memory limit",
        ),
        (
            "EXC_RESOURCE -> llama-server[880] exceeded mem limit: ActiveHard 6144 MB (fatal)",
            "its own memory limit (per-process memory limit 6144 MB)",
        ),
        (
            "memorystatus: killing_top_process pid 5123 [ollama] (vm-pageshortage 3) 45056000KB"
            " - memorystatus_available_pages: 12345",
            "the Mac ran out of RAM",
        ),
        (
            "lowmemorykiller: Kill 'com.example.llmchat' (8123), uid 10234, oom_score_adj 0 to "
            "free 3456789kB rss, 123456kB swap; reason: low watermark is breached",
            "Android's low-memory killer",
        ),
    ],
    ids=["jetsam-per-process-limit", "exc-resource-hard", "jetsam-pressure", "lmkd"],
)
def test_apple_and_android_kills_get_their_platforms_reading(text: str, said: str) -> None:
    """A jetsam per-process-limit kill is the process's own limit, not 'the operating system
    ran out of host RAM'; neither platform gets Linux's swap file / docker commands, and the
    size is a footprint or RSS, not Linux's anon-rss."""
    d = diagnose_text(text)
    assert d.cause == "host_ram"
    assert said in d.explanation
    words = d.explanation + " ".join(c for f in d.fixes for c in (f.why, *f.commands))
    assert not [w for w in _LINUX_ONLY if w in words]


def test_cgroup_counters_count_only_above_zero() -> None:
    assert diagnose_text("oom 0\noom_kill 2").cause == "host_ram"
    assert not diagnose_text("oom 0\noom_kill 0\noom_group_kill 0").oom_found
    assert not diagnose_text("oom_kill_disable 1").oom_found


def test_docker_oomkilled_true_and_false() -> None:
    assert diagnose_text('"OOMKilled": true').cause == "host_ram"
    assert not diagnose_text('"OOMKilled": false').oom_found
    assert not diagnose_text("State.OOMKilled=false").oom_found


@pytest.mark.parametrize(
    "text",
    [
        '"State": {"Status": "exited", "Running": false, "OOMKilled": true, "ExitCode": 137}',
        "Last State: Terminated\n  Reason: OOMKilled\n  Exit Code: 137",
    ],
    ids=["docker-inspect", "kubectl-describe"],
)
def test_oomkilled_names_the_container_limit(text: str) -> None:
    """OOMKilled is the kernel's OOM killer in the container's cgroup (its limit, or the host
    out of RAM), which the reading names; a bare exit 137 (any SIGKILL) keeps the generic one."""
    d = diagnose_text(text)
    assert d.cause == "host_ram"
    assert "(OOMKilled)" in d.explanation
    assert "memory limit" in d.explanation
    bare = diagnose_text("Process finished with exit code 137")
    assert "OOMKilled" not in bare.explanation


def test_oom_score_adj_setting_is_not_an_oom() -> None:
    assert not diagnose_text("oom_score_adj=-997 for kubelet").oom_found
    # ... but an OOM next to it still is
    assert diagnose_text("oom_score_adj=-997\nOOM killed the pod").oom_found


def test_openvino_dropped_request_is_the_kv_cache_budget() -> None:
    d = diagnose_text(
        "!! [GPU] LLM error: Check 'res.m_status == GenerationStatus::FINISHED' failed at "
        "pipeline_continuous_batching_adapter.hpp:175:\nGot unfinished GenerationStatus"
    )
    assert d.cause == "kv_cache_or_context"
    assert any("cache" in f.title.lower() for f in d.fixes)


def test_mindspore_half_free_reads_total_and_free() -> None:
    d = diagnose_text(
        "Malloc device memory failed, free memory size is less than half of total memory "
        "size.Device 3 Device HBM total size:65464696832 Device HBM free size:3596279808 may be "
        "other processes occupying this card, check as: ps -ef|grep python"
    )
    e = d.primary
    assert e is not None
    assert (e.device, e.total_bytes, e.free_bytes) == (3, 65464696832, 3596279808)
    assert d.cause == "other_process_holding_memory"


def test_the_bare_ascend_init_failure_is_not_read_as_an_oom() -> None:
    # the same line follows a driver mismatch or a busy device: only the detail names memory
    text = (
        "RuntimeError: Ascend kernel runtime initialization failed. The details refer to "
        "'Ascend Error Message'."
    )
    assert not diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "text",
    [
        "enable_vae_tiling instead leads to memory overflow",
        "GPU memory overflow when batch size is 8",
        "So the memory will be used up and the process will be eventually killed by the OS",
        "training used up all the available GPU memory",
        "The app was terminated due to memory pressure",
        "Message from debugger: Terminated due to memory issue",
        "ONNX runtime tried to allocate >192 GB for a single inference call",
        "it attempted to allocate about 40 GiB",
        "16G显存无法启动",
        "8GB的显存跑不起来",
        "VRAM is not enough for the 70B model",
        "跑到一半显存爆了",
        "VRAMが足りない",
        "VRAM 부족",
        "Error during image processing: Faled to allocate buffer for graph",
        "**Killed**",
        "`Killed`",
    ],
)
def test_prose_and_pasted_forms_are_recognised(text: str) -> None:
    assert diagnose_text(text).oom_found, text


@pytest.mark.parametrize(
    "text",
    [
        "stack overflow in the tokenizer",
        "integer overflow while computing the memory size",
        "the memory usage keeps growing",
        "tried to allocate a port",
        "16G显存够用吗",
        "the quota was used up",
        "killed by the user with Ctrl-C",
        "__init__",
        "**Note**",
    ],
)
def test_prose_neighbours_are_not_an_oom(text: str) -> None:
    assert not diagnose_text(text).oom_found, text


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("**Killed**", "Killed"),
        ("  `CUDA out of memory`  ", "  CUDA out of memory"),
        ("***OOM***", "OOM"),
        ("a **bold** word", "a **bold** word"),
        ("**", "**"),
        ("__init__", "__init__"),
        ("x * y *", "x * y *"),
        ("**bold** and **more**", "**bold** and **more**"),
    ],
)
def test_markdown_emphasis_around_a_whole_line_is_removed(line: str, expected: str) -> None:
    assert normalize_line(line) == expected


_TORCH = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 23.65 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process "
    "has 22.51 GiB memory in use. Of the allocated memory 20.10 GiB is allocated by PyTorch, and "
    "1.90 GiB is reserved by PyTorch but unallocated."
)


def test_a_wrap_inside_the_wording_is_undone() -> None:
    first = "2024-05-01 worker 3 stopped: RuntimeError while decoding, CUDA out of"
    second = "memory; lower the batch size"
    # neither half is an OOM on its own: only the join makes the wording
    assert not diagnose_text(first).oom_found
    assert not diagnose_text(second).oom_found
    assert diagnose_text(f"{first}\n{second}").oom_found
    # the same two lines with room left on the first are two sentences, not a wrap
    assert not diagnose_text(f"{first}\n{second}\n{'y' * 90}").oom_found


@pytest.mark.parametrize("width", [72, 80, 100])
def test_a_word_wrapped_paste_reads_as_the_unwrapped_one(width: int) -> None:
    import textwrap

    whole = diagnose_text(_TORCH)
    again = diagnose_text("\n".join(textwrap.wrap(_TORCH, width)))
    assert again.primary is not None
    assert whole.primary is not None
    assert again.cause == whole.cause
    assert again.primary.requested_bytes == whole.primary.requested_bytes


def test_unwrapping_leaves_short_and_indented_lines_alone() -> None:
    from oomkit.diagnose.normalize import unwrap_word_wrapped

    assert unwrap_word_wrapped("step 1 loss 2.0\nstep 2 loss 1.9\nKilled") is None
    tb = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n    f()'
    assert unwrap_word_wrapped(tb) is None
    line = "x" * 75 + " ab"
    assert unwrap_word_wrapped(line + "\ncdefgh ij") == line + " cdefgh ij"
    assert unwrap_word_wrapped(line + "\n  cdefgh ij") is None
    # a log file, not a paste: read as it is (a second parse of megabyte lines costs seconds)
    assert unwrap_word_wrapped((line + "\ncdefgh ij\n") * 2000) is None


def test_a_wrapped_paste_without_an_oom_stays_without_one() -> None:
    text = (
        "INFO 09-30 15:27:08 llm_engine.py:72] Initializing an LLM engine with config: model=x,\n"
        "tokenizer=x, tokenizer_mode=auto, revision=None, trust_remote_code=False, dtype=bf16,\n"
        "max_seq_len=32768 and the memory profile finished without errors"
    )
    assert not diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "container",
    [
        "Container inference was using 30Gi, request is 16Gi, has larger consumption of memory.",
        "Container inference was using 30Gi, which exceeds its request of 16Gi.",
    ],
    ids=["containerMessageFmt", "older"],
)
def test_kubelet_eviction_reads_the_containers_usage_and_request(container: str) -> None:
    """'The node was low on resource: memory' was only the generic fallback (host_ram 0.40,
    'oomkit gpus' / 'shrink the batch' advice); it is the kubelet's eviction
    (pkg/kubelet/eviction/helpers.go), with the container's usage and request beside it."""
    text = (
        "  Warning  Evicted  2m  kubelet  The node was low on resource: memory. Threshold "
        f"quantity: 100Mi, available: 42Mi. {container}"
    )
    d = diagnose_text(text)
    e = d.primary
    assert e is not None
    assert (e.runtime, e.format, e.process_name) == (
        "kubernetes",
        "kubelet_eviction_memory",
        "inference",
    )
    assert e.anon_rss_bytes == 30 * 2**30
    assert d.cause == "host_ram"
    assert "request 16Gi" in d.explanation
    assert d.fixes[0].commands[0] == "resources: {requests: {memory: 30Gi}, limits: {memory: 30Gi}}"
