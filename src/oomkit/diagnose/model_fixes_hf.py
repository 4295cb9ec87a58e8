"""Model-aware fixes for runtimes that load Hugging Face checkpoints: vLLM and transformers.

vLLM fills ``gpu_memory_utilization x total`` with KV blocks after the weights, the profile
run's activation peak and non-torch memory (:func:`oomkit.estimate.vllm.plan_vllm`), so every
fix is measured as the change of the *KV slack*: the KV pool minus the KV one ``max_model_len``
request needs (``check_enough_kv_cache_memory``). When the log gives no GPU total, the capacity
is inferred from the KV pool vLLM reported, so the estimate's pool equals the logged one.

transformers (model given explicitly): the saving is the estimate difference on the failing
device for bf16 weights, bitsandbytes 8-/4-bit, a smaller batch and SDPA attention.
"""

from __future__ import annotations

import dataclasses
from math import ceil
from typing import TYPE_CHECKING

from oomkit.diagnose.fixes import Fix, size_text
from oomkit.diagnose.model_fixes import (
    HEADROOM_BYTES,
    Case,
    EstimatedFix,
    estimate_case,
    largest,
    make_fix,
    try_estimate,
)
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings

if TYPE_CHECKING:
    from collections.abc import Callable

    from oomkit.diagnose.events import LogContext, OomEvent
    from oomkit.estimate.breakdown import Estimate
    from oomkit.estimate.vllm import VllmPlan
    from oomkit.spec.model import ModelSpec

__all__ = ["transformers_fixes", "vllm_fixes"]

_MAX_UTIL = 0.98
#: the shortest --max-model-len a shorter-context fix proposes when the pool must be searched
_MIN_LEN = 256
_SUP_LEN = ("Serve a shorter context",)
_SUP_FP8 = ("Store the KV cache in fp8",)
_SUP_UTIL = ("Raise --gpu-memory-utilization", "Grow the KV pool")
_SUP_TP = ("Shard the model",)
_SUP_BATCHED = ("Shrink the profiling batch",)
_SUP_BATCH = ("Cut the batch size", "Halve the batch size", "Shrink the batch or input size")
_SUP_BNB = ("Load the weights quantized",)
_SUP_HALF = ("Run in bf16/fp16",)
#: among vLLM fixes that fit, the least intrusive first: a setting of the serve command before
#: one that costs speed (graphs, batch), then the weights' precision and more GPUs
_VLLM_ORDER = {
    # the remedy vLLM's own KV errors name first ("Try increasing `gpu_memory_utilization` or
    # decreasing `max_model_len`", v1/core/kv_cache_utils.py), and the request stays whole
    "--gpu-memory-utilization": 1,
    "--max-model-len": 2,
    "--kv-cache-dtype": 3,
    "--max-num-seqs": 4,
    "--max-num-batched-tokens": 5,
    "--enforce-eager": 6,
    "--quantization": 7,
    "--tensor-parallel-size": 8,
}


def _fb(n: int | None) -> str:
    return size_text(n)


# --- vLLM -------------------------------------------------------------------------------------


def _need(p: VllmPlan) -> int:
    """KV bytes one request of max_model_len needs as vLLM's start-up check counts them
    (:func:`oomkit.estimate.vllm_blocks.request_bytes`)."""
    from oomkit.estimate.vllm_blocks import request_bytes
    from oomkit.estimate.vllm_engines import vllm_engine

    return request_bytes(
        p.layers,
        p.max_model_len,
        block=p.block_size,
        batched=p.max_num_batched_tokens,
        eng=vllm_engine(p.engine),
    )


def _used(p: VllmPlan) -> int:
    """What the budget loses before the KV pool (the terms ``plan_vllm`` subtracts)."""
    graphs = p.cudagraph_bytes if p.cudagraph_charged else 0
    return (
        p.weights_bytes
        + p.rope_cache_bytes
        + p.activation_bytes
        + p.pinned_allreduce_bytes
        + p.non_torch_bytes
        + graphs
    )


def _slack(p: VllmPlan) -> int:
    """KV pool minus one max-length request; up to a constant when the capacity is unknown."""
    pool = p.kv_pool_bytes if p.kv_pool_bytes is not None else -_used(p)
    return pool - _need(p)


