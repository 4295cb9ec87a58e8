"""Rules that were confidently wrong on development records (doccause23, issue #9), and the
leftovers of docpost31: each reading with the real message and a near-miss that must not move."""

from __future__ import annotations

from oomkit.diagnose.consistency import needs_hardware
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.rules import _primary
from oomkit.diagnose.rules_serving import analyze_serving

# --- TensorFlow: an optimizer op's tensor is parameter-shaped, not batch-shaped -----------------

# development record h37-Chinese-XLNet-38 (the optimizer update kernel, training_ops.cc)
_TF_APPLY = (
    "2019-11-09 11:49:17.220991: W tensorflow/core/framework/op_kernel.cc:1401] OP_REQUIRES "
    "failed at training_ops.cc:2816 : Resource exhausted: OOM when allocating tensor with "
    "shape[3072,768] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by "
    "allocator GPU_0_bfc"
)
# development record h37-xlnet_extension_tf-40 (Adam's slot initializer, slot_creator.py)
_TF_SLOT = (
    "ResourceExhaustedError (see above for traceback): OOM when allocating tensor of shape "
    "[32000,768] and type float\n\t [[node model/transformer/word_embedding/lookup_table/Adam/"
    "Initializer/zeros (defined at xlnet/model_utils.py:164)  = Const[dtype=DT_FLOAT, value="
    'Tensor<type: float shape: [32000,768] values: [0 0 0...]...>, _device="/job:localhost/'
    'replica:0/task:0/device:GPU:0"]()]'
)
# near-miss: development record h4-maskrcnn-2395, an activation of a deconvolution
_TF_ACTIVATION = (
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError:  OOM when allocating "
    "tensor with shape[400,256,28,28] and type float on /job:localhost/replica:0/task:0/"
    "device:GPU:0 by allocator GPU_0_bfc\n\t [[node mrcnn_mask_deconv/conv2d_transpose "
    "(defined at keras/backend/tensorflow_backend.py:3009) ]]"
)


def test_tf_optimizer_update_is_not_read_as_the_batch() -> None:
    for text in (_TF_APPLY, _TF_SLOT):
        d = diagnose_text(text)
        assert d.cause == "model_too_large"
        assert d.confidence < 0.6  # another process at start-up reads the same
        assert "not the batch" in d.explanation
        assert not any(f.title.startswith("Halve the batch") for f in d.fixes)


def test_tf_activation_keeps_the_batch_reading() -> None:
    d = diagnose_text(_TF_ACTIVATION)
    assert d.cause == "batch_or_activations"
    assert d.confidence == 0.7


# --- llama.cpp: a <backend>_Host buffer is host RAM ---------------------------------------------

# development record h40-ollama-16455 (Ollama's runner, mmap disabled for patched tensors)
_CUDA_HOST = (
    "500 Internal Server Error: llama-server startup failed after projector CPU offload retry: "
    "llama-server process has terminated: exit status 1: ggml_backend_cpu_buffer_type_alloc_"
    "buffer: failed to allocate buffer of size 9925767168 alloc_tensor_range: failed to "
    "allocate CUDA_Host buffer of size 9925767168 error loading model: unable to allocate "
    "CUDA_Host buffer"
)


def test_cuda_host_buffer_is_host_ram_with_a_fix() -> None:
    d = diagnose_text(_CUDA_HOST)
    assert d.cause == "host_ram"
    assert d.fixes
    assert "free -h" in d.fixes[0].commands


def test_device_buffer_is_not_host_ram() -> None:
    # near-miss: the same wording on the GPU's buffer
    d = diagnose_text(
        _CUDA_HOST.replace("CUDA_Host", "CUDA0").split("ggml_backend_cpu")[0]
        + "alloc_tensor_range: failed to allocate CUDA0 buffer of size 9925767168"
    )
    assert d.cause != "host_ram"


# --- PyTorch: the load phase decides before the size --------------------------------------------

