"""Evidence rules of :mod:`oomkit.diagnose.rules_evidence`: real corpus messages each decides, a
second wording of the same fact, and a near miss it must leave alone."""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text

# heldout6 h6-omlx-2079 (jundot/omlx#2079): MLX server, a 90k-100k-token prompt
_OMLX = (
    "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] "
    "Command buffer execution failed: Insufficient Memory "
    "(00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)"
)
# heldout7 h7-mlxlm-854 (ml-explore/mlx-lm#854): the KV cache grew over a long conversation
_MLXLM_SERVER = (
    '127.0.0.1 - - [07/Feb/2026 01:28:11] "POST /v1/chat/completions HTTP/1.1" 200 -\n'
    "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] "
    "Command buffer execution failed: Insufficient Memory "
    "(00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)\n"
    "[1]    68916 abort      mlx_lm.server --model mlx-community/Qwen3-Coder-Next-4bit --port 8080"
)
# heldout5 h5-vmlx-58: the same MLX wording without Apple's status code
_VMLX = (
    "[error] libc++abi: terminating due to uncaught exception of type std::runtime_error: "
    "[METAL] Command buffer execution failed: Insufficient Memory"
)
# ggml-metal's own wording of the same failure (llama.cpp / Ollama on a Mac)
_GGML_METAL = (
    "ggml_metal_graph_compute: command buffer 0 failed with status 5\n"
    "error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)"
)
# heldout3 h3-whisperstandalone-50 (Purfview/whisper-standalone-win#50): markdown ate `__init__`
_WHISPER_INIT_MD = (
    'File "faster_whisper\\transcribe.py", line 125, in init\n'
    "RuntimeError: CUDA failed with error out of memory\n"
    "[16468] Failed to execute script 'main' due to unhandled exception!"
)
# heldout7 h7-buzz-439 (chidiwilliams/buzz#439)
_BUZZ_INIT = (
    '  File "buzz\\transcriber.py", line 500, in transcribe_faster_whisper\n'
    '  File "faster_whisper\\transcribe.py", line 101, in __init__\n'
    "RuntimeError: CUDA failed with error out of memory"
)
# heldout7 h7-lmstudio-2295 (another process held the VRAM) and dev sv-lcpp-2968 (a 2 GB iGPU)
_BARE_CUDAMALLOC = "cudaMalloc failed: out of memory"
_BARE_GGML_CUDA = "ggml-cuda.cu:5048: out of memory"


def test_mlx_metal_command_buffer_oom_is_the_context() -> None:
    for text in (_OMLX, _MLXLM_SERVER, _VMLX):
        d = diagnose_text(text)
        assert d.cause == "kv_cache_or_context", text
        assert d.confidence <= 0.45
        assert "What would decide" in d.explanation
        assert any("prompt-cache" in c for f in d.fixes for c in f.commands)


def test_ggml_metal_command_buffer_without_a_context_size_is_the_context() -> None:
    d = diagnose_text(_GGML_METAL)
    assert d.cause == "kv_cache_or_context"
    assert d.confidence <= 0.45


def test_metal_command_buffer_with_a_short_stated_context_keeps_the_compute_reading() -> None:
    # a context the log states as short is evidence against the KV cache
    d = diagnose_text("llama_new_context_with_model: n_ctx      = 2048\n" + _GGML_METAL)
    assert d.cause == "batch_or_activations"


def test_metal_limits_that_are_not_a_command_buffer_oom_are_left_alone() -> None:
    # a per-buffer limit (one tensor too large) is not the working set growing
    d = diagnose_text(
        "libc++abi: terminating due to uncaught exception of type std::runtime_error: "
        "[metal::malloc] Attempting to allocate 19081554496 bytes which is greater than the "
        "maximum allowed buffer size of 17179869184 bytes."
    )
    assert d.cause != "kv_cache_or_context"
    # the display watchdog killing a long command buffer is not a lack of memory
    watchdog = diagnose_text(
        "[METAL] Command buffer execution failed: Impacting Interactivity "
        "(0000000e:kIOGPUCommandBufferCallbackErrorImpactingInteractivity)"
    )
    assert watchdog.cause != "kv_cache_or_context"