def _fit_len(p: VllmPlan, pool: int | None) -> int | None:
    """Longest max_model_len whose blocks fit ``pool`` (vLLM ``check_enough_kv_cache_memory``)."""
    from oomkit.estimate.vllm import max_len_that_fits
    from oomkit.estimate.vllm_engines import vllm_engine

    if pool is None:
        return None
    return max_len_that_fits(
        p.layers,
        pool,
        p.max_model_len,
        p.block_size,
        vllm_engine(p.engine),
        p.max_num_batched_tokens,
    )


def _logged_tokens(e: OomEvent, ctx: LogContext, block: int) -> int | None:
    """The KV capacity in tokens vLLM stated (message, ``# GPU blocks`` x block size; ``#
    GPU blocks: 0`` is a pool of less than one block, V0 ``determine_num_available_blocks``
    flooring a budget with no room left, and is kept as 0)."""
    if e.kv_capacity_tokens:
        return e.kv_capacity_tokens
    if ctx.kv_cache_tokens:
        return ctx.kv_cache_tokens
    return ctx.num_gpu_blocks * block if ctx.num_gpu_blocks is not None else None


def _observed_pool(e: OomEvent, ctx: LogContext, p: VllmPlan) -> tuple[int | None, str]:
    """The KV pool this run really had, from the most exact figure the log gives."""
    if e.available_kv_bytes is not None:
        return e.available_kv_bytes, "the available KV memory vLLM reported"
    tokens = _logged_tokens(e, ctx, p.block_size)
    if tokens == 0:
        return 0, "the 0 GPU blocks vLLM reported"
    if tokens and p.bytes_per_token:
        return tokens * p.bytes_per_token, f"the {tokens} KV tokens vLLM reported"
    if ctx.kv_cache_bytes is not None:
        return ctx.kv_cache_bytes, "the KV cache size vLLM's profiling logged"
    return None, ""


def _release_plan(spec: ModelSpec, s: InferenceSettings, dev: DeviceTarget) -> VllmPlan:
    """``plan_vllm`` under the release ``s.runtime_version`` names (the log's, or the user's):
    its engine row's defaults (vLLM 0.6.3: ``max_num_seqs`` 256 and a 2048-token profile batch
    with chunked prefill on above 32K, ``EngineArgs.create_engine_config`` / ``SchedulerConfig``
    of that release) and whether its CUDA graphs are charged to the KV budget, exactly as
    :func:`oomkit.estimate.vllm.estimate_vllm` models that release."""
    from oomkit.estimate.vllm_release import release_rules

    hw = Hardware(devices=(dev,) * max(1, s.tp or 1))
    return release_rules(spec, s, hw).plan(spec, dev)


def _vllm_device(
    spec: ModelSpec, s: InferenceSettings, e: OomEvent, ctx: LogContext, hw: Hardware | None
) -> tuple[DeviceTarget, str]:
    if hw is not None and hw.devices:
        return hw.devices[0], "capacity given"
    total = ctx.total_gpu_memory_bytes or e.total_bytes
    if total:
        return DeviceTarget(name="GPU", capacity_bytes=total), f"GPU total {_fb(total)} (log)"
    dev = DeviceTarget(name="GPU (capacity unknown)")
    p = _release_plan(spec, s, dev)
    pool, what = _observed_pool(e, ctx, p)
    if pool is None:
        return dev, "capacity not in the log"
    for _ in range(2):  # defaults (max_num_seqs...) depend on the capacity: settle them
        util = p.util
        dev = DeviceTarget(name="GPU", capacity_bytes=ceil((pool + _used(p)) / util))
        p = _release_plan(spec, s, dev)
    return dev, f"GPU capacity inferred as {_fb(dev.capacity_bytes)} from {what} ({_fb(pool)})"


