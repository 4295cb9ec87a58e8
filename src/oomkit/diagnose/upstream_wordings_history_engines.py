"""Historical OOM wordings of the inference engines: ggml / llama.cpp, vLLM, Ollama and SGLang
(issue 9; see
:mod:`oomkit.diagnose.upstream_wordings_history`, whose docstring says how ``source`` cites the
first and last release that printed each wording)."""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import GIB as _GIB
from oomkit.diagnose.upstream_wordings_base import MIB as _MIB
from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["ENGINES_HISTORY", "ENGINES_HISTORY_NEAR_MISSES"]

_LC = "ggml-org/llama.cpp:"

GGML_HISTORY: tuple[Wording, ...] = (
    _w(
        "ggml",
        _LC + "ggml-cuda.cu@master-2023-05..b1700 (CUDA_CHECK before ggml_cuda_error)",
        "CUDA error %d at %s:%d: %s",
        "CUDA error 2 at /home/user/llama.cpp/ggml-cuda.cu:6301: out of memory",
    ),
    _w(
        "ggml",
        _LC + "ggml-cuda.cu@b1700..b2400 (the failing call on its own line, then GGML_ASSERT)",
        "CUDA error: %s\n  current device: %d, in function %s at %s:%d\n  %s\nGGML_ASSERT: %s:%d: "
        '!"CUDA error"',
        "CUDA error: out of memory\n  current device: 0, in function ggml_cuda_pool_malloc_leg at "
        "/llama.cpp/ggml-cuda.cu:8583\n  cudaMalloc((void **) &ptr, look_ahead_size)\n"
        'GGML_ASSERT: /llama.cpp/ggml-cuda.cu:255: !"CUDA error"',
    ),
    _w(
        "ggml",
        _LC + "ggml.c@master-2023-03..master-2023-07 (ggml_new_tensor_impl, before "
        "ggml_new_object)",
        "%s: not enough space in the context's memory pool (needed %zu, available %zu)",
        "ggml_new_tensor_impl: not enough space in the context's memory pool (needed 1073741824, "
        "available 536870912)",
        req=1073741824,
    ),
    _w(
        "ggml",
        _LC + "ggml.c@master-2023-04..b1050 (scratch buffers, removed with ggml-alloc)",
        "%s: not enough space in the scratch memory pool (needed %zu, available %zu)",
        "ggml_new_tensor_impl: not enough space in the scratch memory pool (needed 575702016, "
        "available 536870912)",
        req=575702016,
    ),
    _w(
        "ggml",
        _LC + "ggml-backend.c@b1200..b1500 (the first backend's simple allocator)",
        "%s: not enough space in the buffer (needed %zu, available %zu)",
        "ggml_allocator_simple_alloc_tensor: not enough space in the buffer (needed 16777216, "
        'available 8388608)\nGGML_ASSERT: ggml-backend.c:113: !"not enough space in the buffer"',
        req=16777216,
    ),
    _w(
        "ggml",
        _LC + "ggml-alloc.c@b1050..b1600 (ggml_allocr_alloc)",
        "%s: not enough space in the buffer (needed %zu, largest block available %zu)",
        "ggml_allocr_alloc: not enough space in the buffer (needed 442368, largest block "
        'available 290848)\nGGML_ASSERT: ggml-alloc.c:116: !"not enough space in the buffer"',
        req=442368,
    ),
    _w(
        "ggml",
        _LC + "ggml/src/ggml-alloc.c@b2900..main (ggml_dyn_tallocr_alloc)",
        "%s: not enough space in the buffer to allocate %zu bytes, largest block available %zu "
        "bytes",
        "ggml_dyn_tallocr_alloc: not enough space in the buffer to allocate 4194304 bytes, "
        "largest block available 1048576 bytes",
        req=4194304,
    ),
    _w(
        "ggml",
        _LC + "ggml/src/ggml-vulkan/ggml-vulkan.cpp@b2400..main (find_properties found no "
        "memory type that fits)",
        "ggml_vulkan: No suitable memory type found: %s",
        "ggml_vulkan: No suitable memory type found: ErrorOutOfDeviceMemory",
    ),
    _w(
        "llama.cpp",
        _LC + "llama.cpp@b2060..b3400 (llama_model_load before per-buffer-type names)",
        "unable to allocate backend buffer",
        "llama_model_load: error loading model: unable to allocate backend buffer\n"
        "llama_load_model_from_file: exception loading model\nterminate called after throwing "
        "an instance of 'std::runtime_error'\n  what():  unable to allocate backend buffer",
    ),
    _w(
        "llama.cpp",
        _LC + "llama.cpp@b1850..b4500 (llama_kv_cache_init, then the context's refusal)",
        "%s: failed to allocate buffer for kv cache\n%s: llama_kv_cache_init() failed for "
        "self-attention cache",
        "llama_kv_cache_init: failed to allocate buffer for kv cache\n"
        "llama_new_context_with_model: llama_kv_cache_init() failed for self-attention cache",
    ),
    _w(
        "llama.cpp",
        _LC + "src/llama-context.cpp@b5500..main (graph_reserve)",
        "%s: failed to allocate compute buffers",
        "graph_reserve: failed to allocate compute buffers",
    ),
    _w(
        "ggml",
        _LC + "ggml-metal.m@master-2023-06..b1660 (GGML_METAL_LOG's 'MiB' came later; the name "
        "padded by '%-16s')",
        "%s: error: failed to allocate '%-16s' buffer, size = %8.2f MB",
        "ggml_metal_add_buffer: error: failed to allocate 'data            ' buffer, size =  "
        "8192.00 MB",
        req=8192 * _MIB,
    ),
    _w(
        "ggml",
        _LC + "ggml/src/ggml-vulkan/ggml-vulkan.cpp@b2400..main (the exception's what() below)",
        "ggml_vulkan: Device memory allocation of size %zu failed.\nggml_vulkan: %s",
        "ggml_vulkan: Device memory allocation of size 4294967296 failed.\nggml_vulkan: "
        "Requested buffer size exceeds device memory allocation limit: ErrorOutOfDeviceMemory",
        req=4294967296,
    ),
)

