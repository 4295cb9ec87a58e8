"""Reviewer findings of session 21 on the doctor's fixes (revfix21b).

The logs under tests/fixtures/revfix21b are the reviewer's, written from the runtimes' formats.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oomkit.cli import main
from oomkit.diagnose.doctor import diagnose_text

_LOGS = Path(__file__).parent / "fixtures" / "revfix21b"


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, object], int]:
    code = 0
    try:
        main(["doctor", *args, "--json"])
    except SystemExit as exc:
        code = int(exc.code or 0)
    return json.loads(capsys.readouterr().out), code


def _fixes(doc: dict[str, object]) -> list[dict[str, Any]]:
    fixes = doc["fixes"]
    assert isinstance(fixes, list)
    return fixes


def _titles(doc: dict[str, object]) -> list[str]:
    return [f["title"] for f in _fixes(doc)]


def _message_only(name: str) -> str:
    """The log's OOM message without the traceback above it."""
    text = (_LOGS / name).read_text()
    return text[text.index("torch.OutOfMemoryError") :]


# 3. PyTorch's own fragmentation hint when the cache covers the shortfall --------------------
def test_expandable_segments_first_when_cache_covers_shortfall() -> None:
    # the message alone leaves the cause open: PyTorch's own, free check comes first
    d = diagnose_text(_message_only("01_torch_frag.txt"))
    assert d.fixes[0].commands[0] == "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    # the cause is not changed by the fix
    assert d.cause == "model_too_large"


def test_expandable_segments_follow_the_forward_phase_lever() -> None:
    # docpost29: the traceback's nn.Module.__call__ frame places it in the forward pass, whose
    # lever (the batch) ranks first; the cache setting is still offered after it
    d = diagnose_text((_LOGS / "01_torch_frag.txt").read_text())
    assert d.context.frame_phase == "forward"
    assert d.cause == "batch_or_activations"
    assert d.fixes[0].title.startswith("Cut the batch size")
    assert any("expandable_segments:True" in c for f in d.fixes for c in f.commands)


def test_expandable_segments_not_offered_when_cache_is_short() -> None:
    text = (
        _message_only("01_torch_frag.txt")
        .replace(
            "3.93 GiB is reserved by PyTorch but unallocated",
            "0.10 GiB is reserved by PyTorch but unallocated",
        )
        .replace("18.12 GiB is allocated", "21.95 GiB is allocated")
    )
    d = diagnose_text(text)
    assert not any("expandable_segments" in c for f in d.fixes for c in f.commands)


def test_forward_call_in_traceback_is_named_not_asked_for() -> None:
    d = diagnose_text((_LOGS / "01_torch_frag.txt").read_text())
    assert d.context.module_call == "outputs = model(**batch)"
    assert "in the forward pass (outputs = model(**batch))" in d.explanation
    assert "the full traceback settles it" not in d.explanation
    assert "is small (" not in d.explanation


# 4. DeepSpeed ZeRO-3 optimizer step ------------------------------------------------------------
@pytest.mark.parametrize("model", [(), ("-m", "llama-3.1-8b")])
def test_zero3_step_offers_zero_levers_not_load_fixes(
    capsys: pytest.CaptureFixture[str], model: tuple[str, ...]
) -> None:
    doc, _ = _json(capsys, str(_LOGS / "22_zero3.txt"), *model)
    titles = _titles(doc)
    text = json.dumps(doc["fixes"])
    refused = ("Load the weights quantized", "Load in 4-bit", "Load in 8-bit", "Spread or offload")
    assert not any(t.startswith(refused) for t in titles), titles
    assert "device_map" not in text
    assert "offload_optimizer" in text or "ZeRO-Offload" in text
    assert any("sub_group_size" in t for t in titles), titles


def test_zero_levers_only_for_deepspeed() -> None:
    text = (
        (_LOGS / "22_zero3.txt")
        .read_text()
        .replace(
            "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/zero/stage3.py",
            "/app/train.py",
        )
        .replace("self._optimizer_step(sub_group_id)", "optimizer.step()")
    )
    d = diagnose_text(text)
    assert not any("sub_group_size" in f.title for f in d.fixes)