def test_oom_raised_from_a_constructor_frame_is_the_model() -> None:
    for text in (_WHISPER_INIT_MD, _BUZZ_INIT):
        d = diagnose_text(text)
        assert d.primary is not None
        assert d.primary.runtime == "ctranslate2", text
        assert d.context.frame_phase == "model_load"
        assert d.cause == "model_too_large", text
        assert d.phase == "load"
        assert "oomkit gpus" in d.explanation


def test_constructor_frame_in_another_runtime_places_the_load_too() -> None:
    d = diagnose_text(
        'Traceback (most recent call last):\n  File "serve.py", line 12, in <module>\n'
        '  File "engine/session.py", line 88, in __init__\n'
        "RuntimeError: CUDA error: out of memory"
    )
    assert d.context.frame_phase == "model_load"
    assert d.cause == "model_too_large"


def test_an_outer_constructor_frame_does_not_place_the_load() -> None:
    # the innermost frame decides: a decode loop below a constructor is not construction
    d = diagnose_text(
        '  File "app.py", line 40, in __init__\n'
        '  File "faster_whisper\\transcribe.py", line 603, in generate_with_fallback\n'
        "RuntimeError: CUDA failed with error out of memory"
    )
    assert d.context.frame_phase != "model_load"
    assert d.cause != "model_too_large"
    # a function merely named like a constructor is not one
    d2 = diagnose_text(
        '  File "trainer.py", line 7, in initialize\nRuntimeError: CUDA error: out of memory'
    )
    assert d2.context.frame_phase != "model_load"


def test_bare_llamacpp_allocation_failure_is_undecided() -> None:
    for text in (_BARE_CUDAMALLOC, _BARE_GGML_CUDA):
        d = diagnose_text(text)
        assert d.cause == "model_too_large", text
        assert d.confidence <= 0.35
        assert "What would decide" in d.explanation
        assert "oomkit gpus" in d.explanation


def test_llamacpp_failure_with_its_load_log_keeps_its_confidence() -> None:
    # oom_dev oom-lcpp-20431: the weights buffer's size is stated during load_tensors
    d = diagnose_text(
        "load_tensors: loading model tensors, this can take a while... (mmap = true, "
        "direct_io = false)\n"
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 144817.04 MiB on device 0: "
        "cudaMalloc failed: out of memory\n"
        "alloc_tensor_range: failed to allocate CUDA0 buffer of size 151851674624\n"
        "llama_model_load: error loading model: unable to allocate CUDA0 buffer"
    )
    assert d.cause == "model_too_large"
    assert d.confidence > 0.35


# heldout6 h6-lmstudio-14 (lmstudio-ai/lmstudio-bug-tracker#14): a 1M-token context at load
_LMSTUDIO_1M = (
    '{\n  "title": "Failed to load model",\n  "cause": "",\n  "errorData": {\n'
    '    "n_ctx": 1048576,\n    "n_batch": 512,\n    "n_gpu_layers": 81\n  },\n'
    '  "data": {\n    "memory": {\n      "ram_capacity": "314.65 GB",\n'
    '      "ram_unused": "316.65 KB"\n    },'
)


def _lmstudio_vram(n_ctx: int) -> str:
    return (
        '{\n  "title": "Failed to load model",\n  "cause": "",\n  "errorData": {\n'
        f'    "n_ctx": {n_ctx},\n    "n_batch": 512,\n    "n_gpu_layers": -1\n  }},\n'
        '  "data": {\n    "memory": {\n      "vram_recommended_capacity": "24.00 GB",\n'
        '      "vram_unused": "100.00 MB"\n    },'
    )


def test_load_failure_at_a_stated_huge_context_is_the_kv_cache() -> None:
    for text in (_LMSTUDIO_1M, _lmstudio_vram(262144)):
        d = diagnose_text(text)
        assert d.primary is not None
        assert d.primary.format == "lmstudio_load_failed_memory"
        assert d.cause == "kv_cache_or_context", d.explanation
        assert d.confidence <= 0.45
        assert "32k context" in d.explanation


def test_load_failure_at_an_ordinary_context_stays_undecided() -> None:
    d = diagnose_text(_lmstudio_vram(8192))
    assert d.primary is not None
    assert d.primary.format == "lmstudio_load_failed_memory"
    assert d.cause != "kv_cache_or_context"
    assert d.confidence <= 0.45