VLLM_HISTORY: tuple[Wording, ...] = (
    _w(
        "vllm",
        "vllm-project/vllm:vllm/v1/core/kv_cache_utils.py@v0.7.0..v0.8.4 (no estimate yet; "
        "'GB' for bytes / 2^30, 'GiB' from v0.8.5)",
        "To serve at least one request with the models's max seq len (%d), (%.2f GB KV cache is "
        "needed, which is larger than the available KV cache memory (%.2f GB). Try increasing "
        "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
        "ValueError: To serve at least one request with the models's max seq len (32768), (2.00 "
        "GB KV cache is needed, which is larger than the available KV cache memory (0.78 GB). "
        "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing "
        "the engine.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/v1/core/kv_cache_utils.py@v0.10.2..main ('models's' spelled "
        "'model's', the engine core's process prefix)",
        "To serve at least one request with the model's max seq len (%d), (%.2f GiB KV cache is "
        "needed, which is larger than the available KV cache memory (%.2f GiB). Based on the "
        "available memory, the estimated maximum model length is %d.",
        "(EngineCore_DP0 pid=1496252) ERROR [core.py:1195] ValueError: To serve at least one "
        "request with the model's max seq len (32768), (17.26 GiB KV cache is needed, which is "
        "larger than the available KV cache memory (17.2 GiB). Based on the available memory, "
        "the estimated maximum model length is 32648. Try increasing `gpu_memory_utilization` "
        "or decreasing `max_model_len` when initializing the engine.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/v1/core/kv_cache_utils.py@v0.10.0..main (no '(' before the "
        "size, the docs link appended)",
        "To serve at least one request with the models's max seq len (%d), %.2f GiB KV cache is "
        "needed, which is larger than the available KV cache memory (%.2f GiB). ... See %s for "
        "more details.",
        "ValueError: To serve at least one request with the models's max seq len (131072), 24.00 "
        "GiB KV cache is needed, which is larger than the available KV cache memory (10.91 GiB). "
        "Based on the available memory, the estimated maximum model length is 59584. Try "
        "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
        "engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more "
        "details.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/v1/core/kv_cache_utils.py@v0.11.0..main (CPU backend note)",
        "Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU "
        "backend) or decreasing `max_model_len` when initializing the engine.",
        "ValueError: To serve at least one request with the models's max seq len (8192), (1.00 "
        "GiB KV cache is needed, which is larger than the available KV cache memory (0.58 GiB). "
        "Based on the available memory, the estimated maximum model length is 2368. Try "
        "increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) "
        "or decreasing `max_model_len` when initializing the engine. See "
        "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/v1/worker/utils.py@v0.11.0..main (the device named)",
        "Free memory on device %s (%.2f/%.2f GiB) on startup is less than desired GPU memory "
        "utilization (%.2f, %.2f GiB). Decrease GPU memory utilization or reduce GPU memory "
        "used by other processes.",
        "(EngineCore pid=17635) ValueError: Free memory on device cuda:0 (15.32/22.04 GiB) on "
        "startup is less than desired GPU memory utilization (0.88, 19.39 GiB). Decrease GPU "
        "memory utilization or reduce GPU memory used by other processes.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/worker/worker.py@v0.6.4..v0.7.3 (determine_num_available_blocks)",
        "Error in memory profiling. Initial free memory %s, current free memory %s. This happens "
        "when the GPU memory was not properly cleaned up before initializing the vLLM instance.",
        "AssertionError: Error in memory profiling. Initial free memory 23303880704, current "
        "free memory 24119136256. This happens when the GPU memory was not properly cleaned up "
        "before initializing the vLLM instance.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/utils.py@v0.8.0..main (memory_profiling, GiB and the container "
        "explanation)",
        "Error in memory profiling. Initial free memory %.1f GiB, current free memory %.1f GiB. "
        "This happens when other processes sharing the same container release GPU memory while "
        "vLLM is profiling during initialization.",
        "AssertionError: Error in memory profiling. Initial free memory 70.5 GiB, current free "
        "memory 72.1 GiB. This happens when other processes sharing the same container release "
        "GPU memory while vLLM is profiling during initialization. To fix this, ensure "
        "consistent GPU memory allocation or isolate vLLM in its own container.",
    ),
    _w(
        "vllm",
        "vllm-project/vllm:vllm/v1/core/kv_cache_utils.py@v0.10.0..main (docs link appended)",
        "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
        "initializing the engine. See %s for more details.",
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine. See "
        "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
    ),
)

