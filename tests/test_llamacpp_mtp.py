"""llama-server ``--spec-type draft-mtp`` (oomkit.estimate.llamacpp_mtp): the MTP context's KV
and compute buffer, the nextn block's weights, the recurrent state's rollback snapshots.

``LOGGED`` sets llama-server's own ``[spec] estimated memory usage of MTP context is N MiB``
(KV + compute of the MTP context, all devices) next to oomkit's figure for the same settings, as
far as each source states them. The KV part is exact wherever a log prints it apart (1 nextn
layer, f16 whatever ``-ctk`` says, ``n_ctx`` cells); the compute buffer is oomkit's simulated
reserve graph of the head (one full-attention block of the trunk's shape plus the
``eh_proj`` input stage) and is off by up to a factor of two either way, most of it on runs
whose ``-ub`` and build the source does not state. Figures (MiB):

===========================================  ======  ========  ==================================
run (settings as stated)                     logged  modelled  source
===========================================  ======  ========  ==================================
Qwen3.6-27B ctx 32768 np 1                   258     256.02    ananke calibration notes (code
                                                               corpus id 58574490142)
Qwen3.6-27B ctx 131072 np 4                  708     832.02    same
Qwen3.8-27B UD-Q5_K_M -c 8192 -ub 512, np 4  162.02  112.02    ISTA load log leg1 (code corpus
  auto (kv_unified)                                            id 67641345854)
same, -ub 2048                               552.06  352.09    same, leg7 (id 67565878217)
Qwen3.8-27B UD-Q2_K_XL ctx 98304, q4_0 KV:   384.00  384.00    github.com/xenodeve/Qwen-3.8-27B-
  MTP KV alone (+ compute 82.01)                               Tuning report 35 (issues #40-#42)
  ctx 131072 / 147456 / 163840: MTP KV       512 / 576 / 640   exact (same report's table)
Qwen3.6-35B-A3B UD-Q4_K_M -c 4096 np 1       890.85  48.02     RTX 3060 repro notes (code corpus
  (build not stated)                                           id 59823095396): not explained
Qwen3.6-35B-A3B ctx 524288 np 2, 2 GPUs      1320.02 2057.02   ananke parity handover (id
  -sm tensor, q8_0 KV (log prints one share)                   58810017553): -sm tensor unmodelled
2B MTP checkpoint -c 4096 -ngl 99            56.02   --        no catalog 2B Qwen3.5 (id
                                                               61403768062)
Qwen3.8-27B (292.03), unknown (682.02,       --      --        settings not stated (ids 62946298934,
  2596.06)                                                     57632614788, 55817659481)
===========================================  ======  ========  ==================================

The public pages' URLs are not in the corpus for most of these (the ``find_string`` ids are given
so the text can be reread); the xenodeve report names its repository.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oomkit.api import estimate
from oomkit.errors import InvalidSettingError
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

MiB = 2**20


def _gpus(name: str) -> object:
    from oomkit.cli.params import parse_gpu_list

    return parse_gpu_list(name)


def _estimate(model: str, gpu: str, ctx: int, **kw: object) -> object:
    gpus = _gpus(gpu)
    s = InferenceSettings(
        runtime="llama.cpp",
        ctx=ctx,
        runtime_version=str(kw.pop("runtime_version", "b9850")),
        llama_server=True,
        flash_attn=True,
        **kw,  # type: ignore[arg-type]
    )
    return estimate(model, s, hardware_for(gpus, n_devices=len(gpus)), offline=True)  # type: ignore[arg-type]


def _by_label(est: object, prefix: str) -> float:
    total = 0
    for d in (*est.devices, est.host):  # type: ignore[attr-defined]
        total += sum(c.n_bytes for c in d.components if c.label.startswith(prefix))
    return total / MiB


def _write_qwen35(path: Path, nextn: int = 1) -> Path:
    """A real qwen35 GGUF: 4 trunk blocks (3 Gated DeltaNet, 1 full attention) plus ``nextn``
    MTP blocks ``blk.4..`` with ``nextn.*`` tensors, counted in ``block_count``."""
    import gguf
    import numpy as np

    arch, n_layer = "qwen35", 4
    E, H, KV, HD, FF, V = 64, 4, 2, 16, 128, 256
    w = gguf.GGUFWriter(str(path), arch)
    for key, val in {
        "block_count": n_layer + nextn,
        "embedding_length": E,
        "feed_forward_length": FF,
        "attention.head_count": H,
        "attention.head_count_kv": KV,
        "attention.key_length": HD,
        "attention.value_length": HD,
        "context_length": 4096,
        "full_attention_interval": 4,
        "ssm.conv_kernel": 4,
        "ssm.inner_size": 64,
        "ssm.state_size": 16,
        "ssm.group_count": 2,
        "ssm.time_step_rank": 4,
        "nextn_predict_layers": nextn,
    }.items():
        w.add_uint32(f"{arch}.{key}", val)
    w.add_tensor("token_embd.weight", np.zeros((V, E), np.float16))
    w.add_tensor("output.weight", np.zeros((V, E), np.float16))
    w.add_tensor("output_norm.weight", np.zeros((E,), np.float32))
    for i in range(n_layer + nextn):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.zeros((E,), np.float32))
        for t in ("ffn_gate", "ffn_up"):
            w.add_tensor(f"blk.{i}.{t}.weight", np.zeros((FF, E), np.float16))
        w.add_tensor(f"blk.{i}.ffn_down.weight", np.zeros((E, FF), np.float16))
        if (i + 1) % 4 == 0 or i >= n_layer:
            w.add_tensor(f"blk.{i}.attn_q.weight", np.zeros((2 * H * HD, E), np.float16))
            w.add_tensor(f"blk.{i}.attn_k.weight", np.zeros((KV * HD, E), np.float16))
            w.add_tensor(f"blk.{i}.attn_v.weight", np.zeros((KV * HD, E), np.float16))
            w.add_tensor(f"blk.{i}.attn_output.weight", np.zeros((E, H * HD), np.float16))
    for i in range(n_layer, n_layer + nextn):
        w.add_tensor(f"blk.{i}.nextn.eh_proj.weight", np.zeros((E, 2 * E), np.float16))
        for t in ("enorm", "hnorm", "shared_head_norm"):
            w.add_tensor(f"blk.{i}.nextn.{t}.weight", np.zeros((E,), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


#: (model, gpu, ctx, settings, llama-server's logged MiB, oomkit's MiB) of LOGGED above
LOGGED = [
    ("qwen3.6-27b", "rtx-pro-6000-blackwell", 32768, {"quant": "Q8_0", "parallel": 1}, 258.0,
     256.02),
    ("qwen3.6-27b", "rtx-pro-6000-blackwell", 131072,
     {"quant": "Q8_0", "parallel": 4, "kv_unified": True}, 708.0, 832.02),
    ("qwen3.8-27b", "rtx-3090", 8192,
     {"quant": "Q5_K_M", "parallel": 4, "kv_unified": True, "ubatch": 512}, 162.02, 112.02),
    ("qwen3.8-27b", "rtx-3090", 8192,
     {"quant": "Q5_K_M", "parallel": 4, "kv_unified": True, "ubatch": 2048}, 552.06, 352.09),
    ("qwen3.6-35b-a3b", "rtx-3060", 4096, {"quant": "Q4_K_M", "parallel": 1}, 890.85, 48.02),
]  # fmt: skip


@pytest.mark.parametrize(("model", "gpu", "ctx", "kw", "logged", "modelled"), LOGGED)
def test_logged_mtp_context_figures_stay_as_tabled(
    model: str, gpu: str, ctx: int, kw: dict[str, object], logged: float, modelled: float
) -> None:
    est = _estimate(model, gpu, ctx, speculative_method="mtp", **kw)
    got = est.runtime_details["mtp"]["context_bytes"] / MiB  # type: ignore[attr-defined]
    assert got == pytest.approx(modelled, abs=0.01), (logged, got)


@pytest.mark.parametrize(("ctx", "kv_mib"), [(98304, 384), (131072, 512), (147456, 576),
                                             (163840, 640)])  # fmt: skip
def test_mtp_kv_is_one_f16_nextn_layer_of_n_ctx_cells(ctx: int, kv_mib: int) -> None:
    # xenodeve/Qwen-3.8-27B-Tuning report 35: "MTP draft KV 384.00 / 512.00 / 576.00 / 640.00"
    # (4.00 KiB/token) with the target's KV q4_0: the main -ctk does not reach the MTP context
    est = _estimate(
        "qwen3.8-27b", "rtx-5090", ctx, quant="Q2_K", parallel=1, cache_type_k="q4_0",
        cache_type_v="q4_0", speculative_method="mtp",
    )  # fmt: skip
    assert _by_label(est, "MTP draft context KV") == kv_mib


@pytest.mark.parametrize(("n_max", "rs_mib"), [(3, 598.50), (7, 1197.00)])
def test_recurrent_state_widened_to_one_plus_n_max(n_max: int, rs_mib: float) -> None:
    # same report: "RS 598.50 (n_max 3)", "1,197.00 MiB = 149.62 x (1 + 7)"
    est = _estimate(
        "qwen3.8-27b", "rtx-5090", 98304, quant="Q2_K", parallel=1,
        speculative_method="mtp", num_speculative_tokens=n_max,
    )  # fmt: skip
    base = _by_label(est, "RS buffer")
    assert round(base, 2) == 149.62
    assert round(base + _by_label(est, "RS rollback"), 2) == rs_mib


def test_nextn_weights_priced_for_a_catalog_spec_only_with_mtp() -> None:
    on = _estimate("qwen3.6-35b-a3b", "rtx-3060", 4096, quant="Q4_K_M", speculative_method="mtp")
    off = _estimate("qwen3.6-35b-a3b", "rtx-3060", 4096, quant="Q4_K_M")
    # one MoE decoder block (256 experts) + eh_proj: a few hundred MiB at ~4.8 bits
    assert 300 < _by_label(on, "MTP nextn block weights") < 700
    assert _by_label(off, "MTP") == 0
    assert on.devices[0].total_bytes > off.devices[0].total_bytes  # type: ignore[attr-defined]


def test_real_gguf_with_nextn_tensors(tmp_path: Path) -> None:
    path = _write_qwen35(tmp_path / "q35-mtp.gguf")
    on = _estimate(str(path), "rtx-3060", 4096, speculative_method="mtp",
                   num_speculative_tokens=2)  # fmt: skip
    off = _estimate(str(path), "rtx-3060", 4096)
    # 1 nextn layer x 2 KV heads x 16 x (K + V) x f16 x 4096 cells
    assert _by_label(on, "MTP draft context KV") == 1 * 2 * 16 * 2 * 2 * 4096 / MiB
    assert _by_label(on, "MTP draft context compute buffer") > 0
    assert _by_label(on, "RS rollback") == pytest.approx(2 * _by_label(on, "RS buffer"))
    # the GGUF's own blk.4 tensors are already in the weights: not priced twice
    assert _by_label(on, "MTP nextn block weights") == 0
    assert _by_label(off, "MTP") == 0
    assert "mtp" not in off.runtime_details  # type: ignore[attr-defined]


def test_gguf_without_nextn_layers_is_refused(tmp_path: Path) -> None:
    path = _write_qwen35(tmp_path / "q35.gguf", nextn=0)
    with pytest.raises(InvalidSettingError, match="no nextn layers"):
        _estimate(str(path), "rtx-3060", 4096, speculative_method="mtp")


def test_other_architectures_and_old_builds_are_refused() -> None:
    with pytest.raises(InvalidSettingError, match="no MTP graph for architecture 'qwen3'"):
        _estimate("qwen3-8b", "rtx-3060", 4096, speculative_method="mtp")
    with pytest.raises(InvalidSettingError, match="arrived in b9180"):
        _estimate("qwen3.8-27b", "rtx-3090", 4096, speculative_method="mtp",
                  runtime_version="b9000")  # fmt: skip
    with pytest.raises(InvalidSettingError, match="speculative_method 'eagle'"):
        _estimate("qwen3.8-27b", "rtx-3090", 4096, speculative_method="eagle")


def test_verdict_harness_record_reaches_the_mtp_code() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import verdict_accuracy as va

    rec = json.loads(
        Path(__file__).parent.joinpath("fixtures/verdict_runs/heldout58.jsonl").read_text()
        .splitlines()[14]
    )  # fmt: skip
    assert rec["settings"]["speculative_method"] == "mtp"
    assert rec["id"].endswith("ncmoe20-oom")
    level, _ = va.judge(rec)
    assert level != "fits"  # +0.78 GiB "tight" before; the MTP terms take it to +0.15


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oomkit", "estimate", *args, "--offline"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"), "PATH": "/usr/bin"},
    )


def test_cli_flags_end_to_end(tmp_path: Path) -> None:
    path = _write_qwen35(tmp_path / "q35-mtp.gguf")
    r = _cli(str(path), "-c", "4096", "--gpu", "rtx-3060", "--spec-type", "draft-mtp",
             "--spec-draft-n-max", "2", "--explain", "--emit")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "MTP draft context KV (K f16, V f16)" in r.stdout
    assert "--spec-type draft-mtp --spec-draft-n-max 2" in r.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--spec-type", "draft-mtp", "--spec-draft-n-max", "0"), "at least 1, got 0"),
        (("--spec-type", "draft-mtp", "--spec-draft-n-max", "-1"), "at least 1, got -1"),
        (("--spec-type", "draft-mtp", "--spec-draft-n-max", str(10**9)), "must be 1 to 2047"),
        (("--spec-type", "draft-eagle3"), "oomkit prices draft-mtp"),
        (("--spec-draft-n-max", "2"), "needs --spec-type draft-mtp"),
        (("--spec-type", "draft-mtp", "--runtime", "vllm"), "is llama-server's"),
    ],
)
def test_cli_bad_values_one_line_exit_2(tmp_path: Path, args: tuple[str, ...], needle: str) -> None:
    path = _write_qwen35(tmp_path / "q35-mtp.gguf")
    r = _cli(str(path), "-c", "4096", "--gpu", "rtx-3060", *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, r.stderr
    assert needle in lines[0], r.stderr


def test_main_context_reserves_the_verify_rows() -> None:
    # server_n_outputs_max = min(n_batch, n_parallel * (1 + common_speculative_n_max)) (PR #23988)
    est = _estimate("qwen3.8-27b", "rtx-3090", 8192, quant="Q4_K_M", parallel=2,
                    speculative_method="mtp", num_speculative_tokens=2)  # fmt: skip
    assert any("reserves 6 output row(s)" in a for a in est.assumptions)  # type: ignore[attr-defined]