_LOAD_FRAMES = (
    "Loading checkpoint shards: 100%|##########| 3/3 [00:12<00:00,  4.01s/it]\n"
    "Traceback (most recent call last):\n"
    '  File "/home/u/run.py", line 8, in <module>\n'
    '    model = AutoModelForCausalLM.from_pretrained("bigscience/bloom-7b1", load_in_4bit=True, '
    'device_map="auto")\n'
    '  File "/usr/lib/python3.10/site-packages/transformers/modeling_utils.py", line 3850, in '
    "from_pretrained\n"
    "    ) = cls._load_pretrained_model(\n"
    '  File "/usr/lib/python3.10/site-packages/accelerate/utils/modeling.py", line 400, in '
    "set_module_tensor_to_device\n"
    "    new_value = value.to(device)\n"
)
_TOO_BIG = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 30.00 GiB (GPU 0; 23.65 "
    "GiB total capacity; 2.10 GiB already allocated; 20.90 GiB free; 2.20 GiB reserved in total "
    "by PyTorch)\n"
)
_FORWARD_FRAMES = (
    "Traceback (most recent call last):\n"
    '  File "/home/u/train.py", line 88, in <module>\n'
    "    outputs = model(input_ids, labels=labels)\n"
    '  File "/usr/lib/python3.10/site-packages/transformers/models/llama/modeling_llama.py", '
    "line 720, in forward\n"
    "    attn_weights = nn.functional.softmax(attn_weights, dim=-1)\n"
)


def test_request_larger_than_the_gpu_while_loading_gets_load_fixes() -> None:
    d = diagnose_text(_LOAD_FRAMES + _TOO_BIG)
    assert d.cause == "model_too_large"
    assert d.fixes[0].title.startswith("Load the weights quantized")
    assert not any("batch size" in f.title for f in d.fixes)


def test_request_larger_than_the_gpu_in_forward_stays_batch() -> None:
    d = diagnose_text(_FORWARD_FRAMES + _TOO_BIG)
    assert d.cause == "batch_or_activations"
    assert "batch size" in d.fixes[0].title


# --- SGLang in rules_serving: the step keeps the activation floor --------------------------------

_SMI = """\
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|   0  NVIDIA GeForce RTX 2080 Ti     Off |   00000000:01:00.0 Off |                  N/A |
| 30%   35C    P8             20W /  250W |       1MiB /  {mib}MiB |      0%      Default |
"""
_SGL = (
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
    "Current value: self.server_args.mem_fraction_static={mfs}"
)


def _serving_raise(mib: int, mfs: float) -> list[str]:
    parsed = parse_log(_SMI.format(mib=mib) + _SGL.format(mfs=mfs))
    e = _primary(parsed.events)
    assert e is not None
    assert e.runtime == "sglang"
    a = analyze_serving(e, parsed.context)
    return [f.title for f in a.fixes if f.title.startswith("Raise --mem-fraction-static")]


def test_serving_sglang_step_past_the_floor_is_not_suggested() -> None:
    # 0.80 + 0.05 would leave 3.3 GiB of a 22 GiB card outside the pool, under the 5 GiB floor
    assert _serving_raise(22528, 0.8) == []


def test_serving_sglang_step_the_floor_allows_is_kept() -> None:
    assert _serving_raise(22528, 0.7) == ["Raise --mem-fraction-static to 0.75"]


# --- more devices is a hardware step -------------------------------------------------------------

_GPU1 = (
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 1; 23.69 GiB total "
    "capacity; 20.91 GiB already allocated; 1.06 GiB free; 21.12 GiB reserved in total by "
    "PyTorch)"
)


def test_answered_model_cause_on_a_second_gpu_names_no_unlabelled_more_devices() -> None:
    d = diagnose_text(_GPU1, answers={"model_fits": "no"})
    assert d.cause == "model_too_large"
    for f in d.fixes:
        if "more devices" in f.title or "more GPUs" in f.title:
            assert f.hardware


def test_more_devices_is_recognised_as_hardware() -> None:
    assert needs_hardware(generic("Split the weights over more devices", "x", ()))
    # near-miss: a software fix
    assert not needs_hardware(generic("Load the weights smaller (bf16, 8-bit, 4-bit)", "x", ()))


# --- ComfyUI's title text ------------------------------------------------------------------------


def test_comfyui_allocation_on_device_title() -> None:
    d = diagnose_text("torch.OutOfMemoryError: Allocation on device\n")
    assert d.events
    assert d.events[0].format == "comfyui_allocation_on_device"
    assert d.cause == "batch_or_activations"
    assert d.confidence < 0.6
    titles = [f.title for f in d.fixes]
    assert any("resolution" in t for t in titles)
    assert any("VAE in tiles" in t for t in titles)
    assert any("--lowvram" in c for f in d.fixes for c in f.commands)


def test_allocation_on_device_in_prose_is_no_oom() -> None:
    d = diagnose_text("The docs say: Allocation on device memory is managed by the allocator.\n")
    assert not d.events
