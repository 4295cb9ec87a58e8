"""docpost25 (issue #9, heldout51 retired): ncnn's Vulkan status lines (vkAllocateMemory with
VK_ERROR_OUT_OF_DEVICE_MEMORY / VK_ERROR_OUT_OF_HOST_MEMORY, vkQueueSubmit with
VK_ERROR_DEVICE_LOST) and Metal's debug-layer buffer length assertion (gpu_api_status)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.sizes import to_hex_int

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from doctor_corpus import load, part_files


def _record(part: str, rid: str) -> dict[str, object]:
    return next(r for r in load(part_files(part)) if r.get("id") == rid)


@pytest.mark.parametrize(
    ("part", "rid", "fmt"),
    [
        ("heldout51", "h51-flowframes-12", "ncnn_vk_allocate_memory"),
        ("heldout51", "h51-realsr-ncnn-vulkan-20", "ncnn_vk_queue_submit_lost"),
        ("heldout51", "h51-chaiNNer-913", "ncnn_vk_queue_submit_lost"),
        ("heldout51", "h51-ggml-647", "metal_debug_buffer_length"),
        ("heldout14", "h14-waifu2x-ncnn-vulkan-1", "ncnn_vk_allocate_memory"),
    ],
)
def test_records_read_by_their_status_line(part: str, rid: str, fmt: str) -> None:
    events = parse_log(str(_record(part, rid)["text"])).events
    assert [e.format for e in events][:1] == [fmt]


def test_vk_out_of_device_memory_is_the_tile() -> None:
    d = diagnose_text("[0 NVIDIA GeForce GTX 1060]\nvkAllocateMemory failed -2\n")
    assert d.oom_found
    assert d.cause == "batch_or_activations"
    assert "tile" in d.fixes[0].title


def test_vk_out_of_host_memory_names_staging() -> None:
    d = diagnose_text("vkAllocateMemory failed -1")
    assert d.cause == "batch_or_activations"
    assert "VK_ERROR_OUT_OF_HOST_MEMORY" in d.explanation


def test_device_lost_is_not_an_allocation() -> None:
    d = diagnose_text("vkQueueSubmit failed -4")
    assert d.oom_found
    assert d.cause == "unknown"
    assert "DEVICE_LOST" in d.explanation


def test_metal_length_in_hex_and_limit_in_mib() -> None:
    text = "newBufferWith*:length 0x40000000 must not exceed 512 MB."
    ev = parse_log(text).events[0]
    assert ev.requested_bytes == 1 << 30
    assert ev.allowed_bytes == 512 << 20


@pytest.mark.parametrize(
    "text",
    [
        "vkQueueSubmit failed -3",  # VK_ERROR_INITIALIZATION_FAILED: not memory
        "vkQueueSubmit failed 0",
        "ncnn calls vkAllocateMemory once per 16 MB block",
        "newBufferWithBytesNoCopy length must be page aligned",
    ],
)
def test_other_codes_and_mentions_are_not_read(text: str) -> None:
    formats = {e.format for e in parse_log(text).events}
    assert not formats & {
        "ncnn_vk_allocate_memory",
        "ncnn_vk_queue_submit_lost",
        "metal_debug_buffer_length",
    }


def test_to_hex_int() -> None:
    assert to_hex_int("0x6692c000") == 0x6692C000
    assert to_hex_int("0X10") == 16
    assert to_hex_int("0x") is None
    assert to_hex_int("0xzz") is None
    assert to_hex_int("12") is None
