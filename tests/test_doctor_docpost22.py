"""docpost22 (issue #9 leftovers): every fix line's prompt kind holds what it promises (config,
Lua, JavaScript), and a stated micro-batch caps the batch cut."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.prompt_lines import line_ok
from oomkit.diagnose.shell_lines import prompt, shell_ready

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from doctor_corpus import load, part_files


@pytest.mark.parametrize(
    ("line", "kind", "ok"),
    [
        ("per_device_train_batch_size: 1", "config: ", True),
        ("batch_size: 8   # data layer in the train prototxt", "config: ", True),
        ("vae_tiling: true   # LocalAI model config", "config: ", True),
        ('"num_gpu": 19', "config: ", True),
        ("resources: {limits: {memory: 1Gi}, requests: {memory: 1Gi}}   # pod", "config: ", True),
        ('fsdp_config: {"state_dict_type": "SHARDED_STATE_DICT"}', "config: ", True),
        ('"zero_optimization": {"offload_optimizer": {"device": "cpu"}}', "config: ", True),
        # main printed these after "config:": neither is a key: value a config file reads
        ('"context_window_size": <N> (mlc-chat-config / engine config)', "config: ", False),
        ('deepspeed: zero_optimization.offload_optimizer.device = "cpu"', "config: ", False),
        ("batch_size: smaller one", "config: ", False),
        ('"num_gpu": nineteen', "config: ", False),
        ("cudnn.benchmark = false  -- Lua", "Lua: ", True),
        ("cudnn.benchmark = false and more  -- Lua", "Lua: ", False),
        ("tf.tidy(() => model.predict(x))   // TensorFlow.js", "JavaScript: ", True),
        ("await tf.setBackend('wasm')   // TensorFlow.js", "JavaScript: ", True),
        ("tf.split(t, 4   // TensorFlow.js", "JavaScript: ", False),
    ],
)
def test_config_lua_and_javascript_lines_keep_their_prompt(line: str, kind: str, ok: bool) -> None:
    assert prompt(line) == kind
    assert line_ok(kind, line) is ok


def test_python_floor_division_and_tf_python_stay_python() -> None:
    assert prompt("batch_size = max(1, batch_size // 4)") == "Python: "
    assert prompt("batch_size //= 2") == "Python: "
    assert prompt("tf.config.experimental.set_memory_growth(gpu, True)") == "Python: "


def test_a_lua_line_is_no_longer_printed_as_python() -> None:
    # main printed "Python: cudnn.benchmark = false  -- Lua" (ast reads it as false - (-Lua))
    d = diagnose_text(
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 7.79 GiB total "
        "capacity; 1.10 GiB already allocated; 1.50 GiB free; 1.20 GiB reserved in total by "
        'PyTorch)\n  File "x.py", line 3, in forward\n  torch.backends.cudnn  cudnnFind'
    )
    lua = [c for f in d.fixes for c in f.commands if c.endswith("-- Lua")]
    assert all(prompt(c) == "Lua: " for c in lua)


def test_prose_in_a_config_line_moves_into_the_text() -> None:
    (fix,) = shell_ready(
        [generic("t", "why.", ('"context_window_size": <N> (mlc-chat-config / engine config)',))]
    )
    assert fix.commands == ()
    assert "mlc-chat-config" in fix.why


def _record(part: str, rid: str) -> str:
    return next(r["text"] for r in load(part_files(part)) if r.get("id") == rid)


def _batch_lines(text: str) -> list[str]:
    return [c for f in diagnose_text(text).fixes for c in f.commands if "batch_size" in c]


@pytest.mark.parametrize(
    ("text", "stated"),
    [
        ("I use batch size 8 and it fails", 8),
        ("--per_device_train_batch_size 4", 4),
        ("micro_batch_size: 2", 2),
        ("bs=16", 16),
        ("reduced batch size from 32 to 8", 8),
        ("  Instantaneous batch size per device = 6", 6),
        ("max_batch_size 64", None),
        ("eval_batch_size=32", None),
        ("global batch size 256", None),
        ("batch size: 8192 tokens", None),
    ],
)
def test_the_stated_micro_batch(text: str, stated: int | None) -> None:
    from oomkit.diagnose.batch_stated import stated_batch

    assert stated_batch(text) == stated


def test_a_stated_batch_of_one_is_not_halved() -> None:
    # main printed "batch_size //= 2" to a poster who had "reduce[d] batch size to 1"
    text = _record("heldout12", "h12-svoice-86")
    assert not [c for c in _batch_lines(text) if "//" in c]
    assert any(
        c.startswith("max_length //= 2") for f in diagnose_text(text).fixes for c in f.commands
    )


def test_the_cut_is_sized_from_the_stated_batch() -> None:
    # DeepLabv3: "batch size 8"; main printed "batch_size //= 2"
    assert "batch_size = 4   # stated 8" in _batch_lines(
        _record("heldout21", "h21-DeepLabv3.pytorch-16")
    )


def test_a_factor_over_the_stated_batch_stops_at_one() -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total "
        "capacity of 23.64 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this "
        "process has 22.57 GiB memory in use. Of the allocated memory 21.90 GiB is allocated by "
        "PyTorch, and 200.00 MiB is reserved by PyTorch but unallocated.\n"
        "I train with batch size 4."
    )
    lines = _batch_lines(text)
    assert lines
    assert all(c.startswith("batch_size = ") for c in lines), lines
    assert all(int(c.split("=")[1].split()[0]) < 4 for c in lines), lines
    assert "batch_size = 1   # stated 4" in lines


def test_gpustack_zero_allocatable_across_zero_gpus_is_recognised_not_a_shortage() -> None:
    # custom_backend_resource_fit_selector.py:309 (gpustack@47277d79); main found no OOM here
    d = diagnose_text(_record("heldout44", "h44-gpustack-5207"))
    assert d.oom_found
    assert d.cause == "unknown"
    assert "0 GPUs" in d.explanation


@pytest.mark.parametrize(
    "line",
    [
        "The largest available worker has 31.5 GiB allocatable VRAM.",  # vllm selector :601
        "The largest available worker has 40.00 GiB allocatable VRAM across 2 GPUs.",  # :309
    ],
)
def test_gpustack_largest_worker_forms_without_the_ratio(line: str) -> None:
    text = f"- The model requires approximately 65.69 GiB of VRAM.\n- {line}"
    d = diagnose_text(text)
    assert d.oom_found
    assert d.primary is not None
    assert d.primary.format == "gpustack_resource_fit"
    assert d.cause == "model_too_large"


def test_a_refusal_that_only_the_reserve_tips_over_stays_open() -> None:
    d = diagnose_text(_record("heldout44", "h44-splash-13"))
    assert d.oom_found
    assert d.cause == "unknown"
    assert d.open_question


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("Error: model requires 18.2 GiB, but only 12.0 GiB is available", "model_too_large"),
        (
            "loading needs 9 GB plus 2 GB reserved for the system, but only 8 GB are free",
            "host_ram",
        ),
    ],
)
def test_the_preload_refusal_family(text: str, cause: str) -> None:
    d = diagnose_text(text)
    assert d.primary is not None
    assert d.primary.format == "preload_admission"
    assert d.cause == cause


def test_a_described_shortage_is_not_a_refusal() -> None:
    text = "A 7B model needs 4 GB, but only 2 GB is available to the iGPU by default."
    assert not diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "line",
    [
        "amdgpu: Not enough memory for command submission.",  # radeonsi's winsys
        "radeon: Not enough memory for command submission.",  # r600's winsys
        "`Not enough memory for command submission!` / `amdgpu_vm_validate() failed`",  # kernel
        "radv/amdgpu: Not enough memory for command submission.",
    ],
)
def test_the_command_submission_family_is_the_amdgpu_enomem(line: str) -> None:
    d = diagnose_text(line)
    assert d.primary is not None
    assert d.primary.format == "amdgpu_cs_enomem"


def test_the_command_submission_words_in_prose_are_not_the_message() -> None:
    text = "RADV prints its winsys tag before every command submission warning it writes to stderr."
    assert not diagnose_text(text).oom_found


_BARE_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."


@pytest.mark.parametrize(
    "prose",
    [
        "It loads everything onto the first GPU although I have four.",
        'I use device_map="auto" but it does not spread the model, so one card fills up.',
        "There is uneven memory across the GPUs when I run it on two cards.",
        "多卡时，显存不太均匀，0号卡特别高，容易oom",
    ],
)
def test_one_gpu_of_several_said_in_more_ways(prose: str) -> None:
    assert diagnose_text(f"{prose}\n{_BARE_OOM}").cause == "multi_gpu_imbalance"


@pytest.mark.parametrize(
    "prose",
    [
        "I am training on 8 GPUs.",
        "device_map='auto' spreads the layers across all visible GPUs.",
        "With device_map='balanced' the memory is balanced across the GPUs.",
    ],
)
def test_several_gpus_named_without_a_placement_is_not_imbalance(prose: str) -> None:
    assert diagnose_text(f"{prose}\n{_BARE_OOM}").cause != "multi_gpu_imbalance"


@pytest.mark.parametrize(
    "prose",
    [
        "It works the first time, but when I run the cell again in the notebook I get OOM.",
        "The second time I run it in the same script, it fails.",
        "After loading a second model in the same process it runs out of memory.",
        "第二次运行就显存溢出",
    ],
)
def test_a_job_run_again_in_one_process_reads_as_accumulation(prose: str) -> None:
    d = diagnose_text(f"{prose}\n{_BARE_OOM}")
    assert d.cause == "leak_or_accumulation"
    assert "memory_allocated() higher when the second run starts" in d.explanation


@pytest.mark.parametrize(
    "prose",
    [
        # h16-mmdetection-4450's shape: the first attempt failed too (separate runs, too big)
        "At the first time, out of memory is reported at the second epoch. At the second time, "
        "out of memory is reported at the fifth epoch.",
        "The second run works fine, only the first fails.",
        "I added a second GPU and the second time it still fails.",
    ],
)
def test_not_a_rerun_in_one_process(prose: str) -> None:
    assert diagnose_text(f"{prose}\n{_BARE_OOM}").cause != "leak_or_accumulation"
