"""Predicted GGUF file sizes vs real published files (tests/fixtures/gguf_sizes.json).

    python benchmarks/gguf_size_accuracy.py

Prints the signed error per file and the median/worst absolute error. Sizes are predicted from
the model's config alone (config-derived tensor table + llama-quantize's per-tensor type choice +
the estimated GGUF header).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from oomkit.loaders.hf_config import parse_config
from oomkit.quant.llamacpp_filesize import predict_gguf_file_bytes
from oomkit.spec.tensors import derive_tensors

FIXTURE = Path(__file__).parents[1] / "tests" / "fixtures" / "gguf_sizes.json"


def main() -> None:
    data = json.loads(FIXTURE.read_text())
    errors: list[float] = []
    for model in data["models"]:
        cfg = model["config"]
        tensors = derive_tensors(parse_config(cfg, name=model["model"]))
        tok = model["tokenizer"]
        for f in model["files"]:
            predicted = predict_gguf_file_bytes(
                f["ftype"],
                tensors,
                n_layer=cfg["num_hidden_layers"],
                n_expert=cfg.get("num_local_experts", 0),
                n_gqa=cfg["num_attention_heads"] // cfg["num_key_value_heads"],
                arch=model["gguf_arch"],
                vocab_size=tok["vocab_size"],
                tokenizer_model=tok["model"],
                n_merges=tok["n_merges"],
                has_imatrix=f.get("imatrix", False),
            )
            err = predicted / f["size_bytes"] - 1
            errors.append(err)
            print(
                f"{model['model']:<32} {f['ftype']:<8} published {f['size_bytes']:>14,} "
                f"predicted {predicted:>14,}  {err:+.3%}"
            )
    abs_err = [abs(e) for e in errors]
    print(
        f"{len(errors)} files: median |error| {statistics.median(abs_err):.3%}, "
        f"worst {max(abs_err):.3%}"
    )


if __name__ == "__main__":
    main()
