"""Three readings fixed at the end of session 8 (reported by the docrec16 helper)."""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text

_NANNY = (
    "distributed.nanny.memory - WARNING - Worker tcp://127.0.0.1:40123 (pid=4242) exceeded 95% "
    "memory budget. Restarting..."
)


def test_a_dask_nanny_restart_names_the_worker_budget_not_the_os() -> None:
    """distributed/worker_memory.py: the nanny restarts a worker at 95% of its memory_limit;
    the operating system did not run out or kill anything."""
    d = diagnose_text(_NANNY)
    assert d.cause == "host_ram"
    assert "Dask's nanny restarted worker PID 4242" in d.explanation
    assert "operating system ran out" not in d.explanation
    assert "memory_limit" in d.fixes[0].commands[0]


def test_a_linux_oom_kill_keeps_its_reading() -> None:
    d = diagnose_text(
        "Out of memory: Killed process 4242 (python) total-vm:100000kB, anon-rss:2000000kB"
    )
    assert "The operating system ran out of host RAM and killed PID 4242" in d.explanation


def test_prevented_vram_blowup_is_not_an_oom() -> None:
    assert not diagnose_text("为了防止显存炸，我把batch调小了").oom_found
    assert not diagnose_text("避免显存爆，设置了max_split_size_mb").oom_found
    assert diagnose_text("训练到一半显存炸了").oom_found  # the blow-up itself still is


def test_a_warning_that_may_indicate_a_leak_is_not_an_oom() -> None:
    """dask/distributed's "Unmanaged memory use is high. This may indicate a memory leak or the
    memory may not be released to the OS" is advice, not a failure."""
    warning = (
        "distributed.worker.memory - WARNING - Unmanaged memory use is high. This may indicate "
        "a memory leak or the memory may not be released to the OS"
    )
    assert not diagnose_text(warning).oom_found
    assert diagnose_text("Memory leak in the training loop, OOM after 3 epochs").oom_found