OLLAMA_HISTORY: tuple[Wording, ...] = (
    _w(
        "ollama",
        "ollama/ollama:llm/llama.go@v0.1.14..v0.1.20 (runner stderr folded into the error)",
        "llama runner process no longer running: %d %s",
        "Error: llama runner process no longer running: -1 CUDA error 2 at "
        "/go/src/github.com/jmorganca/ollama/llm/llama.cpp/gguf/ggml-cuda.cu:6600: out of memory",
    ),
    _w(
        "ollama",
        "ollama/ollama:llm/server.go@v0.1.33..main (the runner's last stderr line as the reason)",
        "llama runner process has terminated: %s",
        "Error: llama runner process has terminated: cudaMalloc failed: out of memory",
    ),
    _w(
        "ollama",
        "ollama/ollama:llm/server.go@v0.1.33..v0.5.x (Windows: the exit status, then the "
        "runner's error)",
        "llama runner process has terminated: exit status %s %s",
        "Error: llama runner process has terminated: exit status 0xc0000409 error loading "
        "model: unable to allocate backend buffer",
    ),
    _w(
        "ollama",
        "ollama/ollama:llm/server.go@v0.1.33..v0.3.x (slog 'available' logged as raw bytes)",
        'msg="model request too large for system" requested=%s available=%d total=%s free=%s '
        "swap=%s",
        'level=WARN source=server.go:235 msg="model request too large for system" '
        'requested="12.3 GiB" available=8160829440 total="15.5 GiB" free="7.6 GiB" swap="0 B"',
        req=int(12.3 * _GIB),
        free=8160829440,
    ),
    _w(
        "ollama",
        "ollama/ollama:llm/server.go@v0.4.0..main (every size through format.HumanBytes2)",
        'msg="model request too large for system" requested=%s available=%s total=%s free=%s '
        "swap=%s",
        'time=2026-03-25T09:45:06.861Z level=WARN source=server.go:1044 msg="model request too '
        'large for system" requested="5.3 GiB" available="4.8 GiB" total="10.0 GiB" free="4.8 '
        'GiB" swap="0 B"',
        req=int(5.3 * _GIB),
        free=int(4.8 * _GIB),
    ),
    _w(
        "ollama",
        "ollama/ollama:ml/backend.go@v0.11.0..main (ErrNoMem, the new engine's layout)",
        "insufficient memory - required allocations: %+v",
        "panic: insufficient memory - required allocations: {InputWeights:550502400A "
        "CPU:{Name:CPU Weights:[0U] Cache:[0U] Graph:0U} GPUs:[{Name:CUDA0 Weights:[60561408A] "
        "Graph:1212612608F}]}",
    ),
)

