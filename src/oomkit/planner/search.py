"""The search: for each weight quant, the least intrusive configuration that fits, ranked
by :mod:`oomkit.planner.ranking`'s policy.

Every candidate is checked with the runtime's own estimator (no separate formula), so a plan
is exactly as accurate as ``oomkit estimate``. A candidate *fits* when every GPU keeps
``headroom_bytes`` free after the estimate (vLLM/SGLang: when the engine starts, keeping
``1 - gpu_memory_utilization`` free itself) and the host part fits in the RAM, if known.

The searches over one integer knob (context, ``--n-cpu-moe``, ``-ngl``) rely on memory being
monotone in that knob (the property tests hold the estimators to it) and use regula falsi on
the free-memory margin with a bisection safeguard: device memory is close to affine in each
knob, so two or three estimates usually land on the exact boundary.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Collection

from oomkit.errors import InvalidSettingError
from oomkit.estimate.boundary import largest_by_margin
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.checks import check_ranks, check_tp, gpus_counted, tp_refusal
from oomkit.estimate.flag_eras import check_flag_eras, era_kvs, flag_available
from oomkit.estimate.llamacpp_fit import plan_note
from oomkit.estimate.llamacpp_outputs import C_API_APPS, server_default
from oomkit.estimate.llamacpp_python import binding_plan_base, is_binding
from oomkit.estimate.registry import get_estimator
from oomkit.estimate.verdict import Platform, device_segment, device_unified_bytes
from oomkit.planner.evaluation import (
    HOST_HEADROOM_BYTES,
    Evaluation,
    judge,
    refused_estimate,
    unified_total,
)
from oomkit.planner.knobs import (
    LEVEL_EXPERTS_CPU,
    LEVEL_GPU,
    LEVEL_LAYERS_CPU,
    Candidate,
    cuda_capability,
    kv_ladder,
    llamacpp_flash_off,
    native_precisions,
    quant_ladder,
    rank_key,
    upgrade_kvs,
)
from oomkit.planner.ngl import fixed_candidates, fixed_layers, fixed_split
from oomkit.planner.ranking import fp8_tier
from oomkit.planner.request import PlanRequest
from oomkit.planner.sglang_fraction import raise_sglang_fraction
from oomkit.planner.target_ctx import default_target_ctx, fit_ctx_top, min_ctx
from oomkit.planner.transformers_moves import level_sdpa
from oomkit.planner.vllm_util import lower_vllm_util, raise_vllm_util
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = ["HOST_HEADROOM_BYTES", "SEQS_LEVER", "Evaluation", "Searcher", "default_target_ctx"]

_GGUF_RUNTIMES = ("llama.cpp", "ollama")
#: runtimes with a concurrent-sequence cap the planner may lower, the estimate's
#: ``runtime_details`` key holding the value in effect, and the flag: vLLM ``--max-num-seqs``
#: (the V0 profile run builds that many dummy sequences, Mllama one image each: vllm#9445
#: "Fixed the issue by decreasing max_num_seqs to 32"; V1 samples over that many rows) and
#: SGLang ``--max-running-requests`` (``ModelRunner.init_memory_pool(max_num_reqs=
#: server_args.max_running_requests)`` sizes the req_to_token pool)
SEQS_LEVER: dict[str, tuple[str, str]] = {
    "vllm": ("max_num_seqs", "--max-num-seqs"),
    "sglang": ("max_num_reqs", "--max-running-requests"),
    "transformers": ("batch", "--batch"),  # generate()'s batch (planner.transformers_moves)
}


def _kv_tokens(est: Estimate) -> int | None:
    """The KV pool the estimate allocates, in tokens (vLLM ``kv_cache_tokens``, SGLang
    ``max_total_num_tokens``), None when it names none."""
    for name in ("kv_cache_tokens", "max_total_num_tokens"):
        value = est.runtime_details.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _at_ctx(make: Callable[[str, int, int], Candidate], kv: str, n: int, ctx: int) -> Candidate:
    return make(kv, ctx, n)


class Searcher:
    """Evaluates candidates for one model x runtime x hardware x request (memoised)."""

    def __init__(
        self,
        spec: ModelSpec,
        runtime: str,
        hardware: Hardware,
        request: PlanRequest,
        base: InferenceSettings | None = None,
        published: Collection[str] | None = None,
    ) -> None:
        gpus = [d for d in hardware.devices if d.backend != "cpu"]
        if not gpus:
            raise InvalidSettingError(
                "the planner needs at least one GPU: pass --gpu NAME, --vram SIZE or --gpu auto",
                setting="gpu",
            )
        if any(d.capacity_bytes is None for d in gpus):
            raise InvalidSettingError(
                "the planner needs each GPU's memory: pass --gpu NAME (catalog), --vram SIZE "
                "or --gpu auto",
                setting="vram",
            )
        self.spec = spec
        self.runtime = runtime
        self.hardware = hardware
        self.request = request
        plain = dataclasses.replace(base or InferenceSettings(), runtime=runtime)
        plain = dataclasses.replace(plain, parallel=request.parallel)
        # llama.cpp: llama-server's memory (PR #23861), LM Studio/koboldcpp the C API's
        c_api = (request.runtime or "").strip().lower() in C_API_APPS
        self.base = plain if c_api else server_default(plain)
        if is_binding(request.runtime):  # Llama(...)'s n_batch, --runtime-version its release
            self.base = binding_plan_base(self.base)
        if runtime == "transformers" and self.base.device_map is None:
            # the plan's snippet passes device_map="auto": model what it runs, so a candidate
            # that offloads is the labelled slow level (LEVEL_LAYERS_CPU), not a blocker
            self.base = dataclasses.replace(self.base, device_map="auto")
        # the plan's commands pass -c and -ngl: llama.cpp's --fit leaves them as planned
        self.estimator = get_estimator(runtime, planned=True)
        self.n_layer = spec.num_hidden_layers
        flash_off = runtime == "llama.cpp" and llamacpp_flash_off(self.base)
        self.kvs = kv_ladder(runtime, flash_off=flash_off, pinned=request.kv)
        check_flag_eras(self.base, runtime)  # what the user pinned must exist in that release
        # only the levers the --runtime-version has (-ctk/-ctv, -fa, OLLAMA_KV_CACHE_TYPE)
        self.kvs = era_kvs(
            runtime, self.kvs, self.base.runtime_version, server=self.base.llama_server is not False
        )
        self.ladder, self.default_index = quant_ladder(
            runtime, spec, request.quant, request.min_quant, published
        )
        if request.quant and request.min_quant and runtime in _GGUF_RUNTIMES:
            from oomkit.planner.quality import quality_rank_key

            if quality_rank_key(request.quant) > quality_rank_key(request.min_quant):
                raise InvalidSettingError(
                    f"--quant {request.quant} is below --min-quant {request.min_quant} "
                    "(published KL divergence); raise --quant or lower --min-quant",
                    setting="min_quant",
                )
        self.precision_notes: list[str] = []
        if runtime == "llama.cpp":  # its commands pass -c/-ngl: what --fit does with them
            self.precision_notes.extend(n for n in [plan_note(spec, self.base)] if n)
        if runtime not in _GGUF_RUNTIMES and request.quant is None:
            self.ladder = native_precisions(
                self.ladder,
                gpus,
                self.precision_notes,
                runtime=runtime,
                moe=spec.moe is not None and spec.moe.num_experts > 0,
                version=self.base.runtime_version,
            )
        self.fixed_ngl = fixed_layers(runtime, self.n_layer, request, self.precision_notes)
        self.target_ctx = default_target_ctx(
            runtime, spec, request, hardware, self.base.runtime_version
        )
        self.min_ctx = min_ctx(request, self.target_ctx)
        #: no ``--ctx`` on a llama-server with ``--fit``: the trained context each all-on-the-GPU
        #: plan is widened towards (:func:`oomkit.planner.target_ctx.fit_ctx_top`)
        self.fit_top = fit_ctx_top(runtime, spec, request, self.base, c_api=c_api)
        #: the user typed the context (not ``--ctx max``, not the runtime's default): keeping it
        #: outranks every throughput lever (:mod:`oomkit.planner.ranking`)
        self.ctx_asked = request.ctx is not None and not request.ctx_from_max
        #: fp8 at bf16's tier when the context is typed and the GPUs run FP8 W8A8
        #: (:func:`oomkit.planner.ranking.fp8_tier`)
        self.quant_tier = (
            fp8_tier(runtime, self.ladder, [cuda_capability(d) for d in gpus])
            if self.ctx_asked
            else {}
        )
        self.is_moe = spec.moe is not None and spec.moe.num_experts > 0
        self.gguf = runtime in _GGUF_RUNTIMES
        self.offload_ok = not request.no_offload and self.gguf
        self._memo: dict[Candidate, Evaluation] = {}
        self.platform = Platform(
            os=hardware.os,
            display=request.display,
            segments=tuple(device_segment(d) for d in gpus),
            unified_bytes=tuple(device_unified_bytes(d) for d in gpus),
        )
        self.unified = any(d.unified_memory for d in gpus)
        self.unified_total = unified_total(gpus) if self.unified else None
        self.n_estimates = 0
        #: the sequence cap the planner may lower (vLLM/SGLang), never below the asked parallel
        self.seqs_lever = runtime in SEQS_LEVER
        self.seqs_floor = 1 if runtime == "transformers" else request.parallel or 1
        #: per quant: the sequence cap in effect when the planner leaves it alone
        self.seqs_default: dict[str, int] = {}

    # -- evaluation --------------------------------------------------------------------------

    def evaluate(self, cand: Candidate) -> Evaluation:
        hit = self._memo.get(cand)
        if hit is not None:
            return hit
        settings = cand.apply(self.base)
        if self.runtime == "ollama" and settings.n_gpu_layers is None:
            # "all on the GPU" must not become Ollama's automatic offload inside the estimate
            settings = dataclasses.replace(settings, n_gpu_layers=self.n_layer + 1)
        self.n_estimates += 1
        try:
            est = self.estimator(self.spec, settings, self.hardware)
        except InvalidSettingError as exc:  # a combination the runtime refuses
            ev = Evaluation(
                cand=cand,
                estimate=self._refused_estimate(),
                fits=False,
                margin_bytes=-1,
                reason=str(exc),
            )
            self._memo[cand] = ev
            return ev
        if self.runtime == "vllm" and self.base.gpu_memory_utilization is None:
            est = raise_vllm_util(self, settings, lower_vllm_util(self, settings, est))
        if self.runtime == "sglang" and self.base.mem_fraction_static is None:
            est = raise_sglang_fraction(self, settings, est)
        ev = self._judge(cand, est)
        self._memo[cand] = ev
        return ev

    def _refused_estimate(self) -> Estimate:
        """See :func:`oomkit.planner.evaluation.refused_estimate`."""
        return refused_estimate(self.spec.name, self.runtime)

    def _judge(self, cand: Candidate, est: Estimate) -> Evaluation:
        """See :func:`oomkit.planner.evaluation.judge`."""
        return judge(self, cand, est)

    def _gpu_fits(self, ev: Evaluation) -> bool:
        """Fits on every GPU, engine checks included (host RAM aside): monotone in each knob."""
        return ev.fits or ev.host_only

    # -- one-knob searches -------------------------------------------------------------------

    def _largest(
        self, lo: int, hi: int, make: Callable[[int], Candidate]
    ) -> tuple[int, Evaluation] | None:
        """Largest x in [lo, hi] whose candidate fits on the GPUs (GPU use grows with x)."""
        return largest_by_margin(
            lo,
            hi,
            lambda x: self.evaluate(make(x)),
            self._gpu_fits,
            lambda ev: ev.margin_bytes,
        )

    def _ctx_grid(self, low: int | None = None, high: int | None = None) -> tuple[int, ...]:
        """Context values the planner may propose, ascending (multiples of the step + target):
        from ``low`` (default: the least context) to ``high`` (default: the target)."""
        low = self.min_ctx if low is None else low
        high = self.target_ctx if high is None else high
        step = self.request.ctx_step
        first = -(-low // step)
        last = high // step
        values = [k * step for k in range(max(first, 1), last + 1)]
        if not values or values[-1] != high:
            values.append(high)
        if low < values[0]:
            values.insert(0, low)
        return tuple(values)

    def widen_to_fit(self, ev: Evaluation) -> Evaluation:
        """No ``--ctx`` on a llama-server with ``--fit`` (:attr:`fit_top`): an all-on-the-GPU
        plan at the 4096-token floor runs the largest context up to the trained one that still
        fits with its quant and KV type (on the ``ctx_step`` grid; the fit itself rounds to
        256). Any other plan is returned as it is (with layers on the CPU the fit has already
        lowered the context to its floor)."""
        if (
            self.fit_top is None
            or ev.cand.level != LEVEL_GPU
            or ev.cand.ctx != self.target_ctx
            or not ev.fits
        ):
            return ev
        grid = self._ctx_grid(self.target_ctx, self.fit_top)
        found = self._largest(0, len(grid) - 1, lambda i: dataclasses.replace(ev.cand, ctx=grid[i]))
        return ev if found is None or not found[1].fits else found[1]

    def _largest_ctx(self, make: Callable[[int], Candidate]) -> tuple[int, Evaluation] | None:
        grid = self._ctx_grid()
        found = self._largest(0, len(grid) - 1, lambda i: make(grid[i]))
        return None if found is None else (grid[found[0]], found[1])

    # -- the levels --------------------------------------------------------------------------

    def level_gpu(
        self, quant: str, *, upgrade: bool = False, kvs: tuple[str, ...] = ()
    ) -> Evaluation | None:
        """All on the GPU: the asked context with the best KV type that fits, else the longest.
        An upgrade: the asked context only, with ``kvs`` (default: the best KV type alone)."""
        if self.fixed_ngl is not None and self.fixed_ngl <= self.n_layer:
            return None  # -ngl N leaves layers on the CPU: no all-on-the-GPU plan
        kvs = kvs or (self.kvs[:1] if upgrade else self.kvs)
        low = self.target_ctx if upgrade else min(self.min_ctx, self.target_ctx)
        if not self._gpu_fits(self.evaluate(Candidate(quant, kvs[-1], low, tp=self._tp()))):
            return None  # not even the most compact KV at the shortest context: prune
        for kv in kvs:
            ev = self.evaluate(Candidate(quant, kv, self.target_ctx, tp=self._tp()))
            if ev.fits:
                return ev
        if upgrade:
            return None
        best: Evaluation | None = None
        for kv in self.kvs:
            found = self._largest_ctx(functools.partial(self._gpu_cand, quant, kv))
            if found is None or not found[1].fits:
                continue
            if best is None or found[0] > best.cand.ctx:
                best = found[1]
        return best

    def level_offload(self, quant: str, level: int) -> Evaluation | None:
        """MoE experts (level 1) or whole layers (level 2) on the CPU: the asked context with
        the first KV type for which some split fits and the least on the CPU; else the longest
        context with the most on the CPU, then the least on the CPU at that context."""
        if level == LEVEL_EXPERTS_CPU:
            lo, hi = 1, self.n_layer

            def make(kv: str, ctx: int, amount: int) -> Candidate:
                return Candidate(quant, kv, ctx, LEVEL_EXPERTS_CPU, n_cpu_moe=amount)
        else:
            lo, hi = 1, self.n_layer

            def make(kv: str, ctx: int, amount: int) -> Candidate:
                # amount = layers kept on the CPU; -ngl = n_layer + 1 - amount
                return Candidate(
                    quant, kv, ctx, LEVEL_LAYERS_CPU, n_gpu_layers=self.n_layer + 1 - amount
                )

        def least_on_cpu(kv: str, ctx: int) -> Evaluation | None:
            # GPU use falls as `amount` grows: the largest (hi - amount) that fits
            found = self._largest(0, hi - lo, lambda j: make(kv, ctx, hi - j))
            return None if found is None else found[1]

        if not self._gpu_fits(self.evaluate(make(self.kvs[-1], self.min_ctx, hi))):
            return None  # not even the most on the CPU at the shortest context
        free = upgrade_kvs(self.runtime, self.kvs)
        ev = self._least_on_cpu_free(free, least_on_cpu, make)
        if ev is not None:
            return ev
        for kv in self.kvs[len(free) :]:
            ev = least_on_cpu(kv, self.target_ctx)
            if ev is not None and ev.fits:
                return ev
        best: Evaluation | None = None
        for kv in self.kvs:
            found = self._largest_ctx(functools.partial(_at_ctx, make, kv, hi))
            if found is None:
                continue
            ev = least_on_cpu(kv, found[0])
            if ev is None or not ev.fits:
                continue
            if best is None or ev.cand.ctx > best.cand.ctx:
                best = ev
        return best

    def _least_on_cpu_free(
        self,
        free: tuple[str, ...],
        least_on_cpu: Callable[[str, int], Evaluation | None],
        make: Callable[[str, int, int], Candidate],
    ) -> Evaluation | None:
        """The offload at the asked context with the least on the CPU over the near-lossless KV
        types ``free`` (:func:`~oomkit.planner.knobs.upgrade_kvs`: f16, f16 with flash attention,
        q8_0), the best of them at that split; None when none of them fits at the asked context.

        A q8_0 K and V cache costs +0.0008 KLD (llama.cpp PR #7412, below every step between
        weight types) while each layer or expert block moved to the CPU costs decode speed:
        Llama-3.1-8B Q4_K_M on an 8 GB card at 131072 tokens keeps 15 layers on the GPU with a
        q8_0 cache against 9 with f16 (about 7.7 against 4.4 tok/s, oomkit.planner.speed). The
        most compact type is searched once; each better one, which needs more memory at every
        split, can reach no fewer on the CPU, so one estimate at that split says whether it ties
        (then it is the plan: same speed, better cache)."""
        ev = least_on_cpu(free[-1], self.target_ctx)
        if ev is None or not ev.fits:
            return None
        amount = ev.cand.offload_amount(self.n_layer)
        for kv in free[:-1]:
            better = self.evaluate(make(kv, self.target_ctx, amount))
            if better.fits:
                return better
        return ev

    def upgrade_kvs(self) -> tuple[str, ...]:
        """The KV types an upgrade quant may use at the asked context
        (:func:`~oomkit.planner.knobs.upgrade_kvs`): down to q8_0, or to q4_0 where the default
        quant needs it there (the same split when ``-ngl`` fixes one)."""
        default = self.ladder[self.default_index]

        def default_fits(kv: str) -> bool:
            if self.fixed_ngl is not None and self.fixed_ngl <= self.n_layer:
                cand = Candidate(
                    default, kv, self.target_ctx, LEVEL_LAYERS_CPU, n_gpu_layers=self.fixed_ngl
                )
            else:
                cand = Candidate(default, kv, self.target_ctx, tp=self._tp())
            return self.evaluate(cand).fits

        return upgrade_kvs(self.runtime, self.kvs, default_fits)

    def _seqs_top(self, quant: str) -> int | None:
        """See :func:`oomkit.planner.seqs.seqs_top`."""
        from oomkit.planner.seqs import seqs_top

        return seqs_top(self, quant)

    def level_seqs(self, quant: str, beat_ctx: int | None = None) -> Evaluation | None:
        """See :func:`oomkit.planner.seqs.level_seqs`."""
        from oomkit.planner.seqs import level_seqs

        return level_seqs(self, quant, beat_ctx)

    def _gpu_cand(self, quant: str, kv: str, ctx: int) -> Candidate:
        return Candidate(quant, kv, ctx, tp=self._tp())

    def _tp(self) -> int | None:
        """vLLM/SGLang tensor parallel size: the largest count up to the GPUs that the
        runtime accepts (:func:`oomkit.estimate.checks.tp_refusal`, the rule ``--tp`` is
        checked by: heads, KV heads, intermediate size, padded vocabulary). It need not divide
        the GPUs: ``vllm serve --tensor-parallel-size 2`` on a 3-GPU machine runs on two of
        them (world size tp x pp, ``ParallelConfig.world_size``), as ``estimate --tp 2`` takes
        it and its refusal of ``--tp 3`` lists ("valid sizes on the 3 GPUs given: 1, 2")."""
        if self.gguf or self.runtime == "transformers":
            # (transformers' device_map="auto" splits the layers over the GPUs: no TP size)
            return None
        n = len([d for d in self.hardware.devices if d.backend != "cpu"])
        if self.base.pp and self.base.pp > 1:
            # a pinned --pp (with or without --tp) against the GPUs named, as the estimate
            # checks it: never more ranks than GPUs
            check_ranks(self.spec, self.base.tp or 1, self.base.pp, n, self.runtime)
        if self.base.pp and self.base.pp > 1 and self.base.tp is None:
            # a pinned --pp: each of the pp stages gets n / pp GPUs (vLLM's world size is
            # tp x pp, ParallelConfig.world_size); the estimate refuses tp x pp > GPUs
            n = max(1, n // self.base.pp)
        if self.base.tp is not None:  # the user's --tp, as the runtime checks it at start-up
            check_tp(self.spec, self.base.tp, n, self.runtime, counted=gpus_counted(self.hardware))
            return self.base.tp
        for tp in range(n, 0, -1):
            if tp_refusal(self.spec, tp) is None:
                note_tp = tp < n and not any("tensor parallel" in x for x in self.precision_notes)
                if note_tp:
                    self.precision_notes.append(
                        f"tensor parallel {tp} of {n} GPUs: tp {n} is refused "
                        f"({tp_refusal(self.spec, n)})"
                    )
                return tp if tp > 1 else None
        return None

    # -- the whole search --------------------------------------------------------------------

    def _hf_offloaded(self, est: Estimate) -> int:  # device_map='auto' leaves it in CPU RAM
        return est.host.weights_bytes if self.runtime == "transformers" else 0

    def level_of(self, ev: Evaluation) -> int:
        """The candidate's level; transformers offloads by itself (device_map='auto')."""
        if self._hf_offloaded(ev.estimate):
            return LEVEL_LAYERS_CPU
        return ev.cand.level

    def key(self, ev: Evaluation) -> tuple[float, ...]:
        cand = ev.cand
        if self.level_of(ev) != cand.level:
            cand = dataclasses.replace(cand, level=self.level_of(ev))
        return rank_key(
            cand,
            prefer=self.request.prefer,
            ladder=self.ladder,
            kvs=self.kvs,
            target_ctx=self.target_ctx,
            n_layer=self.n_layer,
            prompt_first=self.runtime == "transformers",
            ctx_asked=self.ctx_asked,
            margin_bytes=ev.margin_bytes,
            quant_tier=self.quant_tier,
            decode_tps=self._decode_tps(ev) if self.request.prefer == "speed" else None,
            kv_tokens=_kv_tokens(ev.estimate) if self.quant_tier else None,
        )

    def _decode_tps(self, ev: Evaluation) -> float | None:
        """The planner's decode estimate of one candidate (``--prefer speed`` ranks by it),
        every candidate at the same fill (half the target context), so context is no speed."""
        from oomkit.planner.speed import estimate_speed

        settings = ev.cand.apply(self.base)
        speed = estimate_speed(
            self.spec, ev.estimate, self.hardware, ctx_fill=self.target_ctx // 2, settings=settings
        )
        return speed.decode_tokens_per_s

    def candidates_for(self, quant: str, *, gpu_only: bool = False) -> list[Evaluation]:
        """The best fitting candidate of each level for one quant."""
        upgrade = self.ladder.index(quant) < self.default_index
        if self.fixed_ngl is not None:  # -ngl N: only plans with N layers on the GPU
            return fixed_candidates(self, quant, upgrade=upgrade)
        out: list[Evaluation] = []
        kvs = self.upgrade_kvs() if upgrade else ()
        ev = self.level_gpu(quant, upgrade=upgrade, kvs=kvs)
        if ev is not None:
            out.append(ev)
        out += level_sdpa(self, quant, ev, upgrade=upgrade)  # transformers: eager -> sdpa
        if not upgrade and (ev is None or ev.cand.ctx < self.target_ctx):
            capped = self.level_seqs(quant, beat_ctx=None if ev is None else ev.cand.ctx)
            if capped is not None:
                out.append(capped)
        if upgrade or gpu_only or not self.offload_ok:
            return out
        # experts on the CPU are llama.cpp's --n-cpu-moe / -ot; Ollama has no such option (its
        # Modelfile/API PARAMETERs offer num_gpu, whole layers, only: api/types.go Runner)
        # before -ot (PR #11397) experts cannot leave the GPU alone: whole layers (-ngl) only
        version = self.base.runtime_version if self.runtime == "llama.cpp" else None
        experts_ok = flag_available("llama.cpp", "override_tensor", version)
        if self.is_moe and self.runtime != "ollama" and experts_ok:
            ev = self.level_offload(quant, LEVEL_EXPERTS_CPU)
            if ev is not None:
                out.append(ev)
        ev = self.level_offload(quant, LEVEL_LAYERS_CPU)
        if ev is not None:
            out.append(ev)
        return out

    def search(self, *, alternatives: int = 2) -> list[Evaluation]:
        """Fitting candidates, best first: the plan, then alternatives.

        quality: quants best first; the first quant with any fitting level holds the plan,
        and ``alternatives`` more quants are looked at (their GPU-only level) for the options
        table. speed: GPU-only candidates over the ladder first. context: every quant until
        one reaches the target context.
        """
        found: list[Evaluation] = []
        prefer = self.request.prefer
        if prefer == "speed":
            # the first quant that fits on the GPU and the next (alternatives - 1): the
            # smaller one may decode faster (fp8 against bf16 on vLLM), rank_key decides
            hit: int | None = None
            for i, q in enumerate(self.ladder):
                if hit is not None and i > hit + alternatives - 1:
                    break
                found.extend(self.candidates_for(q, gpu_only=True))
                if hit is None and any(e.cand.level == LEVEL_GPU for e in found):
                    hit = i
            if not found:
                for q in self.ladder:
                    found.extend(self.candidates_for(q))
                    if found:
                        break
        elif prefer == "context":
            for q in self.ladder:
                found.extend(self.candidates_for(q))
                if any(e.cand.ctx >= self.target_ctx for e in found):
                    break
        else:
            first_hit: int | None = None
            for i, q in enumerate(self.ladder):
                if first_hit is not None and i > first_hit + alternatives - 1:
                    break
                found.extend(self.candidates_for(q))
                if found and first_hit is None:
                    first_hit = i
            if first_hit is not None and not any(e.cand.level == LEVEL_GPU for e in found):
                # the fastest alternative: the best quant that runs entirely on the GPU
                for q in self.ladder[first_hit + alternatives :]:
                    ev = self.level_gpu(q)
                    if ev is not None:
                        found.append(ev)
                        break
        found.sort(key=self.key)
        if self.fit_top is None:
            return found
        # ranked at the floor (quality first), then each run at the largest context it fits;
        # --fit offloads only what does not fit at its floor: no offload plan of a quant that
        # runs all on the GPU (its speed, read at 4096 tokens, would beat the widened one's)
        on_gpu = {ev.cand.quant for ev in found if ev.cand.level == LEVEL_GPU}
        return [
            self.widen_to_fit(ev)
            for ev in found
            if ev.cand.level == LEVEL_GPU or ev.cand.quant not in on_gpu
        ]

    def rejected(self, limit: int = 6) -> list[Evaluation]:
        """Evaluated candidates that did not fit, most interesting first: at the asked
        context, fewest changes first."""
        misses = [
            e
            for e in self._memo.values()
            if not e.fits
            and (e.cand.level == LEVEL_GPU or fixed_split(e.cand, self.fixed_ngl))
            and self.ladder.index(e.cand.quant) >= self.default_index
            and e.cand.max_num_seqs in (None, self.seqs_floor)  # not every probe of the cap
        ]
        misses.sort(
            key=lambda e: (
                e.cand.ctx != self.target_ctx,
                self.ladder.index(e.cand.quant),
                self.kvs.index(e.cand.kv),
            )
        )
        return misses[:limit]
