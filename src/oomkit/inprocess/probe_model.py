"""Build the model a probe runs: a real ``transformers`` class from a config, on fake tensors.

Everything here runs under the caller's ``FakeTensorMode``: ``from_config`` allocates and
initialises every parameter as a FakeTensor (shape, dtype, device, no data), so an 8B model
"exists" in about a second and a few hundred MB of Python objects.

What is modelled for fine-tuning:

* **LoRA** (:class:`LoraLinear`): the PEFT ``LoraLayer`` forward ``base(x) + B(A(x)) * scale``
  with ``lora_dropout=0`` (PEFT's default, an ``nn.Identity``); A is ``r x in``, B is
  ``out x r``; adapters in fp32 when ``adapter_dtype`` says so (PEFT's
  ``autocast_adapter_dtype=True`` upcasts bf16 adapters to fp32); the base is frozen.
* **QLoRA-like** (:class:`NF4Linear`): every ``nn.Linear`` but the output head becomes a frozen
  4-bit store laid out like bitsandbytes ``Linear4bit`` with double quantisation: packed
  ``uint8`` weight of ``ceil(n/2)`` bytes, ``uint8`` absmax per 64-element block, ``fp32``
  absmax per 256 of those. Its forward dequantises the whole weight to the compute dtype, runs
  the matmul and drops it, and its backward dequantises again for the input gradient and keeps
  nothing for the weight: bitsandbytes ``MatMul4Bit`` (``F.dequantize_4bit(B).to(A.dtype)``,
  ``ctx.tensors = (None, B)``). The 4-bit kernels' own workspaces are not modelled.
* **8-bit AdamW** (:class:`FakeAdamW8bit`): the state layout of bitsandbytes
  ``Optimizer2State.init_state``: ``uint8`` ``state1``/``state2`` and ``fp32`` ``absmax1``/
  ``absmax2`` per 256-element block for tensors of at least ``min_8bit_size`` = 4096
  elements, ``fp32`` states below; the fused update kernel allocates nothing.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import torch
from torch import nn

from oomkit.errors import (
    ConfigFormatError,
    InvalidSettingError,
    UnknownNameError,
    UnsupportedModelError,
)

__all__ = [
    "FakeAdamW8bit",
    "LoraLinear",
    "NF4Linear",
    "apply_lora",
    "apply_nf4",
    "build_from_config",
    "load_config_dict",
    "lora_target_names",
    "moe_grouped_mm_fallback",
]

#: PEFT ``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`` (peft/utils/constants.py)
_PEFT_DEFAULT_TARGETS: Mapping[str, tuple[str, ...]] = {
    "llama": ("q_proj", "v_proj"),
    "mistral": ("q_proj", "v_proj"),
    "mixtral": ("q_proj", "v_proj"),
    "qwen2": ("q_proj", "v_proj"),
    "qwen2_moe": ("q_proj", "v_proj"),
    "qwen3": ("q_proj", "v_proj"),
    "qwen3_moe": ("q_proj", "v_proj"),
    "gemma": ("q_proj", "v_proj"),
    "gemma2": ("q_proj", "v_proj"),
    "phi3": ("qkv_proj",),
    "gpt2": ("c_attn",),
    "gpt_neox": ("query_key_value",),
    "falcon": ("query_key_value",),
    "bert": ("query", "value"),
    "roberta": ("query", "value"),
}
_FALLBACK_TARGETS = ("q_proj", "v_proj", "query", "value", "c_attn", "query_key_value", "qkv_proj")

_BNB_QUANT_BLOCK = 64  # bitsandbytes 4-bit blocksize (quantize_4bit default)
_BNB_DQ_BLOCK = 256  # double quant: absmax quantized in blocks of 256
_BNB_OPT_BLOCK = 256  # 8-bit optimizer blockwise size
_BNB_MIN_8BIT_SIZE = 4096  # Optimizer8bit min_8bit_size


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def load_config_dict(ref: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """A plain ``config.json`` dict from a mapping, a catalog name, or a local path.

    Raises:
        UnknownNameError: not a catalog name and not an existing path.
        ConfigFormatError: the file is not a JSON object.
    """
    if isinstance(ref, Mapping):
        return dict(_plain(ref))
    path = os.fspath(ref)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, ValueError) as e:
            why = f"{e}."
            if isinstance(e, UnicodeDecodeError):  # a binary file: a .gguf, safetensors, ...
                why = (
                    "it is a binary file, not a config.json. The probe builds the transformers "
                    "model from a config.json (or a catalog name); a .gguf or weights file has "
                    "none."
                )
            raise ConfigFormatError(f"Cannot read config for '{path}': {why}", path=path) from None
        if not isinstance(doc, dict):
            raise ConfigFormatError(f"Config '{path}' is not a JSON object.", path=path)
        return dict(_plain(doc))
    from oomkit.catalog.models import find_model

    try:
        return dict(_plain(find_model(path).config))
    except UnknownNameError as e:
        raise UnknownNameError(
            kind="model",
            name=path,
            suggestions=e.suggestions,
            hint="The probe needs a catalog name or a local config.json (file or folder).",
        ) from None


def _model_class(config: Any) -> Any:
    """The ``transformers`` class named in ``architectures`` (None when none exists)."""
    import transformers

    for arch in getattr(config, "architectures", None) or []:
        cls = getattr(transformers, arch, None)
        if cls is not None:
            return cls
    return None


def build_from_config(
    config_dict: Mapping[str, Any],
    *,
    dtype: torch.dtype,
    attn_implementation: str = "sdpa",
) -> nn.Module:
    """Instantiate the config's ``transformers`` model (call under ``FakeTensorMode``).

    Raises:
        UnsupportedModelError: remote code, or a ``model_type`` transformers does not know.
    """
    import transformers

    cfg = dict(config_dict)
    model_type = str(cfg.pop("model_type", "") or "")
    name = (cfg.get("architectures") or [model_type or "?"])[0]
    if cfg.get("auto_map") and not any(
        getattr(transformers, a, None) for a in cfg.get("architectures") or []
    ):
        raise UnsupportedModelError(
            f"Model '{name}' needs trust_remote_code (its code is not part of transformers); "
            "the probe never runs remote code. Use a transformers-native architecture.",
            architecture=str(name),
            feature="trust_remote_code",
        )
    for key in ("torch_dtype", "dtype", "quantization_config", "_name_or_path"):
        cfg.pop(key, None)
    # transformers >= 5 validates config fields strictly: a float field given as an integer in
    # config.json (``"attn_logit_softcapping": 50``) is refused, where older versions and the
    # Hub's own loading accept it; the value is the same number
    for key, value in list(cfg.items()):
        if key.endswith("_softcapping") and value is not None:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not ok or not 0 < value < float("inf"):
                raise ConfigFormatError(
                    f"Cannot read config.json for '{name}': '{key}' is {value!r}, expected a "
                    "finite number above 0 (or null).",
                    path=str(name),
                )
        if key.endswith(("_softcapping", "_eps", "_theta", "_factor")) and type(value) is int:
            cfg[key] = float(value)
    try:
        config = transformers.AutoConfig.for_model(model_type, **cfg)
    except (ValueError, KeyError) as e:
        raise UnsupportedModelError(
            f"transformers {transformers.__version__} cannot build model_type '{model_type}': {e}",
            architecture=str(name),
            feature="model_type",
        ) from None
    except Exception as e:  # huggingface_hub StrictDataclassFieldValidationError (transformers 5)
        if type(e).__name__ != "StrictDataclassFieldValidationError":
            raise
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ConfigFormatError(
            f"Config of '{name}' is refused by transformers {transformers.__version__}: {first}",
            path=str(name),
        ) from None
    config._attn_implementation = attn_implementation
    try:
        return _instantiate(config, model_type, dtype)
    except ValueError as e:
        if attn_implementation == "eager" or "attention implementation" not in str(e):
            raise
    # e.g. Gemma2 has no SDPA path in transformers: the model's own eager attention it is
    config._attn_implementation = "eager"
    return _instantiate(config, model_type, dtype)


def _instantiate(config: Any, model_type: str, dtype: torch.dtype) -> nn.Module:
    """The model built from ``config`` (on the caller's fake tensors)."""
    try:
        return _build(config, model_type, dtype)
    except Exception as e:
        if type(e).__name__ != "DataDependentOutputException":
            raise
    # torch 2.13's trunc_normal_ samples by rejection (``.item()`` on the drawn values), which
    # fake tensors cannot answer (SigLIP's lecun_normal_ in Gemma 3's vision tower): the values
    # of fake weights mean nothing, so build again without initialising them
    try:
        from transformers.initialization import no_init_weights
    except ImportError:  # transformers 4
        from transformers.modeling_utils import no_init_weights  # type: ignore[attr-defined,no-redef]
    with no_init_weights():
        model = _build(config, model_type, dtype)
    # init_weights also ties the weights (Gemma 3's lm_head is its embedding): tie them here
    tie = getattr(model, "tie_weights", None)
    if callable(tie):
        tie()
    return model


def _build(config: Any, model_type: str, dtype: torch.dtype) -> nn.Module:
    import transformers

    name = (getattr(config, "architectures", None) or [model_type])[0]
    cls = _model_class(config)
    if cls is None:
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

        auto: Any = transformers.AutoModelForCausalLM
        if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
            auto = transformers.AutoModel
        model = auto.from_config(config, dtype=dtype)
    else:
        model = cls._from_config(config, dtype=dtype)
    if not isinstance(model, nn.Module):  # pragma: no cover - transformers contract
        raise UnsupportedModelError(f"'{name}' did not build a torch module.", architecture=name)
    return model


class LoraLinear(nn.Module):
    """PEFT-style LoRA around a frozen linear layer (see the module docstring)."""

    def __init__(
        self, base: nn.Module, in_features: int, out_features: int, *, rank: int,
        alpha: float, adapter_dtype: torch.dtype, device: torch.device, dropout: float = 0.0,
    ) -> None:  # fmt: skip
        super().__init__()
        self.base_layer = base
        # PEFT: nn.Dropout(p) when lora_dropout > 0, else nn.Identity (saves nothing)
        self.lora_dropout: nn.Module = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.lora_A = nn.Linear(in_features, rank, bias=False, dtype=adapter_dtype, device=device)
        self.lora_B = nn.Linear(rank, out_features, bias=False, dtype=adapter_dtype, device=device)
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        result: torch.Tensor = self.base_layer(x)
        # PEFT casts the input to the adapter's dtype only outside autocast
        # (``requires_conversion = not torch.is_autocast_enabled()``, tuners/lora/layer.py and
        # bnb.py): under autocast the adapter's matmul runs in the autocast dtype on the same
        # input the base layer saw, so no second (fp32) copy is saved for its backward
        autocast = torch.is_autocast_enabled(x.device.type)
        if not autocast:
            x = x.to(self.lora_A.weight.dtype)
        adapted: torch.Tensor = self.lora_B(self.lora_A(self.lora_dropout(x)))
        if not autocast:
            adapted = adapted.to(result.dtype)
        return result + adapted * self.scaling


class _MatMul4Bit(torch.autograd.Function):
    """bitsandbytes ``MatMul4Bit``: dequantise, matmul, keep nothing for the weight."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, packed: torch.Tensor, shape: Any) -> torch.Tensor:
        weight = torch.empty(shape, dtype=x.dtype, device=x.device)  # dequantize_4bit output
        ctx.shape = shape
        ctx.save_for_backward(packed)
        return torch.nn.functional.linear(x, weight)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Any:
        (grad,) = grads
        weight = torch.empty(ctx.shape, dtype=grad.dtype, device=grad.device)
        return grad @ weight, None, None


class NF4Linear(nn.Module):
    """A frozen linear layer stored like bitsandbytes ``Linear4bit`` (NF4, double quant)."""

    def __init__(
        self, in_features: int, out_features: int, bias: nn.Parameter | None,
        compute_dtype: torch.dtype, device: torch.device,
    ) -> None:  # fmt: skip
        super().__init__()
        n = in_features * out_features
        dev = device
        self.in_features = in_features
        self.out_features = out_features
        self.compute_dtype = compute_dtype
        self.weight = nn.Parameter(
            torch.empty((math.ceil(n / 2), 1), dtype=torch.uint8, device=dev), requires_grad=False
        )
        blocks = math.ceil(n / _BNB_QUANT_BLOCK)
        self.register_buffer("absmax", torch.empty(blocks, dtype=torch.uint8, device=dev))
        self.register_buffer(
            "absmax2",
            torch.empty(math.ceil(blocks / _BNB_DQ_BLOCK), dtype=torch.float32, device=dev),
        )
        self.bias = bias
        if self.bias is not None:
            self.bias.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        in_dtype = x.dtype
        out: torch.Tensor = _MatMul4Bit.apply(  # type: ignore[no-untyped-call]
            x.to(self.compute_dtype), self.weight, (self.out_features, self.in_features)
        )
        if self.bias is not None:
            out = out + self.bias.to(out.dtype)
        return out.to(in_dtype)


@contextlib.contextmanager
def moe_grouped_mm_fallback() -> Iterator[None]:
    """Route non-bf16 MoE expert matmuls through transformers' own grouped-mm fallback op.

    transformers' MoE experts call ``torch.nn.functional.grouped_mm`` when
    ``transformers.integrations.moe._can_use_grouped_mm`` allows it; that op's meta kernel
    accepts bf16 only, so fp32 master weights (mixed-precision training) could not be traced.
    ``torch.ops.transformers.grouped_mm_fallback`` computes the same product with the same
    output and saved tensors and has a registered fake implementation; it is used for
    non-bf16 weights while the probe runs. The per-expert ``eager`` loop is not usable: its
    ``nonzero`` has a data-dependent shape that fake tensors cannot trace.
    """
    try:
        from transformers.integrations import moe
    except ImportError:  # pragma: no cover - older transformers without the integration
        yield
        return
    original = getattr(moe, "_can_use_grouped_mm", None)
    if original is None:  # pragma: no cover
        yield
        return

    def can_use(input: torch.Tensor, weight: torch.Tensor, offs: torch.Tensor) -> bool:
        return weight.dtype == torch.bfloat16 and bool(original(input, weight, offs))

    moe._can_use_grouped_mm = can_use
    try:
        yield
    finally:
        moe._can_use_grouped_mm = original


def _output_head_names(model: nn.Module) -> set[str]:
    get = getattr(model, "get_output_embeddings", None)
    head = get() if callable(get) else None
    return {n for n, m in model.named_modules() if head is not None and m is head}


def apply_nf4(model: nn.Module, compute_dtype: torch.dtype) -> int:
    """Replace every ``nn.Linear``/``Conv1D`` but the output head by :class:`NF4Linear`.

    As transformers' ``replace_with_bnb_linear`` (integrations/bitsandbytes.py) does: only
    ``type(module) is nn.Linear`` and GPT-2's ``Conv1D`` are converted, the output embedding
    is kept (``get_keys_to_not_convert``), and so are fused MoE expert tensors, which are
    plain ``nn.Parameter`` s there.

    Returns:
        How many layers were converted.
    """
    skip = _output_head_names(model)
    done = 0
    for name, mod in list(model.named_modules()):
        if name in skip or not name:
            continue
        weight = getattr(mod, "weight", None)
        if type(mod) is nn.Linear:
            fin, fout = mod.in_features, mod.out_features
        elif type(mod).__name__ == "Conv1D" and isinstance(weight, nn.Parameter):
            fin, fout = (int(d) for d in weight.shape)
        else:
            continue
        bias = getattr(mod, "bias", None)
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        nf4 = NF4Linear(
            fin, fout, bias if isinstance(bias, nn.Parameter) else None, compute_dtype,
            mod.weight.device,
        )  # fmt: skip
        setattr(parent, attr, nf4)
        done += 1
    return done


def lora_target_names(model_type: str, targets: Iterable[str] | None) -> tuple[str, ...]:
    """Module-name suffixes to adapt: ``targets``, or PEFT's default for ``model_type``."""
    if targets is not None:
        return tuple(targets)
    return _PEFT_DEFAULT_TARGETS.get(model_type, _FALLBACK_TARGETS)


def apply_lora(
    model: nn.Module, targets: tuple[str, ...], *, rank: int, alpha: float,
    adapter_dtype: torch.dtype, dropout: float = 0.0,
) -> int:  # fmt: skip
    """Freeze ``model`` and wrap the target linears (``"all-linear"``: all but the head).

    Returns:
        The number of wrapped layers.

    Raises:
        InvalidSettingError: no module matches ``targets`` (a usage error: the names are the
            user's).
    """
    for p in model.parameters():
        p.requires_grad_(False)
    skip = _output_head_names(model)
    all_linear = "all-linear" in targets
    todo: list[tuple[str, nn.Module, int, int]] = []
    for name, mod in model.named_modules():
        if name in skip:
            continue
        leaf = name.rpartition(".")[2]
        if not (all_linear or leaf in targets):
            continue
        if isinstance(mod, (NF4Linear, nn.Linear)):
            todo.append((name, mod, mod.in_features, mod.out_features))
        elif type(mod).__name__ == "Conv1D" and hasattr(mod, "weight"):  # GPT-2
            fin, fout = mod.weight.shape
            todo.append((name, mod, int(fin), int(fout)))
    if not todo:
        linears = sorted(
            {
                n.rpartition(".")[2]
                for n, m in model.named_modules()
                if n and n not in skip and isinstance(m, (NF4Linear, nn.Linear))
            }
        )
        raise InvalidSettingError(
            f"lora_targets {','.join(targets)!r} name no linear module of "
            f"{type(model).__name__} (its linears: {', '.join(linears[:12]) or 'none'}; "
            "or all-linear)",
            setting="lora_targets",
            value=",".join(targets),
        )
    for name, mod, fin, fout in todo:
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        dev = next(iter(mod.parameters())).device
        wrapped = LoraLinear(
            mod,
            fin,
            fout,
            rank=rank,
            alpha=alpha,
            adapter_dtype=adapter_dtype,
            device=dev,
            dropout=dropout,
        )
        setattr(parent, attr, wrapped)
    return len(todo)


class FakeAdamW8bit(torch.optim.Optimizer):
    """bitsandbytes 8-bit AdamW's state layout (see the module docstring); no update math."""

    def __init__(self, params: Iterable[nn.Parameter], lr: float = 1e-4) -> None:
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        del closure
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if state:
                    continue
                n = p.numel()
                state["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
                if n < _BNB_MIN_8BIT_SIZE:
                    state["state1"] = torch.zeros_like(p, dtype=torch.float32)
                    state["state2"] = torch.zeros_like(p, dtype=torch.float32)
                    continue
                blocks = math.ceil(n / _BNB_OPT_BLOCK)
                state["state1"] = torch.zeros_like(p, dtype=torch.uint8)
                state["state2"] = torch.zeros_like(p, dtype=torch.uint8)
                state["absmax1"] = torch.zeros(blocks, dtype=torch.float32, device=p.device)
                state["absmax2"] = torch.zeros(blocks, dtype=torch.float32, device=p.device)