# heldout2 h2-llamacpp-9352 (ggml-org/llama.cpp#9352): an 18 GB compute buffer at the model's
# default 128k context (the context is not in the log)
_COMPUTE_NO_CTX = (
    "ggml_gallocr_reserve_n: failed to allocate ROCm0 buffer of size 18035509504\n"
    "llama_new_context_with_model: failed to allocate compute buffers\n"
    "llama_init_from_gpt_params: error: failed to create context with model "
    "'../../../Downloads/Meta-Llama-3.1-70B-Instruct-Q4_K_L.gguf'"
)
# dev sv-ollama-9782 (ollama/ollama#9782): Ollama's wording of the same failure
_OLLAMA_COMPUTE = (
    "Error: llama runner process has terminated: cudaMalloc failed: out of memory\n"
    "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 838447104"
)


def test_compute_buffer_without_a_stated_context_names_the_context_as_undecided() -> None:
    d = diagnose_text(_COMPUTE_NO_CTX)
    assert d.allocation == "compute_buffer"
    assert d.cause == "batch_or_activations"
    assert d.confidence <= 0.4
    assert "n_ctx" in d.explanation
    assert "What would decide" in d.explanation
    # under Ollama the layer count is Ollama's own choice: _ollama_layers_overshoot reads it
    d = diagnose_text(_OLLAMA_COMPUTE)
    assert d.allocation == "compute_buffer"
    assert d.cause == "model_too_large"
    assert d.confidence <= 0.45
    assert "num_gpu" in d.explanation


def test_compute_buffer_with_a_stated_context_keeps_the_rules_reading() -> None:
    short = diagnose_text("llama_new_context_with_model: n_ctx      = 4096\n" + _COMPUTE_NO_CTX)
    assert short.cause == "batch_or_activations"
    assert short.confidence > 0.4
    long = diagnose_text("llama_new_context_with_model: n_ctx      = 131072\n" + _COMPUTE_NO_CTX)
    assert long.cause == "kv_cache_or_context"


# --- the text's own statement of growth (rules_evidence._stated_growth) ---


def test_a_title_that_places_the_oom_after_completed_epochs_is_accumulation() -> None:
    from corpus_records import corpus_text

    d = diagnose_text(corpus_text("h10-ugatit-74"))  # "CUDA out of memory at 1000th epoch"
    assert d.cause == "leak_or_accumulation"
    assert d.confidence == 0.5
    assert "'at 1000th epoch'" in d.explanation
    assert "memory_allocated()" in d.explanation  # the deciding fact is named
    assert d.fixes[0].title == "Stop keeping tensors alive across steps"


def test_host_ram_not_given_back_between_runs_is_accumulation() -> None:
    from corpus_records import corpus_text

    # "OOM (system RAM) after a few times of model switching, even pressing Unload model
    # doesn't release memory.": RAM is where it ran out, the growth is why
    d = diagnose_text(corpus_text("h10-comfyui-9408"))
    assert d.cause == "leak_or_accumulation"
    assert d.allocation == "host_ram"  # the words still say what ran out
    assert "doesn't release" in d.explanation


def test_other_wordings_of_growth() -> None:
    for text in (
        "RuntimeError: CUDA out of memory after 3 epochs",
        "torch.cuda.OutOfMemoryError: CUDA out of memory after several iterations",
        "CUDA out of memory: GPU memory keeps growing during training",
        "CUDA out of memory, memory is not released between runs",
    ):
        assert diagnose_text(text).cause == "leak_or_accumulation", text


