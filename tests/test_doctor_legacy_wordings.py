"""heldout24's families (issue 9): pre-2020 frameworks' own OOM wordings read as their runtime
with their numbers (``parse_legacy``), and the report shapes it showed missing: DeepSpeed's host
RAM line near full, growth told in Chinese, one GPU above the others, a kill said to be due to
the over-consumption of RAM, a return code -9 in Chinese. Near-misses stay silent."""

from __future__ import annotations

import time

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.parse_wordings_usage import usage_numbers


@pytest.mark.parametrize(
    ("record", "runtime"),
    [
        ("h24-Theano-3748", "theano"),
        ("h24-kaggle-ndsb-3", "theano"),
        ("h24-NNProject_DeepMask-6", "theano"),
        ("h24-darknet-1878", "darknet"),
        ("h24-darknet-304", "darknet"),
        ("h24-caffe2-1936", "caffe2"),
        ("h19-Detectron-554", "caffe2"),
        ("h24-first-order-model-217", "imageio"),
        ("h24-mmdetection-711", "linux"),
        ("h24-ollama-10127", "llama.cpp"),
    ],
)
def test_corpus_legacy_messages_are_read_as_their_runtime(record: str, runtime: str) -> None:
    d = diagnose_text(corpus_text(record))
    assert d.oom_found
    assert d.primary is not None
    assert d.primary.runtime == runtime


def test_theano_reads_request_free_and_total_in_bytes() -> None:
    e = parse_log(corpus_text("h24-Theano-3748")).events[0]
    assert (e.requested_bytes, e.free_bytes, e.total_bytes) == (71323200, 10526720, 4294770688)


def test_a_check_of_cuda_error_2_outside_caffe_is_a_cuda_error() -> None:
    text = "Check failed: (cudaMalloc(&ptr, size)) == (cudaSuccess) (2 vs 0) out of memory"
    d = diagnose_text(text)
    assert d.primary is not None
    assert d.primary.runtime == "cuda"


def test_imageio_reads_its_limit_in_both_eras() -> None:
    new = "RuntimeError: imageio.mimread() has read over 256000000B of image data."
    old = "RuntimeError: imageio.mimread() has read over 256 MiB of image data."
    assert parse_log(new).events[0].allowed_bytes == 256_000_000
    assert parse_log(old).events[0].allowed_bytes == 256 << 20
    assert diagnose_text(new).cause == "host_ram"


@pytest.mark.parametrize(
    ("record", "family"),
    [
        ("h24-dolly-111", "near_full"),  # "CPU Virtual Memory:  used = 29.71 GB, percent = 95.3%"
        ("h24-vllm-27073", "growth"),  # "GPU KV cache usage持续升高"
        ("h24-examples-1078", "excessive"),  # "memory usage of GPU0 ... higher than other GPUs"
    ],
)
def test_heldout24_usage_reports(record: str, family: str) -> None:
    text = corpus_text(record)
    nums = usage_numbers(text)
    assert nums is not None, text
    assert nums.family == family
    assert diagnose_text(text).oom_found


def test_memory_still_occupied_after_the_run_is_a_report() -> None:
    d = diagnose_text(corpus_text("h24-mxnet-17837"))
    assert d.oom_found
    assert not diagnose_text("Is the GPU memory still occupied after the script exits?").oom_found
    assert not diagnose_text("The seat is still occupied.").oom_found


def test_deepspeed_host_line_reads_used_and_total() -> None:
    nums = usage_numbers("CPU Virtual Memory:  used = 29.71 GB, percent = 95.3%")
    assert nums is not None
    assert nums.used_bytes == round(29.71 * (1 << 30))
    assert nums.total_bytes is not None
    assert abs(nums.total_bytes - nums.used_bytes / 0.953) < 1 << 20


@pytest.mark.parametrize(
    "text",
    [
        "tcmalloc: large alloc on Colab and Tensorflow killed on local machine due to over "
        "consumption of RAM",
        "用deepspeed方式返回错误码-9 啥意思",
        "deepspeed单卡训练出现exits with return code = -9",
    ],
)
def test_kill_titles_are_host_ram(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found, text
    assert d.cause == "host_ram"


@pytest.mark.parametrize(
    "text",
    [
        # DeepSpeed's line with the host far from full (every ZeRO log prints it)
        "[INFO] [utils.py:789:see_memory_usage] CPU Virtual Memory:  used = 17.18 GB, "
        "percent = 6.8%",
        # growth denied, in Chinese
        "训练过程中显存没有持续增长，很稳定",
        # one GPU lower than the others is not a use called high
        "The memory usage of GPU0 is lower than other GPUs.",
        # the same verbs about time, not memory
        "训练时间一直在增加",
        # killed for another reason
        "the job was killed due to over consumption of CPU time",
        # a return code other than -9 / 137
        "程序返回错误码-1",
        "OSError: [Errno 120] Cannot open the device",
    ],
)
def test_near_misses_stay_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found, text


def test_linear_time_on_near_matching_junk() -> None:
    for junk in (
        "Error allocating 1 bytes of device memory (" * 20_000,
        "== cudaSuccess. (" * 30_000,
        "显存" + "一" * 200_000 + "持续升高",
        "CPU Virtual Memory:  used = 1" * 20_000,
    ):
        start = time.process_time()
        diagnose_text(junk)
        assert time.process_time() - start < 5.0
