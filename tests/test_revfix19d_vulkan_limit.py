"""revfix19d: a llama.cpp Vulkan buffer over the driver's per-allocation limit gets the fixes of
the stage that failed (ggml-vulkan.cpp ``ggml_vk_create_buffer``; llama-model.cpp "unable to
allocate %s buffer"): weights -> the output layer on the CPU / a smaller quant, never ``-ub``."""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text

WEIGHTS = (
    "load_tensors: loading model tensors, this can take a while... (mmap = true)\n"
    "load_tensors: offloading 32 repeating layers to GPU\n"
    "load_tensors: offloaded 33/33 layers to GPU\n"
    "ggml_vulkan: Device memory allocation of size 4294967296 failed.\n"
    "ggml_vulkan: Requested buffer size exceeds device memory allocation limit: "
    "ErrorOutOfDeviceMemory\n"
    "llama_model_load: error loading model: unable to allocate Vulkan0 buffer\n"
    "llama_model_load_from_file_impl: failed to load model\n"
)

# llama.cpp#12728 (a compute buffer over the limit)
COMPUTE = (
    "ggml_vulkan: Device memory allocation of size 2166360064 failed.\n"
    "ggml_vulkan: Requested buffer size exceeds device memory allocation limit: "
    "ErrorOutOfDeviceMemory\n"
    "ggml_gallocr_reserve_n: failed to allocate Vulkan0 buffer of size 2166360064\n"
    "llama_init_from_model: failed to initialize the context: failed to allocate compute pp "
    "buffers\n"
)


def test_weights_over_the_limit_get_weights_fixes_first() -> None:
    d = diagnose_text(WEIGHTS)
    assert d.primary is not None
    assert d.primary.stage == "weights"
    first = d.fixes[0]
    assert first.commands == ("-ngl 32",)  # the layer count: the output layer stays on the CPU
    cmds = [c for f in d.fixes for c in f.commands]
    assert not any(c.startswith("-ub") for c in cmds)
    assert "single tensor" in d.explanation


def test_compute_over_the_limit_keeps_the_micro_batch_fix() -> None:
    d = diagnose_text(COMPUTE)
    cmds = [c for f in d.fixes for c in f.commands]
    assert any(c.startswith("-ub 256") for c in cmds)
