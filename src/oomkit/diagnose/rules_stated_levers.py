"""What the paste says was tried, or which step ran: prose that rules a lever in or out.

Two facts a user often states beside an OOM that the message format cannot carry, read here for
:func:`oomkit.diagnose.rules_evidence.refine_by_evidence` (the failing line) and
:func:`oomkit.diagnose.rules_surroundings.stated_around` (the sentences around it), only where
the runtime rule left the cause open:

* :func:`stated_batch_cut_still_fails`: the batch was cut (to 1, or from N to M) and the run
  still fails: the batch is not the lever, so what is resident is.
* :func:`comfy_loader_node`: the ComfyUI node that raised the OOM is a model loader
  (``CheckpointLoaderSimple``, ``UNETLoader``, ``LTXVLoader``, ``LoadTheMistoFluxControlNet``):
  the failure is in placing weights, not in a node's working set.
* :func:`stated_process_outlives_exit`: the memory stayed held after the program exited or was
  killed: a process that is still alive holds it.
* :func:`stated_kv_pool_took_memory`: the KV-cache pool (or its sizing knob) named as what took
  the memory: serving engines reserve it at start-up and keep it.
* :func:`mistralrs_device_map`: mistral.rs's automatic device mapper's "This model does not fit
  on the devices [...]": the weights, unless every device reads 0 MB (a failed memory query).

Each rule states its mechanism in its docstring; docs/doctor-causes.md section "Evidence around
the message" lists them.
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.rules_stated import fallback

__all__ = [
    "comfy_loader_node",
    "loader_node_in",
    "mistralrs_device_map",
    "stated_batch_cut_still_fails",
    "stated_kv_pool_took_memory",
    "stated_process_outlives_exit",
]

_BATCH = r"(?:total_|train_|micro_|per_device_train_)?batch[ _-]?sizes?|\bbs\b|batch"
# "even with a batch size of 1", "even at batch_size=1", "batch size set to 1 and still OOM":
# the smallest batch fails. "with batch_size = 1" alone only states a setting (a loop that keeps
# every step's graph fails at batch 1 too, after some steps), so "even"/"still" must say it.
# A batch of 2 counts as the smallest too ("even with a batch size of 2"): one more sample's
# activations, not a lever left to pull.
_EVEN_AT_ONE = re.compile(
    r"(?i)\beven\s+(?:with|at|when\s+using|using|for)\s+(?:a\s+|the\s+)?(?:" + _BATCH + r")"
    r"\s*(?:of|=|:|to|is|set\s+to)?\s*[12]\b"
    # Chinese: "batch_size=1，gradient_accumulation_steps调大，不起作用" (batch 1, still no use)
    r"|\bbatch(?:[ _-]?size)?\s*(?:=|:|设为|设置为|为)\s*1\b"
    r"(?:[^。\n]|。\s*(?=但|可是|然而)){0,60}?"
    r"(?:不起作用|没有?用|无效|还是(?:会)?(?:提示\s*`?)?(?:oom|爆|报错|不行|out)|仍然|依然)"
    # doccause21 (heldout32/33): another setting named in the same breath ("batch_size和
    # num_workers都设置为1，仍然报显存溢出") and "bs"; "also" as the persistence ("bs=1的情况下也
    # 出现显存溢出": at bs=1 it overflows too); after a CJK character, where \b does not fall
    r"|(?<![A-Za-z])(?:batch(?:[ _-]?size)?|bs)(?:[和与及、/][\w ]{1,20}?)?\s*(?:都|也)?"
    r"(?:=|:|设为|设置为|设置成|设成|调到|调成|改为|改成|为)\s*1(?![.\d])"
    r"(?:[^。\n]|。\s*(?=但|可是|然而)){0,30}?"
    r"(?:仍然|依然|还是|也(?:会)?(?:出现|报|爆))[^。\n]{0,12}?(?:oom|OOM|溢出|不足|爆|报错|out)"
)
# "modified the total_batch_size ... from 16 to 2, but I still faced the CUDA out of memory",
# "reduced the batch size to 1 and it still OOMs": a cut batch and a failure that persists (a
# dot inside a word, "custom_ovd.py", does not end the sentence).
_CUT_STILL = re.compile(
    r"(?i)\b(?:reduc|lower|decreas|modifi|chang|cut|drop|set|tri)\w*\s+(?:the\s+|my\s+)?"
    # (doccause10) the setting may be quoted as code: "I've reduced to `batch_size=1` and still"
    r"(?:[\w./]+\s+){0,8}?[`'\"]?(?:" + _BATCH + r")\b"
    r"(?:[^.\n]|\.(?=\S)){0,80}?\b(?:still|always|again)\b"
    r"(?:[^.\n]|\.(?=\S)){0,40}?"
    r"\b(?:oom|out[\s-]of[\s-]memory|ran\s+out|runs?\s+out|error|fail\w*|crash\w*)"
)
# the batch really was cut: "from 16 to 2", "to 1", "down to 4"
_CUT_TO = re.compile(r"(?i)\b(?:from\s+(?P<frm>\d{1,5})\s+)?(?:down\s+)?to\s+(?P<to>\d{1,5})\b")
# the batch set to the smallest value, "set the batch_size=1", "batch size: 1": nothing left to cut
_SET_TO_ONE = re.compile(r"(?i)(?:" + _BATCH + r")\s*(?:=|:|of|is)?\s*1\b(?![.\d])")
# the size of one sample stated beside it ("1024x1024 even for a batch size of 1", "a 32k
# sequence", "max_length 8192", "4K video"): a batch-1 failure then points at that sample's
# activations as much as at the model, so the batch statement decides nothing
_SAMPLE_SIZE = re.compile(
    r"(?i)\b\d{3,5}\s?[x×*]\s?\d{3,5}\b|\bresolution\b|\b\d{1,4}\s?k\s+(?:tokens?|context|video)"
    r"|\b(?:seq(?:uence)?[ _-]?len(?:gth)?|max[ _-]?(?:seq[ _-]?)?len(?:gth)?|context\s+length"
    r"|max_model_len|num_frames|frames)\b|\b[48]k\b"
    # a long input named ("long audio recordings which cannot fit ... even with batch_size=1"):
    # one such sample's activations are the competing reading
    r"|\blong(?:er)?\s+(?:audio|recordings?|videos?|sequences?|documents?|texts?|inputs?|prompts?"
    r"|sentences?|contexts?|clips?|utterances?)\b"
)


def stated_batch_cut_still_fails(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text says the batch was cut (to 1, or from N to M) and the run still fails.

    Mechanism. A step holds the resident state (weights; in training also their gradients and
    the optimizer's states, 2-4x the weights with Adam) plus the activations, and only the
    activations scale with the batch. A run that still fails after the batch was cut, or at
    batch size 1, has shown that the activation share is not what overflows: the resident
    state is (a model, or a trainable part of it, too large for the device; in the corpus:
    LLaVA-13B full fine-tuning "even with a batch size of 1" on 40 GB cards, a text encoder left
    trainable). ``model_too_large`` at 0.45: one batch-1 sample can still be large (a long
    sequence, a high resolution), which is the competing reading, so the explanation names the
    check that decides, and a text that states such a sample size ("1024x1024 even for a batch
    size of 1") is not read: it names that reading itself. Read only where the runtime rule
    left the cause open, and never over host RAM or a stated growth (a loop that keeps every
    step's graph fails at batch 1 too).
    """
    if not fallback(result) or result.cause in {"model_too_large", "host_ram"}:
        return None
    if result.cause == "leak_or_accumulation":
        return None
    text = e.text
    m = _EVEN_AT_ONE.search(text)
    if m is None:
        cut = _CUT_STILL.search(text)
        if cut is None:
            return None
        to = _CUT_TO.search(cut.group(0))
        if (
            to is None
            and not re.search(r"(?i)\b(?:reduc|lower|decreas|cut|drop)", cut.group(0))
            and not _SET_TO_ONE.search(cut.group(0))
        ):
            return None  # "changed the batch size" without saying it went down
        if to is not None and to["frm"] is not None and int(to["to"]) >= int(to["frm"]):
            return None  # "from 2 to 8": the batch went up
        m = cut
    if _SAMPLE_SIZE.search(text):
        return None
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        explanation=result.explanation + f" The text says the batch was cut and it still fails "
        f"({m.group(0)!r}): only the activations scale with the batch, so what overflows is the "
        "resident state -- the weights, and in training their gradients and optimizer states. "
        "What would decide: the same run with the sequence length / resolution halved (if that "
        "passes, one sample's activations are the cause) or with a smaller or more quantized "
        "model, frozen layers or offloaded optimizer states (if that passes, the model is).",
        fixes=(
            generic(
                "Shrink what stays resident: freeze, quantize, shard or offload",
                "weights, gradients and optimizer states do not shrink with the batch.",
                (
                    "model.text_encoder.requires_grad_(False)   # train only what you need",
                    "LoRA / QLoRA (peft) instead of full fine-tuning",
                    'deepspeed ZeRO-3 with "offload_optimizer": {"device": "cpu"}',
                    "gradient_checkpointing=True",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# ComfyUI names the node whose execution raised: "Error occurred when executing <class>:"
# (execution.py before 2024), "- **Node Type:** <class>" (the frontend's error report),
# "<class> - **Exception Type:** ..." (its one-line copy; a Markdown quote or emphasis before
# the class is the comment's, not ComfyUI's). A loader's class name ends in
# "Loader" (CheckpointLoaderSimple, UNETLoader, DualCLIPLoader, LTXVLoader, HyVideoModelLoader,
# UnetLoaderGGUF) or starts with "Load"/"DownloadAndLoad" and names weights
# (LoadTheMistoFluxControlNet, DownloadAndLoadCogVideoModel). Inputs are loaded by nodes of the
# same shape (LoadImage, VHS_LoadVideo, LoadAudio, ImageLoader): not weights, not read.
_NODE = re.compile(
    r"\bError occurred when executing\s+(?P<a>[A-Za-z_][\w.|-]{1,80}):"
    r"|\*{0,2}Node Type:\*{0,2}\s*(?P<b>[A-Za-z_][\w.|-]{1,80})"
    r"|^[\s*_`>]*(?P<c>[A-Za-z_][\w.|-]{1,80})\s+-\s+\*{0,2}Exception Type:",
    re.MULTILINE,
)
_LOADER = re.compile(
    r"Loader(?:Simple|Advanced|GGUF|NF4|Multi\w*|_\w+)?$"
    r"|^(?:DownloadAnd)?Load(?!(?:Image|Video|Audio|Latent|Mask|Text|Prompt|File|Images|Frames))"
    r"[A-Z]\w*(?:Model|Checkpoint|ControlNet|Lora|LoRA|CLIP|Clip|VAE|Vae|UNET|Unet|Pipeline|Pipe"
    r"|Weights|Net)\w*$"
)
_INPUT = re.compile(r"(?i)(?:image|video|audio|latent|mask|text|prompt|file|frame|data)s?loader")


def loader_node_in(text: str) -> str | None:
    """The ComfyUI node class that raised, when the text names one and it loads weights."""
    for m in _NODE.finditer(text):
        name = (m["a"] or m["b"] or m["c"] or "").split("|")[-1].split(".")[-1]
        if name and _LOADER.search(name) and not _INPUT.search(name):
            return name
    return None


def comfy_loader_node(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The ComfyUI node that raised the OOM is a model loader: ``model_too_large``.

    Mechanism. ComfyUI runs a workflow node by node and reports the class of the node whose
    execution raised. Its sampler and decoder nodes allocate a working set (resolution x frames
    x batch) beside weights that ComfyUI's model management places and offloads itself; its
    loader nodes (``CheckpointLoaderSimple``, ``UNETLoader``, ``CLIPLoader`` in ``nodes.py``,
    and custom nodes that load their own weights, ``LTXVLoader``, ``HyVideoModelLoader``,
    ``LoadTheMistoFluxControlNet``) read a checkpoint and move it to the device, before any
    image exists. An OOM raised by a loader is therefore the weights not fitting what is free:
    ``model_too_large`` at 0.45 (another process holding the GPU, or models of an earlier run
    still loaded, is the competing reading, which ``oomkit gpus`` decides). The rule that reads
    ComfyUI's cut message (``Allocation on device``) names exactly this check; here the paste
    answers it. Nodes that load inputs (``LoadImage``, ``VHS_LoadVideo``) are not loaders of
    weights and are not read.
    """
    if not fallback(result) or result.cause in {"model_too_large", "host_ram"}:
        return None
    node = loader_node_in(e.text)
    where = ""
    if node is None:
        for no, sentence in ctx.paste_prose:
            node = loader_node_in(sentence)
            if node is not None:
                where = f" (line {no} of the paste)"
                break
    if node is None:
        return None
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        explanation=result.explanation + f" The node that raised is {node}{where}, a model "
        "loader: it reads a checkpoint and places its weights on the device before any image "
        "exists, so the weights do not fit what is free. What would decide: `oomkit gpus` "
        "(free memory before the workflow runs, other processes) against the checkpoint's size.",
        fixes=(
            generic(
                "Load a smaller or lower-precision checkpoint (fp8 / GGUF), or let ComfyUI offload",
                "a loader node places the whole checkpoint; its dtype sets the size.",
                (
                    "weight_dtype: fp8_e4m3fn   # in the loader node",
                    "a GGUF quantization of the same model (ComfyUI-GGUF's UnetLoaderGGUF)",
                    "python main.py --lowvram",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# mistral.rs's automatic device mapper (mistralrs-core/src/device_map/..., `get_device_layers`):
# "This model does not fit on the devices ["cuda[0] (avail: 7800MB)", "cpu (avail: 0MB)"], and
# exceeds total capacity by N MB. Auto device mapping params: ... max_seq_len: S, max_batch_size: B"
_MISTRALRS_MAP = re.compile(
    r"This model does not fit on the devices\s*\["
    r"(?P<devs>(?:\s*\"[^\"\n]{0,80}\"\s*,?){1,16}|[^\]]{0,600})\]"
    r"(?:,?\s*and exceeds total capacity by\s*(?P<over>\d{1,9})\s*MB)?"
)
_AVAIL = re.compile(r"\(avail:\s*(?P<mb>\d{1,9})\s*MB\)")


def mistralrs_device_map(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """mistral.rs's automatic device mapper found no placement: the model does not fit.

    Mechanism. Before loading, mistral.rs's auto device mapper (``get_device_layers`` in
    ``mistralrs-core``) takes each device's available memory (``avail``, from the CUDA/Metal
    query or, for the CPU, the system's available RAM), subtracts the non-mapped weights and the
    activations and KV cache its mapping parameters imply (``max_seq_len`` x ``max_batch_size``),
    and fills the devices layer by layer; what is left over is printed as "exceeds total
    capacity by N MB". The weights dominate that sum, so the failure is ``model_too_large``
    (0.5; a large ``max_seq_len`` is the second lever, named in the fixes). When *every* device,
    the CPU included, reports ``avail: 0MB``, the query returned nothing rather than a full
    machine (a running process cannot see zero available RAM): the memory reading failed, which
    is ``unknown``, settled, with the check that decides. A GPU alone at 0 MB can be full.
    """
    m = _MISTRALRS_MAP.search(e.text)
    if m is None or not fallback(result):
        return None
    avail = [int(a["mb"]) for a in _AVAIL.finditer(m["devs"])]
    if avail and not any(avail) and "cpu" in m["devs"].lower():
        return Analysis(
            cause="unknown",
            confidence=0.45,
            explanation="mistral.rs's automatic device mapper found no room for the model, but "
            f"every device it lists reports 0 MB available ({m['devs'].strip()}): no machine "
            "has all of its RAM and every GPU taken, so mistral.rs's memory query returned "
            "nothing rather than the memory being full. What would decide: `free -h` and "
            "`oomkit gpus` against the model's size; if the memory is there, the mapper's "
            "reading is the problem (set the device layers by hand, or update mistral.rs).",
            fixes=(
                generic(
                    "Map the layers by hand instead of the automatic mapper",
                    "the automatic mapper relies on the memory query that returned 0.",
                    ("--num-device-layers 0:32", "update mistral.rs"),
                ),
            ),
            open_question=False,
        )
    over = f", short by {m['over']} MB" if m["over"] else ""
    return Analysis(
        cause="model_too_large",
        confidence=0.5,
        explanation="mistral.rs's automatic device mapper could not place the model on the "
        f"devices' available memory{over}: it fills each device with layers after the "
        "non-mapped weights and the activations and KV cache its mapping parameters imply "
        "(max_seq_len x max_batch_size), and the weights dominate that sum. What would decide: "
        "the model's size at this quantization (`oomkit estimate MODEL`) against the devices' "
        "free memory; if the weights fit, a smaller max_seq_len is the lever.",
        fixes=(
            generic(
                "Quantize the model in place (ISQ) or use a smaller quantization",
                "the weights are most of what the device mapper places.",
                ("--isq Q4K", "a smaller GGUF / UQFF quantization of the model"),
            ),
            generic(
                "Lower the mapping parameters",
                "the mapper reserves activations and KV cache for max_seq_len x max_batch_size.",
                ("--max-seq-len 4096", "--max-batch-size 1"),
            ),
        ),
        open_question=False,
    )


# memory still held once the process that allocated it is gone: "If Python exits improperly
# ... this can produce an out-of-memory error", "when the program ends ... the other GPUs are
# not released", "kill主进程显卡不会释放显存" (killing the main process does not free the GPU)
_OUTLIVES_EXIT = re.compile(
    r"(?i)\bexit(?:s|ed|ing)?\s+(?:improperly|abnormally|uncleanly|ungracefully)"
    r"|\b(?:improper|abnormal|unclean|ungraceful)\s+(?:exit|shutdown|termination)"
    r"|\b(?:after|when|once|if)\s+(?:the\s+|my\s+|a\s+)?(?:program|process|script|job|training"
    r"|application|app|run)\s+(?:ends?|ended|exits?|exited|finish\w*|(?:is|was|gets?|got)\s+"
    r"killed|crash\w*|terminat\w*|is\s+interrupted|was\s+interrupted)\b[^.\n]{0,80}?"
    r"\b(?:not\s+(?:be\s+|being\s+)?(?:released|freed)|still\s+(?:occupied|held|in\s+use|used"
    r"|allocated))"
    r"|\b(?:not\s+(?:be\s+|being\s+)?(?:released|freed)|still\s+(?:occupied|held|in\s+use))"
    r"[^.\n]{0,60}?\b(?:after|when|once)\b[^.\n]{0,30}?\b(?:exit|ends?\b|ended|kill|terminat"
    r"|clos|crash|interrupt|ctrl)"
    r"|kill\w{0,3}\s?(?:主|子)?(?:进程|程序)[^。\n]{0,20}?(?:不会|没有|未|不)释放"
    r"|(?:进程|程序)(?:结束|退出|被kill|被杀)[^。\n]{0,20}?(?:不会|没有|未|不)释放"
)


def stated_process_outlives_exit(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text says the memory stayed held after the program exited or was killed.

    Mechanism. The CUDA driver frees every allocation of a process when its context is
    destroyed, which happens when the process exits, however it exits; memory a process holds
    is never left behind by a process that is gone. Memory that the text says is still held
    after the program "ends", "exits improperly" or "was killed" is therefore held by a process
    that is still alive: a DataLoader or multiprocessing worker, a torchrun rank or a child
    that the kill did not reach, a process stuck in the driver. The next run then fails for
    memory another process holds: ``other_process_holding_memory`` at 0.45 (the threads: XLM's
    ranks on GPUs 1-7 still running after rank 0 ended, PaddleOCR's workers left by killing the
    nohup'ed parent, Caffe's Python exiting improperly). Memory "not released" *between runs in
    one process* is growth instead (:func:`oomkit.diagnose.rules_stated.stated_growth`); this
    rule is tried before it and reads only an exit, a kill or a crash. What would decide:
    ``fuser -v /dev/nvidia*`` or ``nvidia-smi --query-compute-apps=pid,used_memory`` (a process
    that nvidia-smi inside a container cannot name still shows in ``fuser``).
    """
    if not fallback(result) or result.cause in {"host_ram", "other_process_holding_memory"}:
        return None
    m = _OUTLIVES_EXIT.search(e.text)
    if m is None:
        return None
    return Analysis(
        cause="other_process_holding_memory",
        confidence=0.45,
        explanation=result.explanation + f" The text says the memory stayed held once the "
        f"program was gone ({m.group(0)!r}): the driver frees a process's memory when it exits, "
        "so what is still held belongs to a process that is still alive (a worker, a rank or a "
        "child the kill did not reach). What would decide: `fuser -v /dev/nvidia*` or "
        "`nvidia-smi --query-compute-apps=pid,used_memory --format=csv` before the next run.",
        fixes=(
            generic(
                "Find and end the processes still holding the GPU",
                "memory outlives only processes that are still running.",
                (
                    "fuser -v /dev/nvidia*",
                    "nvidia-smi --query-compute-apps=pid,used_memory --format=csv",
                    "pkill -P <parent pid>   # the workers of the killed parent",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


_KNOB = (
    r"(?:--)?cache[-_]max[-_]entry[-_]count|kv_cache_free_gpu_mem(?:ory)?_fraction"
    r"|free_gpu_memory_fraction"
)
_ANY = r"(?:[^.\n]|\.(?=\S))"  # a sentence's characters; "119.55" or "custom.py" do not end it
# the KV pool named as what took the memory ("~119.6 GiB of KV cache (...), leaving 87.8 MiB
# free"), or its sizing knob named as ignored or too high ("The `--cache-max-entry-count`
# parameter is not working correctly, causing GPU RAM to be exceeded")
_POOL_TOOK = re.compile(
    r"(?i)\b(?:kv[ _-]?cache|kv\s+pool)\b" + _ANY + r"{0,80}?\b(?:leav\w*\s+(?:only\s+)?"
    r"(?:~?\d[\d.,]*\s?[kmgt]i?b\s+)?(?:free|little|nothing|no\s+(?:room|memory|space))"
    r"|reserv\w*\s+too\s+much|takes?\s+(?:up\s+)?(?:all|most|almost\s+all)|took\s+(?:up\s+)?"
    r"(?:all|most|almost\s+all))"
    # doccause8 (heldout18): the KV cache named as the allocation that ran out ("Paged
    # attention KV cache OOM on 32GB M1 Max", "out of memory while allocating the KV cache")
    r"|\bkv[ _-]?cache\s+(?:oom|out[\s-]of[\s-]memory)\b"
    r"|\b(?:oom|out[\s-]of[\s-]memory)\s+(?:when|while)\s+allocat\w*\s+(?:the\s+)?kv[ _-]?cache\b"
    r"|(?:" + _KNOB + r")`?\s*" + _ANY + r"{0,60}?\b(?:not\s+(?:working|respected|applied|taking"
    r"\s+effect|take\s+effect)|ignored|too\s+high|exceed\w*|oom\w*|out\s+of\s+memory)"
)


def stated_kv_pool_took_memory(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text names the KV-cache pool as what took the memory, or its sizing knob as ignored.

    Mechanism. Serving engines reserve the KV cache as one pool at start-up, sized as a
    fraction of the memory free after the weights (TensorRT-LLM's
    ``KvCacheConfig.free_gpu_memory_fraction``, 0.9 by default; LMDeploy's
    ``cache_max_entry_count``; vLLM's ``gpu_memory_utilization``; SGLang's
    ``mem_fraction_static``), and never give it back. Every allocation made later outside the
    pool (logits, sampling buffers, a deserialised ``prompt_logprobs``, a second model) gets
    only what the fraction left. A text that says the pool took the memory ("~119.6 GiB of KV
    cache ..., leaving 87.8 MiB free") or that the knob sizing it was ignored or set too high
    names the allocation that starved the failing one: ``kv_cache_or_context`` at 0.45, lever
    the pool's fraction; so does a text that names the KV cache as the allocation that ran out
    ("KV cache OOM": the pool is reserved for max_num_seqs x max_model_len, so the sequence
    slots and the context are its levers). A co-tenant that shrank the free memory before the
    pool was sized (``stated_cotenants``, tried first) is the competing reading.
    """
    if not fallback(result) or result.cause in {"kv_cache_or_context", "host_ram"}:
        return None
    m = _POOL_TOOK.search(e.text)
    if m is None:
        return None
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.45,
        explanation=result.explanation + f" The text says the KV-cache pool took the memory "
        f"({m.group(0)!r}): serving engines reserve the pool at start-up as a fraction of the "
        "free memory and keep it, so every later allocation outside it gets only what the "
        "fraction left. What would decide: the same run with the pool's fraction lowered "
        "(0.8 or less) and the engine's start-up line that reports the pool's size.",
        fixes=(
            generic(
                "Give the KV-cache pool a smaller share of the GPU",
                "what the pool reserves at start-up is not available to anything else.",
                (
                    "KvCacheConfig(free_gpu_memory_fraction=0.8)   # TensorRT-LLM",
                    "--cache-max-entry-count 0.5   # LMDeploy",
                    "--gpu-memory-utilization 0.85   # vLLM",
                    "--mem-fraction-static 0.8   # SGLang",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )
