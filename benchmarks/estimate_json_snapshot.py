"""``oomkit estimate --json`` output over a spread of models, runtimes and options: a snapshot.

A start-up optimisation must not change one number (issue 10), so before and after one the
outputs of many estimates are compared byte for byte: every catalog model on each runtime at
its defaults, plus a set of option vectors (quants, contexts, KV types, GPUs, TP/PP, offload,
runtime versions, errors) on a few models. Each case runs ``oomkit.cli.main`` in this process
(the click-free path, as the command takes it) and records stdout, stderr and the exit code.

    python benchmarks/estimate_json_snapshot.py --write /tmp/before.json
    ... change the code ...
    python benchmarks/estimate_json_snapshot.py --check /tmp/before.json

``--check`` prints every case whose output differs and exits 1 if any does.
``--subprocess N`` also runs N cases spread over the list as ``python -m oomkit`` (a fresh
interpreter each, the code cache on) and checks that they print what the in-process run
printed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys

RUNTIMES = ("llama.cpp", "ollama", "vllm", "sglang", "transformers")

#: option vectors tried on each of VARIANT_MODELS
VARIANTS: tuple[tuple[str, ...], ...] = (
    ("--quant", "Q4_K_M", "--ctx", "8192"),
    ("--quant", "Q8_0", "--ctx", "32768", "--kv-dtype", "q8_0"),
    ("--quant", "Q5_K_M", "-ngl", "10", "--gpu", "rtx-4090"),
    ("--quant", "IQ4_XS", "--ctx", "4096", "--parallel", "4", "--no-flash-attn"),
    ("--quant", "UD-Q4_K_XL", "--gpu", "rtx-3060"),
    ("--quant", "Q4_K_M", "--ctx", "max", "--gpu", "rtx-4090"),
    ("--quant", "Q4_K_M", "--runtime-version", "b3000"),
    ("--quant", "Q4_K_M", "--gpu", "2xrtx-3090", "--tensor-split", "1,1"),
    ("--quant", "Q4_K_M", "--no-mmap", "--n-cpu-moe", "4", "--gpu", "rtx-4060"),
    ("--quant", "Q2_K", "--vram", "6GiB", "--ram", "32GB"),
    ("-r", "ollama", "--ctx", "16384"),
    ("-r", "vllm", "--gpu", "h100"),
    ("-r", "vllm", "--gpu", "2xa100-80gb", "--tp", "2", "--max-num-seqs", "64"),
    ("-r", "vllm", "--gpu-memory-utilization", "0.85", "--enforce-eager", "--ctx", "16384"),
    ("-r", "vllm", "--runtime-version", "0.6.3", "--gpu", "l40s"),
    ("-r", "vllm", "--cpu-offload-gb", "10", "--gpu", "rtx-4090", "--block-size", "32"),
    ("-r", "sglang", "--gpu", "h100", "--mem-fraction-static", "0.8"),
    ("-r", "vllm", "--tp", "2", "--pp", "2", "--gpu", "4xa100-40gb"),
    ("-r", "transformers", "--quant", "bf16", "--ctx", "2048"),
    ("-r", "transformers", "--quant", "nf4", "--batch-size", "4", "--gpu", "cpu"),
    ("--gpu", "cpu", "--ram", "64GB"),
    ("--quant", "Q4_K_M", "--ctx", "0"),
    ("--quant", "nonsense"),
)
VARIANT_MODELS = (
    "llama-3.1-8b",
    "qwen3-30b-a3b",
    "deepseek-v2-lite",
    "gemma-3-12b",
    "gpt-oss-20b",
    "granite-4.0-h-tiny",
    "falcon-mamba-7b",
    "mixtral-8x7b",
    "qwen3-next-80b-a3b",
    "meta-llama/Llama-3.1-8B-Instruct",
    "llama3.1:8b-instruct-q8_0",
    "qwen3:30b-a3b",
    "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M",
    "https://HuggingFace.co/unsloth/gemma-3-12b-it-GGUF:latest",
    "no-such-model-xyz",
)


def cases() -> list[list[str]]:
    from oomkit.catalog.models import all_models

    out = [["estimate", e.key, "-r", rt, "--json"] for e in all_models() for rt in RUNTIMES]
    out += [["estimate", m, *v, "--json"] for m in VARIANT_MODELS for v in VARIANTS]
    return out


def run_case(argv: list[str]) -> dict[str, object]:
    from oomkit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return {"argv": argv, "code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def _subprocess(argv: list[str]) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    p = subprocess.run(
        [sys.executable, "-m", "oomkit", *argv], capture_output=True, text=True, env=env
    )
    return {"argv": argv, "code": p.returncode, "stdout": p.stdout, "stderr": p.stderr}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="FILE")
    group.add_argument("--check", metavar="FILE")
    parser.add_argument("--subprocess", type=int, default=0, metavar="N")
    opts = parser.parse_args()
    results = [run_case(argv) for argv in cases()]
    bad = 0
    step = max(1, len(results) // opts.subprocess) if opts.subprocess else len(results) + 1
    for r in results[::step]:
        argv = r["argv"]
        assert isinstance(argv, list)
        if _subprocess(argv) != r:
            print("subprocess differs:", " ".join(argv))
            bad += 1
    if opts.write:
        with open(opts.write, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=0)
        print(f"wrote {len(results)} cases to {opts.write}")
        return 1 if bad else 0
    with open(opts.check, encoding="utf-8") as f:
        before = {json.dumps(r["argv"]): r for r in json.load(f)}
    for r in results:
        old = before.pop(json.dumps(r["argv"]), None)
        if old != r:
            print("differs:", " ".join(r["argv"]))  # type: ignore[arg-type]
            bad += 1
    for key in before:
        print("missing:", key)
        bad += 1
    print(f"{len(results)} cases, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
