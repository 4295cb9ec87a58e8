"""A reviewer's doctor logs (revfix18e), each in its runtime's real format, through
``diagnose_text`` and the CLI.

* TensorRT's ``Requested amount of GPU memory (N bytes)`` with N near 2**64 (a negative size
  printed as a ``size_t``): refused and named, never printed as a size.
* vLLM's ``_allocate_kv_cache`` raising a numberless ``CUDA error: out of memory``: the first fix
  is the KV pool's share (``--gpu-memory-utilization``), not a training lever.
* An OOM whose traceback is the trainer's ``_save_checkpoint`` -> ``FSDP.optim_state_dict``
  gather: the save's state gather (``model_too_large``), never "failed in the forward" or "cut
  the batch".
"""

from __future__ import annotations

from click.testing import CliRunner

from oomkit.cli.doctor import doctor_command
from oomkit.diagnose.doctor import diagnose_text

ENV = {"NO_COLOR": "1", "COLUMNS": "200"}

TRT_WRAPPED = (
    "[03/12/2024-10:11:12] [TRT] [E] 1: [defaultAllocator.cpp::allocate::20] Error Code 1: Cuda "
    "Runtime (out of memory)\n"
    "[03/12/2024-10:11:12] [TRT] [W] Requested amount of GPU memory (18446744065119617024 bytes) "
    "could not be allocated. There may not be enough free memory for allocation to succeed.\n"
    "[03/12/2024-10:11:12] [TRT] [E] 2: [executionContext.cpp::ExecutionContext::410] Error Code "
    "2: OutOfMemory (no further information)\n"
)
VLLM_KV_ALLOC = (
    "INFO 05-10 10:00:00 gpu_executor.py:122] # GPU blocks: 2760, # CPU blocks: 2048\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/cache_engine.py", line 88, in '
    "_allocate_kv_cache\n"
    "    torch.zeros(kv_cache_shape,\n"
    "RuntimeError: CUDA error: out of memory\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
)

# transformers Trainer + FSDP: the full optimizer state dict gathered at the save
FSDP_SAVE = (
    "{'loss': 1.2345, 'learning_rate': 1.9e-05, 'epoch': 0.5}\n"
    "Saving model checkpoint to ./out/checkpoint-1000\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 210, in <module>\n'
    "    trainer.train()\n"
    '  File "/usr/local/lib/python3.10/site-packages/transformers/trainer.py", line 2291, in '
    "_inner_training_loop\n"
    "    self._maybe_log_save_evaluate(tr_loss, grad_norm, model, trial, epoch)\n"
    '  File "/usr/local/lib/python3.10/site-packages/transformers/trainer.py", line 2815, in '
    "_save_checkpoint\n"
    "    self._save_optimizer_and_scheduler(output_dir)\n"
    '  File "/usr/local/lib/python3.10/site-packages/transformers/trainer.py", line 2925, in '
    "_save_optimizer_and_scheduler\n"
    "    optim_state_dict = FSDP.optim_state_dict(self.model, self.optimizer)\n"
    '  File "/usr/local/lib/python3.10/site-packages/torch/distributed/fsdp/_optim_utils.py", '
    "line 1421, in _gather_all_orig_param_state\n"
    "    gathered_state = _allgather_orig_param_states(\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 1.23 GiB is free. Including non-PyTorch memory, this process "
    "has 77.91 GiB memory in use. Of the allocated memory 70.12 GiB is allocated by PyTorch, and "
    "6.28 GiB is reserved by PyTorch but unallocated.\n"
)


def _cli(text: str, *args: str) -> str:
    r = CliRunner().invoke(doctor_command, ["-", *args], input=text, env=ENV)
    assert r.exit_code == 0, r.output
    return r.output


def test_trt_request_near_two_to_the_64_is_refused_and_named() -> None:
    d = diagnose_text(TRT_WRAPPED)
    e = next(e for e in d.events if e.format == "trt_requested_gpu_memory")
    assert e.requested_bytes is None
    assert e.ignored_sizes == "18446744065119617024 bytes requested"
    assert "not a believable figure" in d.explanation
    assert "negative size printed unsigned" in d.explanation
    out = _cli(TRT_WRAPPED)
    assert "17179869176" not in out  # never printed as GiB
    assert "18446744065119617024 bytes requested" in out


def test_trt_request_of_a_real_size_is_still_read() -> None:
    text = TRT_WRAPPED.replace("18446744065119617024", "4294967296")
    e = next(e for e in diagnose_text(text).events if e.format == "trt_requested_gpu_memory")
    assert (e.requested_bytes, e.ignored_sizes) == (4294967296, None)


def test_vllm_kv_cache_allocation_gets_the_pools_share_first() -> None:
    d = diagnose_text(VLLM_KV_ALLOC)
    assert d.cause == "kv_cache_or_context"
    assert d.fixes[0].commands[0] == "--gpu-memory-utilization 0.8"
    cmds = " ".join(c for f in d.fixes for c in f.commands)
    assert "gradient_checkpointing" not in cmds
    assert "from_pretrained" not in cmds  # no transformers loader for a vLLM engine
    out = _cli(VLLM_KV_ALLOC)
    assert "1. Give vLLM's KV pool a smaller share of the GPU" in out


def test_oom_in_the_checkpoint_saves_frames_is_the_saves_gather() -> None:
    d = diagnose_text(FSDP_SAVE)
    assert d.context.frame_phase == "checkpoint_save"
    assert d.cause == "model_too_large"
    assert d.fixes[0].title == "Save without gathering the full model on the GPU"
    assert not any("batch" in f.title.lower() for f in d.fixes[:1])
    out = _cli(FSDP_SAVE)
    assert "failed in the forward" not in out
    assert "Cut the batch size" not in out
    assert "SHARDED_STATE_DICT" in out