def test_near_misses_of_stated_growth_keep_their_reading() -> None:
    from corpus_records import corpus_text

    # "during the second step of inference" places a step, it does not say steps completed
    d = diagnose_text(corpus_text("h10-speaker-follower-4"))
    assert d.cause == "batch_or_activations"
    # growth the text rules out
    for text in (
        "CUDA out of memory on the first batch, it is not a memory leak",
        "CUDA out of memory; no leak, usage is flat",
    ):
        assert diagnose_text(text).cause != "leak_or_accumulation", text
    # the first epoch is the first step
    assert diagnose_text("CUDA out of memory at 1st epoch").cause != "leak_or_accumulation"
    # the second training step is the first that must fit Adam's states (allocated by the first
    # optimizer.step()): the model's training state, not growth
    for text in ("CUDA out of memory at the 2nd iteration", "CUDA out of memory after 1 step"):
        assert diagnose_text(text).cause != "leak_or_accumulation", text
    assert diagnose_text("CUDA out of memory after 3 steps").cause == "leak_or_accumulation"
    # a TensorFlow shape dump's LeakyRelu op is not a leak: the tensor shape decides
    d = diagnose_text(corpus_text("h4-kerasyolo3-284"))
    assert d.cause == "batch_or_activations"
    # the numbers' own reading (a request larger than the card) is not overridden by the words
    big = (
        "RuntimeError: CUDA out of memory. Tried to allocate 30.00 GiB (GPU 0; 23.69 GiB total "
        "capacity; 1.00 GiB already allocated; 22.00 GiB free; 1.10 GiB reserved in total by "
        "PyTorch) after 3 epochs"
    )
    assert diagnose_text(big).cause == "batch_or_activations"


def test_growth_along_a_named_counter_is_accumulation() -> None:
    from corpus_records import corpus_text

    # "the GPU memory increasing with training iterations and eventually overflowing": growth
    # along the run's own counter, with a word between the verb's preposition and the counter
    d = diagnose_text(corpus_text("h18-3d-gaussian-splatting-5"))
    assert d.cause == "leak_or_accumulation"
    assert "'increasing with training iterations'" in d.explanation
    for text in (
        "CUDA out of memory: memory usage grows over the training epochs",
        "CUDA out of memory, GPU memory rises across steps",
    ):
        assert diagnose_text(text).cause == "leak_or_accumulation", text


def test_growth_with_the_input_size_is_not_accumulation() -> None:
    # one step's activations grow with the input's size: that is no growth across steps
    for text in (
        "CUDA out of memory: memory increases with the number of denoising steps",
        "CUDA out of memory: activation memory grows with the sequence length",
        "CUDA out of memory: memory grows with the batch size",
        "CUDA out of memory: memory increases with larger images",
    ):
        assert diagnose_text(text).cause != "leak_or_accumulation", text


# --- torch.load restoring onto the saved device (rules_evidence._restored_to_saved_device) ---

_RESUME = "h2-transformerlm-21-resume-8gpu"  # 8 workers torch.load(optimizer_path) on 8x K80


def test_every_worker_restoring_onto_the_saved_gpu_is_an_imbalance() -> None:
    from corpus_records import corpus_text

    d = diagnose_text(corpus_text(_RESUME))
    assert d.context.restore_frame is not None
    assert "_cuda_deserialize" in d.context.restore_frame
    assert d.cause == "multi_gpu_imbalance"
    assert d.confidence == 0.5
    assert "map_location" in d.explanation
    assert d.fixes[0].commands[0] == "torch.load(path, map_location='cpu')"


def test_restore_near_misses() -> None:
    from corpus_records import corpus_text

    text = corpus_text(_RESUME)
    # the same restore, but this process holds most of the card: its own checkpoint is too big
    mine = text.replace("962.69 MiB already allocated", "10.50 GiB already allocated")
    assert diagnose_text(mine).cause != "multi_gpu_imbalance"
    # the same numbers without the restore frame: nothing says the copies are this job's
    bare = "\n".join(line for line in text.splitlines() if "_cuda_deserialize" not in line)
    assert diagnose_text(bare).cause == "other_process_holding_memory"
    # a restore frame without sizes places the load, not the cause
    d = diagnose_text(corpus_text("h3-spin-76"))
    assert d.context.restore_frame is not None
    assert d.cause != "multi_gpu_imbalance"


