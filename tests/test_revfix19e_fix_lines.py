"""revfix19e: each prompt's line is what the prompt promises (prose moves into the fix text,
worded placeholders become ``<N>``), fix lines follow the log's runtime (llama.cpp or Ollama),
the batch cut is capped by what the allocator can still give, and the Ollama host-OOM "Free
system RAM" fix says what it needs instead of claiming it as a saving."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.prompt_lines import line_ok, placeholders
from oomkit.diagnose.runtime_lines import llamacpp_only
from oomkit.diagnose.shell_lines import shell_ready

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from doctor_corpus import load, part_files  # noqa: E402


def _record(part: str, rid: str) -> str:
    return next(r["text"] for r in load(part_files(part)) if r.get("id") == rid)


@pytest.mark.parametrize(
    ("kind", "line", "ok"),
    [
        ("add to your command line: ", "-c / --max-model-len smaller", False),
        ("add to your command line: ", "-ngl <N>", True),
        ("add to your command line: ", "-ub 256 -b 1024", True),
        ("add to your command line: ", "-fa on -ctk q8_0 -ctv q8_0", True),
        ("add to your command line: ", "--max-model-len 8192   # vLLM", True),
        ("add to your command line: ", "-c 4096 / num_ctx 4096", False),
        (
            "add to your command line: ",
            '--overrides "prefill_chunk_size=1024;max_num_sequence=4"',
            True,
        ),
        ("Python: ", "batch_size = max(1, batch_size // 4)", True),
        ("Python: ", "model.fit(..., batch_size=<half>)", False),
        ("Python: ", "mx.eval(...) each step", False),
        ("setting: ", "beam_size=1, best_of=1", True),
        ("setting: ", "actor_rollout_ref.rollout.gpu_memory_utilization=0.4   # verl", True),
        ("setting: ", "gpu_use_dp=false", True),
        (">>> ", "/set parameter num_gpu <N>", True),
        (">>> ", "/set parameter num_gpu <fewer>   # Ollama", False),
        ("PS> ", '$env:OLLAMA_NUM_PARALLEL="1"; ollama serve', True),
    ],
)
def test_each_prompt_kind_holds_what_it_promises(kind: str, line: str, ok: bool) -> None:
    assert line_ok(kind, line) is ok


def test_worded_placeholders_become_n_and_the_words_move_into_the_text() -> None:
    assert placeholders("-ngl <fewer layers>") == ("-ngl <N>", ("N: fewer layers",))
    (fix,) = shell_ready([generic("t", "why.", ("-ngl <fewer layers>", "-c / --max-model-len x"))])
    assert fix.commands == ("-ngl <N>",)
    assert "N: fewer layers" in fix.why
    assert "-c / --max-model-len x" in fix.why
    (repl,) = shell_ready([generic("t", "why.", ("/set parameter num_gpu <fewer>   # Ollama",))])
    assert repl.commands == ("/set parameter num_gpu <N>",)


def test_the_generic_shrink_fix_prints_real_flags() -> None:
    # main printed "add to your command line: -c / --max-model-len smaller" for this message
    d = diagnose_text("RuntimeError: out of memory")
    lines = [c for f in d.fixes for c in f.commands]
    assert "-c / --max-model-len smaller" not in lines
    shrink = [f for f in d.fixes if f.title.startswith("Shrink the batch/context")]
    for f in shrink:
        assert all(line_ok("add to your command line: ", c) for c in f.commands if c[0] == "-")


def test_an_ollama_log_gets_no_llamacpp_flags() -> None:
    d = diagnose_text(_record("dev", "sv-ollama-8597-10x3090-comment"))
    lines = [c for f in d.fixes for c in f.commands]
    assert not [c for c in lines if llamacpp_only(c)], lines
    assert "-nkvo" not in " ".join(lines)
    assert any("OLLAMA_KV_CACHE_TYPE=q8_0" in c for c in lines)


def test_a_llamacpp_log_gets_no_ollama_lines() -> None:
    d = diagnose_text(_record("dev", "sv-iklcpp-1289-vulkan-17gb"))
    lines = [c for f in d.fixes for c in f.commands]
    assert not [c for c in lines if c.startswith(("/set ", '"options"', "PARAMETER "))], lines
    assert "-ngl <N>" in lines


def test_a_few_mib_free_says_batch_one_is_not_enough() -> None:
    # nnU-Net: 450 MiB asked, 7.75 MiB free; main printed "batch_size // 59"
    d = diagnose_text(_record("heldout7", "h7-nnunet-122"))
    first = d.fixes[0]
    assert first.title.startswith("Batch 1 is not enough")
    assert first.expected_saving_bytes is None
    assert not any("batch_size //" in c for f in d.fixes for c in f.commands)


def test_nothing_free_gives_no_runaway_factor() -> None:
    text = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 84.20 GiB. GPU 0 has "
        "a total capacity of 79.15 GiB of which 0 bytes is free. Of the allocated memory 70.10 "
        "GiB is allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but unallocated."
    )
    cmds = [c for f in diagnose_text(text).fixes for c in f.commands]
    assert not [c for c in cmds if "batch_size // " in c and len(c) > 40], cmds


def test_a_moderate_shortfall_keeps_its_sized_cut() -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 23.64 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this "
        "process has 22.57 GiB memory in use. Of the allocated memory 21.90 GiB is allocated by "
        "PyTorch, and 200.00 MiB is reserved by PyTorch but unallocated."
    )
    assert any("batch_size // 2)" in c for f in diagnose_text(text).fixes for c in f.commands)


def test_ollama_free_ram_says_what_it_needs_not_a_saving() -> None:
    text = (
        "Error: model requires more system memory (12.3 GiB) than is available (8.0 GiB)\n"
        "time=2025-01-01T00:00:00 level=INFO source=server.go msg=ollama\n"
    )
    fix = next(f for f in diagnose_text(text).fixes if f.title.startswith("Free system RAM"))
    assert fix.expected_saving_bytes is None
    assert "needs ~" in fix.why


def test_a_bare_ollama_parameter_is_the_repl_command_that_sets_it() -> None:
    from oomkit.diagnose.events import LogContext
    from oomkit.diagnose.runtime_lines import route

    fixes = [generic("t", "why.", ("-c 8192   # llama.cpp", "num_ctx 8192   # Ollama"))]
    (fix,) = route(fixes, None, LogContext())
    assert fix.commands == ("-c 8192   # llama.cpp", "/set parameter num_ctx 8192")
    (ollama,) = route(fixes, None, LogContext(ollama_runner=True))
    assert ollama.commands == ("/set parameter num_ctx 8192",)
