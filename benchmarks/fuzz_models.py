"""Fuzz the model loaders, the estimators and the CLI with mutated real inputs.

Usage: python benchmarks/fuzz_models.py [--n 100000] [--seed 0] [--estimate-every 25]

Inputs (issue 10 item 6), each mutated from a real file or argument vector:

* ``config.json``: the fixtures in tests/fixtures/configs and the catalog's configs; values
  replaced by absurd ones (0, -1, 2^63, 1e308, inf, nan, strings, nulls, lists, deep nesting),
  keys dropped or duplicated, the JSON text truncated or byte-flipped;
* GGUF headers: the fixtures in tests/fixtures/gguf; bytes flipped in the header region, the
  file truncated, counts and lengths overwritten with huge values;
* safetensors headers: the fixtures in tests/fixtures/safetensors; JSON values and the 8-byte
  length mutated;
* CLI argument vectors for ``oomkit estimate``: real flags with absurd values spliced in.

Every input goes through the loader; every ``--estimate-every``-th parsed spec is also estimated
on a random runtime. An exception that is not an ``OomkitError`` is a "traceback"; an input
taking over 2 s is a "hang". Peak RSS comes from ``resource.getrusage``. Exit 1 on any traceback
or hang. (A CLI input that hits ``main``'s last-resort handler counts as a traceback too.)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import resource
import struct
import sys
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

from oomkit.api import estimate_model
from oomkit.catalog.models import all_models
from oomkit.cli import main as cli_main
from oomkit.errors import OomkitError
from oomkit.loaders.gguf import read_gguf
from oomkit.loaders.gguf_spec import gguf_to_spec
from oomkit.loaders.hf_config import parse_config, parse_config_text
from oomkit.loaders.safetensors import parse_safetensors_header, tensor_infos
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
HANG_S = 2.0
RUNTIMES = ("llama.cpp", "ollama", "vllm", "sglang", "transformers")

_ABSURD: list[Any] = [
    0, -1, 1, 2, 3, 7, 2**31, 2**32 + 1, 2**63, 10**7, 10**9, 10**400 // 10**380, 1e308,
    float("inf"), float("-inf"), float("nan"), 0.5, -0.0, True, False, None, "", "4096", "auto",
    [], [None, 1], [0], {}, {"a": 1}, [1] * 50, "x" * 1000,
]  # fmt: skip


def _deep(n: int) -> Any:
    v: Any = 1
    for _ in range(n):
        v = [v]
    return v


def _configs() -> list[dict[str, Any]]:
    out = [json.loads(p.read_text()) for p in sorted((FIX / "configs").glob("*.json"))]
    out += [m.to_dict()["config"] for m in all_models()]
    return out


def _mutate_config(rng: random.Random, base: dict[str, Any]) -> dict[str, Any] | str:
    cfg = json.loads(json.dumps(base))
    section = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    for _ in range(rng.randint(1, 4)):
        keys = list(section)
        op = rng.randrange(6)
        if op <= 2 and keys:
            section[rng.choice(keys)] = rng.choice(_ABSURD)
        elif op == 3 and keys:
            section.pop(rng.choice(keys))
        elif op == 4:
            section[rng.choice(keys or ["x"])] = _deep(rng.choice((5, 50, 400)))
        elif op == 5 and "quantization_config" not in cfg:
            cfg["quantization_config"] = {
                "quant_method": rng.choice(["fp8", "gptq", "awq", "bitsandbytes", "mxfp4", 3]),
                "bits": rng.choice(_ABSURD),
                "group_size": rng.choice(_ABSURD),
                "weight_block_size": rng.choice(_ABSURD),
            }
    if rng.random() < 0.02:  # nesting far deeper than Python's recursion limit, as JSON text
        text = json.dumps(cfg, allow_nan=True)
        return text[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    if rng.random() < 0.1:
        text = json.dumps(cfg, allow_nan=True)
        cut = rng.randrange(len(text))
        return text[:cut] if rng.random() < 0.5 else text[:cut] + "\x00" + text[cut:]
    return cfg


def _mutate_bytes(rng: random.Random, data: bytes, header_len: int) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(5)
        if op == 0:
            b[rng.randrange(min(len(b), header_len))] = rng.randrange(256)
        elif op == 1:
            pos = rng.randrange(max(1, min(len(b), header_len) - 8))
            b[pos : pos + 8] = struct.pack("<Q", rng.choice([2**63, 2**40, 2**32, 0, 1 << 20]))
        elif op == 2:
            del b[rng.randrange(len(b)) :]
        elif op == 3:
            pos = rng.randrange(max(1, min(len(b), header_len) - 4))
            b[pos : pos + 4] = struct.pack("<I", rng.choice([0, 13, 2**31, 2**32 - 1]))
        if not b:
            b = bytearray(b"GGUF")
    return bytes(b)


def _gguf_header_len(data: bytes) -> int:
    # the header region: everything before the first tensor's data (upper bound: 64 KiB)
    return min(len(data), 1 << 16)


def _safetensors_inputs() -> list[bytes]:
    out = []
    for p in sorted((FIX / "safetensors").rglob("*.safetensors")):
        raw = p.read_bytes()
        (n,) = struct.unpack("<Q", raw[:8])
        out.append(raw[: 8 + n])
    return out


def _mutate_st_header(rng: random.Random, raw: bytes) -> bytes:
    n = struct.unpack("<Q", raw[:8])[0]
    doc = json.loads(raw[8 : 8 + n])
    names = [k for k in doc if k != "__metadata__"]
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(names)
        entry = doc[name]
        field = rng.choice(["dtype", "shape", "data_offsets"])
        if field == "shape":
            entry["shape"] = rng.choice(
                [[rng.choice(_ABSURD)], [2**62, 2**62], [-1, 4], _deep(3), [1] * 100]
            )
        elif field == "data_offsets":
            entry["data_offsets"] = rng.choice([[0, 2**64], [5, 1], [None, 1], [0], "x"])
        else:
            entry["dtype"] = rng.choice(["F8_E4M3", "I4", "X", "", 7, "F64"])
    body = json.dumps(doc, allow_nan=True).encode()
    if rng.random() < 0.2:
        body = b'{"a": ' + b"[" * rng.choice((100, 5000)) + b"]" * 3 + b"}"
    length = len(body) if rng.random() < 0.8 else rng.choice([0, 2**63, len(body) + 10])
    return struct.pack("<Q", length) + body


_FLAGS: list[tuple[str, list[str]]] = [
    ("--ctx", ["4096", "0", "-1", "32k", "1M", "9" * 30, "nan", "1.5", "2e9"]),
    ("--runtime", ["llama.cpp", "vllm", "sglang", "ollama", "transformers", "x", ""]),
    ("--quant", ["Q4_K_M", "UD-Q4_K_XL", "fp8", "nf4", "Q9_9", "", "MXFP4"]),
    ("-ngl", ["-1", "-2", "0", "999", "99999999999"]),
    ("--tp", ["1", "2", "3", "4", "1000000", "0", "-4"]),
    ("--pp", ["1", "2", "0"]),
    ("--gpu", ["rtx-4090", "2xa100-80gb", "cpu", "m2-max", "4xh100", "0xa100", "nope", ","]),
    ("--vram", ["24GiB", "24G", "24GB", "inf", "-1GiB", "1e999GiB", "24"]),
    ("--ram", ["64GiB", "1B", "0GiB"]),
    ("--parallel", ["1", "4", "0", "-1", "100000"]),
    ("--gpu-memory-utilization", ["0.9", "0", "1.5", "nan", "inf", "-1"]),
    ("--max-num-seqs", ["256", "-1", "0"]),
    ("--max-num-batched-tokens", ["8192", "-5", "0"]),
    ("--block-size", ["16", "48", "0", "256"]),
    ("--cpu-offload-gb", ["4", "-1", "inf", "nan"]),
    ("--mem-fraction-static", ["0.8", "0", "2"]),
    ("-ts", ["3,1", "0,0", "a,b", "1/1", "-1,2"]),
    ("-sm", ["row", "layer", "none", "diag"]),
    ("-ot", ["exps=CPU", "attn=CPU", "(=CPU", r"blk\.(0|1)\.ffn_.*_exps=CPU", "x=CUDA0"]),
    ("--kv-dtype", ["q8_0", "fp8", "f16", "zz"]),
    ("--n-cpu-moe", ["0", "10", "-1", "100000"]),
    ("--overhead", ["1GiB", "-1GiB"]),
]
_MODELS = [
    "llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-4b", "gpt-oss-20b", "falcon-mamba-7b",
    "deepseek-v2-lite", "phi-3.5-moe", "llama-4-scout", "mixtral-8x7b", "nope-model",
    str(FIX / "gguf" / "tiny-llama-mixed.gguf"), str(FIX / "configs" / "qwen3-8b.json"),
]  # fmt: skip


def _argv(rng: random.Random) -> list[str]:
    argv = ["estimate", rng.choice(_MODELS), "--offline"]
    for flag, values in rng.sample(_FLAGS, rng.randint(0, 5)):
        argv += [flag, rng.choice(values)]
    if rng.random() < 0.5:
        argv.append("--json")
    return argv


def _random_settings(rng: random.Random) -> tuple[InferenceSettings, Hardware]:
    runtime = rng.choice(RUNTIMES)
    settings = InferenceSettings(
        runtime=runtime,
        ctx=rng.choice([None, 512, 4096, 32768]),
        parallel=rng.choice([None, 1, 4]),
    )
    hw = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=rng.choice([8, 24, 80]) << 30),))
    return settings, hw


class Stats:
    def __init__(self) -> None:
        self.inputs = Counter[str]()
        self.tracebacks: list[tuple[str, str]] = []
        self.hangs: list[tuple[str, float]] = []
        self.oomkit_errors = Counter[str]()
        self.slowest = 0.0

    def run(self, kind: str, label: str, fn: Any) -> Any:
        self.inputs[kind] += 1
        t0 = time.perf_counter()
        result = None
        try:
            result = fn()
        except OomkitError as e:
            self.oomkit_errors[type(e).__name__] += 1
        except Exception:
            self.tracebacks.append((f"{kind}: {label}", traceback.format_exc(limit=6)))
        dt = time.perf_counter() - t0
        self.slowest = max(self.slowest, dt)
        if dt > HANG_S:
            self.hangs.append((f"{kind}: {label}", dt))
        return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--estimate-every", type=int, default=25)
    ap.add_argument("--cli-share", type=float, default=0.03, help="fraction of CLI inputs")
    args = ap.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    rng = random.Random(args.seed)
    configs = _configs()
    ggufs = [p.read_bytes() for p in sorted((FIX / "gguf").glob("*.gguf"))]
    sts = _safetensors_inputs()
    stats = Stats()
    t_start = time.perf_counter()
    parsed = 0
    for i in range(args.n):
        r = rng.random()
        if r < args.cli_share:
            av = _argv(rng)
            sink_out, sink_err = io.StringIO(), io.StringIO()

            def run_cli(
                av: list[str] = av, o: io.StringIO = sink_out, e: io.StringIO = sink_err
            ) -> None:
                with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
                    code = cli_main(av)
                if "internal error" in e.getvalue() or "Traceback" in e.getvalue():
                    raise RuntimeError(f"exit {code}: {e.getvalue()[:300]}")

            stats.run("cli", " ".join(av), run_cli)
            continue
        if r < 0.60:
            base = rng.choice(configs)
            cfg = _mutate_config(rng, base)

            def load_cfg(cfg: Any = cfg, name: str = f"fuzz{i}") -> Any:
                if isinstance(cfg, str):
                    return parse_config_text(cfg, name=name, path="fuzz/config.json")
                return parse_config(cfg, name=name)

            spec = stats.run("config", f"seed {args.seed} input {i}", load_cfg)
        elif r < 0.85:
            data = rng.choice(ggufs)
            mutated = _mutate_bytes(rng, data, _gguf_header_len(data))

            def load_gguf_bytes(m: bytes = mutated) -> Any:
                return gguf_to_spec(read_gguf(io.BytesIO(m), path="fuzz.gguf", file_bytes=len(m)))

            spec = stats.run("gguf", f"seed {args.seed} input {i}", load_gguf_bytes)
        else:
            raw = _mutate_st_header(rng, rng.choice(sts))

            def load_st(raw: bytes = raw) -> Any:
                (n,) = struct.unpack("<Q", raw[:8])
                header = parse_safetensors_header(raw[8 : 8 + n], path="fuzz.safetensors")
                return tensor_infos((header,))

            stats.run("safetensors", f"seed {args.seed} input {i}: {raw[:100]!r}", load_st)
            spec = None
        if spec is not None:
            parsed += 1
            if parsed % args.estimate_every == 0:
                settings, hw = _random_settings(rng)
                stats.run(
                    f"estimate:{settings.runtime}",
                    f"seed {args.seed} input {i}: {settings}",
                    lambda s=spec, st=settings, h=hw: estimate_model(s, st, h),
                )
    wall = time.perf_counter() - t_start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total = sum(stats.inputs.values())
    print(f"inputs: {total:,} in {wall:.0f} s ({dict(stats.inputs)})")
    errs = stats.oomkit_errors
    print(f"one-line OomkitErrors: {sum(errs.values()):,} {dict(errs.most_common(6))}")
    print(f"tracebacks: {len(stats.tracebacks)}")
    print(f"hangs > {HANG_S:g} s: {len(stats.hangs)} (slowest input {stats.slowest:.2f} s)")
    print(f"peak RSS: {peak_mib:.0f} MiB")
    for label, tb in stats.tracebacks[:10]:
        print("----", label[:300])
        print(tb)
    for label, dt in stats.hangs[:10]:
        print(f"---- hang {dt:.1f} s: {label[:300]}")
    return 1 if stats.tracebacks or stats.hangs else 0


if __name__ == "__main__":
    sys.exit(main())
