"""JAX/XLA, TensorFlow, DeepSpeed, accelerate, the Linux OOM killer and Windows (oom-messages.md
§7-§11).

* XLA: ``RESOURCE_EXHAUSTED: Out of memory while trying to allocate N bytes`` (or ``16.00GiB``),
  the ``BufferAssignment`` stats that follow, and the compile-time ``Can't reduce memory use below
  X by rematerialization``.
* TensorFlow: ``OOM when allocating tensor with shape[...] and type T on DEV by allocator A``. The
  BFC warning that says ``The caller indicates that this is not a failure`` is *not* an OOM.
* DeepSpeed ``see_memory_usage``: ``MA x GB Max_MA y GB CA z GB Max_CA w GB`` (GB = GiB).
* accelerate ``find_executable_batch_size``: ``No executable batch size found, reached zero.``
* Linux ``mm/oom_kill.c``: ``Out of memory: Killed process PID (comm) total-vm:..kB, anon-rss:..kB``
  (and the cgroup, <= 4.18 ``Kill process ... or sacrifice child`` and ``invoked oom-killer``
  forms), a bare ``Killed`` from the shell, ``DataLoader worker (pid N) is killed by signal``,
  ``exit code 137`` (also Go's ``exit status 137`` and ``docker ps``'s ``Exited (137)``), and a
  compiler SIGKILLed while building an extension (gcc ``Killed signal terminated program
  cc1plus``, nvcc ``'cicc' died due to signal 9 (Kill signal)``).
* Windows: ``[WinError 1455] The paging file is too small``.
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import admitted
from oomkit.diagnose.sizes import to_bytes, to_int
from oomkit.diagnose.text import Lines, has_any, needles_re, size_of, sz, window

__all__ = ["parse_other", "tensor_bytes"]

# XLA (BFC/PJRT): "RESOURCE_EXHAUSTED: Out of memory while trying to allocate N bytes", older
# jaxlib "Resource exhausted: Out of memory while trying to allocate", newer "Out of memory
# allocating N bytes"; the status prefix is often on the line before or cut off.
_XLA = re.compile(
    r"Out of memory (?:while trying to allocate|allocating) (?:(?P<n>\d{1,20}) bytes|"
    + sz("h", "bytes|KiB|MiB|GiB|TiB|B")
    + ")"
)
_XLA_PARAM = re.compile(r"parameter allocation: {0,20}" + sz("p", "bytes|KiB|MiB|GiB|TiB|B"))
_REMAT = re.compile(
    r"Can't reduce memory use below (?P<lim>\S{1,30})(?: \((?P<limn>\d{1,20}) bytes\))? by "
    r"rematerialization; only reduced to (?P<got>\S{1,30})(?: \((?P<n>\d{1,20}) bytes\))?"
)
# TF 2.x "tensor with shape[...]", TF 1.x "tensor of shape [...]"
# The failing op is an optimizer's: TF's training_ops.cc holds the Apply* kernels
# (tensorflow/core/kernels/training_ops.cc, ApplyAdamOp...), and slot_creator.create_zeros_slot
# (tensorflow/python/training/slot_creator.py) names a variable's optimizer slots
# "<var>/Adam/Initializer/zeros", "<var>/Adam_1"...: a tensor the shape of a parameter, not of the
# batch (rules_serving)
_TF_OPTIMIZER = re.compile(
    r"training_ops\.cc|\b(?:Resource)?Apply(?:Adam|AdamWithAmsgrad|Momentum|RMSProp|"
    r"CenteredRMSProp|Adagrad|AdagradV2|Adadelta|Ftrl|FtrlV2)\b|"
    r"/(?:Adam|Momentum|RMSProp|Adagrad|Adadelta|Ftrl)(?:_1)?/Initializer/"
)
_TF = re.compile(
    r"OOM when allocating tensor(?: (?:with|of) shape ?(?:\[(?P<shape>[\d, ]{0,200})\])?)?"
    r"(?: and type (?P<dtype>\w{1,20}))?(?: on (?P<dev>\S{1,120}))?"
    r"(?: by allocator (?P<a>\w{1,40}))?"
)
# TF stream_executor (cuda_driver.cc / rocm_driver.cc) at session start
_TF_DRIVER = re.compile(
    r"failed to allocate (?P<h>[\d.]{1,20}[KMGT]?(?:iB)?) \((?P<n>\d{1,20}) bytes\) from device: "
    r"(?P<err>CUDA_ERROR_OUT_OF_MEMORY|hipErrorOutOfMemory|HIP_ERROR_OutOfMemory"
    r"|hipError_t\(\d{1,5}\)|\w{1,60})"
)
# TF / XLA cuda_malloc_async allocator (gpu_cudamallocasync_allocator.cc): "<name> cuMemAllocAsync
# failed to allocate N[ bytes]: <status>" then "[Reported by CUDA: ]Free memory/Total memory: F/T"
_TF_ASYNC = re.compile(r"cuMemAllocAsync failed to allocate (?P<n>\d{1,20})(?: bytes)?\b")
_TF_ASYNC_FT = re.compile(r"Free memory/Total memory: (?P<f>\d{1,20})/(?P<t>\d{1,20})")
# XLA PJRT: "Failed to allocate request for 3.00GiB (3221225472B) on device ordinal 0"
_XLA_REQ = re.compile(
    r"Failed to allocate request for \S{1,30} \((?P<n>\d{1,20})B\) on device ordinal "
    r"(?P<dev>\d{1,3})"
)
# CUDA driver API names (candle/mistral.rs, cupy, numba...): CUDA_ERROR_OUT_OF_MEMORY
_DRIVER_API = re.compile(r"CUDA_ERROR_OUT_OF_MEMORY|hipErrorOutOfMemory|HIP_ERROR_OutOfMemory")
_TF_DEV = re.compile(r"(?:GPU|gpu):(?P<d>\d{1,3})")
# TF "ResourceExhaustedError: OOM" (a title or a cut paste) and the BFC allocator's own line,
# "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to ...)"
_TF_BARE = re.compile(r"(?:ResourceExhaustedError|Resource exhausted):? ?OOM\b")
# (TF 1.x printed it without the allocator's name: "bfc_allocator.cc:275] Ran out of memory
# trying to allocate 392.00MiB.  See logs for memory state.")
_BFC = re.compile(
    r"(?:Allocator \((?P<a>\w{1,40})\) ran|bfc_allocator\.cc:\d{1,5}\] Ran) out of memory "
    r"trying to allocate " + sz("req", "B|KiB|MiB|GiB|TiB|bytes", " ?")
)
# the BFC line cut (or paraphrased in a title) before its size: "Allocator ran out of memory"
_BFC_CUT = re.compile(r"\bAllocator (?:\(\w{1,40}\) )?ran out of memory\b")
# the CUDA driver call that failed: context creation is this process's first allocation
_CTX_CREATE = ("cuCtxCreate", "cuDevicePrimaryCtxRetain", "context creation", "create context")
_DS = re.compile(
    r"\bMA (?P<ma>\d{1,9}(?:\.\d{1,4})?) GB\s{1,20}Max_MA (?P<mma>\d{1,9}(?:\.\d{1,4})?) GB"
)
_KILL = re.compile(
    r"(?P<scope>Out of memory|Memory cgroup out of memory): Kill(?:ed)? process (?P<pid>\d{1,10}) "
    r"\((?P<comm>[^)]{0,64})\)"
)
_KILL_DETAIL = re.compile(
    r"total-vm:(?P<vm>\d{1,16})kB, anon-rss:(?P<anon>\d{1,16})kB, file-rss:(?P<file>\d{1,16})kB"
    r"(?:, shmem-rss:(?P<shmem>\d{1,16})kB)?"
)
_KILLED_OLD = re.compile(r"^Killed process (?P<pid>\d{1,10}) \((?P<comm>[^)]{0,64})\)")
_INVOKED = re.compile(r"(?P<comm>\S{1,64}) invoked oom-killer:")
# (also quoted in prose, as users report it: I got this message -> "Killed".)
# (also inside Markdown bold or inline code: "**Killed**", "`Killed`", after a rank prefix)
# A progress bar (tqdm, rich) redraws its line with "\r" and no newline, so the shell's "Killed\n"
# lands right after the bar's last frame: "0:02:25Killed", "100%|####| 3/3Killed" (a digit, a
# percent sign or a bar glyph before it; never a letter)
_BARE_KILLED = re.compile(
    r"(?:^|[\s\]|:>\d%\u2500-\u259f])(?:\*{2,3}|`{1,3})?[\"'\u201c]?Killed(?:[\"'\u201d][.!]?)?"
    r"(?:\*{2,3}|`{1,3})?\s{0,8}$"
)
# what may follow the shell's "Killed" in a paste: the shell has reported the end of the job, so
# after it come only blank lines, a code fence, a prompt or the poster's own words, never the
# killed program's own output going on ("Killed" then "Restarting the server", "Loading model
# weights", "serving on port 8000" is a program that printed the word and kept running)
_AFTER_KILLED_MAX = 2
# torch/csrc/DataLoader.cpp: "DataLoader worker (pid N) is killed by signal: <strsignal>. ";
# SIGKILL ("Killed") is the OOM killer's signal, SIGBUS ("Bus error") a write past what the
# shared-memory tmpfs (/dev/shm) holds: workers hand batches over in shared memory (PyTorch adds
# "It is possible that dataloader's workers are out of shared memory"). Titles drop the pid;
# a poster who hides it writes a placeholder ("(pid xxxx)", "(pid N)", "(pid ...)").
_DATALOADER = re.compile(
    r"DataLoader worker (?:\(pid (?P<pid>\d{1,10}|[xXN?]{1,8}|\.{3}|<pid>)\) )?"
    r"is killed by signal(?::? (?P<sig>Killed|Bus error|Terminated|"
    # "Bus" at the end of a line: a paste hard-wrapped inside "Bus error" (no other signal
    # name starts with it)
    r"Bus(?=\s{0,4}$))|"
    # (docrec26) a title that stops before the signal's name: "DataLoader worker (pid xxx) is
    # killed by signal" (Killed, Bus error or Segmentation fault: the name decides)
    r"(?=[\s.:`'\"]{0,4}$))"
)
# zsh job control: "[1]    14875 killed     python main.py" (SIGKILL, the OOM killer's signal)
_ZSH_KILLED = re.compile(r"\[\d{1,4}\]\s{0,4}\+?\s{1,8}(?P<pid>\d{1,10}) killed\s{1,12}\S")
# bash reporting a child it ran from a script (jobs.c, non-interactive): "start.sh: line 27:
# 318 Killed   python train.py" (SIGKILL, the OOM killer's signal; the command follows). bash
# translates the "line %d" prefix (error.c, po/*.po: de Zeile, fr ligne, it riga, es línea,
# pt linha, nl regel, pl linia, sv rad, ru строка) while the signal name often stays English
# (docfix15) bash's po/*.po "%s: line %d: " in CJK (jobs.c notify_of_job_status): ko "%s: 줄 %d: "
# (older ko.po "행 %d번: "), ja "%s: %d 行: ", zh_CN "%s: 第 %d 行：", zh_TW "%s: 第 %d 列：" (a
# full-width colon and no space: "%5ld" pads the pid, so a 5-digit pid follows it directly);
# (docpost23) a space before the colon ("line 155 : 1126 Killed"): French typography spaces
# it ("%s : ligne %d : "), and pastes retyped by hand do
_BASH_KILLED = re.compile(
    r"(?:(?:line|Zeile|ligne|riga|l\u00ednea|linha|regel|linia|rad|"
    r"\u0441\u0442\u0440\u043e\u043a\u0430|\uc904) \d{1,7}|\ud589 \d{1,7}\ubc88|"
    # (docpost28, heldout54) "行 30:" ("line 30:" with the noun first, as zh_CN pastes show it)
    r"\d{1,7} \u884c|\u884c \d{1,7}|\u7b2c \d{1,7} [\u884c\u5217]) ?[:\uff1a]"
    # the command after the signal's name, or the line's end (a paste that lost the command)
    r"[ \t]{0,8}(?P<pid>\d{1,10}) Killed(?:[ \t]{1,40}\S|[ \t]{0,8}$)"
)
# (docfix15) bash's interactive job report (jobs.c pretty_print_job "[%d]%c " then
# print_pipeline: the pid with ``jobs -l``, the signal's name padded to LONGEST_SIGNAL_DESC, the
# command): "[1]+  Killed                  python train.py"; "Done", "Stopped", "Terminated" are
# other endings, not a kill
_BASH_JOB_KILLED = re.compile(
    r"^\s{0,8}\[\d{1,4}\][+\- ](?:\s{0,8}(?P<pid>\d{1,10}))?\s{1,8}Killed\s{1,40}\S"
)
# winerror.h 1455 ERROR_COMMITMENT_LIMIT "The paging file is too small for this operation to
# complete": Python prints "[WinError 1455]", C/C++ runtimes "error 1455" / "error code 1455"
_WIN1455 = re.compile(r"(?:WinError|[Ee]rror(?: code)?|os error)[ :=]{0,3}1455\b")
# (docrec28) winerror.h 8 ERROR_NOT_ENOUGH_MEMORY "Not enough memory resources are available to
# process this command" and 14 ERROR_OUTOFMEMORY "Not enough memory resources are available to
# complete this operation": the code is the same in every Windows display language, while the
# text FormatMessage prints is translated (ja "メモリ リソースが不足しているため…", zh_CN "存储空间
# 不足，无法完成此操作"); Python prints the code as "[WinError N]", Rust as "(os error N)"
_WIN_NOMEM = re.compile(r"\[WinError (?:8|14)\]|\(os error (?:8|14)\)")
# also Go's os/exec ExitError ("exit status %d", what Ollama and Go launchers print) and the
# container status of `docker ps` (moby container/state.go State.String: "Exited (%d) %s ago")
# a title that words the same exit code: "exits with error -9", "exited with status -9"; the
# DeepSpeed launcher's "{cmd} exits with return code = {last_return_code}" (deepspeedai/DeepSpeed
# deepspeed/launcher/launch.py sigkill_handler: Popen.returncode, -9 for a child ended by SIGKILL)
_EXIT_137 = re.compile(
    # (docrec31) also capitalised and column-aligned: `kubectl describe pod` prints a terminated
    # container's "Exit Code:\t%d" (kubernetes/kubectl pkg/describe/describe.go
    # describeContainerState), tabs that the terminal turns into spaces: "Exit Code:    137"
    r"(?i:exit)(?:ed with)? (?i:code):?[ \t]{0,12}(?:137|-9)\b|"
    # (no \\b before "exit": a CJK title runs the word on, "训练出现exits with return code = -9")
    r"(?<![A-Za-z0-9_])exit(?:s|ed)? with (?:an? )?(?:error|status|return code|exit code)"
    r"[:= ]{1,3}(?:137|-9)\b|"
    r"OOMKilled|\bexit status 137\b|\bExited \(137\)|"
    # the same return code in Chinese: "返回错误码-9", "退出码 137"
    r"(?:返回|退出)(?:错误|状态|返回)?码\s{0,2}[:：=]?\s{0,2}(?:137|-9)(?!\d)|"
    # a pod's status as `kubectl get pod -o yaml|json` prints it (kubernetes/api core/v1
    # types.go ContainerStateTerminated: ExitCode int32 `json:"exitCode"`), also KServe's
    # lastFailureInfo: "exitCode: 137", '"exitCode": 137'
    r"\bexitCode\W{0,2}\s{0,3}[:=]\s{0,3}137\b|"
    # (docrec27) 137 is 128 + SIGKILL whatever verb reports it: Docker Compose's "exited with
    # code 137", "finished / failed / crashed with code 137", "returned code 137", a supervisor's
    # "return code 137" or "status code 137" (not "line 137", not "code 1370")
    r"\b(?i:with|return(?:ed|s)?|status) (?:exit |return |error )?code:? ?137(?!\d)(?![.,]\d)"
)
# PyTorch's DataLoader sentences about a worker's SIGBUS quoted without the line they end
# (torch/csrc/DataLoader.cpp): handler_SIGBUS's "This might be caused by insufficient shared
# memory (shm)." and _error_if_any_worker_fails' "It is possible that dataloader's workers are
# out of shared memory. Please try to raise your shared memory limit."
_DATALOADER_SHM = re.compile(
    r"\bcaused by insufficient shared memory \(shm\)|"
    r"\b(?:dataloader'?s? )?workers are out of shared memory\b",
    re.IGNORECASE,
)
# a compiler killed by SIGKILL while building a CUDA extension (flash-attn, xformers, vLLM with
# MAX_JOBS parallel jobs): gcc/gcc.cc execute() "%s signal terminated program %s" with
# strsignal(SIGKILL) = "Killed" (gcc's own comment: "the user or OOM killer nuked it"), and
# nvcc's "nvcc error   : 'cicc' died due to signal 9 (Kill signal)"
_BUILD_KILLED = re.compile(
    r"\bKilled signal terminated program (?P<prog>[\w.+-]{1,80})|"
    r"'(?P<nvprog>[^'\n]{1,200})' died due to signal 9\b"
)
# Docker's State.OOMKilled prints false for every container that was not killed (moby
# api/types/container State: "OOMKilled": false)
_OOMKILLED_FALSE = re.compile(r"OOMKilled\W{0,4}\s{0,4}[:=]\s{0,4}\W{0,2}false\b", re.IGNORECASE)
_DTYPE_BYTES = {
    "float": 4,
    "float32": 4,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "double": 8,
    "float64": 8,
    "int32": 4,
    "int64": 8,
    "int8": 1,
    "uint8": 1,
}

_NEEDLES = (
    "Unexpected bus error",
    "CUDA_ERROR_OUT_OF_MEMORY",
    "HIP_ERROR_OutOfMemory",
    "from device:",
    "cuMemAllocAsync failed",
    "of memory while trying",
    "Out of memory allocating",
    "Resource exhausted",
    "Failed to allocate request for",
    "RESOURCE_EXHAUSTED",
    "rematerialization",
    "parameter allocation",
    "OOM when allocating",
    "Resource",
    "an out of memory",
    "Max_MA",
    "No executable batch size",
    "Kill",
    "kill",
    "oom",
    "1455",
    "paging file",
    "WinError",
    "os error",
    "code 137",
    "code: 137",
    "Exit Code",
    "Exit code",
    "exit code",
    "exitCode",
    "status 137",
    "(137)",
    "signal terminated program",
    "due to signal 9",
    "code -9",
    "code = -9",
    "error -9",
    "status -9",
    "error 137",
    "码",
    "shared memory",
)
_PREFILTER = needles_re(_NEEDLES)
_XLA_KEYS = (
    "RESOURCE_EXHAUSTED",
    "Resource exhausted",
    "Out of memory while",
    "of memory allocating",
)


def _ev(runtime: str, kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=text[:800], **kw)


def _job_ended(lines: Lines, i: int) -> bool:
    """At most :data:`_AFTER_KILLED_MAX` lines of text (not blank, not a code fence) follow line
    ``i``: the paste ends with the shell's report, as it does when the job was killed."""
    after = 0
    for later in lines.text[i + 1 : i + 2 + _AFTER_KILLED_MAX * 4]:
        t = later.strip()
        if t and not t.startswith(("```", "~~~")):
            after += 1
            if after > _AFTER_KILLED_MAX:
                return False
    return True