def test_named_processes_keep_their_cause_but_the_restore_gets_map_location() -> None:
    """The message names seven processes of ~the same size on GPU 0 while this one restores a
    checkpoint there: with consecutive PIDs they are the job's own workers (multi_gpu_imbalance),
    with PIDs far apart other_process_holding_memory (0.85) stands; either way map_location
    leads (the fixes were once only 'Stop or move process N' x 7)."""
    procs = " ".join(f"Process {2101 + i} has 9.80 GiB memory in use." for i in range(7))
    text = (
        '  File "train.py", line 88, in <module>\n    state = torch.load("ckpt.pt")\n'
        '  File "/usr/lib/python3/dist-packages/torch/serialization.py", line 1258, in '
        "_cuda_deserialize\n    return obj.cuda(device)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        f"total capacity of 79.15 GiB of which 1.06 GiB is free. {procs} Including non-PyTorch "
        "memory, this process has 9.29 GiB memory in use. Of the allocated memory 8.50 GiB is "
        "allocated by PyTorch, and 200.00 MiB is reserved by PyTorch but unallocated."
    )
    d = diagnose_text(text)
    # consecutive PIDs: the launcher's own workers (rules_siblings), not strangers' jobs
    assert d.cause == "multi_gpu_imbalance"
    assert d.fixes[0].commands[0] == "torch.load(path, map_location='cpu')"
    assert "consecutive" in d.explanation
    # the same listing with PIDs far apart: other processes, and map_location still joins
    far = text
    for i in range(7):
        far = far.replace(f"Process {2101 + i} ", f"Process {2101 + 997 * i} ")
    d2 = diagnose_text(far)
    assert d2.cause == "other_process_holding_memory"
    assert d2.confidence == 0.85
    assert d2.fixes[0].commands[0] == "torch.load(path, map_location='cpu')"
    assert any(f.title.startswith("Stop or move process") for f in d2.fixes)
    # without the restore frame, no map_location
    bare = "\n".join(line for line in text.splitlines() if "_cuda_deserialize" not in line)
    assert not any("map_location" in c for f in diagnose_text(bare).fixes for c in f.commands)


# --- a rollout engine on the training GPUs (rules_evidence._colocated_rollout_engine) ---


def test_a_rollout_engine_sharing_the_training_gpus_holds_the_memory() -> None:
    from corpus_records import corpus_text

    for rid, named in (
        ("h10-trl-2688", "'vLLM'"),  # "OOM 8xH100 using latest GRPO code with vLLM"
        ("h10-easyr1-1", "'gpu_memory_utilization'"),  # verl rollout share 0.7 -> OOM
        ("h10-slime-579", "'release_memory_occupation'"),  # SGLang's hand-back API
    ):
        d = diagnose_text(corpus_text(rid))
        assert d.cause == "other_process_holding_memory", rid
        assert d.confidence == 0.45, rid
        assert named in d.explanation, rid
        assert d.fixes[0].title.startswith("Give the rollout engine a smaller share"), rid


def test_rollout_near_misses() -> None:
    from corpus_records import corpus_text

    # an RL run that names no engine: the trainer's own state is as likely
    assert diagnose_text(corpus_text("h10-openrlhf-776")).cause != "other_process_holding_memory"
    assert diagnose_text(corpus_text("h10-verl-2031")).cause != "other_process_holding_memory"
    # vLLM serving alone: its gpu_memory_utilization advice is not a colocated trainer
    d = diagnose_text(corpus_text("h3-vllm-17238"))
    assert d.cause != "other_process_holding_memory"
    # Ray's "actor" in a vLLM log is not RL
    ray = (
        "(RayWorkerWrapper pid=1234) The actor died unexpectedly. vllm: "
        "torch.OutOfMemoryError: CUDA out of memory."
    )
    assert diagnose_text(ray).cause != "other_process_holding_memory"


# --- the text says the device is shared (rules_stated.stated_cotenants) ---


def test_a_text_that_says_several_models_share_the_gpu_names_the_holder() -> None:
    from corpus_records import corpus_text

    # LMDeploy: "如果有多个模型在同一个GPU上启动 ..." (several models started on the same GPU)
    d = diagnose_text(corpus_text("h10-lmdeploy-3804"))
    assert d.cause == "other_process_holding_memory"
    assert d.confidence == 0.45
    assert "多个模型在同一个GPU" in d.explanation
    d = diagnose_text("CUDA out of memory when two models run on the same GPU")
    assert d.cause == "other_process_holding_memory"


def test_cotenant_near_misses() -> None:
    from corpus_records import corpus_text

    # Paddle's template hint "Please check whether there is any other process using GPU 0" is
    # advice, not a statement: its numbers keep deciding
    d = diagnose_text(corpus_text("h3-paddle-26892"))
    assert d.cause == "batch_or_activations"
    # a comparison is not a co-tenant
    d = diagnose_text("CUDA out of memory with this model; other models run fine on the same GPU")
    assert d.cause != "other_process_holding_memory"
    # other models *failing too* is not sharing the device
    d = diagnose_text(corpus_text("h10-ktransformers-1969"))
    assert d.cause != "other_process_holding_memory"


