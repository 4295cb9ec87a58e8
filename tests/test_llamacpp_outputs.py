"""llama-server's output reserve from llama.cpp PR #23861: ``n_parallel`` rows, not the
micro-batch's (:mod:`oomkit.estimate.llamacpp_outputs`), on the settings of llmfit PR #778
(Qwen2.5-14B-Instruct Q4_K_M, RTX 2080 8 GB, ``-ngl 42``, context 4096, one slot, a
llama-server of July 2026 that ran)."""

from __future__ import annotations

import dataclasses

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import llamacpp_options, resolve_generation
from oomkit.estimate.llamacpp_outputs import server_outputs
from oomkit.estimate.llamacpp_params import (
    LlamaCppOptions,
    LlamaCppParams,
    resolve_llamacpp_params,
)
from oomkit.estimate.verdict import Platform, verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

_LLMFIT778: dict[str, object] = {"quant": "Q4_K_M", "ctx": 4096, "parallel": 1, "n_gpu_layers": 42}


_GPUS = parse_gpu_list("rtx-2080")
_LINUX = Platform(os="linux", segments=tuple(g.segment for g in _GPUS))


def _est(version: str, **kw: object) -> Estimate:
    s = InferenceSettings(
        runtime="llama.cpp",
        runtime_version=version,
        **{**_LLMFIT778, **kw},  # type: ignore[arg-type]
    )
    return estimate("qwen2.5-14b", s, hardware_for(_GPUS, n_devices=1, os="linux"), offline=True)


def _compute(est: Estimate) -> int:
    d = next(x for x in est.devices if x.device == "cuda:0")
    return sum(c.n_bytes for c in d.components if c.label == "compute buffer")


def test_llmfit778_qwen25_14b_server_drops_the_staged_output_head() -> None:
    bench = _est("2026-07-21")  # the C API default: one output row per micro-batch token
    server = _est("2026-07-21", llama_server=True)
    # -ngl 42 of 48 layers leaves output.weight on the CPU; a 512-row matmul is offloaded to
    # the GPU (weight copy + 512 x 152064 f32 logits), a 1-row one is not
    staged = 152064 * 512 * 4
    assert _compute(bench) - _compute(server) > staged
    assert any("PR #23861" in a for a in server.assumptions)
    assert not any("PR #23861" in a for a in bench.assumptions)
    assert server.settings["llama_server"] is True  # echoed only when given
    assert "llama_server" not in bench.settings
    # the verdict: the working run is no longer "does not fit"
    assert verdict(bench, _LINUX).level == "does_not_fit"
    assert verdict(server, _LINUX).level in ("tight", "fits")


def test_builds_before_pr_23861_keep_the_micro_batch_rows() -> None:
    before = _est("2026-05-20", llama_server=True)
    assert _compute(before) == _compute(_est("2026-05-20"))
    assert not any("PR #23861" in a for a in before.assumptions)


def test_generation_row_dates_the_switch() -> None:
    assert resolve_generation("llama.cpp", "2026-06-15").key == "2026-06-server-outputs"
    on = llamacpp_options("2026-06-15", None)
    off = llamacpp_options("2026-05-31", None)
    later = llamacpp_options("2026-09-10", None)
    assert isinstance(on, LlamaCppOptions)
    assert isinstance(off, LlamaCppOptions)
    assert isinstance(later, LlamaCppOptions)
    assert on.server_outputs
    assert not off.server_outputs
    assert later.server_outputs


def _params(**kw: object) -> tuple[InferenceSettings, LlamaCppParams]:
    s = InferenceSettings(runtime="llama.cpp", ctx=8192, **kw)  # type: ignore[arg-type]
    return s, resolve_llamacpp_params(s, n_layer=48, has_gpu=True, default_swa_full=False)


def test_rows_are_n_parallel_capped_by_n_batch() -> None:
    s, p = _params(parallel=4, llama_server=True)
    assert server_outputs(s, p).options.reserve_outputs == 4
    s, p = _params(parallel=8, batch_size=4, ubatch=4, llama_server=True)
    assert server_outputs(s, p).options.reserve_outputs == 4


def test_left_alone_for_draft_models_callers_rows_and_non_server_runs() -> None:
    s, p = _params(parallel=2, llama_server=True, draft_model="qwen2.5-0.5b")
    assert server_outputs(s, p) is p
    s, p = _params(parallel=2)
    assert server_outputs(s, p) is p
    s, p = _params(parallel=2, llama_server=True)
    fixed = dataclasses.replace(p, options=dataclasses.replace(p.options, reserve_outputs=1))
    assert server_outputs(s, fixed) is fixed