def _linux(lines: Lines, i: int, line: str, n: int) -> OomEvent | None:
    m = _KILL.search(line)
    if m is not None:
        w = window(lines, i, max_lines=2)
        d = _KILL_DETAIL.search(w)
        kb = "kB"
        return _ev(
            "linux",
            "oom_killer",
            "linux_oom_killer",
            line,
            n,
            pid=int(m.group("pid")),
            process_name=m.group("comm"),
            cgroup=m.group("scope").startswith("Memory cgroup"),
            total_vm_bytes=to_bytes(d.group("vm"), kb, "linux") if d else None,
            anon_rss_bytes=to_bytes(d.group("anon"), kb, "linux") if d else None,
            file_rss_bytes=to_bytes(d.group("file"), kb, "linux") if d else None,
            shmem_rss_bytes=to_bytes(d.group("shmem"), kb, "linux")
            if d and d.group("shmem")
            else None,
        )
    m2 = _KILLED_OLD.search(line)
    if m2 is not None:
        d = _KILL_DETAIL.search(line)
        return _ev(
            "linux",
            "oom_killer",
            "linux_oom_killer",
            line,
            n,
            pid=int(m2.group("pid")),
            process_name=m2.group("comm"),
            total_vm_bytes=to_bytes(d.group("vm"), "kB", "linux") if d else None,
            anon_rss_bytes=to_bytes(d.group("anon"), "kB", "linux") if d else None,
        )
    if "invoked oom-killer" in line:
        m3 = _INVOKED.search(line)
        if m3 is not None:
            return _ev(
                "linux", "oom_killer", "linux_oom_killer", line, n, process_name=m3.group("comm")
            )
    if "Unexpected bus error encountered in worker" in line or (
        "shared memory" in line and _DATALOADER_SHM.search(line)
    ):
        # torch/csrc/DataLoader.cpp handler_SIGBUS: "ERROR: Unexpected bus error encountered in
        # worker. This might be caused by insufficient shared memory (shm)."; its second
        # sentence, or the one _error_if_any_worker_fails adds after a SIGBUS, quoted alone
        return _ev("pytorch", "killed", "dataloader_bus_error", line, n)
    if "is killed by signal" in line:
        m4 = _DATALOADER.search(line)
        if m4 is not None:
            # SIGTERM ("Terminated") and a signal the paste does not name: dataloader_signal
            sig = m4["sig"]
            fmt = "dataloader_bus_error" if sig and sig.startswith("Bus") else "dataloader_signal"
            fmt = "dataloader_killed" if sig == "Killed" else fmt
            pid = int(m4["pid"]) if m4["pid"] and m4["pid"].isdigit() else None
            return _ev("pytorch", "killed", fmt, line, n, pid=pid)
    m5 = _ZSH_KILLED.search(line) if "killed" in line else None
    if m5 is not None:
        return _ev("linux", "killed", "linux_killed", line[-300:], n, pid=int(m5.group("pid")))
    m6 = _BASH_KILLED.search(line) if "Killed" in line else None
    if m6 is not None:
        return _ev("linux", "killed", "linux_killed", line[-300:], n, pid=int(m6.group("pid")))
    m6 = _BASH_JOB_KILLED.search(line) if "Killed" in line and "[" in line else None
    if m6 is not None:
        pid = int(m6["pid"]) if m6["pid"] else None
        return _ev("linux", "killed", "linux_killed", line[-300:], n, pid=pid)
    if (
        ("Killed" in line[-20:] and _BARE_KILLED.search(line[-40:])) or line.strip() == "killed"
    ) and _job_ended(lines, i):
        # the shell's "Killed" (SIGKILL, the OOM killer's signal), also as a lone lower-case line
        return _ev("linux", "killed", "linux_killed", line[-300:], n)
    m7 = _BUILD_KILLED.search(line) if ("signal terminated" in line or "signal 9" in line) else None
    if m7 is not None:
        prog = (m7.group("prog") or m7.group("nvprog")).rsplit("/", 1)[-1].strip('"')
        return _ev(
            "linux",
            "killed",
            "compiler_killed",
            line,
            n,
            process_name=prog,
            detail="a compiler process of the build was SIGKILLed (parallel jobs, MAX_JOBS)",
        )
    if _EXIT_137.search(line) and not ("OOMKilled" in line and _OOMKILLED_FALSE.search(line)):
        # Docker's State.OOMKilled / the kubelet's Reason OOMKilled: the kernel's OOM killer,
        # not any SIGKILL
        oom_killed = "OOMKilled" in line
        limit = _pod_memory_limit(lines, i) if oom_killed else None
        return _ev(
            "linux",
            "killed",
            "exit_137",
            line,
            n,
            detail="OOMKilled" if oom_killed else None,
            allowed_bytes=limit,
            cgroup=True if limit else None,
        )
    return None


