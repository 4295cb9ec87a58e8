"""What a training log says about the run: framework, phase and the settings that size it.

:func:`training_setup_from_log` reads the lines the training stacks print before (and while)
they fail and returns a :class:`TrainingLogSetup` with every fact it found and the log line it
came from; a fact the log does not state stays ``None`` (never guessed). Recognised:

* HF ``Trainer`` (``***** Running training *****`` block: ``Instantaneous batch size per device``,
  ``Gradient Accumulation steps``, ``Total train batch size``, ``Number of trainable
  parameters``), ``TrainingArguments(...)`` dumps (``per_device_train_batch_size=8,``,
  ``gradient_checkpointing=True,``, ``optim=adamw_torch,``, ``bf16=True,``, ``fsdp=[...]``) and
  the same options on a command line (``--per_device_train_batch_size 8``);
* PEFT (``trainable params: N || all params: M || trainable%: p``, ``LoraConfig(... r=16,
  target_modules={...})``) and bitsandbytes 4-bit loading (``load_in_4bit=True``,
  ``bnb_4bit_quant_type='nf4'``);
* DeepSpeed (``zero_optimization_stage``/``"stage": N`` config prints, ``Creating ... ZeRO stage N
  optimizer``, ``train_micro_batch_size_per_gpu``, ``offload_optimizer ... 'device': 'cpu'``);
* accelerate (``Distributed environment: FSDP``/``DEEPSPEED``, ``Num processes: N``, ``Mixed
  precision type: bf16``) and torchrun (``--nproc_per_node``);
* torchtune configs (``batch_size: 2``, ``enable_activation_checkpointing: True``,
  ``max_seq_len: 2048``, ``lora_rank: 8``, ``CEWithChunkedOutputLoss``, optimizer components,
  ``enable_activation_offloading: True``, ``optimizer_in_bwd: True``, ``dtype: bf16`` — the
  recipe casts the model to that dtype and steps it: no fp32 master copy —, the ``model:
  _component_`` builder).

The phase is the traceback's (``LogContext.frame_phase``: ``loss.backward()`` /
``torch/autograd`` → backward, ``optimizer.step()`` / ``torch/optim`` → optimizer step) refined
with DeepSpeed's, FSDP's and the Trainer's own frames (``engine.backward``, FSDP's
``_post_backward_hook`` and ZeRO's gradient-reduce hooks → backward, ``zero/stage3.py ... in
step``, ``training_step``). Pure: text in, value out.

>>> s = training_setup_from_log("  Instantaneous batch size per device = 8\\n"
...     "trainable params: 4,194,304 || all params: 6,742,609,920 || trainable%: 0.0622\\n"
...     '  File "train.py", line 9, in <module>\\n    loss.backward()')
>>> s.framework, s.micro_batch, s.method, s.phase
('trainer', 8, 'lora', 'backward')
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

__all__ = ["TrainingLogSetup", "already_done", "training_note", "training_setup_from_log"]

_FLAGS = re.IGNORECASE | re.MULTILINE
_NUM = r"(\d[\d,]{0,12})"


def _int(text: str) -> int:
    return int(text.replace(",", ""))


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingLogSetup:
    """Training facts one log states (``None``: not stated). ``evidence`` maps fact -> line."""

    framework: str | None = None  # trainer | deepspeed | accelerate | torchtune | peft | pytorch
    phase: str | None = None  # forward | backward | optimizer_step
    method: str | None = None  # full | lora | qlora
    micro_batch: int | None = None
    grad_accum: int | None = None
    seq: int | None = None
    grad_checkpointing: bool | None = None
    zero: int | None = None
    fsdp_strategy: str | None = None  # FULL_SHARD | SHARD_GRAD_OP | HYBRID_SHARD | NO_SHARD
    gpus: int | None = None
    offload_optimizer: bool | None = None
    optimizer: str | None = None  # a TrainingSettings.optimizer name
    mixed_precision: str | None = None  # bf16 | fp16 | no
    lora_rank: int | None = None
    lora_targets: tuple[str, ...] | None = None
    loss: str | None = None  # chunked | fused
    activation_offloading: bool | None = None  # torchtune enable_activation_offloading
    #: torchtune ``optimizer_in_bwd: True``: each parameter steps in its backward hook
    optimizer_in_backward: bool | None = None
    #: fp32 master weights: False for a torchtune recipe (``dtype: bf16`` trains the bf16
    #: parameters themselves, no fp32 copy); None when the log does not settle it
    master_weights: bool | None = None
    #: torchtune model builder (``model: _component_: torchtune.models.llama3_1.llama3_1_8b``)
    torchtune_model: str | None = None
    model_name: str | None = None
    trainable_params: int | None = None
    evidence: dict[str, str] = field(default_factory=dict)

    @property
    def is_training(self) -> bool:
        """True when the log shows a training run (a framework line or a training phase)."""
        return self.framework is not None or self.phase in ("backward", "optimizer_step")


# fact -> patterns (first group is the value), tried in order; the first match wins
_INT_FACTS: dict[str, tuple[str, ...]] = {
    "micro_batch": (
        r"Instantaneous batch size per device\s*=\s*" + _NUM,
        r"\bper_device_train_batch_size\s*[=:]?\s*" + _NUM,
        r"\btrain_micro_batch_size_per_gpu\W{1,40}?" + _NUM,
        r"\bmicro_batch_size\s*[=:]\s*" + _NUM,
        r"^\s*batch_size\s*:\s*" + _NUM + r"\s*$",
    ),
    "grad_accum": (
        r"Gradient Accumulation steps\s*=\s*" + _NUM,
        r"\bgradient_accumulation_steps\W{1,40}?" + _NUM,
    ),
    "seq": (
        r"\bmax_seq_len(?:gth)?\s*[=:]?\s*" + _NUM,
        r"\bcutoff_len\s*[=:]?\s*" + _NUM,
        r"\bblock_size\s*[=:]?\s*" + _NUM,
        r"\bmodel_max_length\s*[=:]?\s*" + _NUM,
        r"\bmax_length\s*[=:]?\s*" + _NUM,
    ),
    "zero": (
        r"\bzero_optimization_stage\W{1,40}?([0-3])\b",
        r"ZeRO[ -]?stage[ :=]*([0-3])\b",
        r"\bzero_stage\s*[=:]?\s*([0-3])\b",
        r"zero_optimization\W{1,20}\{[^}\n]{0,80}?['\"]stage['\"]\s*:\s*([0-3])",
        r"\bds_z([0-3])\w*\.json",
        r"\bzero([0-3])\w*\.json",
        # a frame of ZeRO-3's optimizer (deepspeed/runtime/zero/stage3.py,
        # DeepSpeedZeroOptimizer_Stage3; stages 1-2 live in stage_1_and_2.py)
        r"deepspeed/runtime/zero/stage(3)\.py",
    ),
    "gpus": (
        r"^\s*Num processes\s*:\s*" + _NUM,
        r"--nproc[_-]per[_-]node[= ]" + _NUM,
        r"--num_processes[= ]" + _NUM,
        r"\bworld[_ ]size\s*(?:[=:]|\.{3,})\s*" + _NUM,
        r"^\s*_?n_gpu\s*=\s*" + _NUM,
    ),
    "lora_rank": (
        r"LoraConfig\([^)\n]{0,400}?\br\s*=\s*" + _NUM,
        r"\blora_r(?:ank)?\s*[=:]?\s*" + _NUM,
    ),
}

_TRAINER = re.compile(
    r"\*{3,} Running training \*{3,}|TrainingArguments\(|\bin _inner_training_loop\b|"
    r"Instantaneous batch size per device|"
    # a frame of the HF Trainer's step (transformers/trainer.py `training_step` ->
    # `compute_loss`): a traceback cut below `_inner_training_loop` still shows one
    r"transformers/trainer\.py\"?, line \d{1,6}, in (?:training_step|compute_loss)\b"
)
_ACCEL = re.compile(r"Distributed environment:\s*(?:DistributedType\.)?(\w+)|accelerate launch|"
                    r"accelerator\.backward\(", re.IGNORECASE)  # fmt: skip
_DEEPSPEED = re.compile(r"\bdeepspeed\b|DeepSpeed", re.IGNORECASE)
_TORCHTUNE = re.compile(r"\btorchtune\b|\btune run\b")
_PEFT = re.compile(
    r"trainable params:\s*" + _NUM + r"\s*\|\|\s*all params:\s*" + _NUM, re.IGNORECASE
)
_TRAINER_TRAINABLE = re.compile(r"Number of trainable parameters\s*=\s*" + _NUM)
_LORA = re.compile(r"LoraConfig\(|\blora_(?:r|rank|alpha|target)|\bpeft\b|lora_llama", re.I)
_QLORA = re.compile(
    r"load_in_4bit\s*[=:]\s*True|bnb_4bit_quant_type|\bqlora\b|\bnf4\b|--bits[ =]4\b", re.I
)
_GC_ON = re.compile(
    r"gradient_checkpointing\s*[=:]\s*True|--gradient_checkpointing(?:\s+True)?(?:\s|$)|"
    r"enable_activation_checkpointing\s*:\s*True|is incompatible with gradient checkpointing|"
    r"activation_checkpointing\s*[=:]\s*True",
    _FLAGS,
)
_GC_OFF = re.compile(
    r"gradient_checkpointing\s*[=:]\s*False|enable_activation_checkpointing\s*:\s*False", _FLAGS
)
_FSDP_STRATEGY = re.compile(r"\b(full_shard|shard_grad_op|hybrid_shard|no_shard)\b", re.IGNORECASE)
_FSDP = re.compile(
    r"Distributed environment:\s*(?:DistributedType\.)?FSDP|\bfsdp\s*[=:]\s*\S", re.IGNORECASE
)
_OFFLOAD = re.compile(
    r"offload_optimizer\W{1,20}(?:\{[^}\n]{0,20})?['\"]?device['\"]?\W{1,5}(cpu|nvme)|"
    r"offload_optimizer=\w*\(device='(?:cpu|nvme)'|CPU Offload:\s*True|"
    r"zero_offload\W{1,20}True|--offload[_-]optimizer",
    re.IGNORECASE,
)
_MP = (
    ("bf16", re.compile(r"\bbf16\s*[=:]\s*True|--bf16\b|Mixed precision type:\s*bf16|"
                        r"(?:bf16|bfloat16)_enabled\W{1,40}True|\bdtype\s*:\s*bf16\b", re.I)),
    ("fp16", re.compile(r"\bfp16\s*[=:]\s*True|--fp16\b|Mixed precision type:\s*fp16|"
                        r"fp16_enabled\W{1,40}True", re.I)),
)  # fmt: skip
# optimizer names as the stacks print them -> TrainingSettings.optimizer
_OPTIM = (
    (re.compile(r"paged_adamw_8bit|PagedAdamW8bit", re.I), "paged_adamw8bit"),
    (re.compile(r"paged_adamw(?:_32bit)?|PagedAdamW\b", re.I), "paged_adamw"),
    (re.compile(r"adamw_bnb_8bit|adamw_8bit|AdamW8bit|Adam8bit|adamw8bit", re.I), "adamw8bit"),
    (re.compile(r"\boptim\s*[=:]\s*adafactor|Adafactor\(|optim\.Adafactor", re.I), "adafactor"),
    (re.compile(r"\boptim\s*[=:]\s*lion|\bLion\b", re.I), "lion"),
    (re.compile(r"\boptim\s*[=:]\s*sgd|optim\.SGD\b", re.I), "sgd"),
    (re.compile(r"\boptim\s*[=:]\s*adamw|FusedAdam|torch\.optim\.AdamW|Basic Optimizer = "
                r"\w*Adam", re.I), "adamw"),
)  # fmt: skip
_OPT_IN_BWD = re.compile(r"\boptimizer_in_bwd\s*[=:]\s*(True|False)\b", re.I)
# a torchtune recipe's precision: `dtype: bf16` casts the model and the optimizer works on those
# bf16 parameters (recipes/full_finetune_single_device.py: `self._dtype = training.get_dtype(...)`,
# `model = ...; with training.set_default_dtype(self._dtype)`), so there is no fp32 master copy
_TT_DTYPE = re.compile(r"^\s*dtype\s*:\s*(bf16|fp16|fp32)\s*$", re.MULTILINE)
_TT_MODEL = re.compile(r"^model:\s*\n\s+_component_:\s*(torchtune\.models\.[\w.]+)", re.MULTILINE)
_OFFLOAD_ACT = re.compile(r"enable_activation_offloading\s*[=:]\s*(True|False)", re.I)
_CHUNKED = re.compile(r"CEWithChunkedOutputLoss|chunked_?(?:cross_?entropy|ce|loss)", re.I)
_FUSED = re.compile(
    r"use_liger_kernel\s*[=:]\s*True|LigerFusedLinearCrossEntropy|--use_liger", re.I
)
_TARGETS = re.compile(
    r"target_modules\s*[=:]\s*[\[{(]?([\w'\", .-]{3,200}?)[\]})]|lora_target(?:_modules)?\s*[=:]\s*"
    r"([\w,.-]+)|lora_attn_modules\s*:\s*\[([^\]]{3,200})\]",
    re.IGNORECASE,
)
_MODEL = re.compile(
    r"--model_name_or_path[= ]([\w./-]+)|model_name_or_path\s*[=:]\s*['\"]?([\w./-]+)|"
    r"models--([\w.-]+)--([\w.-]+)|base_model_name_or_path\s*[=:]\s*['\"]?([\w./-]+)|"
    r"checkpoint_dir\s*:\s*\S*?/([\w.-]+)/?\s*$",
    _FLAGS,
)
# traceback frames that put the failure in a training phase beyond what parse_torch knows
_BACKWARD_FRAMES = (
    "engine.backward",
    "in backward",
    ".backward(",
    "_engine_run_backward",
    "in allreduce_gradients",
    "in reduce_ready_partitions_and_remove_grads",
    "in reduce_partition_and_remove_grads",
    "in reduce_independent_p_g_buckets_and_remove_grads",
    "in _post_backward_hook",  # FSDP (torch/distributed/fsdp/_runtime_utils.py)
    "in _pre_backward_hook",
    "in post_backward",  # FSDP2
    "in _post_backward_final_callback",
)
_STEP_FRAMES = ("optimizer.step(", "in _optimizer_step", "torch/optim/", "in _single_tensor_adam",
                "in _multi_tensor_adam", "in step_with_", "_take_model_step")  # fmt: skip
_STEP_DS = re.compile(r"deepspeed/runtime/(?:zero|bf16_optimizer|fp16)/\S+\", line \d+, in step\b")
_TRAIN_FRAMES = ("in training_step", "in _inner_training_loop", "in compute_loss", "trainer.train(",
                 "in train_step", "in _training_step")  # fmt: skip


def _first(patterns: tuple[str, ...], text: str) -> tuple[int, str] | None:
    for p in patterns:
        m = re.search(p, text, _FLAGS)
        if m is not None:
            try:
                return _int(m.group(1)), _line_of(text, m.start())
            except ValueError:
                continue
    return None


def _line_of(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end >= 0 else len(text)].strip()[:200]


def _phase(text: str, frame_phase: str | None) -> tuple[str | None, str | None]:
    """(phase, evidence line): the traceback's frames, DeepSpeed's optimizer step first."""
    m = _STEP_DS.search(text)
    if m is not None:
        return "optimizer_step", _line_of(text, m.start())
    found: dict[str, str] = {}
    for phase, needles in (("optimizer_step", _STEP_FRAMES), ("backward", _BACKWARD_FRAMES),
                           ("forward", _TRAIN_FRAMES)):  # fmt: skip
        # the first line holding any needle: str.find per needle (C speed, linear in the log)
        hits = [i for n in needles if (i := text.find(n)) >= 0]
        if hits:
            found[phase] = _line_of(text, min(hits))
    if frame_phase == "checkpoint_save":  # revfix18e: a save's frames outrank the loop's
        return frame_phase, None
    if frame_phase in ("backward", "optimizer_step"):
        return frame_phase, found.get(frame_phase)
    for phase in ("optimizer_step", "backward"):
        if phase in found:
            return phase, found[phase]
    if "forward" in found or frame_phase == "forward":
        return "forward", found.get("forward")
    return None, None


def _framework(text: str) -> tuple[str | None, str | None]:
    for name, rx in (("deepspeed", _DEEPSPEED), ("torchtune", _TORCHTUNE), ("trainer", _TRAINER),
                     ("accelerate", _ACCEL), ("peft", _PEFT)):  # fmt: skip
        m = rx.search(text)
        if m is not None:
            return name, _line_of(text, m.start())
    return None, None


def _method(text: str, ev: dict[str, str]) -> tuple[str | None, int | None]:
    trainable = None
    m = _PEFT.search(text)
    if m is not None:
        trainable, total = _int(m.group(1)), _int(m.group(2))
        ev["method"] = _line_of(text, m.start())
        lora = total > 0 and trainable * 2 < total
    else:
        t = _TRAINER_TRAINABLE.search(text)
        if t is not None:
            trainable = _int(t.group(1))
        lm = _LORA.search(text)
        lora = lm is not None
        if lm is not None:
            ev["method"] = _line_of(text, lm.start())
    q = _QLORA.search(text)
    if q is not None and lora:
        ev["method"] = _line_of(text, q.start())
        return "qlora", trainable
    return ("lora" if lora else None), trainable


def _targets(text: str) -> tuple[str, ...] | None:
    m = _TARGETS.search(text)
    if m is None:
        return None
    raw = next(g for g in m.groups() if g is not None)
    names = tuple(dict.fromkeys(x for x in re.findall(r"[A-Za-z_][\w]*", raw) if x != "None"))
    if "all" in names and "linear" in names:
        return ("all-linear",)
    return names or None


def _model_name(text: str) -> str | None:
    m = _MODEL.search(text)
    if m is None:
        return None
    g = m.groups()
    if g[2] is not None and g[3] is not None:  # HF cache dir models--org--name
        return f"{g[2]}/{g[3]}"
    name = next((x for x in g if x is not None), None)
    return name.rstrip("/") if name else None


# lower-case words one of which every line the patterns above can match contains; a long log is
# cut down to those lines first (Python's re over megabytes x dozens of patterns is slow)
_KEYWORDS = (
    "batch size", "batch_size", "accumulation", "max_seq", "cutoff_len", "block_size",
    "max_length", "zero", "ds_z",
    "num processes", "num_processes", "nproc", "world", "n_gpu", "lora", "running training",
    "trainingarguments", "_inner_training_loop", "distributed environment", "accelerat",
    "deepspeed", "torchtune", "tune run", "trainable", "peft", "4bit", "qlora", "nf4", "--bits",
    "checkpointing", "fsdp", "shard", "offload", "bf16", "bfloat16", "fp16", "dtype", "optim",
    "adam", "adafactor", "lion", "sgd", "chunk", "liger", "target", "model_name_or_path",
    "models--", "checkpoint_dir", "in_bwd", "_component_",
)  # fmt: skip
_SMALL_LOG = 256 * 1024
_HITS_PER_KEYWORD = 400


def _relevant_lines(text: str) -> str:
    """``text`` itself when short, else only its lines holding a :data:`_KEYWORDS` word (the
    first and the last :data:`_HITS_PER_KEYWORD` of each)."""
    if len(text) <= _SMALL_LOG:
        return text
    low = text.lower()
    starts: set[int] = set()
    for kw in _KEYWORDS:  # the first and the last hits: set-up lines, then the failure
        i, hits = low.find(kw), 0
        while i >= 0 and hits < _HITS_PER_KEYWORD:
            starts.add(low.rfind("\n", 0, i) + 1)
            end = low.find("\n", i)
            i = low.find(kw, end) if end >= 0 else -1
            hits += 1
        if i < 0:
            continue  # every hit was found going forward: the backward search adds none
        i, hits = low.rfind(kw), 0
        while i >= 0 and hits < _HITS_PER_KEYWORD:
            start = low.rfind("\n", 0, i) + 1
            starts.add(start)
            i = low.rfind(kw, 0, start) if start > 0 else -1
            hits += 1
    out = []
    for start in sorted(starts):
        end = text.find("\n", start)
        out.append(text[start : end if end >= 0 else len(text)])
    return "\n".join(out)


def training_setup_from_log(text: str, frame_phase: str | None = None) -> TrainingLogSetup:
    """Every training fact ``text`` states (see the module docstring); pure, never raises.

    Args:
        text: the log (or pasted message).
        frame_phase: the traceback phase the torch parser found (``LogContext.frame_phase``).
    """
    return _setup(text, frame_phase)


_HEAD_TAIL = 2 * 1024 * 1024


def _head_and_tail(text: str) -> str:
    """``text`` when at most twice :data:`_HEAD_TAIL`, else its first and last :data:`_HEAD_TAIL`
    characters (cut at line ends): a training log states its set-up at the start and its failure
    (traceback, last steps) at the end, and the doctor's time must not grow with the middle."""
    if len(text) <= 2 * _HEAD_TAIL:
        return text
    head_end = text.rfind("\n", 0, _HEAD_TAIL)
    tail_start = text.find("\n", len(text) - _HEAD_TAIL)
    head = text[: head_end if head_end > 0 else _HEAD_TAIL]
    tail = text[tail_start + 1 if tail_start >= 0 else len(text) - _HEAD_TAIL :]
    return head + "\n" + tail