# --- other processes that hold a minor share (rules_torch_allocator._minor_others) ---


def test_minor_other_processes_beside_a_full_process_are_the_second_reading() -> None:
    from corpus_records import corpus_text

    # Vary on an 8 GB card: this process holds 6.07 GiB (78%), four others 1.66 GiB (21%)
    d = diagnose_text(corpus_text("h4-vary-52"))
    assert d.cause == "model_too_large"
    assert d.confidence < 0.5  # the model-vs-batch question stays open
    assert "a minor share beside this process's 6.07 GiB" in d.explanation
    assert any(f.title == "Stop or move process 2063158" for f in d.fixes)
    # AIMET: this process 83.35 GiB (90%), another 9.72 GiB (10%): no longer "other process"
    d = diagnose_text(corpus_text("h10-aimet-4073"))
    assert d.cause != "other_process_holding_memory"
    assert d.confidence < 0.5


def test_other_processes_holding_a_quarter_or_more_stay_the_cause() -> None:
    from corpus_records import corpus_text

    text = corpus_text("h4-vary-52").replace(
        "Process 2063158 has 1.38 GiB", "Process 2063158 has 2.38 GiB"
    )  # others now 34% of the card
    d = diagnose_text(text)
    assert d.cause == "other_process_holding_memory"
    assert d.confidence >= 0.85
    # a process that holds little beside others that hold the card
    d = diagnose_text(corpus_text("h5-xinference-1361"))
    assert d.cause == "other_process_holding_memory"


# --- a loop's bar at 0/N after running a while (rules_evidence._first_step_in_flight) ---


def test_a_loop_bar_at_zero_places_the_first_step() -> None:
    from corpus_records import corpus_text

    # ChatGLM LoRA on a 3090: the bitsandbytes buffer of the first step, bar "0/52000 [00:09<?"
    d = diagnose_text(corpus_text("h7-chatglmtuning-38"))
    assert d.context.first_step_bar is not None
    assert d.cause == "batch_or_activations"
    assert d.confidence == 0.45
    assert "0 of its steps" in d.explanation


def test_first_step_bar_near_misses() -> None:
    from corpus_records import corpus_text

    text = corpus_text("h7-chatglmtuning-38")
    # a bar just created (elapsed 00:00) proves no step was running
    fresh = text.replace("[00:09<?", "[00:00<?")
    assert diagnose_text(fresh).context.first_step_bar is None
    # a loading bar is not a loop over inputs
    d = diagnose_text(corpus_text("tc-chatglm-webui-3"))  # Loading checkpoint shards 7/8 ... killed
    assert d.context.first_step_bar is None
    assert d.cause == "host_ram"
    loading = text.replace("  0%|", "Loading checkpoint shards:   0%|")
    assert diagnose_text(loading).context.first_step_bar is None


# --- an Ollama runner's compute buffer (rules_evidence._ollama_layers_overshoot) ---


def test_an_ollama_runner_whose_graph_does_not_fit_holds_too_many_layers() -> None:
    from corpus_records import corpus_text

    # deepseek-r1:671b on 2x MI50: "llama runner process has terminated: cudaMalloc failed" and
    # ggml_gallocr_reserve_n of ROCm0; the poster fixed it with PARAMETER num_gpu 6
    d = diagnose_text(corpus_text("h3-ollama-11202"))
    assert d.context.ollama_runner is True
    assert d.cause == "model_too_large"
    assert d.confidence == 0.45
    assert d.fixes[0].title == "Offload fewer layers to the GPU"


def test_ollama_layers_near_misses() -> None:
    from corpus_records import corpus_text

    # the same failure with a stated 64k context: the context, not the layer count
    assert diagnose_text(corpus_text("sv-ollama-4225-64k-compute")).cause == "kv_cache_or_context"
    # plain llama.cpp chose its own -ngl: the micro-batch reading stays
    d = diagnose_text(corpus_text("sv-lcpp-pr26297-minimax-compute"))
    assert d.context.ollama_runner is None
    assert d.cause == "batch_or_activations"
