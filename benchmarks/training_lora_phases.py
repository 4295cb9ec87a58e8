"""LoRA / QLoRA training steps, measured on a GPU, against the training estimate, phase by phase.

    python benchmarks/training_lora_phases.py [--out benchmarks/training_lora_phases_results.txt]

Reads only committed measurements (no GPU needed):

* every LoRA/QLoRA step of ``benchmarks/gpu/results/training_h100.json`` (``validate_training.py``)
  and ``training_boundary_*h200*.json`` (``training_boundary.py``): its ``max_memory_allocated``
  of the steady-state step against today's ``estimate_training`` allocated peak and the estimate's
  breakdown (weights, gradients, optimizer states, activations of the peak phase, and the
  forward-end activations, the term the doctor's training sizing checks a completed forward
  against: ``oomkit.diagnose.training_observed``);
* the CUDA caching allocator's own history of the LoRA steps in ``training_traces_h200.json.gz``
  (``training_boundary.py --trace``), replayed to live bytes and cut into the second step's
  phases by its vocabulary-sized requests, so each activation term is compared on its own:
  ``resident`` (what is held when the second step starts: the frozen base, the adapters and
  AdamW's states. The trace's low point between the steps comes after the first step's
  backward, with the adapters' gradients alive and before ``optimizer.step()`` makes the
  states; the two are exact parameter arithmetic, the estimate's gradient and optimizer terms,
  which the H100 file measured for the same adapters: ``tests/test_training_lora_phases.py``),
  ``forward_end`` (the largest live total up to the ``log_softmax`` output), ``loss backward``
  (up to the bf16 gradient of the logits), ``layer walk`` (after that gradient is freed: the
  decoder layers' backward, with checkpointing each recomputed layer). The measured
  ``pre-loss`` stack (live bytes just before the logits) is shown in bytes per token x hidden,
  and the loss's forward in units of ``B·S·V`` (batch x sequence x vocabulary).

What autograd keeps for one layer of these steps, checked term by term in the module docstring
of ``oomkit.estimate.training_activations`` and in ``tests/test_training_lora_phases.py``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "gpu" / "results"
sys.path.insert(0, str(HERE / "gpu"))
sys.path.insert(0, str(HERE.parent / "src"))

GIB = float(1 << 30)

#: committed files with LoRA/QLoRA steps and the catalog GPU each was measured on
RESULT_FILES: tuple[tuple[str, str], ...] = (
    ("training_h100.json", "h100"),
    ("training_boundary_h200.json", "h200"),
    ("training_boundary_h200_expandable.json", "h200"),
    ("training_boundary_qlora_h200.json", "h200"),
    ("training_boundary_holdout_h200.json", "h200"),
    ("training_boundary_late_h200_expandable.json", "h200"),
)


def case_name(r: dict[str, Any]) -> str:
    layers = r["overrides"].get("num_hidden_layers")
    flags = ("+kbit" if r.get("kbit_prep") else "") + ("+all" if r.get("lora_targets") else "")
    return (
        f"{r['model']}{f' L{layers}' if layers else ''} {r['method']}{flags} "
        f"b{r['batch']} s{r['seq']}{' ckpt' if r['grad_checkpointing'] else ''}"
    )


def _estimate(r: dict[str, Any], gpu: str) -> Any:
    from training_boundary import _settings, _spec

    from oomkit.estimate.training import estimate_training
    from oomkit.hardware.catalog import find_gpu
    from oomkit.hardware.targets import hardware_for

    case = {**r, "expandable_segments": bool(r.get("expandable_segments"))}
    return (
        _spec(case),
        _settings(case),
        estimate_training(_spec(case), _settings(case), hardware_for((find_gpu(gpu),))),
    )


def peak_rows() -> list[dict[str, Any]]:
    """Every measured LoRA/QLoRA step: measured allocated peak and today's estimate of it."""
    rows = []
    for name, gpu in RESULT_FILES:
        path = RESULTS / name
        if not path.exists():
            continue
        for r in json.loads(path.read_text())["results"]:
            if r["method"] == "full":
                continue
            measured = (
                r.get("full_card_max_allocated_bytes")
                or r["measured"]["max_memory_allocated_bytes"]
            )
            _, _, est = _estimate(r, gpu)
            rd = est.runtime_details
            peak_phase = {"forward_end": "forward_end", "backward": "backward"}.get(
                rd["peak_phase"], rd["peak_phase"]
            )
            cats = rd["phase_categories"][peak_phase]
            rows.append(
                {
                    "file": name,
                    "case": case_name(r),
                    "ckpt": bool(r["grad_checkpointing"]),
                    "measured": int(measured),
                    "estimate": int(rd["peak_allocated_bytes"]),
                    "peak_phase": peak_phase,
                    "categories": {k: int(v) for k, v in cats.items()},
                    "overhead": int(est.devices[0].overhead_bytes),
                    "forward_activations": int(
                        rd["phase_categories"]["forward_end"].get("activations", 0)
                    ),
                }
            )
    return rows