def vllm_fixes(
    spec: ModelSpec, user: InferenceSettings, e: OomEvent, ctx: LogContext, hw: Hardware | None
) -> list[Fix]:
    """vLLM fixes ranked later by KV slack gained per GPU (see the module docstring)."""
    from oomkit.errors import OomkitError

    s = dataclasses.replace(
        user,
        ctx=user.ctx or e.max_model_len or ctx.max_model_len,
        gpu_memory_utilization=user.gpu_memory_utilization
        or e.gpu_memory_utilization
        or ctx.gpu_memory_utilization,
        tp=user.tp or ctx.tensor_parallel_size,
        # the batch the log states is the one the engine profiled (vLLM 0.8.5: "Chunked
        # prefill is enabled with max_num_batched_tokens=2048.")
        max_num_batched_tokens=user.max_num_batched_tokens or ctx.max_num_batched_tokens,
        max_num_seqs=user.max_num_seqs or ctx.max_num_seqs,
    )
    dev, cap = _vllm_device(spec, s, e, ctx, hw)
    basis = f"(oomkit's vLLM estimate for {spec.name}, {s.quant or 'checkpoint dtype'}; {cap}.)"

    def plan(**changes: object) -> VllmPlan | None:
        try:
            return _release_plan(spec, dataclasses.replace(s, **changes), dev)  # type: ignore[arg-type]
        except (OomkitError, ValueError):
            return None

    p0 = _release_plan(spec, s, dev)  # a bad setting is reported, not hidden
    observed, what = _observed_pool(e, ctx, p0)
    offset = 0
    if observed is not None and p0.kv_pool_bytes is not None and observed != p0.kv_pool_bytes:
        # the logged pool is a measurement of this run: anchor on it, keep the differences
        offset = observed - p0.kv_pool_bytes
        basis += (
            f" KV pool anchored on {what}, {_fb(observed)} (the estimate alone gives "
            f"{_fb(p0.kv_pool_bytes)})."
        )
    if ctx.weights_bytes and abs(p0.weights_bytes - ctx.weights_bytes) > ctx.weights_bytes // 5:
        basis += (
            f" The log says the weights take {_fb(ctx.weights_bytes)}, the estimate "
            f"{_fb(p0.weights_bytes)}: name the checkpoint's quantization (--quant) if it has one."
        )

    def pool(p: VllmPlan) -> int | None:
        return None if p.kv_pool_bytes is None else p.kv_pool_bytes + offset

    def slack(p: VllmPlan) -> int:
        return _slack(p) + (offset if p.kv_pool_bytes is not None else 0)

    slack0, need0, pool0 = slack(p0), _need(p0), pool(p0)
    state = (
        f"one {p0.max_model_len}-token request needs {_fb(need0)} of KV"
        + (f"; the KV pool is {_fb(pool0)}" if pool0 is not None else "")
        + f" (weights {_fb(p0.weights_bytes)}, activation peak {_fb(p0.activation_bytes)}"
        f" per GPU)"
    )
    out: list[Fix] = []

    def add(p1: VllmPlan | None, title: str, lead: str, cmd: str, sup: tuple[str, ...]) -> None:
        if p1 is None or slack(p1) - slack0 <= 0:
            return
        pool1 = pool(p1)
        flag = cmd.split()[0]
        after = f"; after: KV need {_fb(_need(p1))}" + (
            f", pool {_fb(pool1)}" + (" (fits)" if slack(p1) >= 0 else " (still short)")
            if pool1 is not None
            else ""
        )
        out.append(
            EstimatedFix(
                title=title,
                why=f"{lead}: {state}{after}. {basis}",
                commands=(cmd,),
                expected_saving_bytes=slack(p1) - slack0,
                supersedes=sup,
                # a change that makes the request fit ranks by how little it changes, not by
                # how much it frees (fp8 weights freed 6.5 GiB for a 670 MiB shortfall and led)
                fits=None if pool1 is None else slack(p1) >= 0,
                order=_VLLM_ORDER.get(flag),
            )
        )

    # vLLM's own figures first: its estimate, else the token capacity it stated
    tokens = _logged_tokens(e, ctx, p0.block_size)
    logged = e.estimated_max_model_len or (tokens // p0.block_size * p0.block_size if tokens else 0)
    fit_len = logged or _fit_len(p0, pool0)
    if fit_len is not None and 0 < fit_len < p0.max_model_len:
        p_fit = plan(ctx=fit_len)
        if p_fit is not None and pool(p_fit) is not None and slack(p_fit) < 0:
            # V0 without chunked prefill profiles max(max_model_len, 2048) tokens (vLLM 0.6.3
            # SchedulerConfig; chunked prefill only above 32K, PR #6666): a shorter context
            # drops below 32K and profiles a bigger batch, so the pool shrinks with it. The
            # longest length whose own plan holds one request, in whole blocks
            b = p0.block_size

            def holds(n: int) -> bool:
                p1 = plan(ctx=n * b)
                return p1 is not None and slack(p1) >= 0

            blocks = largest(1, fit_len // b, holds)
            fit_len = blocks * b if blocks is not None and blocks * b >= _MIN_LEN else None
    if fit_len is not None and 0 < fit_len < p0.max_model_len:
        add(
            plan(ctx=fit_len),
            f"Serve a shorter context: --max-model-len {fit_len}",
            f"the longest request whose KV fits the pool is {fit_len} tokens",
            f"--max-model-len {fit_len}",
            _SUP_LEN,
        )
    if not (s.cache_type_k or "auto").lower().startswith("fp8"):
        add(
            plan(cache_type_k="fp8", cache_type_v="fp8"),
            "Store the KV cache in fp8: --kv-cache-dtype fp8",
            f"fp8 stores 1 byte per KV value instead of {p0.kv_elem_bytes}",
            "--kv-cache-dtype fp8",
            _SUP_FP8,
        )
    if pool0 is not None and slack0 < 0:
        u = round(p0.util + 0.01, 2)
        while u <= _MAX_UTIL:
            p1 = plan(gpu_memory_utilization=u)
            if p1 is not None and slack(p1) >= 0:
                add(
                    p1,
                    f"Raise --gpu-memory-utilization to {u:.2f}",
                    f"the smallest utilization (from {p0.util:.2f}) whose pool holds the request"
                    " (only if nothing else uses the GPU)",
                    f"--gpu-memory-utilization {u:.2f}",
                    _SUP_UTIL,
                )
                break
            u = round(u + 0.01, 2)
    tp2 = 2 * p0.tp
    add(
        plan(tp=tp2),
        f"Shard over {tp2} GPUs: --tensor-parallel-size {tp2}",
        "each GPU holds 1/tp of the weights and of the KV",
        f"--tensor-parallel-size {tp2}",
        _SUP_TP,
    )
    if p0.max_num_seqs >= 32:
        n = p0.max_num_seqs // 4
        add(
            plan(max_num_seqs=n),
            f"Fewer concurrent sequences: --max-num-seqs {n}",
            f"the profile run's sampler peak grows with max_num_seqs ({p0.max_num_seqs} -> {n})",
            f"--max-num-seqs {n}",
            (),
        )
    if p0.max_num_batched_tokens > 1024:
        n = p0.max_num_batched_tokens // 2
        add(
            plan(max_num_batched_tokens=n),
            f"Shrink the profiling batch: --max-num-batched-tokens {n}",
            f"the forward peak grows with the tokens per step ({p0.max_num_batched_tokens} -> {n})",
            f"--max-num-batched-tokens {n}",
            _SUP_BATCHED,
        )
    if not s.enforce_eager:
        add(
            plan(enforce_eager=True),
            "Skip CUDA graphs: --enforce-eager",
            f"the CUDA-graph pool ({_fb(p0.cudagraph_bytes)}) is charged to the KV budget",
            "--enforce-eager",
            (),
        )
    if s.quant is None and spec.quantization is None:
        add(
            plan(quant="fp8"),
            "Quantize the weights to fp8: --quantization fp8",
            "fp8 weights take 1 byte per parameter",
            "--quantization fp8",
            _SUP_TP,
        )
    if not any(f.fits for f in out):
        _pairs(plan, pool, add, s, spec, p0)
    free_fix = _free_budget_fix(e, spec, plan)
    if free_fix is not None:
        out.append(free_fix)
    return out


#: the rules' fix for vLLM's start-up free-memory check (rules_serving ``startup_free_memory``)
_ASK_FREE = "Ask for what is free: --gpu-memory-utilization"


def _free_budget_fix(
    e: OomEvent, spec: ModelSpec, plan: Callable[..., VllmPlan | None]
) -> EstimatedFix | None:
    """Check the rules' "ask for what is free" utilization against the model (revfix21b).

    vLLM refuses to start when the free memory is below ``gpu_memory_utilization x total``
    (vllm/v1/worker/gpu_worker.py ``init_device`` / utils ``request_memory``: "Free memory on
    device ... is less than desired GPU memory utilization"); at the utilization the free memory
    allows, the budget is ``util x total`` and the weights, the profile run's activations and
    at least one ``max_model_len`` request's KV blocks must fit in it
    (``check_enough_kv_cache_memory``), or the next start fails there. With the model known the
    estimate says which: the same fix with the estimate's figures when it fits; else one with
    the longest ``--max-model-len`` that fits, or none that fits (free the GPU first).
    """
    f, t = e.free_bytes, e.total_bytes
    if e.kind != "startup_free_memory" or not f or not t:
        return None
    util = int((f / t) * 100) / 100 - 0.01  # the rule's figure (rules_serving)
    if util <= 0:
        return None
    p = plan(gpu_memory_utilization=util)
    if p is None or p.kv_pool_bytes is None:
        return None
    budget = int(util * t)
    parts = (
        f"at {util:.2f} the budget is {_fb(budget)}: {spec.name}'s weights "
        f"{_fb(p.weights_bytes)} + activation peak {_fb(p.activation_bytes)} leave a KV pool of "
        f"{_fb(max(0, p.kv_pool_bytes))}, and one {p.max_model_len}-token request needs "
        f"{_fb(_need(p))}"
    )
    want = e.requested_bytes
    saving = want - f if want is not None and want > f else None
    if _slack(p) >= 0:
        return EstimatedFix(
            title=f"{_ASK_FREE} {util:.2f}",
            why=parts + " (fits).",
            commands=(f"--gpu-memory-utilization {util:.2f}",),
            expected_saving_bytes=saving,
            fits=True,
        )
    fit_len = _fit_len(p, p.kv_pool_bytes)
    if fit_len is not None and fit_len >= p.block_size:
        return EstimatedFix(
            title=f"{_ASK_FREE} {util:.2f} with --max-model-len {fit_len}",
            why=parts + f": it does not fit at that length, {fit_len} tokens do (the longest "
            "request the free memory holds; stopping the other process keeps the full length).",
            commands=(f"--gpu-memory-utilization {util:.2f} --max-model-len {fit_len}",),
            expected_saving_bytes=saving,
            supersedes=(_ASK_FREE,),
            fits=True,
        )
    return EstimatedFix(
        title=f"The free memory does not hold {spec.name}: free the GPU first",
        why=parts + ": not even the weights and one short request fit in what is free, so "
        "lowering --gpu-memory-utilization cannot start it; stop what holds the GPU (or use a "
        "smaller / quantized model).",
        commands=("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",),
        expected_saving_bytes=None,
        supersedes=(_ASK_FREE,),
    )


#: the shortest --max-model-len a two-change fix proposes (below it the server is of little use)
_MIN_PAIR_LEN = 4096


def _pairs(
    plan: Callable[..., VllmPlan | None],
    pool: Callable[[VllmPlan], int | None],
    add: Callable[[VllmPlan | None, str, str, str, tuple[str, ...]], None],
    s: InferenceSettings,
    spec: ModelSpec,
    p0: VllmPlan,
) -> None:
    """No single change fits (Llama-3.1-70B in bf16 on one 80 GB card at 131072 tokens: fp8
    weights leave a 4.8 GiB pool for a 20-40 GiB request): the change that frees the most KV
    room on this GPU with the longest --max-model-len its pool then holds, as one fix."""
    steps: list[tuple[dict[str, object], str, str]] = []
    if not (s.cache_type_k or "auto").lower().startswith("fp8"):
        steps.append(
            ({"cache_type_k": "fp8", "cache_type_v": "fp8"}, "--kv-cache-dtype fp8", "fp8 KV")
        )
    if s.quant is None and spec.quantization is None:
        steps.append(({"quant": "fp8"}, "--quantization fp8", "fp8 weights"))
        if steps[0][2] == "fp8 KV":
            both = {**steps[0][0], "quant": "fp8"}
            steps.append((both, "--quantization fp8 --kv-cache-dtype fp8", "fp8 weights and KV"))
    for changes, flags, what in steps:
        p1 = plan(**changes)
        n = None if p1 is None else _fit_len(p1, pool(p1))
        if n is None or n < min(_MIN_PAIR_LEN, p0.max_model_len) or n >= p0.max_model_len:
            continue
        add(
            plan(**changes, ctx=n),
            f"Use {what} and a shorter context: {flags} --max-model-len {n}",
            f"no single change fits; with {what} the pool holds one request of {n} tokens",
            f"{flags} --max-model-len {n}",
            (),
        )
        return


# --- transformers ------------------------------------------------------------

_HF_CMDS = {
    "bf16": "AutoModelForCausalLM.from_pretrained(MODEL, torch_dtype=torch.bfloat16)",
    "int8": "from_pretrained(MODEL, quantization_config=BitsAndBytesConfig(load_in_8bit=True))",
    "nf4": "from_pretrained(MODEL, quantization_config=BitsAndBytesConfig(load_in_4bit=True, "
    'bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16))',
}


def _left_text(e: OomEvent, cap: int, base: Estimate, cand: Estimate) -> str:
    """What the GPU has left after the change: from the estimate, unless the message shows the
    run holding more than the estimate (its own batch and length, which oomkit's defaults do
    not know): then the message's free memory plus what the change frees."""
    held = e.allocated_bytes or e.process_in_use_bytes
    before, after = base.devices[0].total_bytes, cand.devices[0].total_bytes
    if held is not None and held > before and e.free_bytes is not None:
        text = (
            f" The run held {_fb(held)} when it failed (the message), more than the estimate's "
            f"{_fb(before)} at oomkit's default batch and length: {_fb(e.free_bytes)} free "
            f"+ {_fb(before - after)} freed = {_fb(e.free_bytes + before - after)}"
        )
        if e.requested_bytes is not None:
            text += f" for the {_fb(e.requested_bytes)} request"
        return text + "."
    return f" With {_fb(cap)} on the GPU that leaves {_fb(cap - after)}."


def transformers_fixes(
    spec: ModelSpec, user: InferenceSettings, e: OomEvent, hw: Hardware | None
) -> list[Fix]:
    """bf16 / 8-bit / 4-bit weights, a smaller batch and SDPA, sized on one GPU without offload.

    The estimate runs without a capacity (so ``device_map="auto"`` does not offload and the
    difference is the full change); the capacity, when known, only says whether it then fits.
    """
    cap = hw.devices[0].capacity_bytes if hw is not None and hw.devices else e.total_bytes
    one = Hardware(devices=(DeviceTarget(name="GPU"),))
    case = Case(
        runtime="transformers",
        spec=spec,
        settings=user,
        hardware=one,
        device=0,
        headroom_bytes=HEADROOM_BYTES,
        basis=f"(oomkit's transformers estimate for {spec.name}"
        + (f"; GPU total {_fb(cap)})" if cap else ")"),
    )
    base = estimate_case(case, user)
    out: list[Fix | None] = []
    dtype = (user.quant or spec.torch_dtype or "bf16").lower()

    def cand(title: str, lead: str, cmd: str, sup: tuple[str, ...], **kw: object) -> None:
        est = try_estimate(case, dataclasses.replace(user, **kw))  # type: ignore[arg-type]
        if est is None:
            return
        fix = make_fix(case, base, est, title=title, lead=lead, commands=(cmd,), supersedes=sup)
        if fix is not None and cap:
            fix = dataclasses.replace(fix, why=fix.why + _left_text(e, cap, base, est))
        out.append(fix)

    if dtype in ("fp32", "float32"):
        cand(
            "Load in bf16 instead of fp32",
            "2 bytes per weight instead of 4",
            _HF_CMDS["bf16"],
            _SUP_HALF,
            quant="bf16",
        )
    if dtype in ("fp32", "float32", "bf16", "bfloat16", "fp16", "float16"):
        cand(
            "Load in 8-bit (bitsandbytes)",
            "int8 weights with per-row scales",
            _HF_CMDS["int8"],
            _SUP_BNB,
            quant="int8",
        )
        cand(
            "Load in 4-bit NF4 (bitsandbytes)",
            "4-bit blocks of 64 with an absmax scale",
            _HF_CMDS["nf4"],
            _SUP_BNB,
            quant="nf4",
        )
    batch = user.parallel or 1
    if batch > 1:
        new = batch // 2
        cand(
            f"Halve the batch: batch size {new}",
            f"activations and KV scale with the batch ({batch} -> {new})",
            f"batch_size={new}",
            _SUP_BATCH,
            parallel=new,
        )
    if (user.attn_implementation or "sdpa").lower() == "eager":
        cand(
            'Use SDPA attention: attn_implementation="sdpa"',
            "eager attention materialises the B x heads x S^2 scores; SDPA never does",
            'from_pretrained(MODEL, attn_implementation="sdpa")',
            (),
            attn_implementation="sdpa",
        )
    return [f for f in out if f is not None]
