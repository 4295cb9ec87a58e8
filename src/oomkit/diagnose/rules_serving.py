"""Diagnosis of serving-engine errors (vLLM, SGLang, TGI, TensorRT-LLM) and of the rest (JAX/XLA,
TensorFlow, accelerate, Linux OOM killer, Windows pagefile).

vLLM sizes its KV pool as the residual of ``total x gpu_memory_utilization`` after weights,
activation peak and non-torch memory (memory-formulas.md §4.8), so a KV shortfall of ``need -
avail`` GiB is closed by ``max_model_len x avail / need`` or by raising the utilization by
``(need - avail) / total``.
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic, shorter_context, size_text
from oomkit.diagnose.parse_other import tensor_bytes
from oomkit.diagnose.rules_hosts import pod_oomkilled
from oomkit.diagnose.rules_sglang import _mfs_fix
from oomkit.diagnose.rules_shm import shm_bus_error, shm_full
from oomkit.diagnose.rules_tf import tf_driver_while_running, tf_optimizer_state
from oomkit.diagnose.rules_vllm_kv import vllm_kv, vllm_no_blocks
from oomkit.diagnose.swap_fix import swap_command, swap_gib

__all__ = ["analyze_other", "analyze_serving"]


#: a CUDA context with the distributed environment's buffers, which vLLM's start-up snapshot
#: counts as in use (the low end of 0.3-1 GiB)
_OWN_STARTUP = 512 * 1024 * 1024


def _fb(n: int | None) -> str:
    return size_text(n)


def analyze_serving(e: OomEvent, ctx: LogContext) -> Analysis:
    """Diagnose vLLM / SGLang / TGI / TensorRT-LLM errors."""
    if e.kind == "kv_capacity":
        return vllm_kv(e, ctx)
    if e.kind == "no_kv_blocks":
        return vllm_no_blocks(e, ctx)
    if e.kind == "startup_free_memory":
        f, t, want, u = (
            e.free_bytes or 0,
            e.total_bytes or 0,
            e.requested_bytes or 0,
            e.gpu_memory_utilization,
        )
        fit = int((f / t) * 100) / 100 - 0.01 if t else None
        # (docpost27) vLLM takes the snapshot after this worker created its CUDA context and
        # initialised its distributed environment (vllm/v1/worker/gpu_worker.py,
        # Worker.init_device: torch.cuda.empty_cache(), MemorySnapshot(), then the check), so
        # "in use" includes this process's own context and NCCL buffers (0.3-1 GiB, more or
        # less with each driver/torch release). A check missed by less than that could be this
        # process's own start-up memory over the headroom, with nobody else on the GPU.
        narrow = 0 < want - f < _OWN_STARTUP
        return Analysis(
            cause="other_process_holding_memory",
            confidence=0.6 if narrow else 0.85,
            explanation=f"Only {_fb(f)} of {_fb(t)} is free at startup but "
            f"gpu_memory_utilization={u} asks for {_fb(want)}: something else holds "
            f"{_fb(t - f)} of the GPU."
            + (
                f" The check is missed by only {_fb(want - f)}, less than this process's own "
                "CUDA context and NCCL buffers, which the start-up snapshot counts as in use: "
                "if nvidia-smi lists no other process on the GPU, this process's own start-up "
                "memory (a driver or torch upgrade can add to it) is over the headroom, and "
                "a slightly lower gpu_memory_utilization is the fix."
                if narrow
                else ""
            ),
            fixes=(
                Fix(
                    title="Stop the other process (or other vLLM instance) on the GPU",
                    why=f"it holds {_fb(t - f)}.",
                    commands=(
                        "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
                        "kill <pid>",
                    ),
                    expected_saving_bytes=t - f,
                ),
                *(
                    (
                        Fix(
                            title=f"Ask for what is free: --gpu-memory-utilization {fit:.2f}",
                            # revfix21b: the budget must still hold the model (vLLM
                            # check_enough_kv_cache_memory); the estimator checks it when the
                            # model is known (model_fixes_hf._free_budget_fix)
                            why=f"{_fb(f)}/{_fb(t)} is free. At {fit:.2f} vLLM's budget is "
                            f"{_fb(int(fit * t))}: the weights, the profile run's activations "
                            "and the KV blocks of at least one max_model_len request must fit "
                            "in it, or the next start fails there (lower --max-model-len to "
                            "fit; --model MODEL lets the doctor check it).",
                            commands=(f"--gpu-memory-utilization {fit:.2f}",),
                            expected_saving_bytes=want - f,
                        ),
                    )
                    if fit and fit > 0
                    else ()
                ),
            ),
        )
    if e.kind == "sampler_warmup_oom":
        return Analysis(
            cause="batch_or_activations",
            confidence=0.7,
            explanation="vLLM ran out of memory warming up the sampler with max_num_seqs dummy "
            "requests: the non-KV headroom (1 - gpu_memory_utilization) is too small for the "
            "sampler's logits.",
            fixes=(
                generic(
                    "Fewer concurrent sequences",
                    "sampler memory is linear in max_num_seqs.",
                    ("--max-num-seqs 128",),
                ),
                generic(
                    "Leave more headroom",
                    "lower utilization leaves more non-KV memory.",
                    ("--gpu-memory-utilization 0.85",),
                ),
            ),
        )
    if e.kind == "kv_swap_exhausted":
        # vllm/core/scheduler.py _swap_out: preemption by swapping (beam search, n > 1) found no
        # free CPU block in the --swap-space pool: the GPU KV blocks were full first
        return Analysis(
            cause="kv_cache_or_context",
            confidence=0.5,
            explanation="vLLM's scheduler aborted: the GPU KV cache was full, so it preempted a "
            "sequence group by swapping its KV blocks to CPU, and the CPU swap space "
            "(--swap-space GiB per GPU) had no room left either.",
            fixes=(
                generic(
                    "Fewer concurrent sequences",
                    "each running sequence (every beam / every one of n samples) holds KV "
                    "blocks; fewer at once means no preemption.",
                    ("--max-num-seqs 64",),
                ),
                generic(
                    "More CPU swap space",
                    "the swap pool is --swap-space GiB of host RAM per GPU (default 4).",
                    ("--swap-space 16",),
                ),
            ),
        )
    if e.runtime == "sglang":
        mfs = e.mem_fraction_static or ctx.mem_fraction_static
        runtime = e.kind == "kv_pool_full"
        # at startup the raise is rules_sglang's: sized on the log's numbers, else a step of 0.05
        # that never passes the largest fraction keeping SGLang's activation floor outside the
        # pool on the card the log shows (estimate/sglang_activation_floor.py, docfix22); none
        # when no such step is above the run's own fraction
        raise_fix = None if runtime else _mfs_fix(mfs, ctx)
        return Analysis(
            cause="kv_cache_or_context",
            confidence=0.55,
            explanation="SGLang could not build a KV pool: after the weights, total x "
            "mem_fraction_static leaves no room for KV tokens."
            if not runtime
            else "SGLang's KV pool filled at runtime and it retracted requests.",
            fixes=(
                *((raise_fix,) if raise_fix is not None else ()),
                *(
                    ()
                    if not runtime
                    else (
                        generic(
                            "Fewer running requests",
                            "each running request holds its KV tokens.",
                            ("--max-running-requests 64", "--chunked-prefill-size 4096"),
                        ),
                    )
                ),
                generic(
                    "Shorter context / fp8 KV",
                    "KV per token halves with fp8.",
                    (
                        *(
                            (f"--context-length {cap}",)
                            if (cap := shorter_context(ctx.max_model_len))
                            else ()
                        ),
                        "--kv-cache-dtype fp8_e5m2",
                    ),
                ),
            ),
        )
    if e.runtime == "tgi" and e.prefill_tokens is None and e.detail:
        total = int(e.detail.split()[0]) if e.detail.split()[0].isdigit() else 0
        return Analysis(
            cause="kv_cache_or_context",
            confidence=0.55,
            explanation=f"TGI cannot fit {e.detail} in the KV cache left after the weights.",
            fixes=(
                Fix(
                    title=f"Fewer batched tokens: --max-batch-total-tokens {total // 2}",
                    why="the KV cache is linear in the total tokens batched; half the tokens, "
                    "half the KV (the log does not give its bytes).",
                    commands=(f"--max-batch-total-tokens {total // 2}",),
                    expected_saving_bytes=None,
                ),
            ),
        )
    if e.runtime == "tgi":
        n = e.prefill_tokens or 4096
        return Analysis(
            cause="batch_or_activations",
            confidence=0.6,
            explanation=f"TGI's warmup could not run a prefill of {n} tokens: activations for "
            "that many tokens do not fit next to the weights.",
            fixes=(
                generic(
                    f"Prefill fewer tokens: --max-batch-prefill-tokens {n // 2}",
                    "prefill activation memory is linear in the prefill token count.",
                    (f"--max-batch-prefill-tokens {n // 2}",),
                ),
            ),
        )
    # TensorRT-LLM
    kv = e.stage == "kv_cache"
    return Analysis(
        cause="kv_cache_or_context" if kv else "batch_or_activations",
        confidence=0.5 if kv else 0.35,
        explanation=f"TensorRT-LLM ran out of GPU memory ({e.stage or 'runtime'})"
        + (f"; {_fb(e.free_bytes)} of {_fb(e.total_bytes)} was free." if e.total_bytes else "."),
        fixes=(
            generic(
                "Give the KV cache a smaller share",
                "KvCacheConfig.free_gpu_memory_fraction (default 0.9 of free memory after "
                "load) leaves the rest for activations.",
                ("--kv_cache_free_gpu_memory_fraction 0.8", "max_batch_size / max_num_tokens"),
            ),
        ),
    )


def analyze_other(e: OomEvent, ctx: LogContext) -> Analysis:
    """Diagnose JAX/XLA, TensorFlow, accelerate, Linux OOM killer and Windows pagefile events."""
    if e.runtime in {"linux", "windows"} or e.kind in {"killed", "oom_killer", "host_oom"}:
        if e.format == "exit_137" and e.detail == "OOMKilled" and e.allowed_bytes:
            return pod_oomkilled(e)
        rss = e.anon_rss_bytes
        expl = "The operating system ran out of host RAM"
        if e.pid is not None:
            expl += f" and killed PID {e.pid}"
            expl += f" ({e.process_name})" if e.process_name else ""
        elif e.format == "dataloader_killed":
            expl += " and killed a DataLoader worker (SIGKILL)"
        if rss is not None:
            expl += f", which held {_fb(rss)} of anonymous memory (anon-rss)"
        if e.cgroup:
            expl += "; the limit was a memory cgroup (container limit), not the machine"
        elif e.detail == "OOMKilled":
            expl = (
                "The kernel's OOM killer ended the container (OOMKilled): it crossed its memory "
                "limit (docker --memory, the pod's resources.limits.memory) or the host ran out "
                "of RAM"
            )
        expl += "."
        if e.format == "dataloader_signal":
            # torch/csrc/DataLoader.cpp prints strsignal(): SIGTERM is "Terminated" (earlyoom,
            # a pod eviction, but also a scheduler's time limit or a launcher stopping ranks)
            expl = (
                "A DataLoader worker was ended by a signal other than the OOM killer's SIGKILL "
                "(or one the paste does not name); host RAM is the usual reason when workers "
                "multiply the dataset's copies. Which signal and who sent it decides: `Killed` "
                "(the OOM killer), `Bus error` (/dev/shm), `Terminated` (earlyoom, an eviction, "
                "or a scheduler's time limit: its log), `Segmentation fault` (a crash, not memory)."
            )
        if e.format == "dask_nanny_memory_restart":
            # distributed/worker_memory.py: the nanny restarts a worker past 95% of its
            # memory_limit; the machine's RAM need not be exhausted
            who = f"worker PID {e.pid}" if e.pid is not None else "a worker"
            expl = (
                f"Dask's nanny restarted {who}: the worker passed 95% of its memory budget "
                "(the worker's memory_limit, distributed.worker.memory.terminate), not "
                "necessarily the machine's RAM."
            )
        if e.format == "dataloader_bus_error":
            return shm_bus_error(e)
        if e.format == "shm_full":
            return shm_full(e)
        if e.format == "windows_pagefile":
            expl = "Windows could not commit more virtual memory: the paging file is too small."
        if e.format == "linux_killed":
            # bash/zsh print "Killed" for any SIGKILL (strsignal(SIGKILL)); the kernel's OOM
            # killer (mm/oom_kill.c) is the usual sender of an unasked one, but `kill -9`, a
            # supervisor or a container runtime send the same signal: the kernel log decides
            expl += (
                " The shell prints Killed for any SIGKILL; the kernel's OOM killer is the usual "
                "sender, and the kernel log decides: `sudo dmesg -T | grep -iE 'killed "
                "process|out of memory'` (or `journalctl -k`) shows whether it sent this one."
            )
        linux = ctx.host_os != "windows" and (
            e.format in {"linux_killed", "exit_137"} or e.kind == "oom_killer"
        )
        conf = {"oom_killer": 0.9, "host_oom": 0.85}.get(
            e.kind, 0.55 if e.format in ("exit_137", "linux_killed") else 0.7
        )
        conf = 0.35 if e.format == "dataloader_signal" else conf
        gib = swap_gib(rss, 32)  # swap as large as what it held (swap_fix)
        fixes = [
            Fix(
                title="Give the job more RAM (swap, pagefile or container limit)",
                why=f"the killed process held {_fb(rss)}; a {gib} GiB swapfile lets it grow as "
                "much again (the log does not say how much more it needed)."
                if rss
                else "host RAM was exhausted.",
                commands=(
                    swap_command(gib),
                    "docker run --memory=<more> ...",
                    # revfix18e: the pagefile only where the log is not Linux's own kill
                    *(
                        ()
                        if linux
                        else ("System > Advanced > Performance > Virtual memory (Windows)",)
                    ),
                ),
                expected_saving_bytes=gib << 30 if rss else None,  # the room the swap adds
            ),
            generic(
                "Load models without a full copy in RAM",
                "low_cpu_mem_usage/device_map stream safetensors shards to the GPU.",
                (
                    "from_pretrained(name, low_cpu_mem_usage=True, device_map='auto', "
                    "torch_dtype='auto')",
                    "DataLoader(num_workers=2)",
                ),
            ),
        ]
        if _saving(e, ctx):
            fixes[1:] = [_HOST_SAVE_FIX]  # the save's own gather, not a load or the workers
        if e.format == "dask_nanny_memory_restart":
            fixes.insert(
                0,
                generic(
                    "Give each Dask worker more memory, or its tasks smaller pieces",
                    "the nanny restarts a worker past 95% of its own memory_limit.",
                    (
                        "LocalCluster(n_workers=..., memory_limit='16GB')",
                        "df.repartition(partition_size='100MB')",
                    ),
                ),
            )
        return Analysis(cause="host_ram", confidence=conf, explanation=expl, fixes=tuple(fixes))
    if e.runtime == "jax":
        x, params = e.requested_bytes, ctx.parameter_bytes
        expl = f"XLA could not allocate {_fb(x)}"
        conf = 0.6
        if x is not None and params:
            expl += f"; the parameters take only {_fb(params)}"
            if x >= 10 * params:
                conf = 0.75
                expl += ", so the buffer is an activation/intermediate that scales with the input"
        expl += "."
        return Analysis(
            cause="batch_or_activations",
            confidence=conf,
            explanation=expl,
            fixes=(
                Fix(
                    title="Shrink the batch or input size",
                    why=f"the failing buffer alone is {_fb(x)}.",
                    commands=("reduce batch size / sequence length / input length",),
                    # unsized (docrt23): the message names no batch or input length, so what a
                    # cut frees is not known (half the buffer was a guess shown as a number)
                    expected_saving_bytes=None,
                    generic=x is None,
                ),
                generic(
                    "Do not preallocate 75% of the GPU",
                    "lets several JAX processes (or JAX + TF) share a GPU.",
                    ("XLA_PYTHON_CLIENT_PREALLOCATE=false", "XLA_PYTHON_CLIENT_MEM_FRACTION=.95"),
                ),
            ),
        )
    if e.format == "tf_driver_alloc" and ctx.tf_bfc_retry:
        return tf_driver_while_running(e, ctx.tf_bfc_retry)
    if e.format == "tf_driver_alloc":
        return Analysis(
            cause="other_process_holding_memory",
            confidence=0.45,
            explanation=f"TensorFlow could not reserve {_fb(e.requested_bytes)} of GPU memory at "
            "start-up: by default it grabs nearly all of the GPU, so another process (often a "
            "second TF/JAX process or notebook kernel) holding memory makes this fail.",
            fixes=(
                generic(
                    "Let TensorFlow grow memory on demand",
                    "instead of pre-reserving almost the whole GPU.",
                    ("TF_FORCE_GPU_ALLOW_GROWTH=true", "nvidia-smi   # other processes?"),
                ),
            ),
        )
    if e.runtime == "cuda":
        return Analysis(
            cause="unknown",
            confidence=0.2,
            explanation="The CUDA driver returned CUDA_ERROR_OUT_OF_MEMORY; the message carries "
            "no sizes, so whether the model, the batch or another process filled the GPU cannot "
            "be told from it.",
            fixes=(
                generic(
                    "Check what holds the GPU, then shrink the model or the batch",
                    "the driver ran out of device memory.",
                    ("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",),
                ),
            ),
        )
    if e.runtime == "tensorflow" and e.shape and ctx.tf_optimizer_node:
        return tf_optimizer_state(e, ctx.tf_optimizer_node)
    if e.runtime == "tensorflow":
        size = tensor_bytes(e.shape or (), e.dtype)
        dims = "x".join(str(d) for d in e.shape or ())
        expl = "TensorFlow could not allocate a tensor" + (f" of shape [{dims}]" if dims else "")
        expl += f" ({e.dtype}: {_fb(size)})." if size else "."
        expl += f" Its first dimension ({e.shape[0]}) is usually the batch." if e.shape else ""
        if not e.shape and e.requested_bytes:
            expl = f"TensorFlow's BFC allocator could not allocate {_fb(e.requested_bytes)}."
        if not e.shape:
            # TF reserves (nearly) the whole GPU per process at start-up; the BFC pool it
            # carves tensors from is whatever was free then (TF_FORCE_GPU_ALLOW_GROWTH off)
            expl += (
                " The message names no tensor; in TensorFlow an OOM while running the graph is "
                "an activation of the step, so the batch is the first lever (the full message "
                "with the tensor shape would confirm it). The allocator's stats dump after it "
                "decides: a `Limit` well below the card means another process (a second TF "
                "process, a notebook kernel) held the GPU when this one started."
            )
        return Analysis(
            cause="batch_or_activations",
            # without a shape the request alone does not decide (a small one says the pool was
            # full before it: weights, a second process, or fragmentation look the same)
            confidence=0.7 if e.shape else 0.35,
            explanation=expl,
            fixes=(
                Fix(
                    title="Halve the batch size",
                    why="activation tensors are linear in batch size"
                    + (f"; this one drops from {_fb(size)} to {_fb(size // 2)}." if size else "."),
                    commands=("batch_size //= 2",),
                    expected_saving_bytes=size // 2 if size else None,
                    generic=size is None,
                ),
                generic(
                    "Let TensorFlow grow memory on demand",
                    "instead of grabbing it all.",
                    ("TF_FORCE_GPU_ALLOW_GROWTH=true",),
                ),
            ),
        )
    if e.runtime == "accelerate":
        return Analysis(
            cause="model_too_large",
            confidence=0.6,
            explanation="accelerate's batch-size search reached zero: even batch size 1 runs out "
            "of memory, so what is resident (weights, optimizer states) does not fit.",
            # what the user can do on the GPUs they have comes first; sharding needs more GPUs
            # than a one-process search shows, so it is the hardware change, last (issue #9)
            fixes=(
                generic(
                    "Quantize the weights or train LoRA adapters",
                    "the batch is already minimal: shrink what is resident instead.",
                    ("load_in_4bit=True", "peft LoRA"),
                ),
                generic(
                    "Shard the model over more GPUs",
                    "when the model must stay in 16 bits and fully trained.",
                    ("FSDP / DeepSpeed ZeRO-3",),
                ),
            ),
        )
    return Analysis(
        cause="unknown",
        confidence=0.1,
        explanation=f"Unrecognised event {e.kind}.",
        fixes=(),
    )


# revfix18e: the text places the host kill at a checkpoint save ("Saving model checkpoint",
# DeepSpeed engine.py `save_checkpoint`, "保存checkpoint的时候" / "保存模型时")
_SAVE_WORDS = re.compile(
    r"(?i)\bsav(?:e|ing)[ _](?:the\s+)?(?:model[ _])?(?:checkpoint|ckpt)|\bsave_16bit_model\b"
    r"|保存\s*(?:checkpoint|ckpt|模型|权重)"
)
#: DeepSpeed ZeRO-3 gathers the full 16-bit weights for the save
#: (``stage3_gather_16bit_weights_on_model_save``, runtime/engine.py
#: ``_zero3_consolidated_16bit_state_dict``) and each rank also writes its optimizer partition;
#: transformers' ``save_only_model`` skips the optimizer states, and a sharded save lets
#: ``zero_to_fp32.py`` consolidate offline, on a machine with the RAM for it
_HOST_SAVE_FIX = generic(
    "Save without gathering the full model in host RAM",
    "a ZeRO-3 save gathers a 16-bit copy of every weight and each rank writes its optimizer "
    "shard; saving the shards and consolidating offline keeps the save's RAM per rank.",
    (
        '"stage3_gather_16bit_weights_on_model_save": false   # zero_optimization (DeepSpeed)',
        "TrainingArguments(save_only_model=True)",
        "python zero_to_fp32.py <checkpoint_dir> <output_dir>   # offline",
    ),
)


def _saving(e: OomEvent, ctx: LogContext) -> bool:
    """The kill is placed at a checkpoint save by the message, the traceback or the paste."""
    words = (e.text, ctx.frame_text or "", *(sentence for _, sentence in ctx.paste_prose))
    return ctx.frame_phase == "checkpoint_save" or any(_SAVE_WORDS.search(w) for w in words)