# (docfix22) the ranks a log shows: torchrun's per-rank prefix ("[rank7]:",
# torch/distributed/elastic/multiprocessing/api.py tee'd lines), DeepSpeed's "[Rank 7]"
# (deepspeed/utils/logging.py log_dist), the launcher's environment ("RANK=7", "LOCAL_RANK=7",
# "WORLD_SIZE=8", torch.distributed.run); a rank r means at least r + 1 processes, one GPU each
_RANK = re.compile(
    r"\[(?:rank|Rank|RANK) ?(\d{1,4})\]|\b(?:LOCAL_)?RANK=(\d{1,4})\b|\bWORLD_SIZE=(\d{1,4})\b"
)


def _ranks_seen(text: str) -> tuple[int, str] | None:
    """The processes the log's ranks imply (the highest rank + 1, or WORLD_SIZE), with the line."""
    best: tuple[int, str] | None = None
    for m in _RANK.finditer(text):
        n = int(m.group(3)) if m.group(3) else int(m.group(1) or m.group(2)) + 1
        if best is None or n > best[0]:
            best = (n, _line_of(text, m.start()))
    return best


@functools.lru_cache(maxsize=2)  # the doctor asks twice per log (fixes, then its note)
def _setup(text: str, frame_phase: str | None) -> TrainingLogSetup:
    text = _head_and_tail(text)
    ranks = _ranks_seen(text) if "rank" in text.lower() or "WORLD_SIZE" in text else None
    phase, ph_line = _phase(text, frame_phase)
    text = _relevant_lines(text)
    ev: dict[str, str] = {}
    ints: dict[str, int] = {}
    for fact, patterns in _INT_FACTS.items():
        hit = _first(patterns, text)
        if hit is not None and (hit[0] > 0 or fact == "zero"):
            ints[fact], ev[fact] = hit
    # a stated world size below the ranks the log shows is a per-node count or stale: the job
    # uses at least as many GPUs as its ranks
    if ranks is not None and ranks[0] > ints.get("gpus", 0):
        ints["gpus"], ev["gpus"] = ranks
    framework, fw_line = _framework(text)
    if fw_line:
        ev["framework"] = fw_line
    if ph_line:
        ev["phase"] = ph_line
    method, trainable = _method(text, ev)
    gc: bool | None = None
    if (m := _GC_ON.search(text)) is not None:
        gc, ev["grad_checkpointing"] = True, _line_of(text, m.start())
    elif (m := _GC_OFF.search(text)) is not None:
        gc, ev["grad_checkpointing"] = False, _line_of(text, m.start())
    fsdp = None
    if (m := _FSDP_STRATEGY.search(text)) is not None:
        fsdp, ev["fsdp_strategy"] = m.group(1).upper(), _line_of(text, m.start())
    elif (m := _FSDP.search(text)) is not None:  # FSDP without a strategy: its default
        fsdp, ev["fsdp_strategy"] = "FULL_SHARD", _line_of(text, m.start())
    offload = None
    if (m := _OFFLOAD.search(text)) is not None:
        offload, ev["offload_optimizer"] = True, _line_of(text, m.start())
    optimizer = None
    for rx, name in _OPTIM:
        if (m := rx.search(text)) is not None:
            optimizer, ev["optimizer"] = name, _line_of(text, m.start())
            break
    mp = None
    for name, rx in _MP:
        if (m := rx.search(text)) is not None:
            mp, ev["mixed_precision"] = name, _line_of(text, m.start())
            break
    loss = None
    if (m := _FUSED.search(text)) is not None:
        loss, ev["loss"] = "fused", _line_of(text, m.start())
    elif (m := _CHUNKED.search(text)) is not None:
        loss, ev["loss"] = "chunked", _line_of(text, m.start())
    act_off = None
    if (m := _OFFLOAD_ACT.search(text)) is not None:
        act_off, ev["activation_offloading"] = (
            m.group(1).lower() == "true",
            _line_of(text, m.start()),
        )
    opt_bwd = None
    if (m := _OPT_IN_BWD.search(text)) is not None:
        opt_bwd, ev["optimizer_in_backward"] = (
            m.group(1).lower() == "true",
            _line_of(text, m.start()),
        )
    master = None
    tt_model = None
    if framework == "torchtune":
        if (m := _TT_DTYPE.search(text)) is not None:
            master, ev["master_weights"] = m.group(1) == "fp32", _line_of(text, m.start())
            if m.group(1) == "fp32" and mp is None:  # a recipe in fp32: no mixed precision
                mp, ev["mixed_precision"] = "no", ev["master_weights"]
        if (m := _TT_MODEL.search(text)) is not None:
            tt_model = m.group(1)
    zero = ints.get("zero")
    return TrainingLogSetup(
        framework=framework,
        phase=phase,
        method=method,
        micro_batch=ints.get("micro_batch"),
        grad_accum=ints.get("grad_accum"),
        seq=ints.get("seq"),
        grad_checkpointing=gc,
        zero=zero,
        fsdp_strategy=fsdp if zero is None else None,
        gpus=ints.get("gpus"),
        offload_optimizer=offload,
        optimizer=optimizer,
        mixed_precision=mp,
        lora_rank=ints.get("lora_rank") if method in ("lora", "qlora") else None,
        lora_targets=_targets(text) if method in ("lora", "qlora") else None,
        loss=loss,
        activation_offloading=act_off,
        optimizer_in_backward=opt_bwd,
        master_weights=master,
        torchtune_model=tt_model,
        model_name=_model_name(text),
        trainable_params=trainable,
        evidence=ev,
    )


