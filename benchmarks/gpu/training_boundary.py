"""GPU check of the training verdict: the smallest card each training step survives on, measured.

The inference twin (``verdict_boundary.py``) showed that a run dies at its caching allocator's
*reserved* peak plus the CUDA context, not at ``max_memory_allocated``. Training steps hold
more short-lived tensors of many sizes (activations freed in backward, gradients, AdamW's
``foreach`` temporaries), so the gap between allocated and what the card must hold is larger:
the H100 training runs (``validate_training.py``) reserved 4-25% beyond allocated. This script
measures where each training step really dies, the same way: one raw ``cudaMalloc`` outside
PyTorch's allocator (the ballast) makes the process see a card of total ``X`` with its CUDA
context inside it; the model is created (``to_empty``, then LoRA adapters on the GPU where the
case is LoRA), and two training steps run (bf16 autocast over fp32 parameters for full
fine-tuning, or a frozen bf16 base with fp32 LoRA adapters; the model's own loss from
``labels``; ``backward``; ``AdamW(foreach=True).step()``; ``zero_grad(set_to_none=True)``), the
first creating AdamW's states and the second the steady state. A ``torch.OutOfMemoryError``
in either step is a death. A binary search over ``X`` (32 MiB steps) finds the boundary.

    python benchmarks/gpu/training_boundary.py --out benchmarks/gpu/results/training_boundary.json

oomkit's side (its device total and the smallest ``--vram`` it calls "fits" and not "does not
fit" for the same settings) is stored per case as ``oomkit_at_run`` and recomputed from today's
code by ``--score FILE`` and ``tests/test_gpu_training_boundary.py``. Exits 0 with a message
where CUDA, torch or transformers is missing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "src"))

MiB = 1 << 20

#: (catalog model, config overrides, method, micro-batch, seq, gradient checkpointing); the
#: first seven repeat the H100 validation cases (``validate_training.py``) or are their
#: full-depth version, so the allocated peaks can be compared across the two cards
CASES: tuple[tuple[str, dict[str, Any], str, int, int, bool], ...] = (
    ("llama-3.1-8b", {}, "lora", 1, 2048, True),
    ("llama-3.2-1b", {}, "full", 1, 2048, False),
    ("llama-3.2-1b", {}, "lora", 4, 2048, False),
    ("qwen2.5-0.5b", {}, "full", 2, 2048, True),
    ("llama-3.1-8b", {"num_hidden_layers": 8}, "lora", 2, 4096, True),
    ("qwen2.5-0.5b", {}, "full", 1, 1024, False),
    ("qwen3-30b-a3b", {"num_hidden_layers": 4}, "lora", 1, 2048, True),
    ("gemma-2-2b", {}, "full", 1, 2048, False),
    # the H100 validation's two other MoE steps (their reserved peaks there included the
    # segments cached while the model was initialised on the card)
    ("deepseek-v2-lite", {"num_hidden_layers": 3}, "lora", 1, 2048, False),
    ("mixtral-8x7b", {"num_hidden_layers": 2}, "lora", 1, 2048, False),
    # QLoRA (session 9): the base's nn.Linear layers become real bitsandbytes ``Linear4bit``
    # (NF4, double quant, bf16 compute), the adapters come from real PEFT when it imports;
    # "+kbit": PEFT's ``prepare_model_for_kbit_training`` (every fp16/bf16 parameter that is
    # not 4-bit, i.e. embeddings, norms and the output head, upcast to fp32); "+all": LoRA
    # on every linear ("all-linear", the QLoRA paper's recipe) instead of PEFT's default
    ("llama-3.1-8b", {}, "qlora", 1, 2048, True),
    ("llama-3.1-8b", {}, "qlora+kbit", 1, 2048, True),
    ("llama-3.2-1b", {}, "qlora", 4, 2048, False),
    ("qwen2.5-7b", {}, "qlora+all", 2, 2048, True),
    ("qwen3-30b-a3b", {"num_hidden_layers": 4}, "qlora", 1, 2048, True),
    ("mistral-7b-v0.3", {}, "qlora+kbit+all", 4, 2048, True),
    # out-of-sample check (session 9, after the band was derived from the rows above): steps no
    # band figure was fitted on, written to their own file that training_band.py never reads
    ("gemma-2-9b", {}, "qlora+kbit", 1, 4096, True),
    ("llama-3.1-8b", {}, "qlora+all", 4, 1024, False),
    ("qwen2.5-3b", {}, "lora", 8, 512, False),
    ("phi-3-mini-4k", {}, "lora", 2, 2048, True),
    ("qwen2.5-1.5b", {}, "full", 2, 1024, True),
    ("qwen3-8b", {}, "qlora+kbit+all", 2, 2048, True),
    # second out-of-sample set (session 17, chosen before any was run or estimated; an H100,
    # no bitsandbytes carried, so LoRA and full only): Qwen3's QK norms with checkpointing,
    # OLMo 2 and Mistral without it, Gemma 3's 262k vocabulary in full fine-tuning,
    # SmolLM2's full MHA, Granite
    ("qwen3-4b", {}, "lora", 4, 2048, True),
    ("olmo-2-7b", {}, "lora", 2, 2048, False),
    ("gemma-3-1b", {}, "full", 2, 2048, False),
    ("mistral-7b-v0.3", {}, "lora", 1, 4096, False),
    ("smollm2-1.7b", {}, "full", 4, 1024, True),
    ("granite-3.3-8b", {}, "lora", 2, 2048, True),
    # third out-of-sample set (session 17, chosen before the second set's misses were modelled
    # and before any of these was run or estimated): Falcon's multi-query attention, OLMo 2
    # 13B without checkpointing, Phi-2 full
    ("falcon-7b", {}, "lora", 2, 2048, False),
    ("olmo-2-13b", {}, "lora", 1, 2048, False),
    ("phi-2", {}, "full", 2, 1024, False),
)
#: the first index of the out-of-sample cases (``--only 16,...``; their own results file)
HOLDOUT_FROM = 16
#: the second out-of-sample set (session 17; ``--only 22,...``; its own results file)
HOLDOUT2_FROM = 22
#: the third (session 17; ``--only 28,29,30``; its own results file)
HOLDOUT3_FROM = 28


def _case(index: int) -> dict[str, Any]:
    model, overrides, spelled, batch, seq, ckpt = CASES[index]
    method, *flags = spelled.split("+")
    return {
        "model": model,
        "overrides": overrides,
        "catalog_dropout_keys": True,  # the catalog's config carries the dropout keys
        "method": method,
        **({"kbit_prep": True} if "kbit" in flags else {}),
        **({"lora_targets": ["all-linear"]} if "all" in flags else {}),
        "batch": batch,
        "seq": seq,
        "grad_checkpointing": ckpt,
        # the allocator's mode of this process (oomkit's side models it too)
        "expandable_segments": "expandable_segments:True"
        in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
    }


def run_config(case: dict[str, Any]) -> dict[str, Any]:
    """The ``config.json`` a run built its model from: the catalog's, with the case's overrides.

    The catalog copies the dropout keys since session 18 (``catalog_dropout_keys`` in the
    record); a run recorded before built its model from a config without them, so transformers'
    configuration defaults applied (PhiConfig ``resid_pdrop`` 0.0, BertConfig 0.1): those keys
    are left out again to rebuild what ran.
    """
    from oomkit.inprocess.probe_model import load_config_dict
    from oomkit.loaders.hf_config_dropout import DROPOUT_KEYS

    cfg = {**load_config_dict(case["model"]), **case["overrides"]}
    if not case.get("catalog_dropout_keys"):
        cfg = {k: v for k, v in cfg.items() if k not in DROPOUT_KEYS or k in case["overrides"]}
    return cfg


def _spec(case: dict[str, Any]) -> Any:
    from oomkit.loaders.hf_config import parse_config

    return parse_config(run_config(case), name=case["model"])


def _settings(case: dict[str, Any]) -> Any:
    from oomkit.spec.settings import TrainingSettings

    return TrainingSettings(
        method=case["method"],
        micro_batch=case["batch"],
        seq=case["seq"],
        grad_checkpointing="full" if case["grad_checkpointing"] else "none",
        expandable_segments=bool(case.get("expandable_segments")),
        kbit_prep=bool(case.get("kbit_prep")),
        lora_targets=tuple(case["lora_targets"]) if case.get("lora_targets") else None,
    )


def oomkit_side(case: dict[str, Any], gpu_name: str | None = None) -> dict[str, Any]:
    """oomkit's training estimate for the case on the catalog GPU ``gpu_name`` (default: the
    case's ``gpu_catalog``, which the H200 runs of sessions 7-9 lack: the H200), headless
    Linux: its device total and the smallest card (1 MiB steps) it calls not "does not fit"
    and "fits"."""
    gpu_name = gpu_name or case.get("gpu_catalog", "h200")
    from verdict_boundary import smallest_card

    from oomkit.estimate.training import estimate_training
    from oomkit.estimate.verdict import Platform, verdict
    from oomkit.hardware.catalog import find_gpu
    from oomkit.hardware.targets import hardware_for

    spec, st, gpu = _spec(case), _settings(case), find_gpu(gpu_name)
    plat = Platform(os="linux", display=False)

    def level(x: int) -> str:
        return verdict(estimate_training(spec, st, hardware_for((gpu,), vram_bytes=x)), plat).level

    est = estimate_training(spec, st, hardware_for((gpu,)))
    dev = est.devices[0]
    hi = 4 * dev.total_bytes + 8 * (1 << 30)
    return {
        "device_total_bytes": dev.total_bytes,
        "overhead_bytes": dev.overhead_bytes,
        "peak_allocated_bytes": int(est.runtime_details.get("peak_allocated_bytes", 0)),
        "smallest_not_dnf_bytes": smallest_card(lambda x: level(x) != "does_not_fit", MiB, hi),
        "smallest_fits_bytes": smallest_card(lambda x: level(x) == "fits", MiB, hi),
    }


def _build_qlora(cfg: dict[str, Any], case: dict[str, Any], device: str) -> Any:
    """The model as ``from_pretrained(quantization_config=BitsAndBytesConfig(load_in_4bit=True,
    bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=bf16),
    torch_dtype=bf16)`` leaves it, then LoRA: every ``nn.Linear`` but the output head is a real
    bitsandbytes ``Linear4bit`` quantized on ``device`` (transformers' ``replace_with_bnb_linear``
    converts ``type(m) is nn.Linear`` only: fused MoE experts stay bf16), everything else bf16;
    ``kbit_prep`` runs PEFT's ``prepare_model_for_kbit_training`` (fp32 upcast of every
    non-4-bit fp16/bf16 parameter); the adapters (rank 16, alpha 32, fp32) come from PEFT's
    ``get_peft_model`` when PEFT imports (its 4-bit LoRA layer clones the base output), else
    from oomkit's ``apply_lora``. Weight values are random: memory does not depend on them."""
    import bitsandbytes as bnb
    import torch
    from torch import nn
    from verdict_boundary import _retie

    from oomkit.inprocess import probe_model as pm

    bf16 = torch.bfloat16
    with torch.device("meta"):
        m = pm.build_from_config(cfg, dtype=bf16)
    get_head = getattr(m, "get_output_embeddings", None)
    head = get_head() if callable(get_head) else None
    linears = [
        (name, mod)
        for name, mod in m.named_modules()
        if name and type(mod) is nn.Linear and mod is not head
    ]
    for name, _ in linears:  # out of the way while the rest is materialised
        parent, _, attr = name.rpartition(".")
        setattr(m.get_submodule(parent) if parent else m, attr, nn.Identity())
    m.to_empty(device=device)
    _retie(m)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0.0, 0.02)
    sources: dict[tuple[int, int], Any] = {}
    for name, mod in linears:
        shape = (mod.out_features, mod.in_features)
        if shape not in sources:  # one bf16 source per shape, quantized into each layer
            sources[shape] = torch.randn(shape, dtype=bf16, device=device) * 0.02
        lin = bnb.nn.Linear4bit(
            mod.in_features, mod.out_features, bias=mod.bias is not None, compute_dtype=bf16,
            compress_statistics=True, quant_type="nf4", device="meta",
        )  # fmt: skip
        lin.weight = bnb.nn.Params4bit(
            sources[shape].clone(), requires_grad=False, compress_statistics=True,
            quant_type="nf4", module=lin,
        ).to(device)  # fmt: skip
        if mod.bias is not None:
            lin.bias = nn.Parameter(torch.zeros(mod.out_features, dtype=bf16, device=device))
        parent, _, attr = name.rpartition(".")
        setattr(m.get_submodule(parent) if parent else m, attr, lin)
    del sources
    # transformers' bnb quantizer marks the model (``_process_model_after_weight_loading``);
    # PEFT dispatches its 4-bit LoRA layer (lora/bnb.py, which clones the base output) on it
    m.is_loaded_in_4bit = True
    targets = tuple(case.get("lora_targets") or ()) or pm.lora_target_names(
        str(cfg.get("model_type", "")), None
    )
    try:
        import peft
    except ImportError:
        peft = None
    if peft is not None:
        if case.get("kbit_prep"):
            m = peft.prepare_model_for_kbit_training(m, use_gradient_checkpointing=False)
        conf = peft.LoraConfig(
            r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM",
            target_modules="all-linear" if "all-linear" in targets else list(targets),
        )  # fmt: skip
        m = peft.get_peft_model(m, conf)  # autocast_adapter_dtype: fp32 adapters
        case["lora_impl"] = f"peft {peft.__version__}, bitsandbytes {bnb.__version__}"
    else:
        for p in m.parameters():
            p.requires_grad_(False)
            if case.get("kbit_prep") and p.dtype == bf16 and type(p).__name__ != "Params4bit":
                p.data = p.data.float()
        with torch.device(device):
            pm.apply_lora(m, targets, rank=16, alpha=32.0, adapter_dtype=torch.float32)
        case["lora_impl"] = f"oomkit apply_lora, bitsandbytes {bnb.__version__}"
    return m