# 5. HF Trainer at the fp32 logits upcast -------------------------------------------------------
def test_trainer_logits_gets_loss_fix_and_no_quantized_load(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc, _ = _json(capsys, str(_LOGS / "15_trainer_logits.txt"), "-m", "llama-3.1-8b")
    titles = _titles(doc)
    assert not any(t.startswith(("Load in 4-bit", "Load in 8-bit", "Load the weights quantized"))
                   for t in titles), titles  # fmt: skip
    assert any("cross-entropy" in t for t in titles), titles
    # one expandable-segments fix, not the rule's and the estimator's both
    assert sum("expandable" in t or "grow segments" in t for t in titles) == 1, titles
    doc, _ = _json(capsys, str(_LOGS / "15_trainer_logits.txt"))
    first = doc["fixes"][0]  # type: ignore[index]
    assert "cross-entropy" in first["title"]
    assert any("use_liger_kernel=True" in c for c in first["commands"])


# 10. vLLM CUDA-graph capture ------------------------------------------------------------------
def test_vllm_graph_capture_one_eager_fix_and_utilization(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc, _ = _json(capsys, str(_LOGS / "17_vllm_graph.txt"))
    fixes = doc["fixes"]
    assert isinstance(fixes, list)
    eager = [f for f in fixes if any("--enforce-eager" in c for c in f["commands"])]
    assert len(eager) == 1, [f["title"] for f in eager]
    util = [f for f in fixes if f["title"].startswith("Leave vLLM more non-KV headroom")]
    assert util
    assert "--gpu-memory-utilization 0.88" in util[0]["commands"][0]
    assert "default 0.9" in util[0]["why"]
    assert any("cudagraph_capture_sizes" in c for f in fixes for c in f["commands"])


# 12. llama.cpp's pinned-memory warning in a run that went on ---------------------------------
def test_pinned_warning_then_server_is_no_oom(capsys: pytest.CaptureFixture[str]) -> None:
    doc, code = _json(capsys, str(_LOGS / "23_pinned_warning.txt"))
    assert code == 3
    assert doc["events"] == []
    notes = doc["notes"]
    assert isinstance(notes, list)
    assert any(n.startswith("no OOM (warning only)") for n in notes)


def test_pinned_warning_without_a_start_is_still_read() -> None:
    text = "\n".join((_LOGS / "23_pinned_warning.txt").read_text().splitlines()[:3])
    d = diagnose_text(text)
    assert d.oom_found
    assert d.cause == "host_ram"


# 8. llama.cpp's "N cells" line is the context ------------------------------------------------
def test_kv_cells_line_with_padding_is_the_context(capsys: pytest.CaptureFixture[str]) -> None:
    doc, _ = _json(capsys, str(_LOGS / "04_llamacpp_compute.txt"))
    context = doc["context"]
    assert isinstance(context, dict)
    assert context["n_ctx"] == 32768
    assert "-c 16384" in _titles(doc)[0]
    assert "states no context length" not in str(doc["explanation"])


def test_kv_cells_per_stream_times_streams() -> None:
    line = (
        "llama_kv_cache: size = 1024.00 MiB (  2048 cells,  32 layers,  4/4 seqs), "
        "K (f16):  512.00 MiB, V (f16):  512.00 MiB\n"
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 2112.01 MiB on device 0: "
        "cudaMalloc failed: out of memory\n"
    )
    assert diagnose_text(line).context.n_ctx == 8192


# 9. llama.cpp weights OOM with no capacity in the log -----------------------------------------
def test_weights_oom_without_capacity_gives_per_layer_cost_not_a_guess(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc, _ = _json(capsys, str(_LOGS / "05_llamacpp_weights.txt"))
    fixes = doc["fixes"]
    assert isinstance(fixes, list)
    ngl = [f for f in fixes if f["title"].startswith("Offload fewer layers")]
    assert len(ngl) == 1
    assert ngl[0]["title"] == "Offload fewer layers: -ngl <N>, ~500.53 MiB per layer"
    assert "--gpu" in ngl[0]["why"]
    assert not any(c.startswith("-ngl 60") for f in fixes for c in f["commands"])
    # with the card named, the estimate sizes N
    doc, _ = _json(capsys, str(_LOGS / "05_llamacpp_weights.txt"), "--gpu", "rtx-4090")
    assert any(c == "-ngl 43" for f in _fixes(doc) for c in f["commands"])


# 15. vLLM's start-up free-memory check: the utilization must still hold the model -------------
def test_free_memory_utilization_checked_against_the_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc, _ = _json(capsys, str(_LOGS / "09_vllm_freemem.txt"))
    ask = [f for f in _fixes(doc) if f["title"].startswith("Ask for what is free")]
    assert "must fit" in ask[0]["why"]
    doc, _ = _json(capsys, str(_LOGS / "09_vllm_freemem.txt"), "-m", "llama-3.1-8b")
    titles = _titles(doc)
    assert "The free memory does not hold llama-3.1-8b: free the GPU first" in titles
    assert not any(t.startswith("Ask for what is free") for t in titles), titles
    doc, _ = _json(capsys, str(_LOGS / "09_vllm_freemem.txt"), "-m", "llama-3.2-3b")
    assert any(
        t.startswith("Ask for what is free: --gpu-memory-utilization 0.16 with --max-model-len")
        for t in _titles(doc)
    )