def test_a_training_step_traceback_is_not_a_save() -> None:
    text = FSDP_SAVE.replace("_save_checkpoint", "training_step").replace(
        "_save_optimizer_and_scheduler", "compute_loss"
    )
    text = text.replace("in _gather_all_orig_param_state", "in forward")
    assert diagnose_text(text).context.frame_phase != "checkpoint_save"


def test_trt_tactic_skip_warnings_are_not_an_oom() -> None:
    # TensorRT's builder skips a tactic whose scratch does not fit and builds on ([W])
    text = (
        "[TRT] [W] Tactic Device request: 17592186044415MB Available: 6030MB. Device memory is "
        "insufficient to use tactic.\n"
        "[TRT] [W] Skipping tactic 3 due to insufficient memory on requested size of "
        "18446744073709551615 detected for tactic 0x0000000000000004.\n"
    )
    assert diagnose_text(text).events == ()
    r = CliRunner().invoke(doctor_command, ["-"], input=text, env=ENV)
    assert r.exit_code == 3  # the CLI's "no OOM found"
    assert "No out-of-memory message was found" in r.output


VLLM_CTX = (
    "vllm serve Qwen/Qwen2.5-72B-Instruct --tensor-parallel-size 4 --max-model-len 131072\n"
    "...\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total "
    "capacity of 79.19 GiB of which 2.91 GiB is free. Including non-PyTorch memory, this process "
    "has 76.27 GiB memory in use. Of the allocated memory 74.80 GiB is allocated by PyTorch, and "
    "811.25 MiB is reserved by PyTorch but unallocated.\n"
)
CTX_SAID = (
    "The OOM goes away when I lower max_model_len to 32768, so the context length is what runs "
    "out of memory.\n"
)


def test_a_vllm_server_never_gets_training_fixes_for_a_large_request() -> None:
    d = diagnose_text(VLLM_CTX)
    cmds = " ".join(c for f in d.fixes for c in f.commands)
    assert "gradient_checkpointing" not in cmds
    assert "batch_size" not in cmds
    assert "--max-num-batched-tokens 2048   # vLLM" in d.fixes[0].commands


def test_the_context_named_by_the_posters_experiment_decides() -> None:
    d = diagnose_text(VLLM_CTX + CTX_SAID)
    assert d.cause == "kv_cache_or_context"
    assert d.fixes[0].commands[0] == "--max-model-len 32768"
    out = _cli(VLLM_CTX + CTX_SAID)
    assert "Cut the batch size" not in out
    assert "gradient_checkpointing_enable" not in out


def test_a_batch_experiment_is_not_the_context() -> None:
    said = "The OOM goes away when I lower the batch size; max_model_len stays at 131072.\n"
    assert diagnose_text(VLLM_CTX + said).cause != "kv_cache_or_context"


# a Chinese report of a DeepSpeed full fine-tune killed while saving (DeepSpeed engine.py's
# save_checkpoint log line, then the shell's "Killed")
ZH_SAVE = (
    "用 deepspeed 跑 qwen2.5-7b 全参微调，8卡A100，每次跑到保存checkpoint的时候进程就被Killed了，"
    "日志最后一行就是：\n"
    "[2024-05-01 12:00:00,000] [INFO] [engine.py:3000:save_checkpoint] Saving model checkpoint\n"
    "Killed\n"
    "内存是256G，请问怎么解决？\n"
)


def test_a_host_kill_at_the_save_gets_the_saves_fixes_and_no_windows_line() -> None:
    d = diagnose_text(ZH_SAVE)
    assert d.cause == "host_ram"
    cmds = [c for f in d.fixes for c in f.commands]
    assert any("stage3_gather_16bit_weights_on_model_save" in c for c in cmds)
    assert not any("low_cpu_mem_usage" in c for c in cmds)
    assert not any("Windows" in c for c in cmds)  # a Linux shell's "Killed"
    out = _cli(ZH_SAVE)
    assert "save_only_model=True" in out


def test_a_host_kill_elsewhere_keeps_the_load_fix() -> None:
    d = diagnose_text("python train.py\nKilled\n")
    cmds = [c for f in d.fixes for c in f.commands]
    assert any("low_cpu_mem_usage" in c for c in cmds)
    assert not any("Windows" in c for c in cmds)


PIN_MEMORY = (
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.10/site-packages/torch/utils/data/_utils/pin_memory.py", line 55, '
    "in _pin_memory_loop\n"
    "    do_one_step()\n"
    '  File "/usr/lib/python3.10/site-packages/torch/utils/data/_utils/pin_memory.py", line 73, '
    "in pin_memory\n"
    "    return data.pin_memory(device)\n"
    "RuntimeError: CUDA error: out of memory\n"
)


def test_the_pin_memory_thread_is_pinned_host_memory() -> None:
    """The DataLoader's pin-memory thread pins host pages (torch/utils/data/_utils/pin_memory.py):
    the cause is host RAM and the allocation that failed is pinned host memory, not a device
    activation (taxonomy._FRAME_ALLOC)."""
    d = diagnose_text(PIN_MEMORY)
    assert d.cause == "host_ram"
    assert d.allocation == "pinned_host"
    cmds = " ".join(c for f in d.fixes for c in f.commands)
    assert "pin_memory=False" in cmds