def _train(case: dict[str, Any], device: str = "cuda") -> str | None:
    """Create the model on ``device`` and run two training steps; None when both survive, else
    the error's first 600 characters (``device="cpu"`` is the smoke mode the tests run)."""
    import torch
    from verdict_boundary import _retie

    from oomkit.inprocess import probe_model as pm

    m = opt = ids = None
    try:
        cfg = {**pm.load_config_dict(case["model"]), **case["overrides"]}
        full = case["method"] == "full"
        if case["method"] == "qlora":
            m = _build_qlora(cfg, case, device)
        else:
            with torch.device("meta"):
                m = pm.build_from_config(cfg, dtype=torch.float32 if full else torch.bfloat16)
            m.to_empty(device=device)
            _retie(m)
            with torch.no_grad():  # in place, no temporaries: values do not matter to memory,
                for p in m.parameters():  # but MoE routing and NaN-free losses want sane ones
                    p.normal_(0.0, 0.02)
        if case["method"] == "lora":
            targets = pm.lora_target_names(str(cfg.get("model_type", "")), None)
            with torch.device(device):
                pm.apply_lora(m, targets, rank=16, alpha=32.0, adapter_dtype=torch.float32)
        m.train()
        if case["grad_checkpointing"]:
            m.activation_checkpointing_enable(
                activation_checkpointing_kwargs={"use_reentrant": False}
            )
        trainable = [p for p in m.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
        # ids from 1: no pad id in the batch
        ids = torch.randint(1, int(cfg["vocab_size"]), (case["batch"], case["seq"]), device=device)
        for _ in range(2):
            with torch.autocast(device_type=device, dtype=torch.bfloat16):
                loss = m(input_ids=ids, labels=ids, use_cache=False).loss
            loss.backward()
            del loss
            opt.step()
            opt.zero_grad(set_to_none=True)
        if device == "cuda":
            torch.cuda.synchronize()
        return None
    except torch.OutOfMemoryError as e:
        return str(e)[:600]
    except RuntimeError as e:  # cuBLAS workspace failures surface as RuntimeError
        text = str(e)
        if "ALLOC_FAILED" in text or "out of memory" in text.lower():
            return text[:600]
        raise
    finally:
        del m, opt, ids
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()


def measure(out: str, only: list[int] | None, budget_s: float) -> int:
    from verdict_boundary import measure as measure_cases

    return measure_cases(
        out, only, n_cases=len(CASES), case_of=_case, run=_train, side_of=oomkit_side,
        budget_s=budget_s,
    )  # fmt: skip


def compact_trace(snap: dict[str, Any]) -> tuple[list[int], list[list[int]]]:
    """The allocator history of ``torch.cuda.memory._snapshot()`` as replay events (n > 0
    allocates a block of n bytes, the k-th allocation gets key k; n < 0 frees key -n-1 at
    ``free_completed``) and the segments alive before it: ``[segment_bytes, block_bytes...]``
    per segment, each block allocated before recording started (cuBLAS workspace)."""
    keys: dict[int, int] = {}
    events: list[int] = []
    seen: set[int] = set()
    made = 0
    for e in snap["device_traces"][0]:
        if e["action"] == "alloc":
            keys[e["addr"]] = made
            made += 1
            seen.add(e["addr"])
            events.append(int(e["size"]))
        elif e["action"] == "free_completed":
            k = keys.pop(e["addr"], None)
            if k is not None:
                events.append(-k - 1)
    initial = [
        [int(seg["total_size"])]
        + [int(b["size"]) for b in seg["blocks"] if b["state"] == "active_allocated"]
        for seg in snap["segments"]
        if any(b["state"] == "active_allocated" and b["address"] not in seen for b in seg["blocks"])
    ]
    return events, initial


def trace(out: str, only: list[int] | None) -> int:
    """Per case, one full-card step pair with the allocator's history recorded (no stacks),
    written compactly to ``out`` (gzip JSON) for :func:`oomkit.inprocess.probe_allocator.replay`,
    then the case's boundary measured in the same process right after (``boundary_run``), so
    trace and boundary start from the same allocator state."""
    import gzip

    from _suite import environment, gpu_modules
    from verdict_boundary import _Ballast, boundary

    mods = gpu_modules()
    if mods is None:
        return 0
    torch, transformers = mods
    total = torch.cuda.get_device_properties(0).total_memory
    ballast = _Ballast()
    cases = []
    for i in range(len(CASES)) if only is None else only:
        case = _case(i)
        _train(case)  # warm, as before every boundary trial
        torch.cuda.memory._record_memory_history(
            enabled="all", context=None, stacks="python", max_entries=4_000_000
        )
        torch.cuda.reset_peak_memory_stats()
        err = _train(case)
        # the segments alive at the start are still there after the run's empty_cache
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        events, initial = compact_trace(snap)
        case.update(
            error=err,
            max_memory_allocated_bytes=torch.cuda.max_memory_allocated(),
            max_memory_reserved_bytes=torch.cuda.max_memory_reserved(),
            segments_allocated=sum(
                1 for e in snap["device_traces"][0] if e["action"] == "segment_alloc"
            ),
            trace_entries=len(snap["device_traces"][0]),
            initial_segments=initial,
            events=events,
        )
        if err is None:
            b = boundary(
                dict(case), total, ballast, oomkit_side(case)["device_total_bytes"], _train
            )
            b.pop("trials", None)
            case["boundary_run"] = b
        cases.append(case)
        print(json.dumps({k: v for k, v in case.items() if k != "events"}), flush=True)
    doc = {"environment": environment(torch, transformers), "cases": cases}
    with gzip.open(out, "wt") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"wrote {out}")
    return 0


