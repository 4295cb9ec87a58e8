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


def options(command: str) -> list[tuple[str, bool, tuple[str, ...]]]:
    """(longest spelling, is a flag, plausible values) of every option of ``oomkit <command>``.

    Plausible values (a choice's choices, small counts, sizes with units) let a run get past
    validation into the estimators; the odd ones (:data:`ODD`) test the validation itself.
    """
    import click
    from click import Context

    from oomkit.cli.group import cli

    cmd = cli.get_command(Context(cli), command)
    assert cmd is not None, command
    out: list[tuple[str, bool, tuple[str, ...]]] = []
    for p in cmd.params:
        if p.param_type_name != "option":
            continue
        name = max(p.opts, key=len)
        if name in SKIP:
            continue
        flag = bool(getattr(p, "is_flag", False))
        kind = p.type
        if isinstance(kind, click.Choice):
            plausible = tuple(str(c) for c in kind.choices)
        elif kind.name in ("SIZE",):
            plausible = ("8GiB", "24GiB", "80GB", "512MiB")
        elif kind.name in ("N", "N|max", "integer", "integer range"):
            plausible = ("1", "2", "4", "8", "4096", "32768", "max")
        elif kind.name in ("float", "float range"):
            plausible = ("0.5", "0.9", "0.95", "1")
        else:
            plausible = PLAUSIBLE.get(name, ())
        out.append((name, flag, plausible))
    return out


#: plausible values of free-text options, by name
PLAUSIBLE = {
    "--gpu": ("rtx-4090", "2xa100-80gb", "h100", "rtx-3060", "m2-max-32gb", "rtx-4090,rtx-3090"),
    "--quant": ("Q4_K_M", "Q8_0", "bf16", "fp8", "awq", "nf4", "Q2_K"),
    "--runtime": ("llama.cpp", "ollama", "vllm", "sglang", "transformers", "any"),
    "--runtime-version": ("2024-06-01", "b4000", "0.6.3", "0.4.6", "0.11.0"),
    "--model": ("llama-3.1-8b", "qwen2.5-7b"),
}


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
            # most options need a GPU, training options --train: give them often enough that
            # runs get past validation into the estimators
            if rng.random() < 0.6:
                args += ["--gpu", rng.choice(PLAUSIBLE["--gpu"])]
            if rng.random() < 0.3:
                args += ["--train", rng.choice(("full", "lora", "qlora"))]
        elif command in ("doctor", "models"):
            args.append(rng.choice(LOGS))
        opts = table[command]
        odd = rng.random() < 0.3  # else mostly plausible values, to reach the estimators
        for opt, flag, plausible in rng.sample(opts, rng.randint(1, min(5, len(opts)))):
            args.append(opt)
            if not flag:
                pool = ODD if odd or not plausible or rng.random() < 0.1 else plausible
                args.append(rng.choice(pool))
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
