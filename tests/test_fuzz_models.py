"""Issue 10 item 6 (fast version): hypothesis-generated configs, settings and CLI flags never
raise anything but a one-line OomkitError. The 100k-input run is benchmarks/fuzz_models.py."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oomkit.api import estimate_model
from oomkit.cli import main
from oomkit.errors import OomkitError
from oomkit.loaders.hf_config import parse_config, parse_config_text
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings

BASE = json.loads(
    (Path(__file__).parent / "fixtures" / "configs" / "qwen3-30b-a3b.json").read_text()
)
KEYS = sorted(k for k, v in BASE.items() if isinstance(v, int | float) and not isinstance(v, bool))

absurd = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.booleans(),
    st.text(max_size=5),
    st.lists(st.integers(min_value=-3, max_value=3), max_size=3),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(KEYS), absurd, min_size=1, max_size=4))
def test_mutated_config_is_parsed_or_refused(changes: dict[str, Any]) -> None:
    cfg = {**BASE, **changes}
    msg = ""
    try:
        spec = parse_config(cfg, name="fuzz")
        estimate_model(spec, InferenceSettings(ctx=4096))
    except OomkitError as e:
        msg = str(e)
    assert "\n" not in msg


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_config_text_never_crashes(text: str) -> None:
    with contextlib.suppress(OomkitError):
        parse_config_text(text, name="fuzz", path="fuzz/config.json")


int_or_junk = st.one_of(st.none(), st.integers(min_value=-(2**70), max_value=2**70), absurd)


@settings(max_examples=150, deadline=None)
@given(
    runtime=st.sampled_from(["llama.cpp", "vllm", "sglang", "ollama", "transformers"]),
    ctx=int_or_junk,
    tp=int_or_junk,
    util=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
    ngl=int_or_junk,
    cap=st.one_of(st.none(), st.integers(min_value=-(2**62), max_value=2**62)),
)
def test_settings_and_hardware_validate_or_estimate(
    runtime: str, ctx: Any, tp: Any, util: Any, ngl: Any, cap: Any
) -> None:
    msg = ""
    try:
        s = InferenceSettings(
            runtime=runtime, ctx=ctx, tp=tp, gpu_memory_utilization=util, n_gpu_layers=ngl
        )
        hw = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=cap),) * (s.tp or 1))
        estimate_model("qwen3-8b", s, hw)
    except OomkitError as e:
        msg = str(e)
    assert "\n" not in msg


FLAGS = {
    "--ctx": st.sampled_from(["0", "-1", "32k", "9" * 25, "nan", "4096"]),
    "--tp": st.sampled_from(["0", "3", "2", "1000000", "-2"]),
    "-ngl": st.sampled_from(["-1", "-2", "0", "99999999999"]),
    "--gpu": st.sampled_from(["rtx-4090", "2xa100-80gb", "cpu", "m2-max", "0xa100", ","]),
    "--vram": st.sampled_from(["24G", "inf", "-1GiB", "24", "1e999GiB"]),
    "--runtime": st.sampled_from(["vllm", "sglang", "llama.cpp", "transformers", "x"]),
    "-ts": st.sampled_from(["3,1", "0,0", "a", "-1,2"]),
    "-ot": st.sampled_from(["exps=CPU", "(=CPU", "attn=CPU"]),
    "--cpu-offload-gb": st.sampled_from(["inf", "nan", "-1", "2"]),
}


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(FLAGS)), st.just(None), max_size=4), st.data())
def test_cli_flags_never_traceback(chosen: dict[str, None], data: st.DataObject) -> None:
    argv = ["estimate", "qwen3-30b-a3b", "--offline"]
    for flag in chosen:
        argv += [flag, data.draw(FLAGS[flag])]
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code in (0, 1, 2, 3)
    assert "internal error" not in err.getvalue(), (argv, err.getvalue())
    assert "Traceback" not in err.getvalue()