def _name(r: dict[str, Any]) -> str:
    layers = r["overrides"].get("num_hidden_layers")
    depth = f" L{layers}" if layers else ""
    ck = " ckpt" if r["grad_checkpointing"] else ""
    kbit = " kbit" if r.get("kbit_prep") else ""
    targets = " all-linear" if r.get("lora_targets") else ""
    return f"{r['model']}{depth} {r['method']}{kbit}{targets} b{r['batch']} s{r['seq']}{ck}"


def score(path: str) -> int:
    from verdict_boundary import score as score_cases

    return score_cases(path, side_of=oomkit_side, name_of=_name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="training_boundary.json")
    ap.add_argument("--score", metavar="FILE", help="print oomkit's side against a results file")
    ap.add_argument("--only", help="comma-separated case indices (default: all)")
    ap.add_argument("--budget-s", type=float, default=1e9, help="start no case after this")
    ap.add_argument("--trace", metavar="OUT", help="record allocator traces (gzip JSON) instead")
    args = ap.parse_args()
    if args.score:
        return score(args.score)
    only = [int(x) for x in args.only.split(",")] if args.only else None
    if args.trace:
        return trace(args.trace, only)
    return measure(args.out, only, args.budget_s)


if __name__ == "__main__":
    sys.exit(main())
