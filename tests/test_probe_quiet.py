"""``oomkit probe`` prints no transformers deprecation warning of its own making.

transformers 5.x renamed the output's ``past_key_values`` to ``cache``; reading the old name
logs "`past_key_values`/`cache_params` are deprecated. Use `cache` instead." (once per
process, so each check runs in a fresh interpreter).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

LLAMA: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 160,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "vocab_size": 512,
    "max_position_embeddings": 1024,
    "tie_word_embeddings": False,
}


def _probe(*args: str) -> subprocess.CompletedProcess[str]:
    code = f"import sys\nfrom oomkit.cli import main\nsys.exit(main({list(args)!r}))"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.parametrize("extra", [[], ["--train", "lora"]])
def test_probe_prints_no_deprecation_warning(tmp_path: Path, extra: list[str]) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA))
    r = _probe("probe", str(path), "--seq", "64", "--json", *extra)
    assert r.returncode == 0, r.stderr
    assert "deprecated" not in r.stderr.lower(), r.stderr
    doc = json.loads(r.stdout)
    if not extra:  # the KV cache the forward returned is still found (under its new name)
        # 2 layers x (K + V) x 2 KV heads x 16 dims x 64 positions x 2 bytes (bf16)
        assert doc["peak_by_category"]["kv_cache"] >= 2 * 2 * 2 * 16 * 64 * 2


def test_output_cache_reads_the_field_without_the_back_compat_property() -> None:
    from transformers.modeling_outputs import CausalLMOutputWithPast

    from oomkit.inprocess.probe_calls import output_cache

    marker = object()
    fields = CausalLMOutputWithPast.__dataclass_fields__
    name = "cache" if "cache" in fields else "past_key_values"
    out = CausalLMOutputWithPast(**{name: marker})
    assert output_cache(out) is marker
    assert output_cache(object()) is None
