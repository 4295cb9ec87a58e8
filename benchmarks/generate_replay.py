"""Trace a transformers ``generate()`` (prefill + decode steps) on fake tensors and replay it
through the caching-allocator model: the reserved peak and the smallest card a run survives,
next to the measured ones of ``benchmarks/gpu/results/verdict_boundary_*.json``.

    PYTHONPATH=src python benchmarks/generate_replay.py \
        benchmarks/gpu/results/verdict_boundary_holdout4_h100.json [--only olmo-2-7b] [--layers 8]

The loop is ``GenerationMixin._sample``'s (transformers 5.x, ``generation/utils.py``), greedy,
written out because ``generate()`` itself asks data-dependent questions a FakeTensor cannot
answer (``unfinished_sequences.max() == 0``): the prefill with ``logits_to_keep=1`` and a
``DynamicCache``, the last logits copied to fp32 (``outputs.logits[:, -1, :].to(copy=True,
dtype=torch.float32)``), the min-new-tokens processor's ``torch.where``, ``argmax``, the ids and
attention mask grown by ``torch.cat``, then one-token forwards on the cache. The weights are
allocated first in ``Module._apply`` order (``to_empty``: children before their parent's own
parameters), and a warm process's cuBLAS workspace (32 MiB inside a 128 MiB segment, as in
``allocator_traces_h200.json.gz``) sits in the allocator before the run.

``--layers N`` traces N decoder layers and reports both figures as measured for them; the
allocator's extra (reserved - allocated) is per layer, so it is scaled by layers/N.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "gpu"))

MiB = 1 << 20
GiB = 1 << 30
#: a warm process's cuBLAS workspace (allocator_traces_h200.json.gz ``initial_blocks``)
WARM_INITIAL = ((128 * MiB, 32 * MiB),)


def _apply_order(model: Any) -> list[Any]:
    """Parameters then buffers in ``Module._apply`` order (children first), each storage once."""
    out: list[Any] = []
    seen: set[int] = set()

    def visit(m: Any) -> None:
        for c in m.children():
            visit(c)
        for t in list(m.parameters(recurse=False)) + list(m.buffers(recurse=False)):
            if t is not None and id(t) not in seen:
                seen.add(id(t))
                out.append(t)

    visit(model)
    return out


def trace_generate(
    model_name: str,
    overrides: dict[str, Any],
    *,
    batch: int,
    prompt: int,
    new: int,
    attn: str,
) -> list[tuple[int, int]]:
    """The allocator events of one greedy generate() on fake tensors."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from transformers import DynamicCache

    from oomkit.inprocess import probe_model as pm
    from oomkit.inprocess.probe_tracker import MemoryTracker

    cfg = {**pm.load_config_dict(model_name), **overrides}
    fake = FakeTensorMode(allow_non_fake_inputs=False)
    with fake:
        model = pm.build_from_config(cfg, dtype=torch.bfloat16, attn_implementation=attn)
        model.eval()
        if getattr(model.config.get_text_config(), "tie_word_embeddings", False):
            out_emb, in_emb = model.get_output_embeddings(), model.get_input_embeddings()
            if out_emb is not None and in_emb is not None:
                out_emb.weight = in_emb.weight
        vocab = int(model.config.get_text_config().vocab_size)
    tracker = MemoryTracker(round_to_cuda_blocks=False)
    tracker.track_all(_apply_order(model), "parameters")
    with fake, tracker, torch.no_grad():
        ids = torch.randint(1, vocab, (batch, prompt), dtype=torch.long)
        mask = torch.ones_like(ids)
        cache = DynamicCache(config=model.config)
        pos = torch.arange(prompt)
        for step in range(new):
            inp = ids if step == 0 else ids[:, -1:]
            out = model(
                input_ids=inp,
                attention_mask=mask,
                past_key_values=cache,
                cache_position=pos,
                use_cache=True,
                logits_to_keep=1,
            )
            logits = out.logits[:, -1, :].to(copy=True, dtype=torch.float32)
            del out
            # MinNewTokensLengthLogitsProcessor: scores with EOS masked, a new [B, V] tensor
            scores = torch.where(torch.zeros_like(logits, dtype=torch.bool), -1e9, logits)
            nxt = torch.argmax(scores, dim=-1)
            del logits, scores
            ids = torch.cat([ids, nxt[:, None]], dim=-1)
            mask = torch.cat([mask, mask.new_ones((batch, 1))], dim=-1)
            pos = pos[-1:] + 1
        del cache, ids, mask
    return list(tracker.events)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--only", default="")
    ap.add_argument("--layers", type=int, default=0, help="trace N layers, scale the extra")
    ap.add_argument("--limit", action="store_true", help="also the smallest surviving limit")
    args = ap.parse_args()
    from oomkit.inprocess.probe_allocator import replay, smallest_limit
    from oomkit.inprocess.probe_model import load_config_dict

    rows = json.loads(Path(args.results).read_text())["results"]
    print(
        f"{'case':44} {'alloc GiB':>9} {'meas':>7} {'resv GiB':>9} {'meas':>7} {'err':>6}"
        + (f" {'need GiB':>9} {'meas':>7}" if args.limit else "")
    )
    for r in rows:
        if args.only and r["model"] not in args.only.split(","):
            continue
        ov = dict(r["overrides"])
        cfg = {**load_config_dict(r["model"]), **ov}
        key = "num_hidden_layers" if "num_hidden_layers" in cfg else "n_layer"  # GPT-2
        full = int(cfg[key])
        n = min(args.layers, full) if args.layers else full
        ov[key] = n
        ev = trace_generate(
            r["model"], ov, batch=r["batch"], prompt=r["prompt"], new=r["new"],
            attn=r["attn_implementation"],
        )  # fmt: skip
        p = replay(ev, initial_blocks=WARM_INITIAL)
        scale = full / n
        alloc = p.allocated_peak_bytes
        extra = (p.reserved_peak_bytes - alloc) * scale
        name = f"{r['model']} b{r['batch']} p{r['prompt']} n{r['new']} {r['attn_implementation']}"
        if n != full:
            name += f" ({n}/{full}L)"
        meas_a = r["full_card_max_allocated_bytes"]
        meas_r = r["full_card_max_reserved_bytes"]
        line = f"{name:44} {alloc / GiB:9.2f} {meas_a / GiB:7.2f}"
        if n == full:
            line += f" {p.reserved_peak_bytes / GiB:9.2f} {meas_r / GiB:7.2f}"
            line += f" {p.reserved_peak_bytes / meas_r - 1:+6.1%}"
        else:
            line += f" {'+' + format(extra / GiB, '.2f'):>9} {(meas_r - meas_a) / GiB:+7.2f}"
            line += f" {extra / (meas_r - meas_a) - 1:+6.1%}"
        if args.limit and n == full:
            need = smallest_limit(ev, step_bytes=32 * MiB, initial_blocks=WARM_INITIAL)
            # the measured card less the CUDA context oomkit charges on Hopper (700 MiB)
            line += f" {need / GiB:9.2f} {(r['smallest_survived_bytes'] - 700 * MiB) / GiB:7.2f}"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
