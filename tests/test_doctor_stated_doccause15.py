"""doccause15: facts the text states that the rules ignored (heldout26-28 studied, retired).

Every text here is synthetic, written in the wording users and pull requests use (not a copy of
a corpus record); each rule is tested with a near miss it must leave alone.
"""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text


def test_completed_steps_with_a_size_setting_is_the_larger_input() -> None:
    for text in (
        "With --max-duration 200 the recipe runs out of memory after a few batches of training.",
        "Using a batch size of 32 it trains fine and then hits CUDA OOM after 40 iterations.",
        "My sequence length is 16k and I get OOM after several steps with deepspeed zero2.",
    ):
        d = diagnose_text(text)
        assert d.cause == "batch_or_activations", text
        assert "padded to its longest" in d.explanation


def test_stated_growth_or_no_setting_stays_accumulation() -> None:
    for text in (
        # growth stated: accumulation, whatever setting is named
        "With batch size 8 the GPU memory keeps growing and it runs out of memory after 300 steps.",
        # completed steps, no size setting
        "CUDA out of memory after 12 epochs of training.",
    ):
        assert diagnose_text(text).cause == "leak_or_accumulation", text


def test_fragmentation_stated_in_other_words() -> None:
    for text in (
        # churn fragments memory until an allocation fails (e.g. inside the clause)
        "Repeated offload and reload fragments the address space until a big allocation "
        "(e.g. the optimizer reload) fails with OOM.",
        # the unused share of the cache said to be large
        "Reserved but unallocated memory was very high before the step, then CUDA OOM.",
        # releasing the cache as what keeps the run alive
        "Call torch.cuda.empty_cache() between phases so that it doesn't run out of memory.",
        # memory held by PyTorch's cache that another allocator needs
        "NCCL init fails with out of memory: pages held by the PyTorch caching allocator are "
        "not visible to cuMemCreate.",
    ):
        d = diagnose_text(text)
        assert d.cause == "fragmentation", text
        assert "expandable_segments" in d.explanation


def test_pytorch_hint_is_not_a_statement_of_fragmentation() -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a "
        "total capacity of 8.00 GiB of which 0 bytes is free. Of the allocated memory 7.10 GiB "
        "is allocated by PyTorch, and 120.00 MiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
    )
    assert diagnose_text(text).cause != "fragmentation"
    # empty_cache that did not help is not the purpose clause
    tried = "I tried torch.cuda.empty_cache() but it still runs out of memory."
    assert diagnose_text(tried).cause != "fragmentation"


def test_model_conversion_or_export_runs_out_of_host_ram() -> None:
    for text in (
        "The checkpoint conversion process eats all the memory and dies for the 70B model.",
        "python convert_hf_to_gguf.py hits OOM while writing the last shard.",
        "Exporting the 13B model to ONNX runs out of memory on my workstation.",
        "The memory is used up by the converting process and then it is gone.",
        "convertion of the 65b checkpoint to hf format hits OOM",
    ):
        d = diagnose_text(text)
        assert d.cause == "host_ram", text
        assert "conversion or export" in d.explanation, text
        assert any("--use-temp-file" in c for f in d.fixes for c in f.commands)


def test_conversion_on_the_gpu_or_of_an_image_is_not_read() -> None:
    # the GPU named: the device's memory
    gpu = "CUDA out of memory when exporting the model to ONNX on the GPU."
    assert diagnose_text(gpu).cause != "host_ram"
    # converting a picture is not a model conversion
    image = "It runs out of memory when I convert a 4000x4000 picture with scale 2."
    assert "conversion or export" not in diagnose_text(image).explanation


def test_unified_memory_machine_is_host_ram() -> None:
    for text in (
        "Out of memory loading a 70B GGUF on the DGX Spark, the whole box freezes.",
        "On a Jetson Orin Nano the detector runs out of memory after the camera starts.",
        "Ollama runner crashed with out of memory on my Mac mini with 16 GB.",
    ):
        d = diagnose_text(text)
        assert d.cause == "host_ram", text
        assert "unified-memory machine" in d.explanation


def test_unified_memory_leaves_a_stated_kv_cache_or_growth_alone() -> None:
    growth = "On my MacBook Pro the memory keeps growing until it runs out of memory."
    assert diagnose_text(growth).cause == "leak_or_accumulation"
    # a discrete GPU named with no unified-memory word stays open
    discrete = "Out of memory on an RTX 4090 while generating."
    assert "unified-memory" not in diagnose_text(discrete).explanation