def already_done(text: str, frame_phase: str | None) -> tuple[str, ...]:
    """Title prefixes of the rules' generic fixes that the training log shows are already in
    place (gradient checkpointing on; a 4-bit QLoRA base; bf16/fp16): suggesting them again
    is noise."""
    setup = training_setup_from_log(text, frame_phase)
    if not setup.is_training:
        return ()
    done: list[str] = []
    if setup.grad_checkpointing:
        done.append("Recompute activations")
    if setup.method == "qlora":
        done.append("Load the weights quantized")
    if setup.mixed_precision in ("bf16", "fp16"):
        done.append("Run in bf16/fp16")
    return tuple(done)


def training_note(text: str, frame_phase: str | None) -> str | None:
    """One line naming the training setup the log shows (for ``Diagnosis.notes``), or None."""
    setup = training_setup_from_log(text, frame_phase)
    if not setup.is_training:
        return None
    facts = [f"{setup.framework or 'pytorch'} training run"]
    if setup.phase:
        facts.append(f"failed in the {setup.phase.replace('_', ' ')}")
    for label, value in (
        ("method", setup.method),
        ("micro-batch", setup.micro_batch),
        ("gradient accumulation", setup.grad_accum),
        ("seq", setup.seq),
        ("ZeRO stage", setup.zero),
        ("FSDP", setup.fsdp_strategy),
        ("GPUs", setup.gpus),
        ("optimizer", setup.optimizer),
        ("mixed precision", setup.mixed_precision),
        ("gradient checkpointing", setup.grad_checkpointing),
        ("LoRA rank", setup.lora_rank),
        ("model", setup.model_name),
    ):
        if value is not None:
            facts.append(f"{label} {value}")
    return "log shows: " + ", ".join(facts)
