"""The transformers plan's code is what the plan was estimated with: device map and dtype."""

from __future__ import annotations

import ast

import pytest

from oomkit.catalog.models import find_model
from oomkit.planner.commands import emit_command
from oomkit.spec.settings import InferenceSettings


def _snippet(**settings: object) -> str:
    spec = find_model("llama-3.1-8b").spec()
    s = InferenceSettings(runtime="transformers", **settings)  # type: ignore[arg-type]
    code = emit_command("transformers", s, spec, "meta-llama/Llama-3.1-8B-Instruct")
    ast.parse(code)  # valid Python
    return code


@pytest.mark.parametrize(
    ("quant", "dtype"),
    [("fp32", "torch.float32"), ("fp16", "torch.float16"), ("bf16", "torch.bfloat16")],
)
def test_dtype_follows_the_quant(quant: str, dtype: str) -> None:
    assert f"dtype={dtype}" in _snippet(quant=quant)


def test_device_map_none_loads_then_moves_to_the_gpu() -> None:
    code = _snippet(quant="bf16", device_map="none")
    assert "device_map" not in code
    lines = code.splitlines()  # moved right after loading, before the generate() lines
    load = next(i for i, line in enumerate(lines) if ".from_pretrained(" in line)
    assert lines[load + 1] == 'model = model.to("cuda")'
    assert lines[-1].startswith("out = model.generate(")


@pytest.mark.parametrize("device_map", [None, "auto"])
def test_auto_or_unset_passes_device_map_auto(device_map: str | None) -> None:
    code = _snippet(quant="bf16", device_map=device_map)
    assert 'device_map="auto"' in code
    assert "model.to(" not in code  # (the inputs go .to(model.device), the model stays)
