"""SGLang's hybrid sliding-window pool (oomkit.estimate.sglang_swa), by generation.

The token pool's memory is sized as before (``max_total_num_tokens = rest // cell_size``, every
layer at every token); a hybrid-SWA model then splits it so that ``swa_tokens = 0.8 x
full_tokens`` (``--swa-full-tokens-ratio``) and ``max_total_num_tokens = full_tokens``:
v0.4.10 model_runner.py ``set_num_token_hybrid`` (``full = int(T x num_hidden_layers / (0.8 x
n_swa + n_full))``) for Gemma 2/3/3n, off for them from v0.4.10.post2 (server_args.py FIXME on PR
#7367); v0.5.8 configs/model_config.py ``is_hybrid_swa_model`` for GptOssForCausalLM (off with
speculative decoding); v0.5.9 model_runner_kv_cache_mixin.py ``_resolve_hybrid_swa_tokens``
weighs the layers' bytes (equal on both models here, so the same counts).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import run_cli
from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.hf_kv import KvLayer
from oomkit.estimate.sglang_swa import hybrid_swa_split
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings


def _est(model: str, version: str, ctx: int, **kw: Any) -> Estimate:
    s = InferenceSettings(runtime="sglang", ctx=ctx, runtime_version=version, **kw)
    return estimate(model, s, hardware_for(parse_gpu_list("h100-sxm"), n_devices=1), offline=True)


def _tokens(est: Estimate) -> int:
    v = est.runtime_details["max_total_num_tokens"]
    assert isinstance(v, int)
    return v


def test_gpt_oss_20b_split_from_0_5_8() -> None:
    # gpt-oss-20b: 24 layers, 12 sliding (window 128) + 12 full, 8 KV heads x 64: cell_size =
    # 24 x 8 x 64 x 2 x 2 = 49152 bytes; full_tokens = int(T x 24 / (0.8 x 12 + 12)) = T / 0.9
    before, after = _est("gpt-oss-20b", "0.5.7", 131072), _est("gpt-oss-20b", "0.5.8", 131072)
    assert before.runtime_details["cell_size_bytes"] == after.runtime_details["cell_size_bytes"]
    assert after.runtime_details["cell_size_bytes"] == 49152
    t = _tokens(before)
    assert "hybrid_swa" not in before.runtime_details
    assert _tokens(after) == int(t * 24 / (0.8 * 12 + 12))
    assert after.runtime_details["hybrid_swa"] == {
        "full_tokens": int(t * 24 / 21.6),
        "swa_tokens": int(int(t * 24 / 21.6) * 0.8),
    }
    # the KV memory itself does not move
    assert before.devices[0].kv_cache_bytes == after.devices[0].kv_cache_bytes
    # 0.5.9's memory rule: F = S = 2048 bytes a layer, the same count
    assert _tokens(_est("gpt-oss-20b", "0.5.9", 131072)) == _tokens(after)
    # --disable-hybrid-swa-memory keeps the uniform pool
    off = _est("gpt-oss-20b", "0.5.9", 131072, disable_hybrid_swa_memory=True)
    assert _tokens(off) == t


def test_gemma3_27b_only_in_0_4_10() -> None:
    # gemma-3-27b: 62 layers, 52 sliding (window 1024) + 10 full:
    # full_tokens = int(T x 62 / (0.8 x 52 + 10)) = int(T x 62 / 51.6)
    uniform, split = _est("gemma-3-27b", "0.4.9", 32768), _est("gemma-3-27b", "0.4.10", 32768)
    t = _tokens(uniform)
    assert _tokens(split) == int(t * 62 / 51.6)
    # off again from 0.4.10.post2 (a post-release: reached by its date)
    assert _tokens(_est("gemma-3-27b", "2025-08-03", 32768)) == t


def test_speculative_0_5_8_and_the_memory_rule() -> None:
    full = KvLayer(layer=0, kind="full", bytes_per_token=8192)
    slide = KvLayer(layer=1, kind="sliding", bytes_per_token=16384, window=1024)
    layers = (full, slide, slide, slide, slide, slide)
    eff: dict[str, object] = {"hybrid_swa": "X", "swa_split": "memory"}
    # F = 8192 x 1, S = 16384 x 5: full = int(1000 x 90112 / (8192 + 0.8 x 81920)) = 1222
    got = hybrid_swa_split("X", layers, 1000, eff)
    assert got is not None
    assert (got.full_tokens, got.swa_tokens) == (1222, 977)
    # by token count (v0.4.10-v0.5.8): int(1000 x 6 / (0.8 x 5 + 1)) = 1200
    tok = hybrid_swa_split("X", layers, 1000, {"hybrid_swa": "X"})
    assert tok is not None
    assert tok.full_tokens == 1200
    off = {"hybrid_swa": "X", "swa_off_speculative": True}
    assert hybrid_swa_split("X", layers, 1000, off, speculative=True) is None
    assert hybrid_swa_split("Y", layers, 1000, eff) is None


def test_cli_flag_keeps_the_uniform_pool() -> None:
    import json
    import os
    import subprocess
    import sys

    def tokens(*extra: str) -> int:
        cmd = [sys.executable, "-m", "oomkit", "estimate", "gpt-oss-20b", "-r", "sglang"]
        cmd += ["-g", "h100-sxm", "--runtime-version", "0.5.9", "-c", "131072", "--json", *extra]
        env = {**os.environ, "PYTHONPATH": "src"}
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False).stdout
        value = json.loads(out)["runtime_details"]["max_total_num_tokens"]
        assert isinstance(value, int)
        return value

    split, uniform = tokens(), tokens("--disable-hybrid-swa-memory")
    assert split == int(uniform * 24 / (0.8 * 12 + 12))


def test_the_flag_with_another_runtime_is_ignored_with_a_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--disable-hybrid-swa-memory`` is SGLang's (server_args.py); every other runtime is
    estimated as without it and says so on stderr in one line naming the flag, as for any
    flag a runtime does not read (cli/estimate_args.py ``warn_ignored``): vLLM's own switch is
    ``--disable-hybrid-kv-cache-manager`` and llama.cpp's ``--swa-full``, not this one."""
    for runtime in ("vllm", "llama.cpp", "ollama", "transformers"):
        argv = ("estimate", "gemma-3-12b", "-r", runtime, "-g", "h100-sxm", "-c", "8192")
        argv = (*argv, "--offline", "--json")
        code, out, err = run_cli(capsys, *argv, "--disable-hybrid-swa-memory")
        plain_code, plain_out, _ = run_cli(capsys, *argv)
        assert code == plain_code, runtime
        doc, plain = json.loads(out), json.loads(plain_out)
        # the same estimate; the JSON's assumptions name the ignored setting once more
        notes = doc.pop("assumptions")
        note = f"ignored by {runtime}: disable_hybrid_swa_memory"
        assert note in notes, runtime
        assert [n for n in notes if n != note] == plain.pop("assumptions")
        assert doc == plain, runtime
        warning = [ln for ln in err.splitlines() if "--disable-hybrid-swa-memory" in ln]
        assert warning == [f"Warning: {runtime} does not use --disable-hybrid-swa-memory: ignored"]
