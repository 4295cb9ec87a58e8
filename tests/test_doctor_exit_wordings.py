"""Issue 9, docrec26: deaths and verdicts that report an OOM without the usual words
(``parse_wordings_exits``), and the DataLoader / accelerate forms read by the parsers, each built
from the runtime's format string with realistic numbers."""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.parse_wordings_exits import EXITS_NEAR_MISSES, exit_match
from recognition_cases import recognition_tests

_GIB = 1 << 30

_EXITS = (
    # ollama llm/server.go: "llama runner process no longer running: %d %s" with ExitCode() -1
    'time=2024-07-02T09:14:55.120Z level=ERROR source=sched.go:443 msg="error loading llama '
    'server" error="llama runner process no longer running: -1 "',
    "Error: llama runner process no longer running: -1",
    # mlc_llm/serve/engine.py: the KV-capacity assert, with and without its numbers
    "AssertionError: Cannot estimate KV cache capacity. The model weight size 15032385536 may be "
    "larger than GPU memory size 17179869184",
    "Unexpected Error: The model weight size may be larger than GPU memory size",
    # winerror.h E_OUTOFMEMORY printed without its 0x
    "CreateCommittedResource failed with error 8007000E",
    # host RAM named short; more RAM ended the failure
    "I think it is due to insufficient system RAM: the converter was terminated by the system.",
    "The app got terminated by the system, the phone has only 6 GB of RAM.",
    "It was indeed a memory issue; the export finished after upgrading the RAM to 48GB.",
    "the only thing that works is memory=24GB in .wslconfig",
)

(
    test_exit_wordings_are_recognised,
    test_exit_wordings_are_recognised_inside_a_log,
    test_exit_near_misses_stay_silent,
) = recognition_tests(_EXITS, EXITS_NEAR_MISSES)


def test_the_exit_grammar_alone_is_silent_on_its_neighbours() -> None:
    assert [t for t in EXITS_NEAR_MISSES if exit_match(t, t.lower())] == []


def test_ollama_exit_minus_one_reads_host_ram_low_with_the_deciding_fact() -> None:
    d = diagnose_text("Error: llama runner process no longer running: -1 ")
    assert d.cause == "host_ram"
    assert d.confidence == pytest.approx(0.3)
    assert "signal: killed" in d.explanation
    assert "dmesg" in d.explanation


def test_ollama_exit_minus_one_in_the_middle_of_a_long_log() -> None:
    # a runtime's own line: read outside the head and tail where prose is read
    filler = "\n".join(f'time=2024-07-02 level=DEBUG msg="tick {i}"' for i in range(3000))
    log = filler + '\nerror="llama runner process no longer running: -1 "\n' + filler
    assert diagnose_text(log).oom_found


@pytest.mark.parametrize(
    ("params", "gpu", "cause"),
    [
        # 7.5 GiB of weights on an 8 GiB card: past the 90% MLC budgets, the model
        (int(7.5 * _GIB), 8 * _GIB, "model_too_large"),
        # 5 GiB of weights on 8 GiB: the temporary buffers are the excess
        (5 * _GIB, 8 * _GIB, "batch_or_activations"),
    ],
)
def test_mlc_kv_estimate_compares_the_weights_with_the_gpu(
    params: int, gpu: int, cause: str
) -> None:
    text = (
        "AssertionError: Cannot estimate KV cache capacity. The model weight size "
        f"{params} may be larger than GPU memory size {gpu}"
    )
    assert diagnose_text(text).cause == cause


@pytest.mark.parametrize(
    ("text", "fmt", "conf"),
    [
        # torch/csrc/DataLoader.cpp prints strsignal(): SIGTERM is "Terminated"
        (
            "RuntimeError: DataLoader worker (pid 31877) is killed by signal: Terminated.",
            "dataloader_signal",
            0.35,
        ),
        # a title that stops before the name
        ("DataLoader worker (pid 31877) is killed by signal", "dataloader_signal", 0.35),
        (
            "RuntimeError: DataLoader worker (pid 31877) is killed by signal: Killed.",
            "dataloader_killed",
            0.7,
        ),
    ],
)
def test_dataloader_signals(text: str, fmt: str, conf: float) -> None:
    assert [e.format for e in parse_log(text).events] == [fmt]
    d = diagnose_text(text)
    assert d.cause == "host_ram"
    assert d.confidence == pytest.approx(conf)


def test_dataloader_terminated_names_the_signals_that_decide() -> None:
    d = diagnose_text(
        "RuntimeError: DataLoader worker (pid 31877) is killed by signal: Terminated."
    )
    assert "Segmentation fault" in d.explanation
    assert "Bus error" in d.explanation


def test_accelerate_offload_folder_is_the_disk_offload_verdict() -> None:
    text = (
        "ValueError: At least one of the model submodule will be offloaded to disk, please pass "
        "along an `offload_folder`."
    )
    assert [e.format for e in parse_log(text).events] == ["hf_device_map_disk_offload"]


def test_a_memory_issue_fixed_by_a_driver_upgrade_is_not_an_oom() -> None:
    assert not diagnose_text(
        "It was a memory issue, and it works after upgrading the driver."
    ).oom_found