# ``kubectl describe pod``'s container block (kubectl/pkg/describe describeContainerResource):
# "    Limits:" then one "      <resource>:  <quantity>" line per resource
_LIMITS_HEAD = re.compile(r"^\s{0,12}Limits:\s*$")
_LIMIT_MEMORY = re.compile(
    r"^\s{0,16}memory:\s{1,20}(?P<v>\d{1,9}(?:\.\d{1,3})?)(?P<u>[KMGT]i)?\s*$"
)


def _pod_memory_limit(lines: Lines, i: int) -> int | None:
    """The container's ``resources.limits.memory`` that ``kubectl describe pod`` prints below its
    OOMKilled state (the same container's block: the next ``Limits:`` within 20 lines)."""
    text = lines.text
    for j in range(i + 1, min(len(text), i + 20)):
        if _LIMITS_HEAD.match(text[j]):
            for k in range(j + 1, min(len(text), j + 4)):
                m = _LIMIT_MEMORY.match(text[k])
                if m is not None:
                    return to_bytes(m["v"], m["u"] or "b", "kubernetes")
            return None
    return None


def parse_other(lines: Lines) -> tuple[list[OomEvent], dict[str, Any]]:
    """Find JAX/TF/DeepSpeed/accelerate/Linux/Windows OOM messages in ``lines``.

    Returns:
        Events and context facts (``parameter_bytes``, ``deepspeed_allocated_bytes``).
        Never raises on arbitrary text.
    """
    events: list[OomEvent] = []
    facts: dict[str, Any] = {}
    for i in admitted(lines, _PREFILTER):
        line = lines.cleaned(i)
        n = lines.number[i]
        if "from device:" in line:
            m0 = _TF_DRIVER.search(line)
            if m0 is not None:
                events.append(
                    _ev(
                        "tensorflow",
                        "gpu_alloc_failed",
                        "tf_driver_alloc",
                        line,
                        n,
                        requested_bytes=to_int(m0.group("n")),
                        detail=m0.group("err"),
                        stage="startup",
                    )
                )
                continue
        if "cuMemAllocAsync failed to allocate" in line:
            m6 = _TF_ASYNC.search(line)
            if m6 is not None:
                ft = _TF_ASYNC_FT.search(window(lines, i, max_lines=2))
                events.append(
                    _ev(
                        "tensorflow",
                        "gpu_alloc_failed",
                        "tf_cudamallocasync_oom",
                        line,
                        n,
                        requested_bytes=to_int(m6.group("n")),
                        free_bytes=to_int(ft.group("f")) if ft is not None else None,
                        total_bytes=to_int(ft.group("t")) if ft is not None else None,
                    )
                )
                continue
        if "Failed to allocate request for" in line:
            m1 = _XLA_REQ.search(line)
            if m1 is not None:
                events.append(
                    _ev(
                        "jax",
                        "xla_oom",
                        "xla_resource_exhausted",
                        line,
                        n,
                        requested_bytes=to_int(m1.group("n")),
                        device=int(m1.group("dev")),
                    )
                )
                continue
        if ("CUDA_ERROR_OUT_OF_MEMORY" in line or "HIP_ERROR_OutOfMemory" in line) and (
            _DRIVER_API.search(line)
        ):
            rt = "cuda" if "CUDA_ERROR" in line else "rocm"
            ctx_w = window(lines, i, max_lines=6)
            stage = "context_create" if has_any(ctx_w, _CTX_CREATE) else "driver"
            events.append(_ev(rt, "cuda_error_oom", "cuda_driver_error", line, n, stage=stage))
            continue
        if has_any(line, _XLA_KEYS):
            xw = line if "Out of memory " in line else window(lines, i, max_lines=2)
            m = _XLA.search(xw)
            if m is not None:
                req = to_int(m.group("n")) if m.group("n") else size_of(m, "h", "jax")
                events.append(
                    _ev("jax", "xla_oom", "xla_resource_exhausted", xw, n, requested_bytes=req)
                )
                continue
        if "parameter allocation" in line:
            m = _XLA_PARAM.search(line)
            if m is not None:
                facts["parameter_bytes"] = size_of(m, "p", "jax")
            continue
        if "rematerialization" in line:
            m2 = _REMAT.search(line)
            if m2 is not None:
                events.append(
                    _ev(
                        "jax",
                        "xla_compile_oom",
                        "xla_rematerialization",
                        line,
                        n,
                        requested_bytes=to_int(m2.group("n")) if m2.group("n") else None,
                        total_bytes=to_int(m2.group("limn")) if m2.group("limn") else None,
                        stage="compile",
                        detail=f"limit {m2.group('lim')}, reduced only to {m2.group('got')}",
                    )
                )
                continue
        if "OOM when allocating" in line and "not a failure" not in line:
            m3 = _TF.search(line)
            if m3 is not None:
                shape = m3.group("shape") or ""
                dims = tuple(int(x) for x in shape.replace(" ", "").split(",") if x)
                dims = tuple(d for d in dims if d < 10**12)
                dev = _TF_DEV.search(m3.group("dev") or "")
                opt = _TF_OPTIMIZER.search(window(lines, i, max_lines=3))
                if opt is not None:
                    facts.setdefault("tf_optimizer_node", opt.group(0)[:120])
                events.append(
                    _ev(
                        "tensorflow",
                        "tf_oom",
                        "tf_oom_allocating_tensor",
                        line,
                        n,
                        shape=dims,
                        dtype=m3.group("dtype"),
                        device=int(dev.group("d")) if dev else None,
                        buffer_name=m3.group("a"),
                    )
                )
                continue
        if "Resource" in line or "an out of memory" in line:
            m5 = _TF_BARE.search(line) or _BFC.search(line) or _BFC_CUT.search(line)
            # the BFC warning "The caller indicates that this is not a failure" is not an OOM,
            # but it shows the graph running (an op's retry-able allocation): a fact for the
            # driver failure that may follow it (rules_serving, tf_driver_alloc)
            if m5 is not None and "not a failure" in window(lines, i, max_lines=2):
                facts.setdefault("tf_bfc_retry", line[:300])
            if m5 is not None and "not a failure" not in window(lines, i, max_lines=2):
                num = m5.groupdict().get("req")
                unit = m5.groupdict().get("req_u")
                events.append(
                    _ev(
                        "tensorflow",
                        "tf_oom",
                        "tf_resource_exhausted" if num is None else "tf_bfc_allocator",
                        line,
                        n,
                        requested_bytes=to_bytes(num, unit, "tensorflow") if num and unit else None,
                        buffer_name=m5.groupdict().get("a"),
                    )
                )
                continue
        if "Max_MA" in line:
            m4 = _DS.search(line)
            if m4 is not None:
                b = to_bytes(m4.group("ma"), "GB", "deepspeed")
                if b is not None:
                    facts.setdefault("deepspeed_allocated_bytes", []).append(b)
            continue
        if "No executable batch size found" in line:
            events.append(
                _ev("accelerate", "batch_search_exhausted", "accelerate_batch_size", line, n)
            )
            continue
        if "1455" in line or "paging file" in line:
            if _WIN1455.search(line) or "paging file is too small" in line:
                events.append(_ev("windows", "host_oom", "windows_pagefile", line, n))
            continue
        if ("WinError" in line or "os error" in line) and _WIN_NOMEM.search(line):
            events.append(_ev("windows", "host_oom", "windows_not_enough_memory", line, n))
            continue
        ev = _linux(lines, i, line, n)
        if ev is not None and not _same_death(events, ev):
            events.append(ev)
    return events, facts


def _same_death(events: list[OomEvent], ev: OomEvent) -> bool:
    """``kubectl describe`` states one container's death twice: "Reason: OOMKilled" then, a line
    below, "Exit Code: 137"; the second is the same event (docrec31)."""
    if ev.format != "exit_137" or not events:
        return False
    last = events[-1]
    return last.format == "exit_137" and last.detail == "OOMKilled" and ev.line - last.line <= 3


def tensor_bytes(shape: tuple[int, ...], dtype: str | None) -> int | None:
    """Bytes of a dense tensor, when the dtype is a known fixed-width type."""
    size = _DTYPE_BYTES.get((dtype or "").lower())
    if size is None:
        return None
    total = size
    for d in shape:
        total *= d
    return total
