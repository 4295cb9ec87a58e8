"""Score oomkit against measured runtime numbers: per runtime and component, signed error.

    python benchmarks/accuracy.py [--json out.json] [--validation ../shared/validation]
                                  [--oracle benchmarks/oracle/results.json]

Inputs: the shared validation set (``measured_dev.jsonl``: numbers users' runtimes logged;
``llamacpp_cpu_oracle_dev.jsonl``: real llama.cpp CPU-backend buffers) and the committed oracle
results of this repository. Records are dispatched by kind through :data:`SCORERS`; a kind
without an estimator, or a record whose setup oomkit cannot express, is listed as skipped with
the reason. Errors are ``(predicted - measured) / measured``; the table shows per runtime and
component the count, median |error|, median signed error and the worst case.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "oracle"))
sys.path.insert(0, str(HERE))

MiB = 1 << 20
GiB = 1 << 30


@dataclass
class Row:
    source: str
    record: str
    runtime: str
    component: str
    predicted: float  # bytes (or a count, see unit)
    measured: float
    unit: str = "bytes"

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured if self.measured else 0.0


@dataclass
class Skip:
    source: str
    record: str
    kind: str
    reason: str


# --------------------------------------------------------------------------- helpers


def _spec_for(ref: str) -> Any:
    """ModelSpec for an HF repo id: the embedded catalog, else benchmarks/configs/*.json."""
    from oomkit.catalog.models import find_model

    try:
        return find_model(ref).spec()
    except Exception as exc:
        local = HERE / "configs" / (ref.split("/")[-1] + ".json")
        if not local.exists():
            raise LookupError(f"no catalog entry or benchmarks/configs file for {ref}") from exc
        from oomkit.loaders.hf_config import parse_config

        cfg = json.loads(local.read_text())
        cfg.pop("_source", None)
        return parse_config(cfg, name=ref, source="config")


_QUANT_RE = re.compile(
    r"\b(I?Q\d_[A-Z0-9_]+?|Q\d_\d|F16|BF16|MXFP4)\b(?:\s*-\s*(SMALL|MEDIUM|LARGE))?"
)


def _ftype(quant: str) -> str | None:
    from oomkit.quant.llamacpp_ftypes import llamacpp_ftype

    head = quant.split("(")[0].strip()
    try:  # llama.cpp's own display names ("Q4_K - Medium", "IQ3_XXS - 3.0625 bpw")
        return llamacpp_ftype(head).name
    except Exception:
        pass
    m = _QUANT_RE.search(quant.upper().replace("Q4_K - MEDIUM", "Q4_K_M"))
    if not m:
        return None
    name = m.group(1)
    if m.group(2):
        name = f"{name}_{m.group(2)[0]}"
    try:
        return llamacpp_ftype(name).name
    except Exception:
        return None


def _host(name: str) -> bool:
    return "Host" in name or name.startswith("CPU")


def _sum(d: dict[str, Any] | None, pred: Callable[[str], bool]) -> float | None:
    if not d:
        return None
    vals = [v for k, v in d.items() if pred(k)]
    flat: list[float] = []
    for v in vals:
        flat += v if isinstance(v, list) else [v]
    return sum(flat) * MiB if flat else None


# --------------------------------------------------------------------------- llama.cpp logs


def _norm_llamacpp(m: dict[str, Any]) -> dict[str, dict[str, Any]]:
    model = m.get("weights_buffers_MiB")
    if model is None:
        model = {}
        for key, name in (
            ("cpu_buffer_MiB", "CPU"),
            ("cpu_mapped_weights_MiB", "CPU_Mapped"),
            ("cuda_host_weights_MiB", "CUDA_Host"),
            ("cuda0_weights_buffer_MiB", "CUDA0"),
            ("cuda0_weights_MiB", "CUDA0"),
            ("cuda1_weights_MiB", "CUDA1"),
            ("model_buffer_MiB", "CUDA0"),
        ):
            if key in m:
                model[name] = m[key]
    kv = m.get("kv_buffers_MiB")
    if kv is None:
        kv = {}
        for key, name in (
            ("cuda0_kv_buffer_MiB", "CUDA0"),
            ("cuda0_kv_MiB", "CUDA0"),
            ("cpu_kv_MiB", "CPU"),
            ("kv_MiB", "CUDA0"),
        ):
            if key in m:
                kv[name] = m[key]
    comp = m.get("compute_buffers_MiB")
    if comp is None:
        comp = {}
        for key, name in (
            ("cuda0_compute_buffer_MiB", "CUDA0"),
            ("cuda_host_compute_buffer_MiB", "CUDA_Host"),
            ("compute_MiB", "CUDA0"),
        ):
            if key in m:
                comp[name] = m[key]
    out = m.get("output_buffers_MiB")
    if out is None and "cuda_host_output_buffer_MiB" in m:
        out = {"CUDA_Host": m["cuda_host_output_buffer_MiB"]}
    return {"model": model, "kv": kv, "compute": comp, "output": out or {}}


def score_llamacpp(rec: dict[str, Any]) -> tuple[list[Row], list[str]]:
    """A llama.cpp log (incl. Ollama's runner, ik_llama.cpp): buffers per kind."""
    from oomkit.estimate.llamacpp import estimate_llamacpp
    from oomkit.estimate.llamacpp_params import LlamaCppOptions
    from oomkit.spec.hardware import DeviceTarget, Hardware
    from oomkit.spec.settings import InferenceSettings

    s = rec["settings"]
    runtime = rec.get("runtime") or "llama.cpp"
    rt = (
        "ik_llama.cpp"
        if "ik_llama" in runtime
        else "ollama-runner"
        if "ollama" in runtime
        else "llama.cpp"
    )
    if "non-MLA" in str(s.get("kv_mode", "")):
        return [], ["llama.cpp build before the MLA latent cache (non-MLA K/V sizes)"]
    ftype = _ftype(str(rec.get("quant", "")))
    if ftype is None:
        return [], [f"quant not expressible: {rec.get('quant')!r}"]
    spec = _spec_for(rec["hf_config_ref"])
    n_ctx = s.get("n_ctx") or s.get("num_ctx")
    if not isinstance(n_ctx, int):
        kvm = rec["measured"].get("kv_MiB")
        if not kvm:
            return [], ["n_ctx not stated"]
        n_ctx = 4096  # the record states the KV implies 4096 at f16
    gpus_raw = s.get("gpus") or s.get("gpu") or []
    if isinstance(gpus_raw, str):
        m = re.match(r"(\d+)x? ", gpus_raw)
        n_gpu = int(m.group(1)) if m else (2 if "2 CUDA" in gpus_raw else 1)
        names = [gpus_raw] * n_gpu
    else:
        names = list(gpus_raw)
        if len(names) == 1 and re.match(r"(\d+)x ", names[0]):
            names = [names[0]] * int(names[0].split("x")[0])
    if "RTX 3090 24GB + RTX 3060" in str(gpus_raw):
        names = ["RTX 3090", "RTX 3060"]
    backend = "vulkan" if "Vulkan" in json.dumps(rec["measured"]) else "cuda"
    devices = tuple(DeviceTarget(name=n, backend=backend) for n in names) or (
        DeviceTarget(name="gpu", backend=backend),
    )
    off = str(s.get("layers_offloaded", ""))
    ngl = int(off.split("/")[0]) if "/" in off else None
    type_k = s.get("type_k") or s.get("kv_type_mla_c") or "f16"
    type_v = s.get("type_v") or type_k
    ts = s.get("tensor_split")
    settings = InferenceSettings(
        quant=ftype,
        ctx=int(n_ctx),
        batch_size=s.get("n_batch") or 2048,
        ubatch=s.get("n_ubatch") or 512,
        flash_attn=bool(s.get("flash_attn")) if s.get("flash_attn") is not None else None,
        cache_type_k=str(type_k),
        cache_type_v=str(type_v),
        n_gpu_layers=ngl,
        tensor_split=tuple(float(x) for x in ts.split(",")) if isinstance(ts, str) else None,
        mmap=not s.get("no_mmap", False),
        swa_full="ik_llama" in runtime or None,
    )
    # the KQ mask became an f16 input (no cast) around b6600; older logs used f32 + cast
    build = re.search(r"build (\d+)", runtime)
    old_build = (build is not None and int(build.group(1)) < 6600) or str(
        rec.get("date", "9999")
    ) < "2025-09"
    if rt == "ollama-runner":
        from oomkit.estimate.ollama import estimate_ollama

        est = estimate_ollama(spec, settings, Hardware(devices=devices))
    else:
        est = estimate_llamacpp(
            spec,
            settings,
            Hardware(devices=devices),
            options=LlamaCppOptions(kq_mask_f16=not old_build, set_rows=not old_build),
        )
    b = est.runtime_details["buffers"]
    assert isinstance(b, dict)
    meas = _norm_llamacpp(rec["measured"])
    rows: list[Row] = []
    skips: list[str] = []
    rid = rec["id"]
    note = str(rec.get("note") or "").lower()
    overrides = bool(s.get("tensor_override_log_lines")) or ("expert" in note and "cpu" in note)

    def add(comp: str, pred: float | None, got: float | None) -> None:
        if pred is not None and got:
            rows.append(Row("measured_dev", rid, rt, comp, float(pred), float(got)))

    m_all = rec["measured"]
    if "nvidia_smi_vram_model_resident_MiB" in m_all and "nvidia_smi_vram_idle_MiB" in m_all:
        used = m_all["nvidia_smi_vram_model_resident_MiB"] - m_all["nvidia_smi_vram_idle_MiB"]
        add("device_total_gpu0", est.devices[0].total_bytes, used * MiB)
    kv_meas = _sum(meas["kv"], lambda _k: True)
    add("kv_buffer", sum(b["kv"].values()), kv_meas)
    if overrides:
        skips.append("-ot expert overrides (regex list not in the record): only KV scored")
        return rows, skips
    add(
        "model_buffer_gpu",
        sum(v for k, v in b["model"].items() if not _host(k)),
        _sum(meas["model"], lambda k: not _host(k)),
    )
    add(
        "model_buffer_host",
        sum(v for k, v in b["model"].items() if _host(k)),
        _sum(meas["model"], _host),
    )
    if "ik_llama" in runtime and (
        s.get("mla_attn") or (s.get("attn_max_b") and not s.get("flash_attn"))
    ):
        skips.append("compute: ik_llama.cpp MLA modes / attn_max_b chunking are not modelled")
        add("output_buffer", sum(b["output"].values()), _sum(meas["output"], lambda _k: True))
        return rows, skips
    main = next((k for k in b["compute"] if not _host(k)), None)
    mmain = next((k for k in meas["compute"] if not _host(k)), None)
    if main and mmain:
        add("compute_buffer_gpu0", b["compute"][main], meas["compute"][mmain] * MiB)
    add(
        "compute_buffer_host",
        sum(v for k, v in b["compute"].items() if _host(k)),
        _sum(meas["compute"], _host),
    )
    add("output_buffer", sum(b["output"].values()), _sum(meas["output"], lambda _k: True))
    return rows, skips


# --------------------------------------------------------------------------- Ollama estimates


def score_ollama(rec: dict[str, Any]) -> tuple[list[Row], list[str]]:
    """Ollama's own ``memory.*`` estimator line: compare like for like where possible."""
    from oomkit.estimate.ollama import estimate_ollama
    from oomkit.spec.hardware import DeviceTarget, Hardware
    from oomkit.spec.settings import InferenceSettings

    s = rec["settings"]
    m = rec["measured"]
    ftype = _ftype(str(rec.get("quant", "")))
    if ftype is None and "Q4_0" in str(rec.get("quant")):
        ftype = "Q4_0"
    if ftype is None:
        ftype = "Q4_K_M" if "Q4_K_M" in str(rec.get("quant")) else None
    if ftype is None:
        return [], [f"quant not expressible: {rec.get('quant')!r}"]
    spec = _spec_for(rec["hf_config_ref"])
    num_ctx = s.get("num_ctx")
    notes = ["Ollama memory.* lines are Ollama's own estimates, not allocations"]
    if not isinstance(num_ctx, int):
        notes.append("KV not scored: num_ctx not stated (the record infers it from the KV)")
    cpu = s.get("library") == "cpu"
    devices = () if cpu else (DeviceTarget(name="gpu"),)
    settings = InferenceSettings(
        runtime="ollama",
        quant=ftype,
        ctx=num_ctx if isinstance(num_ctx, int) else None,
        parallel=s.get("parallel") or 1,
        n_gpu_layers=s.get("layers_offload"),
    )
    est = estimate_ollama(spec, settings, Hardware(devices=devices))
    b = est.runtime_details["buffers"]
    assert isinstance(b, dict)
    rows: list[Row] = []
    rid = rec["id"]
    kv = m.get("memory_required_kv_MiB")
    if kv and isinstance(num_ctx, int):
        rows.append(
            Row(
                "measured_dev", rid, "ollama-estimate", "kv_buffer", sum(b["kv"].values()), kv * MiB
            )
        )
    wt = m.get("memory_weights_total_GiB")
    if wt:
        total = est.runtime_details["weights_file_bytes"]
        assert isinstance(total, int)
        rows.append(Row("measured_dev", rid, "ollama-estimate", "weights_total", total, wt * GiB))
    return rows, notes


# --------------------------------------------------------------------------- oracle records


def score_oracle_dev(rec: dict[str, Any]) -> tuple[list[Row], list[str]]:
    """Shared oracle dev set (real llama.cpp, CPU backend)."""
    from oracle_cases import record_inputs

    from oomkit.estimate.llamacpp import estimate_llamacpp
    from oomkit.estimate.llamacpp_params import LlamaCppOptions
    from oomkit.spec.hardware import Hardware

    policy = {
        "F16": ("F16", False),
        "Q8_0": ("Q8_0", False),
        "Q4_K_M_approx": ("Q4_K_M", False),
        "Q4_0_pure": ("Q4_0", True),
    }[rec["tensor_policy"]]
    catalog = {
        "llama-3.2-1b": "llama-3.2-1b",
        "qwen2.5-7b": "qwen2.5-7b",
        "mixtral-8x7b": "mixtral-8x7b",
    }[rec["spec_key"]]
    r2 = {
        "catalog_key": catalog,
        "ftype": policy[0],
        "pure": policy[1],
        "settings": rec["settings"],
    }
    spec, settings = record_inputs(r2)
    s = rec["settings"]
    est = estimate_llamacpp(
        spec,
        settings,
        Hardware(),
        options=LlamaCppOptions(repack=bool(s.get("use_extra_bufts"))),
        default_swa_full=True,
    )
    b = est.runtime_details["buffers"]
    assert isinstance(b, dict)
    m = rec["measured"]
    rid = rec["id"]
    rows = [
        Row(
            "oracle_dev",
            rid,
            "llama.cpp-cpu",
            "kv_buffer",
            sum(b["kv"].values()),
            m["kv_MiB"] * MiB,
        ),
        Row(
            "oracle_dev",
            rid,
            "llama.cpp-cpu",
            "compute_buffer",
            b["compute"]["CPU"],
            m["compute_exact_MiB"]["CPU"] * MiB,
        ),
        Row(
            "oracle_dev",
            rid,
            "llama.cpp-cpu",
            "output_buffer",
            b["output"]["CPU"],
            m["output_MiB"] * MiB,
        ),
    ]
    skips: list[str] = []
    if s.get("use_extra_bufts"):
        skips.append("model buffer: CPU-ISA-specific extra buffer (AMX) not modelled")
    else:
        rows.append(
            Row(
                "oracle_dev",
                rid,
                "llama.cpp-cpu",
                "model_buffer",
                b["model"]["CPU_Mapped"],
                m["model_MiB_total"] * MiB,
            )
        )
    return rows, skips


def score_oracle_results(rec: dict[str, Any]) -> tuple[list[Row], list[str]]:
    """This repository's oracle results (benchmarks/oracle/results.json), re-predicted now."""
    from run_oracle import predict

    if rec.get("rc") != 0:
        return [], [f"llama.cpp failed to load this case (rc={rec.get('rc')})"]
    pred = predict(rec)
    m = rec["measured_MiB"]
    rows = []
    for kind, comp in (
        ("model", "model_buffer"),
        ("kv", "kv_buffer"),
        ("rs", "rs_buffer"),
        ("compute", "compute_buffer"),
        ("output", "output_buffer"),
    ):
        got = sum(m.get(kind, {}).values())
        if got:
            rows.append(
                Row(
                    "oracle",
                    rec["id"],
                    "llama.cpp-cpu",
                    comp,
                    float(sum(pred.get(kind, {}).values())),
                    got * MiB,
                )
            )
    return rows, []


def score_vllm_records(rec: dict[str, Any]) -> tuple[list[Row], list[str]]:
    """vLLM records, scored by benchmarks/accuracy_vllm.py (the vLLM estimator's own scorer)."""
    import accuracy_vllm

    got, skip = accuracy_vllm.score_vllm(rec)
    rows = [
        Row(
            "measured_dev",
            r["id"],
            r.get("runtime", "vllm"),
            r["component"],
            float(r["predicted"]),
            float(r["measured"]),
            r.get("unit", "bytes"),
        )
        for r in got
    ]
    return rows, [skip] if skip else []


def score_torch(rec: dict[str, Any]) -> tuple[list[Row], list[str]]:
    """The torch records are Intel Gaudi (HPU) runs or training runs: say which, skip."""
    blob = json.dumps(rec).lower()
    if "gaudi" in blob or "hpu" in blob:
        return [], [
            "Intel Gaudi HPU run (optimum-habana, HPU graphs, reuse_cache): a different "
            "allocator and device; the transformers estimator models CUDA generate()"
        ]
    if "train" in blob or "finetune" in blob:
        return [], ["training run: the training estimator is not part of these issues"]
    return [], ["torch record without a CUDA generate() setup the transformers estimator takes"]


#: record kind -> scorer; None: no estimator yet (listed as skipped)
SCORERS: dict[str, Callable[[dict[str, Any]], tuple[list[Row], list[str]]] | None] = {
    "llama.cpp": score_llamacpp,
    "ollama": score_ollama,
    "vllm": score_vllm_records,
    "torch": score_torch,
}
SKIP_REASONS: dict[str, str] = {}


def _load_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def run(validation: Path, oracle: Path | None) -> tuple[list[Row], list[Skip]]:
    rows: list[Row] = []
    skips: list[Skip] = []
    jobs: list[tuple[str, str, dict[str, Any], Callable[..., Any] | None]] = [
        ("measured_dev", rec["kind"], rec, SCORERS.get(rec["kind"]))
        for rec in _load_jsonl(validation / "measured_dev.jsonl")
    ]
    jobs += [
        ("oracle_dev", "llama.cpp-oracle", rec, score_oracle_dev)
        for rec in _load_jsonl(validation / "llamacpp_cpu_oracle_dev.jsonl")
    ]
    if oracle is not None and oracle.exists():
        jobs += [
            ("oracle", "llama.cpp-oracle", rec, score_oracle_results)
            for rec in json.loads(oracle.read_text())["records"]
        ]
    for source, kind, rec, fn in jobs:
        if fn is None:
            skips.append(Skip(source, rec["id"], kind, SKIP_REASONS.get(kind, "no estimator")))
            continue
        try:
            got, notes = fn(rec)
        except Exception as exc:
            skips.append(Skip(source, rec["id"], kind, f"{type(exc).__name__}: {exc}"))
            continue
        rows += got
        skips += [Skip(source, rec["id"], kind, n) for n in notes]
    return rows, skips


def summarize(rows: Iterable[Row]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.runtime, r.component), []).append(r)
    out = []
    for (rt, comp), rs in sorted(groups.items()):
        errs = [r.error for r in rs]
        worst = max(rs, key=lambda r: abs(r.error))
        out.append(
            {
                "runtime": rt,
                "component": comp,
                "n": len(rs),
                "median_abs_error": statistics.median(abs(e) for e in errs),
                "median_signed_error": statistics.median(errs),
                "worst_error": worst.error,
                "worst_record": worst.record,
                "max_under": min(errs),
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the full result here")
    ap.add_argument("--validation", default=str(ROOT.parent / "shared" / "validation"))
    ap.add_argument("--oracle", default=str(HERE / "oracle" / "results.json"))
    ap.add_argument("--no-oracle", action="store_true")
    args = ap.parse_args(argv)
    rows, skips = run(Path(args.validation), None if args.no_oracle else Path(args.oracle))
    summary = summarize(rows)
    print(
        f"{'runtime':<16} {'component':<20} {'n':>4} {'median|err|':>11} {'median':>8} "
        f"{'worst':>8}  worst record"
    )
    for g in summary:
        print(
            f"{g['runtime']:<16} {g['component']:<20} {g['n']:>4} "
            f"{100 * g['median_abs_error']:>10.2f}% {100 * g['median_signed_error']:>+7.2f}% "
            f"{100 * g['worst_error']:>+7.2f}%  {g['worst_record']}"
        )
    print(f"\nskipped / partially scored: {len(skips)}")
    for sk in skips:
        print(f"  [{sk.source}] {sk.record}: {sk.reason}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "summary": summary,
                    "rows": [{**r.__dict__, "error": r.error} for r in rows],
                    "skipped": [sk.__dict__ for sk in skips],
                },
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
