"""How a training loop runs its step, for the probe: optimizer flavour, when gradients die, loss.

The probe's default step is HF ``Trainer``'s of today (``loss.backward()``, ``optimizer.step()``,
``zero_grad(set_to_none=True)``, the model's own loss). Published memory figures come from
loops that differ in ways that change the peak; :class:`StepOptions` names them, each as the
stack does it:

* ``optimizer_impl``: ``foreach`` (``torch.optim`` default for CUDA tensors: the update
  allocates a temporary per parameter *group list*), ``forloop`` (``foreach=False``; transformers
  < 4.30 ``adamw_hf`` loops over parameters too: one parameter's temporaries at a time),
  ``fused`` (``fused=True``: no temporaries);
* paged optimizers (bitsandbytes ``PagedAdamW`` / ``PagedAdamW8bit``): ``Optimizer8bit.
  get_state_buffer`` puts every state of a tensor with at least 1e5 elements in
  ``cudaMallocManaged`` memory (``F.get_paged``), which the caching allocator never sees; the
  probe stops counting those states (:meth:`MemoryTracker.forget`);
* ``zero_grad_set_to_none=False`` (torch < 2.0 default; transformers 4.27 ``model.zero_grad()``):
  gradients stay allocated (zeroed) between steps, so the forward and backward of every step but
  the first run with all gradients alive;
* ``optimizer_in_backward`` (torchtune ``optimizer_in_bwd``): one optimizer per parameter,
  stepped and zeroed (``set_to_none``) in ``register_post_accumulate_grad_hook``, so a gradient
  lives only until its own update;
* ``loss``: ``standard`` (the model's loss from ``labels``: HF ``ForCausalLMLoss`` upcasts the
  logits to fp32), ``chunked`` (torchtune ``CEWithChunkedOutputLoss``: the output projection
  runs on 8 chunks of the sequence, ``num_output_chunks=8``, and each chunk is upcast to fp32
  inside the loss; the recipe deletes the logits before ``backward``);
* ``held_logits``: ``fp32`` is the torchtune recipes of 2024 (``output = self.output(h).float()``;
  ``logits = logits[..., :-1, :].contiguous()``; the loop holds ``logits`` through
  ``loss.backward()``), ``compute`` the same without the upcast.

* ``offload_activations`` (torchtune ``enable_activation_offloading``, ``OffloadActivations``
  of torchtune 0.4): a ``saved_tensors_hooks`` pair around the model's forward copies every
  saved tensor of at least ``min_offload_size`` = 1024 bytes that is not a parameter or buffer
  to pinned host memory; with streams (torch >= 2.5) the GPU tensor stays in a forward stash
  until ``max_fwd_stash_size`` = 5 later tensors have been packed, then its GPU memory goes
  back to the allocator; in the backward each tensor is copied back when its node needs it (a
  new GPU allocation, dropped after use). The output head runs outside it (``NoOpManager``),
  and the loss runs outside the context in the recipe. With non-reentrant checkpointing the
  checkpointed layers' inputs are saved through the same hooks (``_NoopSaveInputs``), so they
  are offloaded too.

* ``compiled_loss`` (torchtune ``compile=True``: ``training.compile_loss`` compiles the chunked
  loss's ``compute_cross_entropy``, i.e. ``F.cross_entropy(logits.float(), labels)`` per chunk):
  inductor fuses the upcast, log-softmax and NLL into reductions over the bf16 logits, and
  AOTAutograd's min-cut partitioner saves what is cheapest to keep, the bf16 input chunk and a
  per-row fp32 logsumexp, recomputing the softmax in the backward, whose gradient is written in
  the input's dtype. No fp32 ``B x S x V`` tensor exists.
* ``compiled_layers`` (torchtune ``compile=True``: every decoder layer compiled): each layer runs
  AOTAutograd's min-cut-partitioned forward and backward graphs, so the forward keeps the
  partitioner's saved set (:mod:`oomkit.inprocess.probe_compile`).

* ``softmax_saves_input`` (torch < 1.11, e.g. the HF docs' runs of January 2022): the softmax
  node kept its input as well as its output (:mod:`oomkit.inprocess.probe_legacy`).

torchao's ``AdamW8bit`` (``torchao_adamw8bit``): :mod:`oomkit.inprocess.probe_torchao`.

Adafactor is transformers' (``Adafactor(scale_parameter=False, relative_step=False)``: what
``TrainingArguments(optim="adafactor")`` builds): factored second moments, no first moment.
"""