def traced_cases() -> list[dict[str, Any]]:
    doc = json.loads(gzip.decompress((RESULTS / "training_traces_h200.json.gz").read_bytes()))
    cases: list[dict[str, Any]] = doc["cases"]
    return cases


def measured_phases(case: dict[str, Any], vocab: int) -> dict[str, int]:
    """Live allocated bytes at the second step's phases (see the module docstring).

    The events are the allocator's own (``alloc`` n > 0, ``free_completed`` of key -n-1); the
    live total starts from the blocks alive before recording (cuBLAS workspace). The loss's
    requests are recognised by size: a bf16 ``B·S·V`` block (the logits in the forward, their
    gradient in the backward) and fp32 ones (the ``logits.float()`` upcast, the ``log_softmax``
    output, then the two gradients)."""
    tokens = case["batch"] * case["seq"]

    def rounded(n: int) -> int:  # the allocator rounds requests to 512 bytes
        return -(-n // 512) * 512

    bf16, fp32 = rounded(2 * tokens * vocab), rounded(4 * tokens * vocab)
    live = sum(sum(seg[1:]) for seg in case["initial_segments"])
    sizes: list[int] = []
    key_at: dict[int, int] = {}  # event index -> allocation key
    curve: list[int] = []
    for i, n in enumerate(case["events"]):
        if n > 0:
            key_at[i] = len(sizes)
            sizes.append(n)
            live += n
        else:
            live -= sizes[-n - 1]
        curve.append(live)
    ev = case["events"]
    halves = [i for i, n in enumerate(ev) if n == bf16]
    fulls = [i for i, n in enumerate(ev) if n == fp32]
    # two steps: logits and their gradient in each
    _, grad1, logits2, grad2 = halves[-4:]
    start = min(range(grad1, logits2), key=lambda i: curve[i])
    softmax_out = [i for i in fulls if logits2 < i < grad2][1]
    freed = ev.index(-key_at[grad2] - 1)
    return {
        "resident": curve[start],
        "pre_loss": curve[logits2 - 1],
        "forward_end": max(curve[start : softmax_out + 1]),
        "loss_backward": max(curve[softmax_out : grad2 + 1]),
        "layer_walk": max(curve[freed:]),
        "bsv": tokens * vocab,
    }


def estimated_phases(case: dict[str, Any]) -> dict[str, int]:
    """The estimate's activation bytes at the same points (its layer walk without gradients,
    which are a few MiB for LoRA)."""
    from oomkit.estimate.training import _kept
    from oomkit.estimate.training_activations import layer_activations
    from oomkit.estimate.training_states import lora_adapted_roles

    spec, st, est = _estimate(case, "h200")
    cats = est.runtime_details["phase_categories"]
    optimizer = int(cats["forward_end"].get("optimizer", 0))
    gradients = int(cats["optimizer_step"].get("gradients", 0))
    acts = layer_activations(spec, st, trainable_roles=lora_adapted_roles(spec, st.lora_targets))
    mode = st.grad_checkpointing
    kept = [_kept(a, mode) for a in acts]
    remaining, walk = sum(kept), 0
    for j in range(len(acts) - 1, -1, -1):
        recompute = acts[j].saved_bytes if mode == "full" else 0
        walk = max(walk, remaining + recompute + acts[j].backward_working_bytes)
        remaining -= kept[j]
    return {
        "kept": sum(kept),
        "optimizer": optimizer,
        "gradients": gradients,
        "forward_end": int(cats["forward_end"].get("activations", 0)),
        "loss_backward": int(cats["backward"].get("activations", 0)),
        "layer_walk": walk,
        "tokens_x_hidden": st.micro_batch * st.seq * spec.hidden_size,
        "layers": spec.num_hidden_layers,
        "vocab": spec.vocab_size,
    }


def trace_rows() -> list[dict[str, Any]]:
    rows = []
    for case in traced_cases():
        if case["method"] == "full":
            continue
        est = estimated_phases(case)
        m = measured_phases(case, est["vocab"])
        # the low point held the first step's gradients, not yet AdamW's states (see above)
        m["resident"] += est["optimizer"] - est["gradients"]
        rows.append({"case": case_name(case), "measured": m, "estimated": est})
    return rows


def _pct(est: float, meas: float) -> str:
    return f"{100 * (est / meas - 1):+6.1f}%"


def render() -> str:
    out = [
        "Every measured LoRA/QLoRA step: max_memory_allocated of the steady-state step against",
        "today's estimate_training allocated peak; the estimate's breakdown at its peak phase",
        "(GiB); fwd act = the estimate's forward-end activations.",
        "",
        f"{'file':28s} {'step':46s} {'measured':>8s} {'oomkit':>7s} {'error':>7s}  "
        f"{'weights':>7s} {'grads':>6s} {'optim':>6s} {'acts':>6s} {'ovhd':>5s} {'fwd act':>7s}",
    ]
    for r in peak_rows():
        c = r["categories"]
        out.append(
            f"{r['file'][:28]:28s} {r['case']:46s} {r['measured'] / GIB:8.2f} "
            f"{r['estimate'] / GIB:7.2f} {_pct(r['estimate'], r['measured'])}  "
            f"{c.get('weights', 0) / GIB:7.2f} {c.get('gradients', 0) / GIB:6.2f} "
            f"{c.get('optimizer', 0) / GIB:6.2f} {c.get('activations', 0) / GIB:6.2f} "
            f"{r['overhead'] / GIB:5.2f} {r['forward_activations'] / GIB:7.2f}"
        )
    out += [
        "",
        "The allocator traces (training_traces_h200.json.gz), second step: activation bytes above",
        "the resident low point, measured against the estimate (GiB), and the pre-loss stack in",
        "bytes per token x hidden, measured (estimated: with checkpointing 2 x layers, the bf16",
        "layer inputs), and the loss's forward in B·S·V.",
        "",
        f"{'step':40s} {'fwd end meas/est':>18s} {'loss bwd meas/est':>19s} "
        f"{'layer walk meas/est':>21s} {'pre-loss B/th':>14s} {'loss fwd':>9s}",
    ]
    for r in trace_rows():
        m, e = r["measured"], r["estimated"]
        base = m["resident"]
        cols = [
            f"{(m[k] - base) / GIB:5.2f}/{e[k] / GIB:5.2f} {_pct(e[k], m[k] - base)}"
            for k in ("forward_end", "loss_backward", "layer_walk")
        ]
        stack = (m["pre_loss"] - base) / e["tokens_x_hidden"]
        loss = (m["forward_end"] - m["pre_loss"]) / m["bsv"]
        out.append(
            f"{r['case']:40s} {cols[0]:>18s} {cols[1]:>19s} {cols[2]:>21s} "
            f"{stack:6.1f} ({e['kept'] / e['tokens_x_hidden']:5.1f}) {loss:9.3f}"
        )
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="also write the tables to this file")
    args = ap.parse_args()
    text = render()
    sys.stdout.write(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
