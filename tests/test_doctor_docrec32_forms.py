"""Forms docrec32 added after classifying every unrecognised development record (issue 9):

* an English memory noun in a Chinese, Japanese or Korean sentence ("cuda memory가 부족하다"),
  read by the native grammar after :func:`native_noun` (parse_wordings_mixed);
* "it'll abort with a vram error on load": the run ends on a memory / VRAM error;
* "Can not allocate memory" (TFLite contrib/lite JNI's spelling) as the ENOMEM keyword;
* a full ``/dev/shm`` reported with ENOSPC by PyTorch's MapAllocator and NCCL (parse_shm).

Negatives first: each form's near misses stay silent (they are also in the prose negatives)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.diagnose.consistency import contradictions, hardware_top_fix
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse_wordings_mixed import native_noun

NEGATIVES = [
    # memory named in a CJK sentence, no failure
    "GPU memory的使用情况如下表所示。",
    "请确保GPU memory足够，再启动第二个实例。",
    "GPU memory够用吗？",
    "cuda memory 사용량을 확인하세요.",
    "memoryの使用量を確認してください。",
    "为了避免memory不足，请关闭其他程序。",
    # an error word that is not a failure of the run
    "The VRAM error counter in nvidia-smi shows 0 after the test.",
    "Xid 48: a double-bit ECC vram error was detected on the board.",
    "We fixed the crash with a memory error handler in the loader.",
    "The unit tests fail with memory errors disabled in the allocator config.",
    # ENOSPC on a disk file, or a shm segment refused for another reason
    "RuntimeError: unable to write to file </home/u/data.bin>: No space left on device (28)",
    "NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x (size 100), error: "
    "Permission denied (13)",
    "OSError: [Errno 28] No space left on device",
    "Set NCCL_SHM_DISABLE=1 to stop NCCL from creating shared memory segments in /dev/shm.",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_near_misses_are_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found


def test_the_negatives_are_in_the_prose_negative_set() -> None:
    path = Path(__file__).parent / "fixtures" / "prose_negatives.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    mine = [r for r in rows if r["source"].startswith("docrec32")]
    assert len(mine) >= 15
    assert not any(diagnose_text(r["text"]).oom_found for r in mine)


def test_native_noun_rewrites_only_a_noun_before_cjk() -> None:
    assert native_noun("cuda memory가 부족하다") == "메모리가 부족하다"
    assert native_noun("GPU memory不够用") == "显存不够用"
    assert native_noun("RAM不足") == "内存不足"
    assert native_noun("memoryが足りない") == "メモリが足りない"
    assert native_noun("GPU memory is full") is None  # ASCII: nothing to rewrite
    assert native_noun("program运行很慢") is None  # "ram" inside a word


POSITIVES = [
    # the record that showed the form (heldout35, Korean): "CUDA memory is insufficient"
    "resnet 18을 활용하여 custom dataset을 만들어 실행중인데 cuda memory가 부족하다 뜨는데 "
    "그래픽 카드 문제일까요?",
    "训练的时候GPU memory不够用，怎么办",
    "推理时cuda memory不足",
    "学習を始めるとGPU memoryが足りないと言われます",
    "it'll abort with a vram error on load even if the total is less than 8 gb",
    "the script crashes with a CUDA memory error after two epochs",
    "java.lang.NullPointerException: Can not allocate memory for the interprete",
    "Internal error: Can not allocate memory for the given inputs",
]


@pytest.mark.parametrize("text", POSITIVES)
def test_the_forms_are_recognised(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert not contradictions(d)
    assert not hardware_top_fix(d)


def test_tflite_prepare_error_behind_the_old_spelling_stays_silent() -> None:
    # run()'s AllocateTensors runs every op's Prepare: a shape error is the model's, not memory
    text = "Can not allocate memory for the given inputs: kernels/conv.cc:191 dims != 4"
    assert not diagnose_text(text).oom_found


SHM = [
    (
        "RuntimeError: unable to write to file </torch_18692_1954506624>: No space left on "
        "device (28)",
        "pytorch",
    ),
    (
        "node1:123:456 [0] misc/shmutils.cc:91 NCCL WARN Error while creating shared memory "
        "segment /dev/shm/nccl-8Bv3Aa (size 9637888), error: No space left on device (28)",
        "nccl",
    ),
    (
        "node1:1:2 [0] misc/shmutils.cc:60 NCCL WARN Call to posix_fallocate failed : No space "
        "left on device\nnode1:1:2 [0] NCCL WARN Error while creating shared memory segment "
        "/dev/shm/nccl-8Bv3Aa (size 9637888)",
        "nccl",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("text", "who"), SHM)
def test_a_full_dev_shm_is_host_shared_memory(text: str, who: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found
    assert [e.format for e in d.events] == ["shm_full"]
    assert d.events[0].detail == who
    assert d.cause == "host_ram"
    assert "/dev/shm" in d.explanation
    assert "--shm-size" in " ".join(" ".join(f.commands) for f in d.fixes)
    assert not contradictions(d)
    assert not hardware_top_fix(d)
    if who == "nccl":
        assert any("export NCCL_SHM_DISABLE=1" in f.commands for f in d.fixes)


def test_an_absurd_nccl_segment_size_is_recognised_but_not_echoed() -> None:
    """A segment size past any host (2**60 bytes, oomkit.validate.MAX_BYTES) is refused as a
    figure; the message is still NCCL's full /dev/shm. A real size is still read."""
    line = (
        "node1:1:2 [0] misc/shmutils.cc:91 NCCL WARN Error while creating shared memory segment "
        "/dev/shm/nccl-8Bv3Aa (size {}), error: No space left on device (28)"
    )
    absurd = diagnose_text(line.format("99999999999999999999"))
    assert [e.format for e in absurd.events] == ["shm_full"]
    assert absurd.events[0].requested_bytes is None
    assert absurd.cause == "host_ram"
    assert diagnose_text(line.format("9637888")).events[0].requested_bytes == 9637888