from __future__ import annotations

import contextlib
import math
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from oomkit.errors import InvalidSettingError

if TYPE_CHECKING:
    from oomkit.inprocess.probe_tracker import MemoryTracker

__all__ = [
    "STEP_OPTIMIZERS",
    "FakeBnbAdam",
    "StepOptions",
    "causal_lm_loss",
    "make_optimizer",
]

STEP_OPTIMIZERS: tuple[str, ...] = (
    "adamw",
    "adamw8bit",
    "paged_adamw",
    "paged_adamw8bit",
    "adafactor",
    "sgd",
    "sgd_momentum",
    "torchao_adamw8bit",
)
_BNB_OPT_BLOCK = 256  # bitsandbytes blockwise 8-bit optimizer block
_BNB_MIN_8BIT_SIZE = 4096  # Optimizer8bit min_8bit_size
_BNB_MIN_PAGED = 100_000  # Optimizer8bit.get_state_buffer: paged when numel >= 1e5
_CHUNKS = 8  # torchtune TransformerDecoder num_output_chunks (CEWithChunkedOutputLoss)
_MIN_OFFLOAD_BYTES = 1024  # torchtune OffloadActivations min_offload_size
_MAX_FWD_STASH = 5  # torchtune OffloadActivations max_fwd_stash_size
#: shapes torch.compile has compiled (and autotuned) per traced run, keyed by its tracker
_COMPILED: weakref.WeakKeyDictionary[Any, set[tuple[Any, ...]]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True, slots=True, kw_only=True)
class StepOptions:
    """How the training loop runs one step (see the module docstring)."""

    optimizer_impl: str = "foreach"
    zero_grad_set_to_none: bool = True
    optimizer_in_backward: bool = False
    loss: str = "standard"
    held_logits: str = "none"
    offload_activations: bool = False
    compiled_loss: bool = False
    #: torch.compile'd decoder layers: AOTAutograd's min-cut partition traced per layer
    #: (:mod:`oomkit.inprocess.probe_compile`)
    compiled_layers: bool = False
    #: torch < 1.11: ``softmax`` saved its input too (:mod:`oomkit.inprocess.probe_legacy`)
    softmax_saves_input: bool = False

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("optimizer_impl", self.optimizer_impl, ("foreach", "forloop", "fused")),
            ("loss", self.loss, ("standard", "chunked")),
            ("held_logits", self.held_logits, ("none", "compute", "fp32")),
        ):
            if value not in allowed:
                raise InvalidSettingError(
                    f"Unknown {name} '{value}' for the probe: use one of {', '.join(allowed)}.",
                    setting=name,
                    value=value,
                )

    @property
    def own_loss(self) -> bool:
        """The probe computes the loss from the logits (not the model's ``labels`` path)."""
        return self.loss != "standard" or self.held_logits != "none"


