"""Random option combinations for the CLI: no command may answer odd values with a traceback.

Every option of the chosen commands (read from the click group, so new options are covered
without editing this file) gets a value drawn from a pool of odd ones (0, negatives, NaN, inf,
huge numbers, empty strings, wrong units, NUL bytes, other options' values); flags are set or
not. A run fails when ``main`` raises, returns an exit code outside 0-4, or prints "internal
error" / a traceback (``oomkit.cli`` maps an unexpected exception to "internal error").

Usage (from the repository root)::

    python benchmarks/fuzz_cli.py --n 3000 --seed 2                       # estimate, plan
    python benchmarks/fuzz_cli.py --n 1500 --seed 3 --commands doctor,models,gpus

Exit 1 when any problem is found (each distinct one printed once with its arguments).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import sys

ODD = (
    "0", "-1", "1", "2", "3", "nan", "inf", "-inf", "1e308", "99999999999999999999", "0.5",
    "1.5", "", " ", "abc", "24GiB", "24GB", "0GiB", "-5GiB", "1e30GiB", "max", "8k", "1m",
    "Q4_K_M", "q8_0", "f16", "bf16", "fp8", "nf4", "awq", "gptq", "auto", "none", "cpu",
    "rtx-4090", "2xa100-80gb", "h100", "a,b", "rtx-4090,rtx-3090", "0.9", "1.0", "1.01",
    "llama.cpp", "vllm", "ollama", "sglang", "transformers", "cuda", "metal", "vulkan",
    "rocm", "windows", "linux", "macos", "lora", "qlora", "full", "adamw", "adamw8bit",
    "FULL_SHARD", "2025-01-01", "0.4.0", "b4000", "9.9.9", "\x00", "é", "1" * 400,
)  # fmt: skip
MODELS = (
    "llama-3.1-8b", "qwen2.5-32b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b", "nope",
    "llama-3.2-1b", "qwen3-30b-a3b", "gpt-oss-20b", "phi-3-mini",
)  # fmt: skip
LOGS = ("CUDA out of memory. Tried to allocate 2.00 GiB", "all good", "llama-3.1-8b")
SKIP = frozenset({"--help", "--explain", "--watch"})  # help text; --watch loops by design


def options(command: str) -> list[tuple[str, bool]]:
    """(longest spelling, is a flag) of every option of ``oomkit <command>``."""
    from click import Context

    from oomkit.cli.group import cli

    cmd = cli.get_command(Context(cli), command)
    assert cmd is not None, command
    return [
        (max(p.opts, key=len), bool(getattr(p, "is_flag", False)))
        for p in cmd.params
        if p.param_type_name == "option" and max(p.opts, key=len) not in SKIP
    ]


#: exit codes seen by :func:`run_one` (how many runs got past validation to an answer)
CODES: dict[object, int] = {}


def run_one(args: list[str]) -> str | None:
    """``None`` when ``oomkit args`` answered cleanly, else the problem."""
    from oomkit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: object = main(args)
        except SystemExit as e:
            code = e.code
        except BaseException as e:  # the point is to catch anything
            return f"raised {type(e).__name__}: {e}"[:200]
    text = err.getvalue()
    CODES[code] = CODES.get(code, 0) + 1
    if code not in (0, 1, 2, 3, 4):
        return f"exit code {code!r}"
    if "internal error" in text or "Traceback" in text:
        return (text.strip().splitlines() or ["?"])[-1][:200]
    return None


def fuzz(n: int, seed: int, commands: list[str]) -> dict[str, list[str]]:
    """Distinct problems found over ``n`` random invocations, with one example each."""
    rng = random.Random(seed)
    table = {c: options(c) for c in commands}
    problems: dict[str, list[str]] = {}
    for _ in range(n):
        command = rng.choice(commands)
        args = [command]
        if command in ("estimate", "plan"):
            args.append(rng.choice(MODELS))
        elif command in ("doctor", "models"):
            args.append(rng.choice(LOGS))
        opts = table[command]
        for opt, flag in rng.sample(opts, rng.randint(1, min(6, len(opts)))):
            args.append(opt)
            if not flag:
                args.append(rng.choice(ODD))
        problem = run_one(args)
        if problem is not None and problem not in problems:
            problems[problem] = args
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--commands", default="estimate,plan")
    a = ap.parse_args()
    commands = [c.strip() for c in a.commands.split(",") if c.strip()]
    problems = fuzz(a.n, a.seed, commands)
    for problem, args in problems.items():
        print(f"{problem}  <- oomkit {' '.join(map(repr, args))}")
    codes = ", ".join(f"{k}: {v}" for k, v in sorted(CODES.items(), key=lambda kv: str(kv[0])))
    print(f"{a.n} invocations of {', '.join(commands)}: {len(problems)} distinct problem(s)")
    print(f"exit codes: {codes} (0/3/4 answered, 1 error, 2 usage error)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
