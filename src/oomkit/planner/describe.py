"""A candidate of the planner's search in the user's terms: what a plan changes
(:func:`describe`) and what a rejected candidate was (:func:`reject_text`)."""

from __future__ import annotations

from oomkit.planner.knobs import CHECKPOINT, FA_F16, LEVEL_EXPERTS_CPU, LEVEL_LAYERS_CPU
from oomkit.planner.lmstudio import command_target
from oomkit.planner.search import SEQS_LEVER, Evaluation, Searcher
from oomkit.planner.sglang_fraction import raised_fraction_note
from oomkit.planner.vllm_util import lowered_util_note, raised_util_note
from oomkit.units import format_bytes

__all__ = ["describe", "reject_text"]


def describe(ev: Evaluation, searcher: Searcher) -> tuple[str, ...]:
    """What a candidate changes, in the user's terms."""
    cand = ev.cand
    req = searcher.request
    out: list[str] = []
    if req.quant is None or cand.quant.lower() != req.quant.lower():
        asked = f" (asked {req.quant})" if req.quant else ""
        prequant = cand.quant in ("awq", "gptq")
        kind = f" (needs a pre-quantized {cand.quant.upper()} checkpoint)" if prequant else ""
        as_is = cand.quant == CHECKPOINT and searcher.spec.source == "gguf"
        out.append(
            "weights as in the .gguf file" if as_is else f"weights {cand.quant}{asked}{kind}"
        )
    if cand.kv == FA_F16:
        out.append("flash attention on (-fa)")
    elif cand.kv not in ("f16", "auto"):
        out.append(f"KV cache {cand.kv}")
        if FA_F16 in searcher.kvs:  # the run has it off; a quantized V cache needs it
            out.append("flash attention on (-fa; a quantized V cache needs it)")
    if cand.ctx < searcher.target_ctx:
        whose = "asked" if req.ctx is not None else "default"
        if req.ctx_from_max:  # --ctx max: the largest this plan's settings fit
            whose = "the largest that fits; asked max, the model's"
        out.append(f"context {cand.ctx} ({whose} {searcher.target_ctx})")
    else:
        out.append(f"context {cand.ctx}")
    if searcher.runtime == "transformers":  # the prompt, then generate()'s new tokens
        new = ev.estimate.settings.get("max_new_tokens", 256)
        out[-1] += f" + {new} new tokens (prompt + max_new_tokens)"
        if cand.attn:
            was = searcher.base.attn_implementation
            out.append(f"attn_implementation='{cand.attn}' (asked {was}: no fp32 S x S scores)")
        if cand.device_map == "none":  # bitsandbytes refuses .to(): device_map={"": 0}
            whole = "device_map={'': 0}" if cand.quant in ("int8", "nf4", "fp4") else None
            out.append(
                f"{whole or 'no device_map, then model.to(cuda)'}: every weight on the GPU "
                "(device_map='auto' keeps 10% of it and its largest layer back, and would put "
                "weights on the CPU)"
            )
    if searcher.runtime == "llama.cpp" and req.parallel and req.parallel > 1:
        if searcher.base.kv_unified:
            out[-1] += f" per sequence, {req.parallel} slots sharing one unified KV cache"
        else:
            out[-1] += f" per sequence x {req.parallel} slots (-c {cand.ctx * req.parallel})"
    n_all = searcher.n_layer + 1
    if cand.level == LEVEL_EXPERTS_CPU:
        target = command_target(req.runtime, searcher.runtime)
        flag = f"--moecpu {cand.n_cpu_moe}" if target == "koboldcpp" else None
        if flag is None:
            from oomkit.planner.commands_llamacpp import n_cpu_moe_spelled

            # a build before PR #15077 is given the -ot rules (llamacpp_cpu_moe_flags)
            spelled = target != "llama.cpp" or n_cpu_moe_spelled(searcher.base.runtime_version)
            flag = f"--n-cpu-moe {cand.n_cpu_moe}" if spelled else "-ot rules"
        out.append(
            f"experts of the first {cand.n_cpu_moe}/{searcher.n_layer} layers on CPU ({flag})"
        )
    elif cand.level == LEVEL_LAYERS_CPU and cand.n_gpu_layers is not None:
        out.append(f"{cand.n_gpu_layers}/{n_all} layers on GPU")
    if cand.tp:
        out.append(f"tensor parallel {cand.tp}")
    if cand.max_num_seqs is not None and searcher.runtime == "transformers":
        out.append(
            f"batch {cand.max_num_seqs} (--batch {cand.max_num_seqs}; asked {req.parallel}: "
            "the prompts go in more generate() calls)"
        )
    elif cand.max_num_seqs is not None:
        flag = SEQS_LEVER[searcher.runtime][1]
        default = searcher.seqs_default.get(cand.quant)
        was = (
            f"; {'asked' if searcher.base.max_num_seqs else 'default'} {default}" if default else ""
        )
        out.append(
            f"at most {cand.max_num_seqs} concurrent sequences ({flag} {cand.max_num_seqs}{was})"
        )
    raised = raised_util_note(ev.estimate) if searcher.base.gpu_memory_utilization is None else None
    if raised is not None and searcher.runtime == "vllm":
        out.append(raised)
    frac_note = raised_fraction_note(ev.estimate) if searcher.runtime == "sglang" else None
    if frac_note is not None and searcher.base.mem_fraction_static is None:
        out.append(frac_note)
    lowered = (
        lowered_util_note(ev.estimate) if searcher.base.gpu_memory_utilization is None else None
    )
    if lowered is not None and searcher.runtime == "vllm":
        out.append(lowered)
    host_weights = ev.estimate.host.weights_bytes
    if searcher.runtime == "transformers" and host_weights:
        out.append(
            f"{format_bytes(host_weights)} of weights on CPU (device_map='auto', slow): "
            "accelerate moves them to the GPU layer by layer at every forward, over PCIe"
        )
    return tuple(out)


def reject_text(ev: Evaluation, s: Searcher) -> str:
    """A candidate that does not fit, in one line: quant, context, KV cache, where the
    weights sit and the levers it set."""
    bits = [ev.cand.quant, f"ctx {ev.cand.ctx}", f"KV {ev.cand.kv}", _placement(ev, s)]
    if ev.cand.attn is not None:
        bits.append(f'attn_implementation="{ev.cand.attn}"')
    if ev.cand.max_num_seqs is not None:
        bits.append(f"{SEQS_LEVER[s.runtime][1]} {ev.cand.max_num_seqs}")
    return ", ".join(bits)


def _placement(ev: Evaluation, s: Searcher) -> str:
    """Where the weights of a rejected candidate sit: all on the GPU(s), or, for a
    transformers run left on ``device_map="auto"``, the part accelerate put on the CPU."""
    if s.runtime != "transformers":
        n = ev.cand.n_gpu_layers  # -ngl N's fixed split, or all
        return "all layers on GPU" if n is None else f"{n}/{s.n_layer + 1} layers on GPU"
    if ev.cand.device_map == "none":
        return 'all layers on GPU (device_map=None + .to("cuda"))'
    on_cpu = ev.estimate.host.weights_bytes
    auto = (s.base.device_map if s.base is not None else None) == "auto"
    if on_cpu > 0:
        where = 'device_map="auto"' if auto else "device_map"
        return f"{format_bytes(on_cpu)} of weights on CPU ({where})"
    return 'all layers on GPU (device_map="auto")' if auto else "all layers on GPU"