class FakeBnbAdam(torch.optim.Optimizer):
    """bitsandbytes ``Optimizer2State`` state layout (AdamW, 32- or 8-bit, paged or not).

    ``init_state``: 32-bit: ``state1``/``state2`` fp32 like the parameter; 8-bit (tensors of at
    least ``min_8bit_size`` elements): ``uint8`` states and fp32 ``absmax1``/``absmax2`` per
    256-element block. The fused update kernel allocates nothing, so ``step`` only makes the
    states. Paged states are handed to ``on_paged`` (the tracker stops counting them).
    """

    def __init__(
        self, params: Iterable[nn.Parameter], *, bits: int, paged: bool,
        on_paged: Callable[[torch.Tensor], None] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(params, {"lr": 1e-4})
        self.bits = bits
        self.paged = paged
        self.on_paged = on_paged

    def _buffer(self, p: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        buf = torch.zeros_like(p, dtype=dtype)
        if self.paged and p.numel() >= _BNB_MIN_PAGED and self.on_paged is not None:
            self.on_paged(buf)
        return buf

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        del closure
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None or self.state[p]:
                    continue
                state = self.state[p]
                state["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
                if self.bits == 32 or p.numel() < _BNB_MIN_8BIT_SIZE:
                    state["state1"] = self._buffer(p, torch.float32)
                    state["state2"] = self._buffer(p, torch.float32)
                    continue
                blocks = math.ceil(p.numel() / _BNB_OPT_BLOCK)
                state["state1"] = self._buffer(p, torch.uint8)
                state["state2"] = self._buffer(p, torch.uint8)
                state["absmax1"] = torch.zeros(blocks, dtype=torch.float32, device=p.device)
                state["absmax2"] = torch.zeros(blocks, dtype=torch.float32, device=p.device)


def make_optimizer(
    name: str, params: list[nn.Parameter], impl: str = "foreach",
    tracker: MemoryTracker | None = None,
) -> torch.optim.Optimizer:  # fmt: skip
    """The optimizer ``name`` over ``params`` (``impl`` for ``torch.optim`` ones)."""
    flags: dict[str, Any] = {"foreach": impl == "foreach"}
    if impl == "fused":
        flags = {"fused": True}
    forget = tracker.forget if tracker is not None else None
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, **flags)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-4, **flags)
    if name == "sgd_momentum":
        return torch.optim.SGD(params, lr=1e-4, momentum=0.9, **flags)
    if name in ("adamw8bit", "paged_adamw", "paged_adamw8bit"):
        bits = 32 if name == "paged_adamw" else 8
        return FakeBnbAdam(params, bits=bits, paged=name.startswith("paged"), on_paged=forget)
    if name == "torchao_adamw8bit":
        from oomkit.inprocess.probe_torchao import FakeTorchaoAdamW8bit

        # one process-wide compile cache per traced run (the tracker's lifetime)
        compiled = _COMPILED.setdefault(tracker, set()) if tracker is not None else None
        return FakeTorchaoAdamW8bit(params, compiled)
    if name == "adafactor":
        from transformers.optimization import Adafactor

        opt: torch.optim.Optimizer = Adafactor(  # type: ignore[no-untyped-call]
            params, lr=1e-3, scale_parameter=False, relative_step=False, warmup_init=False
        )
        return opt
    raise InvalidSettingError(
        f"Unknown optimizer '{name}' for the probe: use one of {', '.join(STEP_OPTIMIZERS)}.",
        setting="optimizer",
        value=name,
    )


@contextlib.contextmanager
def offload_activations(model: nn.Module, tracker: MemoryTracker) -> Iterator[None]:
    """torchtune's ``OffloadActivations`` with streams, on fake tensors (module docstring)."""
    stash: dict[int, torch.Tensor] = {}
    counter = [0]
    # torchtune's test: parameters and buffers stay (a view of a weight saved by a matmul is
    # neither, so it is offloaded and brought back, as in the recipe)
    kept_types = (nn.Parameter, *((nn.Buffer,) if hasattr(nn, "Buffer") else ()))

    def pack(t: torch.Tensor) -> Any:
        counter[0] += 1
        tid = counter[0]
        if t.element_size() * t.nelement() < _MIN_OFFLOAD_BYTES or isinstance(t, kept_types):
            return (False, t)
        host = torch.empty_like(t)
        tracker.forget(host)  # pinned host memory, not the GPU's
        for old in [k for k in stash if k <= tid - _MAX_FWD_STASH]:
            del stash[old]
        stash[tid] = t  # alive on the GPU until the copy is known done
        return (True, (tid, host))

    def unpack(packed: Any) -> torch.Tensor:
        offloaded, payload = packed
        if not offloaded:
            return payload  # type: ignore[no-any-return]
        tid, host = payload
        gpu = stash.pop(tid, None)
        if gpu is not None:
            return gpu
        stash.clear()  # the backward has started: the forward stash is released
        back: torch.Tensor = host.clone()  # brought back: a new GPU allocation
        return back

    head = getattr(model, "lm_head", None)
    handles: list[Any] = []
    if isinstance(head, nn.Module):
        noop = torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
        handles.append(head.register_forward_pre_hook(lambda *a: noop.__enter__()))
        handles.append(head.register_forward_hook(lambda *a: noop.__exit__(), always_call=True))
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            yield
    finally:
        for h in handles:
            h.remove()
    stash.clear()


class _CompiledCrossEntropy(torch.autograd.Function):
    """The memory behaviour of ``torch.compile(F.cross_entropy(x.float(), y))`` (module doc):
    saves the input chunk and a per-row fp32 logsumexp; the gradient is in the input dtype."""

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        lse = logits.new_empty(logits.shape[:-1], dtype=torch.float32)
        ctx.save_for_backward(logits, lse, labels)
        return logits.new_zeros((), dtype=torch.float32)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Any:
        logits, _lse, _labels = ctx.saved_tensors
        return torch.empty_like(logits), None


def causal_lm_loss(
    model: nn.Module, inputs: Mapping[str, Any], opts: StepOptions,
    tracker: MemoryTracker | None = None,
) -> tuple[torch.Tensor, list[torch.Tensor]]:  # fmt: skip
    """(loss, tensors the loop holds through ``backward``) for ``opts.own_loss``."""
    import torch.nn.functional as F

    ids = inputs["input_ids"]
    ctx: Any = contextlib.nullcontext()
    if opts.offload_activations and tracker is not None:
        ctx = offload_activations(model, tracker)
    if opts.loss == "chunked":
        body = getattr(model, "model", None)
        head = getattr(model, "lm_head", None)
        if not isinstance(body, nn.Module) or not isinstance(head, nn.Module):
            raise InvalidSettingError(
                "The chunked loss needs a causal LM with .model and .lm_head.", setting="loss"
            )
        with ctx:
            hidden = body(input_ids=ids, use_cache=False)[0]
            chunks = [head(c) for c in hidden.chunk(_CHUNKS, dim=1)]
        del hidden
        labels = ids.chunk(_CHUNKS, dim=1)
        total = torch.zeros((), dtype=torch.float32, device=ids.device)
        n = ids.numel()
        for logit, label in zip(chunks, labels, strict=True):
            flat = logit.reshape(-1, logit.size(-1))
            if opts.compiled_loss:
                ce = _CompiledCrossEntropy.apply(flat, label.reshape(-1))  # type: ignore[no-untyped-call]
            else:
                ce = F.cross_entropy(flat.float(), label.reshape(-1), reduction="sum")
            total = total + ce
        del chunks  # the recipe frees the logits before backward
        return total / n, []
    with ctx:
        out = model(input_ids=ids, use_cache=False)
    logits = out.logits
    del out
    if opts.held_logits == "fp32":
        logits = logits.float()
    logits = logits[..., :-1, :].contiguous()
    loss = F.cross_entropy(logits.transpose(1, 2), ids[..., 1:])
    return loss, [logits]


@dataclass(frozen=True, slots=True)
class StepBytes:
    """What one traced step left behind (for :class:`~oomkit.inprocess.probe.ProbeResult`)."""

    gradients_bytes: int
    optimizer_state_bytes: int
    saved_activations_bytes: int


def _tensors(obj: Any) -> Iterable[torch.Tensor]:
    from oomkit.inprocess.probe_calls import tensors_in

    return tensors_in(obj)


def train_step(
    model: nn.Module, inputs: Any, *, tracker: MemoryTracker, trainable: list[nn.Parameter],
    optimizer: str, opts: StepOptions, steady_state: bool, forward: Callable[[], Any],
    autocast: Any, notes: list[str],
) -> StepBytes:  # fmt: skip
    """Trace forward, backward and the optimizer step as ``opts`` says the loop runs them.

    ``forward`` runs the model's own forward (with ``labels``); it is used unless
    ``opts.own_loss``. Runs inside the caller's fake mode and tracker.
    """
    from oomkit.inprocess.probe_calls import loss_of, phase
    from oomkit.inprocess.probe_legacy import legacy_softmax

    if opts.optimizer_in_backward:
        opts_by_param = {
            p: make_optimizer(optimizer, [p], opts.optimizer_impl, tracker) for p in trainable
        }
        optims = list(opts_by_param.values())
    else:
        optims = [make_optimizer(optimizer, trainable, opts.optimizer_impl, tracker)]
    keep_grads = not opts.zero_grad_set_to_none and not opts.optimizer_in_backward
    if steady_state:
        # the previous step, as the loop ran it: all gradients then one step, or (optimizer in
        # backward) one parameter's gradient and update at a time
        tracker.phase = "setup"
        if opts.optimizer_in_backward:
            for p, o in opts_by_param.items():
                p.grad = torch.zeros_like(p)
                o.step()
                o.zero_grad(set_to_none=True)
        else:
            for p in trainable:
                p.grad = torch.zeros_like(p)
            for o in optims:
                o.step()
                o.zero_grad(set_to_none=not keep_grads)
        if keep_grads:
            for p in trainable:
                if p.grad is not None:
                    tracker.set_role(p.grad, "gradients")
        for o in optims:
            for st in o.state.values():
                for t in _tensors(st):
                    tracker.set_role(t, "optimizer_state")
        tracker.reset_peak()
        notes.append("steady state: optimizer states exist from the previous step")
        if keep_grads:
            notes.append("zero_grad(set_to_none=False): gradients stay allocated between steps")
    if opts.optimizer_in_backward:
        notes.append("optimizer in backward: each parameter steps as its gradient is ready")

        def hook(q: torch.Tensor) -> None:
            if q.grad is not None:
                tracker.set_role(q.grad, "gradients")
            o = opts_by_param[q]  # type: ignore[index]
            o.step()
            o.zero_grad(set_to_none=True)

    else:

        def hook(q: torch.Tensor) -> None:
            if q.grad is not None:
                tracker.set_role(q.grad, "gradients")

    for p in trainable:
        p.register_post_accumulate_grad_hook(hook)  # type: ignore[no-untyped-call]
    held: list[torch.Tensor] = []

    def legacy() -> contextlib.AbstractContextManager[None]:
        return legacy_softmax() if opts.softmax_saves_input else contextlib.nullcontext()

    if opts.softmax_saves_input:
        notes.append("torch < 1.11 autograd: softmax saves its input as well as its output")
    with legacy(), phase(tracker, "forward"), autocast:
        if opts.own_loss:
            loss, held = causal_lm_loss(model, inputs, opts, tracker)
        elif opts.offload_activations:
            with offload_activations(model, tracker):
                out = forward()
            loss = loss_of(out)
            del out
        else:
            out = forward()
            loss = loss_of(out)
            del out
    saved = tracker.live_from("forward")
    with legacy(), phase(tracker, "backward"):  # checkpoint recomputation runs it again
        loss.backward()  # type: ignore[no-untyped-call]
    del loss, held
    for p in trainable:  # FSDP: the sharded gradient is assigned, never accumulated, so no hook
        if p.grad is not None:
            tracker.set_role(p.grad, "gradients")
    # by storage: FSDP2's sharded gradients are views of one reduce-scatter output per unit
    grads = sum(
        {
            id(a): a.n_bytes
            for a in (tracker.track(p.grad, "gradients") for p in trainable if p.grad is not None)
        }.values()
    )
    if not opts.optimizer_in_backward:
        with phase(tracker, "optimizer_step"):
            optims[0].step()
    for o in optims:
        for st in o.state.values():
            for t in _tensors(st):
                tracker.set_role(t, "optimizer_state")
    states = sum(
        {
            id(a): a.n_bytes
            for a in (
                tracker.track(t, "optimizer_state")
                for o in optims
                for st in o.state.values()
                for t in _tensors(st)
            )
            if id(a) not in tracker.forgotten
        }.values()
    )
    for o in optims:
        o.zero_grad(set_to_none=not keep_grads)
    return StepBytes(
        gradients_bytes=grads, optimizer_state_bytes=states, saved_activations_bytes=saved
    )