SGLANG_HISTORY: tuple[Wording, ...] = (
    _w(
        "sglang",
        "sgl-project/sglang:python/sglang/srt/managers/controller/tp_worker.py@v0.1.0..v0.1.20 "
        "(lower case, a comma; 'Decode out of memory happened. ' since)",
        "decode out of memory happened, #retracted_reqs: %d, #new_token_ratio: %.4f -> %.4f",
        "decode out of memory happened, #retracted_reqs: 1, #new_token_ratio: 0.9998 -> 1.0000",
    ),
    _w(
        "sglang",
        "sgl-project/sglang:python/sglang/srt/model_executor/model_runner.py@v0.4.4..main "
        "(init_memory_pool, the value appended)",
        "Not enough memory. Please try to increase --mem-fraction-static. Current value: %s",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current "
        "value: self.server_args.mem_fraction_static=0.2",
    ),
    _w(
        "sglang",
        "sgl-project/sglang:python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py@"
        "v0.5.0..main (the bare value)",
        "Not enough memory. Please try to increase --mem-fraction-static. Current value: %s",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current "
        "value: 0.82",
    ),
)

ENGINES_HISTORY: tuple[Wording, ...] = GGML_HISTORY + VLLM_HISTORY + OLLAMA_HISTORY + SGLANG_HISTORY

ENGINES_HISTORY_NEAR_MISSES: tuple[str, ...] = (
    # ggml: the scheduler's first try that reserves and retries, a sizing report
    "ggml_gallocr_needs_realloc: graph has different number of nodes",
    "llama_kv_cache_init:      CUDA0 KV buffer size =  1024.00 MiB",
    "llama_new_context_with_model: CUDA0 compute buffer size =   164.01 MiB",
    # llama.cpp's parameter fitting (common/arg fit, late 2025-): declining to override a user's
    # -ngl, a successful fit, its projection, and a load error that is not memory
    "common_fit_params: failed to fit params to free device memory: n_gpu_layers already set "
    "by user to 99, abort",
    "common_fit_params: successfully fit params to free device memory",
    "common_params_fit_impl: projected to use 21388 MiB of device memory vs. 23257 MiB of free "
    "device memory",
    "common_fit_params: encountered an error while trying to fit params to free device memory: "
    "failed to load model",
    # vLLM: the swap-space warning and the KV sizing report of a successful start
    "WARNING config.py:1146] Possibly too large swap space. 16.00 GiB out of the 31.26 GiB "
    "total CPU memory is allocated for the swap space.",
    "INFO kv_cache_utils.py:716] GPU KV cache size: 275,632 tokens",
    "INFO gpu_executor.py:122] # GPU blocks: 3953, # CPU blocks: 2048",
    # a vLLM plugin's profiling summary of a successful start (vllm-ascend)
    "Free memory on device (60.89/61.27 GiB) on startup.\nDesired GPU memory utilization is "
    "(0.9, 55.14 GiB).\nActual usage: 27.17 GiB for weights, 7.27 GiB for peak activation,\n"
    "3.08 GiB for non-torch memory, 1.97 GiB for NPU graph memory.\nCurrent KV cache memory: "
    "17.63 GiB.",
    # Ollama: timeouts and recovery notes that are not an allocation failure
    "Error: timed out waiting for llama runner to start - progress 0.00 - ",
    'level=WARN source=sched.go:646 msg="gpu VRAM usage didn\'t recover within timeout"',
    # SGLang: the pool sizing line of a healthy start
    "Memory pool end. avail mem=12.35 GB",
    # vLLM's config check of --swap-space against host RAM (config.py@v0.1.0..v0.10.2): a
    # refused setting, not an allocation
    "ValueError: Too large swap space. 32.00 GiB out of the 31.26 GiB total CPU memory is "
    "allocated for the swap space.",
    # ggml-backend's debug-build note before it reserves and retries
    "ggml_backend_sched_alloc_splits: failed to allocate graph, reserving (backend_ids_changed "
    "= 1)",
)
