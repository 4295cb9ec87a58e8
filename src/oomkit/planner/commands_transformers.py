"""The transformers snippet for a planned configuration: ``from_pretrained`` with the device
map, memory caps, quantization config and dtype the plan was estimated with, then the
``generate()`` call."""

from __future__ import annotations

from dataclasses import replace

from oomkit.planner.commands_serving import hf_ref
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = ["transformers_command"]


def transformers_command(settings: InferenceSettings, spec: ModelSpec, model_ref: str) -> str:
    """The Python lines that run ``settings`` with transformers."""
    if settings.max_new_tokens is None and settings.ctx:
        # the generated tokens the estimate took: what a learned position table leaves
        from oomkit.estimate.transformers_layouts import DEFAULT_NEW_TOKENS, generated_tokens

        new, cut = generated_tokens(spec, settings.ctx, None, DEFAULT_NEW_TOKENS)
        settings = replace(settings, max_new_tokens=new) if cut else settings
    return _transformers_snippet(settings, hf_ref(model_ref, spec))


def _transformers_snippet(settings: InferenceSettings, repo: str) -> str:
    quant = (settings.quant or "bf16").lower()
    lines = ["import torch", "from transformers import AutoModelForCausalLM, AutoTokenizer"]
    # the device map the plan was estimated with: "none" is from_pretrained, then .to("cuda")
    on_one_gpu = settings.device_map == "none"
    placement = "sequential" if settings.device_map == "sequential" else "auto"
    kwargs = [f"{repo!r}"] if on_one_gpu else [f"{repo!r}", f'device_map="{placement}"']
    bnb = quant in ("nf4", "int8", "fp4")
    if on_one_gpu and bnb:
        # bitsandbytes models refuse .to() (8-bit; 4-bit before bnb 0.43.2) and load on the
        # current GPU without a device_map (Bnb8BitHfQuantizer.update_device_map): say so
        kwargs.append('device_map={"": 0}')
    caps = settings.max_memory_bytes
    if caps is not None and not on_one_gpu:  # accelerate takes bytes as ints
        kwargs.append(
            f"max_memory={{i: {caps[0]} for i in range(torch.cuda.device_count())}}"
            if len(caps) == 1
            else "max_memory={" + ", ".join(f"{i}: {b}" for i, b in enumerate(caps)) + "}"
        )
    if bnb:
        lines[1] += ", BitsAndBytesConfig"
        cfg = (
            "BitsAndBytesConfig(load_in_8bit=True)"
            if quant == "int8"
            else f'BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="{quant}", '
            "bnb_4bit_compute_dtype=torch.bfloat16, bnb_4bit_use_double_quant=True)"
        )
        kwargs.append(f"quantization_config={cfg}")
    elif settings.quant is None:  # a pre-quantized checkpoint (GPTQ, AWQ, fp8) loads as saved
        kwargs.append('dtype="auto"')
    else:
        dtype = _TORCH_DTYPES.get(quant, "torch.bfloat16")
        kwargs.append(f"dtype={dtype}")
    if settings.attn_implementation:  # unset: the release's own default, as estimated
        kwargs.append(f"attn_implementation={settings.attn_implementation!r}")
    lines.append(f"model = AutoModelForCausalLM.from_pretrained({', '.join(kwargs)})")
    if on_one_gpu and not bnb:
        lines.append('model = model.to("cuda")')
    lines.extend(_generate_lines(settings, repo))
    return "\n".join(lines)


def _generate_lines(settings: InferenceSettings, repo: str) -> list[str]:
    """The ``generate()`` call the plan was estimated with: ``parallel`` prompts padded to one
    batch, each at most ``ctx`` tokens (truncated), and ``max_new_tokens`` (the estimate's
    default 256; transformers' own GenerationConfig default is ``max_length=20``)."""
    batch = settings.parallel or 1
    new = settings.max_new_tokens or 256
    limit = f", truncation=True, max_length={settings.ctx}" if settings.ctx else ""
    tok = f'tokenizer = AutoTokenizer.from_pretrained({repo!r}, padding_side="left")'
    lines = [tok]
    if batch > 1:
        lines.append("tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token")
    each = f", each at most {settings.ctx} tokens" if settings.ctx else ""
    lines += [
        f'prompts = ["..."] * {batch}  # your {batch} prompt(s) of one batch{each}',
        f'inputs = tokenizer(prompts, return_tensors="pt", padding=True{limit}).to(model.device)',
        f"out = model.generate(**inputs, max_new_tokens={new})",
    ]
    return lines


#: the torch dtype a transformers plan's weights load in, by its --quant (bf16 otherwise)
_TORCH_DTYPES = {
    "fp16": "torch.float16",
    "f16": "torch.float16",
    "fp32": "torch.float32",
    "f32": "torch.float32",
    "bf16": "torch.bfloat16",
}
