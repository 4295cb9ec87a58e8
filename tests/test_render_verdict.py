"""The text verdict line, the JSON ``verdict`` and the exit code never disagree.

The exit code follows the verdict (3 does not fit, 4 tight, 0 fits); the text must say the
same, also where the device totals fit but a runtime margin does not (vLLM's KV pool against
one request of max_model_len: ``check_enough_kv_cache_memory``).
"""

from __future__ import annotations

import json

import pytest

from oomkit.cli import main

_EXIT = {"fits": 0, "does_not_fit": 3, "tight": 4}

CASES: tuple[tuple[str, ...], ...] = (
    ("gpt-oss-120b", "-r", "vllm", "--gpu", "h100-sxm5-80gb"),
    ("gpt-oss-20b", "-r", "vllm", "--gpu", "rtx-4090"),
    ("llama-3.1-8b", "-q", "Q4_K_M", "--gpu", "rtx-3060", "--ctx", "49152", "--os", "windows"),
    ("llama-3.1-8b", "-q", "Q4_K_M", "--gpu", "rtx-3060", "--ctx", "53248", "--os", "windows"),
    ("llama-3.1-8b", "-r", "vllm", "--gpu", "rtx-4090", "--ctx", "131072"),
    ("llama-3.1-8b", "-r", "vllm", "--gpu", "rtx-4090", "--ctx", "8192"),
    ("llama-3.1-8b", "-r", "vllm", "--gpu", "a100-80gb"),
    ("gemma-2-27b", "-r", "vllm", "--gpu", "a100-80gb", "--runtime-version", "0.6.3"),
    ("llama-3.1-8b", "-r", "sglang", "--gpu", "rtx-4090", "--ctx", "131072"),
    ("qwen2.5-7b", "-r", "sglang", "--gpu", "rtx-4090"),
    ("llama-3.1-8b", "-q", "Q4_K_M", "--gpu", "rtx-3060", "--ctx", "8192"),
    ("llama-3.1-70b", "-q", "Q4_K_M", "--gpu", "rtx-4090"),
    ("gemma-2-9b", "-q", "Q8_0", "--gpu", "rtx-3060", "--ctx", "8192"),
    ("deepseek-v2-lite", "-r", "ollama", "--gpu", "rtx-3060", "--ctx", "32768"),
    ("deepseek-r1", "-r", "ollama", "--gpu", "3xmi210", "--runtime-version", "0.5.7"),
    ("llama-3.1-8b", "-r", "ollama", "--gpu", "rtx-3060"),
    ("qwen2.5-32b", "-r", "ollama", "--gpu", "rtx-4090", "--ctx", "32768"),
    ("llama-3.1-8b", "-r", "transformers", "--gpu", "rtx-4090"),
    # fits only by device_map='auto' CPU offload: unset says so (exit 3), explicit auto accepts
    ("llama-3.1-8b", "-r", "transformers", "-q", "fp32", "--gpu", "rtx-4090"),
    (
        "llama-3.1-8b",
        "-r",
        "transformers",
        "-q",
        "fp32",
        "--gpu",
        "rtx-4090",
        "--device-map",
        "auto",
    ),
    ("llama-3.1-8b", "-r", "transformers", "-q", "fp32", "--gpu", "2xrtx-4090"),
)


def _text_level(text: str) -> str:
    """The level the text states: its verdict lines sit between the devices and the
    assumptions."""
    body = text.split("\nAssumptions:")[0]
    lines = [ln for ln in body.splitlines() if ln and not ln.startswith(" ")]
    verdict_lines = [
        ln for ln in lines if ln.startswith(("Fits", "Tight", "Does not fit", "Runs with"))
    ]
    assert verdict_lines, text
    if verdict_lines[0].startswith("Does not fit"):
        return "does_not_fit"
    if any(ln.startswith("Tight") for ln in verdict_lines):
        return "tight"
    assert not any(ln.startswith("Does not fit") for ln in verdict_lines), text
    return "fits"


@pytest.mark.parametrize("args", CASES, ids=lambda a: "-".join(a).replace("--", ""))
def test_text_json_and_exit_code_agree(
    args: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["estimate", *args, "--offline"])
    text = capsys.readouterr().out
    code_json = main(["estimate", *args, "--offline", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == code_json
    assert code == _EXIT[doc["verdict"]], (doc["verdict"], code)
    assert _text_level(text) == doc["verdict"], text


def test_platform_reservations_over_the_edge_are_said_in_the_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The device total fits the card, but WDDM's reservation and the display do not leave
    room: exit 3 under WSL 2, so the text must not say "Fits."; native Windows lets the driver
    spill the overrun to shared system memory (CUDA System Memory Fallback): "tight", named."""
    args = ["estimate", "llama-3.1-8b", "-q", "Q4_K_M", "--gpu", "rtx-3060", "--ctx", "53248"]
    args += ["-ngl", "99"]  # every layer (without -ngl llama.cpp's --fit would offload some)
    code = main([*args, "--os", "wsl", "--display", "--offline"])
    text = capsys.readouterr().out
    assert code == 3
    assert "Does not fit on cuda:0 once the platform's reservations are counted." in text
    assert "Windows WDDM video memory manager reservation" in text
    assert "\nFits." not in text
    code = main([*args, "--os", "windows", "--display", "--offline"])
    text = capsys.readouterr().out
    assert code == 4
    assert "shared system memory" in text
    assert "\nFits." not in text


def test_sliding_window_groups_count_the_window_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """gpt-oss alternates full and 128-token sliding-window layers: V1 puts them in separate
    KV groups and one request's sliding layers need only their window, so the pool holds a
    131072-token request (max_concurrency > 1): not 'does not fit'."""
    args = ["estimate", "gpt-oss-120b", "-r", "vllm", "--gpu", "h100-sxm5-80gb"]
    code = main([*args, "--offline", "--json"])
    doc = json.loads(capsys.readouterr().out)
    rd = doc["runtime_details"]
    assert rd["kv_cache_groups"] > 1
    assert rd["max_concurrency"] > 1
    # the pool holds more, but vLLM accepts no longer max_model_len than the model's 131072
    assert rd["max_model_len_that_fits"] == rd["max_model_len"] == 131072
    assert any("capped at 131072" in a for a in doc["assumptions"])
    pool = [m for m in doc["verdict_details"]["margins"] if m["what"].startswith("KV pool")]
    assert pool
    assert pool[0]["free_bytes"] > 0
    assert doc["verdict"] != "does_not_fit"
    assert code == _EXIT[doc["verdict"]]