def test_full_training_state_over_one_card_is_model_too_large() -> None:
    from oomkit.diagnose.rules_stated_size import training_state_over_card

    # 13B x 16 bytes = 208 GB of training state on an 80 GB card, the model name run together
    text = "Trying to fine-tune the 13B model on one 80GH100 gives not enough GPU memory."
    d = diagnose_text(text)
    assert d.cause == "model_too_large"
    assert "16 bytes per parameter" in d.explanation
    assert training_state_over_card(text) is not None
    # LoRA, offload, several cards or a model that fits are not read
    for other in (
        "Trying to fine-tune the 13B model with LoRA on one 80GB H100 gives OOM.",
        "Training the 7B model with ZeRO-3 offload on a 40GB A100 runs out of memory.",
        "Training the 7B model on 8x 80GB H100 runs out of memory.",
        "Training the 1B model on a 24GB GPU runs out of memory.",
    ):
        assert training_state_over_card(other) is None, other


def test_model_bytes_over_the_card_beats_its_own_models_loaded_together() -> None:
    text = (
        "Large model (~9.5 GB total) OOMs on 8 GB GPU during Pipeline::init() because all "
        "three models were loaded simultaneously: encoder (2.1 GB) + unet (6.0 GB)."
    )
    d = diagnose_text(text)
    assert d.cause == "model_too_large"
    assert "device is shared" not in d.explanation
    # several servers sharing the card are still co-tenants
    shared = "OOM: two processes were running simultaneously on the same GPU."
    assert diagnose_text(shared).cause == "other_process_holding_memory"


def test_tpu_smem_is_the_page_table_not_hbm() -> None:
    text = (
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent "
        "error. Ran out of memory in memory space smem. Used 1.02M of 1.00M smem. Exceeded smem "
        "capacity by 20.0K."
    )
    d = diagnose_text(text)
    assert d.primary is not None
    assert d.primary.kind == "xla_smem"
    assert d.cause == "kv_cache_or_context"
    assert any("--max-model-len" in c for f in d.fixes for c in f.commands)
    # HBM stays the compiled program's memory
    hbm = text.replace("smem", "hbm").replace("1.02M of 1.00M", "20.4G of 15.7G")
    assert diagnose_text(hbm).primary.kind == "xla_compile_oom"  # type: ignore[union-attr]


def test_logits_for_every_token_are_the_batch_not_a_leak() -> None:
    for text in (
        "Memory leak in the server when gather_context_logits is enabled, OOM after 200 requests.",
        "OOM with prompt_logprobs=20 on long prompts.",
        "The trainer materializes the full [B, S, V] logits for the loss and runs out of memory.",
    ):
        d = diagnose_text(text)
        assert d.cause == "batch_or_activations", text
        assert "logits kept for every token" in d.explanation
    # a kernel named ..._logits is not a request for logits; the KV pool named decides
    assert "logits kept" not in diagnose_text("CUDA OOM in fp8_paged_mqa_logits").explanation
    kv = "The KV cache took 120 GiB and prompt_logprobs then OOMs."
    assert "logits kept" not in diagnose_text(kv).explanation


def test_cuda_unified_memory_or_a_named_working_set_is_not_the_machine() -> None:
    # CUDA's managed memory on a discrete GPU is an allocation kind, not a unified-memory machine
    managed = "RESOURCE_EXHAUSTED on an A100 80G, despite unified memory and the jax flag"
    assert "unified-memory machine" not in diagnose_text(managed).explanation
    # the VAE decode named on a Mac is the working set's lever
    vae = "Mac Studio M2 Ultra 192gb - VAE decode node - out of memory after sampling"
    assert "unified-memory machine" not in diagnose_text(vae).explanation


def test_context_said_too_large_or_no_room_for_the_kv_cache() -> None:
    for text in (
        "The server crashed with OOM, I guess the context was way too large for this card.",
        "The app runs out of memory: there is not enough room for the KV cache after the load.",
    ):
        d = diagnose_text(text)
        assert d.cause == "kv_cache_or_context", text
    # a context merely named is not read
    plain = "The server crashed with OOM, context 4096."
    assert diagnose_text(plain).cause != "kv_cache_or_context"
