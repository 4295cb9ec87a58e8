"""docfix15: SGLang's generic fixes never suggest the run's own value (or a worse one).

Synthetic logs in SGLang's formats: ``server_args=ServerArgs(model_path=..., context_length=...,
mem_fraction_static=..., tp_size=...)`` (python/sglang/srt/server_args.py dataclass repr) and
``Load weight end. ... avail mem=X GB, mem usage=Y GB.`` (model_runner.py load_model), then
``RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.``
(model_runner.py init_memory_pool).
"""

from __future__ import annotations

import math

from oomkit.diagnose.doctor import diagnose_text


def _log(model: str, avail: float, usage: float, *, context: str = "None", mfs: float = 0.8) -> str:
    return (
        f"[2025-04-10 09:12:33] server_args=ServerArgs(model_path='{model}', "
        f"tokenizer_path='{model}', context_length={context}, dtype='auto', "
        f"mem_fraction_static={mfs}, max_running_requests=None, tp_size=2, "
        "chunked_prefill_size=8192)\n"
        "[2025-04-10 09:12:47 TP0] Load weight begin. avail mem=78.58 GB\n"
        "[2025-04-10 09:13:51 TP0] Load weight end. type=Qwen2ForCausalLM, "
        f"dtype=torch.bfloat16, avail mem={avail:.2f} GB, mem usage={usage:.2f} GB.\n"
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
    )


def _commands(text: str) -> list[str]:
    return [c for f in diagnose_text(text).fixes for c in f.commands]


def test_no_context_cap_at_the_models_own_context() -> None:
    # Qwen2.5-72B's own context is 32768: "--context-length 32768" changes nothing
    cmds = _commands(_log("Qwen/Qwen2.5-72B-Instruct", 25.00, 53.58))
    assert "--context-length 32768" not in cmds, cmds
    cmds = _commands(_log("Qwen/Qwen2.5-72B-Instruct", 18.58, 60.00))
    assert "--context-length 32768" not in cmds, cmds


def test_generic_context_cap_is_below_the_stated_context() -> None:
    cmds = _commands(_log("acme/private", 18.58, 60.00, context="16384"))
    assert "--context-length 8192" in cmds, cmds
    assert not any(c.startswith("--context-length 16384") for c in cmds)
    cmds = _commands(_log("acme/private", 18.58, 60.00, context="2048"))
    assert not any(c.startswith("--context-length") for c in cmds), cmds
    # no context stated and the model unknown: the generic cap stands
    assert "--context-length 32768" in _commands(_log("acme/private", 18.58, 60.00))


def test_fraction_raise_is_never_the_runs_value_or_lower() -> None:
    # 60.00 GB of weights in 78.58: SGLang's pool at 0.80 is already positive by the log's
    # numbers, so they do not size a raise; it used to say "Raise ... to 0.79"
    d = diagnose_text(_log("acme/private", 18.58, 60.00))
    raises = [f for f in d.fixes if f.title.startswith("Raise --mem-fraction-static")]
    assert raises
    for f in raises:
        assert float(f.title.rsplit(" ", 1)[1]) > 0.8, f.title


def test_fraction_raise_by_sglangs_pool_arithmetic() -> None:
    # rest = avail - total x (1 - f) (model_runner.py profile_max_num_token), total = X + Y
    avail, usage = 10.81, 67.77
    d = diagnose_text(_log("acme/private", avail, usage))
    first = d.fixes[0]
    f = float(first.title.rsplit(" ", 1)[1])
    total = avail + usage
    floor = 1 - avail / total
    assert f == math.floor(floor * 100 + 1) / 100  # the smallest hundredth above the share
    assert avail - total * (1 - f) > 0 >= avail - total * (1 - (f - 0.01))
    assert "the smallest fraction that leaves one" in first.why
