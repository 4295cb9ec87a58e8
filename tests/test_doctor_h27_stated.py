"""doccause14 (heldout26/heldout27, retired): what those texts state that decides the cause.

Each rule is tested on the real record's text and on a near miss it must leave alone.
"""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text

# h27-accelerate-1444 (huggingface/accelerate PR "fix potential OOM when resuming with multi-GPU
# training"): label multi_gpu_imbalance (high)
_ACCELERATE = (
    "I encounter an OOM error when attempting to resume training ControlNet from a checkpoint "
    "using 4 GPUs 12GB each. After making modifications to the code, this error (OOM) has been "
    "fixed."
)
# h27-anemoi-core-1145 (PR "load model on CPU to avoid GPU OOMs"): multi_gpu_imbalance (medium)
_ANEMOI = (
    "This was revealed to us when we encountered OOM errors when fork-reloading model weights "
    "from a model sharded across 8 GPUs, which was previously trained and fitting the memory fine."
)
# h27-petals-150 (PR "Fix OOMs during server rebalancing"): leak_or_accumulation (high)
_PETALS = (
    "The cause of OOMs were the cyclic references `TransformerBackend <-> PrioritizedTaskPool` "
    "that could not have been garbage collected properly:"
)
# h27-TensorRT-LLM-12815 (the Python LoraManager kept every adapter): leak_or_accumulation (high)
_TRTLLM_LORA = (
    "When serving many unique LoRA adapters, TRTLLM hits CUDA OOM after processing a few "
    "requests, despite the C++ `PeftCacheManager` being configured with `max_loras` to limit "
    "GPU-resident adapters and evict via LRU."
)
# h27-RL-2319 (NVIDIA-NeMo/RL, "OOM from intra-step memory fragmentation"): fragmentation (medium)
_NEMO_RL = (
    "We hit OOM as early as the 2nd GRPO backward step from a combination of inter-step tensor "
    "retention and intra-step fragmentation (additional context below). `expandable_segments` is "
    "the documented mitigation for the fragmentation but is unavailable in colocated mode due to "
    "vLLM's `CuMemAllocator` (pytorch#147851). "
)
# h5-comfyui-9308 (batch_or_activations) and h26-discuss.huggingface.co-175777 (leak): PyTorch's
# MPS wording with "other allocations" far above its own pool
_MPS_OTHER = (
    "RuntimeError: MPS backend out of memory (MPS allocated: 22.57 GiB, other allocations: "
    "139.74 GiB, max allowed: 163.20 GiB). Tried to allocate 1.30 GiB on private pool. Use "
    "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations (may "
    "cause system failure)."
)


def test_resume_from_checkpoint_on_several_gpus_is_imbalance() -> None:
    for text in (_ACCELERATE, _ANEMOI):
        d = diagnose_text(text)
        assert d.cause == "multi_gpu_imbalance", text
        assert "map_location" in d.explanation


def test_resume_on_one_gpu_or_saving_is_not_read() -> None:
    for text in (
        "I encounter an OOM error when attempting to resume training from a checkpoint using "
        "1 GPU.",
        "CUDA OOM when saving a checkpoint with 4 GPUs.",
        "OOM when resuming from a checkpoint on a single GPU.",
    ):
        assert diagnose_text(text).cause != "multi_gpu_imbalance", text


def test_reference_cycle_not_collected_is_growth() -> None:
    d = diagnose_text(_PETALS)
    assert d.cause == "leak_or_accumulation"
    # a collection that happened says the opposite
    assert (
        diagnose_text("OOMs: the old backend was garbage collected properly.").cause
        != "leak_or_accumulation"
    )


def test_oom_after_processing_requests_is_growth() -> None:
    assert diagnose_text(_TRTLLM_LORA).cause == "leak_or_accumulation"
    # while processing places the failure, it does not say requests completed before it
    assert (
        diagnose_text("TRTLLM hits CUDA OOM while processing a few requests.").cause
        != "leak_or_accumulation"
    )


def test_oom_from_fragmentation_beats_the_rollout_engine_named_beside_it() -> None:
    d = diagnose_text(_NEMO_RL)
    assert d.cause == "fragmentation"
    # the engine named without a stated fragmentation cause keeps its reading
    near = (
        "We hit OOM as early as the 2nd GRPO backward step; the rollout runs on vLLM in "
        "colocated mode."
    )
    assert diagnose_text(near).cause != "fragmentation"


def test_mps_other_allocations_are_this_process_not_other_apps() -> None:
    d = diagnose_text(_MPS_OTHER)
    assert d.cause != "other_process_holding_memory"
    assert "this process" in d.explanation
    # other allocations below PyTorch's pool keep the older readings
    small = _MPS_OTHER.replace("other allocations: 139.74 GiB", "other allocations: 1.74 GiB")
    assert diagnose_text(small).cause != "other_process_holding_memory"
