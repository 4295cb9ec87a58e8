"""Issue 9 after heldout16 / heldout17: the families of ``parse_wordings_damage`` and the widened
host-killer forms of ``parse_other``, each on several forms other than the record it was found
in, inside the four log wrappers, with the neighbours that must stay silent (a question, a
negation, a fix, the same words about something else)."""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text
from recognition_cases import WRAPPERS, recognition_tests

_WRAPPERS = WRAPPERS

_OOM = (
    # "memory" misspelt after "out of"
    "CUDA out of memeory when training with batch size 8",
    # the status name misspelt
    "5746 tokens job: RESSOURCE_EXHAUSTED (H100 80G, despite unified memory)",
    "XlaRuntimeError: RESOURCE_EXHAUSED while compiling the train step",
    "RuntimeError: CUDA out of memroy. Tried to allocate",
    "GPU out of memmory on the second epoch",
    "got out of momery on a 3090",
    # a machine-translated CUDA status
    "检查失败：e == cudaSuccess：CUDA：没有记忆",
    "Check failed: e == cudaSuccess CUDA: 記憶體不足",
    # Chinese: the memory collapses
    "跑了几个epoch之后显存直接崩了",
    "推理长文本时显存炸了",
    "加载模型后内存就崩",
    # a cause verb, then a memory that explodes
    "loading every rank's weights on one device causes cuda:0 memory to explode",
    "this change makes the GPU memory explode at step 10",
    "gathering the logits led to RAM usage to blow up",
    # a memory overflow as the error reported
    "error: memory overflow when fine-tuning on a V100",
    "memory overflow occurred during the second stage",
    # TensorFlow's status as a title's first words
    "Resource exhausted when training with batch 64",
    "Resource exhaustion while running inference on 4K images",
    # growth with an adverb and its end
    "GPU memory usage keeps steadily growing until the process exits",
    "RAM usage keeps increasing and then the whole machine freezes",
    "the memory keeps slowly climbing and the app hangs",
    # a crash put down to memory growth
    "the server crashes due to unbounded memory growth",
    "kernel panic caused by excessive GPU memory usage",
    # not enough, in other words
    "I only have 12GB of VRAM and it doesn't seem to be enough",
    # Chinese: only N GB, cannot run
    "我的显卡只有6G跑不动",
    "显存只有 8GB 运行不了",
    # host killers worded in a title, and a hidden DataLoader pid
    "train.py exited with status -9 after loading the dataset",
    "accelerate launch exits with error 137",
    "DataLoader worker (pid N) is killed by signal: Killed.",
    "DataLoader worker (pid ...) is killed by signal: Bus error.",
)

_NOT_OOM = (
    # English words near "memory" after "out of"
    "we ran out of money for the cluster",
    "out of members on the team",
    "Out of mercy, the reviewer approved it",
    "out of memos to send",
    # the CUDA status in Chinese that is not memory; memory statistics
    "检查失败：e == cudaSuccess：CUDA：无效的设备函数",
    "显存占用：10.2 GB / 24 GB",
    "模型崩溃了，输出乱码",
    "这样显存就不会炸了",
    "内存炸弹攻击",
    "显存没崩，只是很慢",
    # explode / blow up without a memory, or only predicted
    "gradients explode causing NaN loss",
    "this makes the loss explode",
    "memory will blow up if you set the batch to 512",
    # overflow that is not the memory
    "buffer overflow reported in the tokenizer",
    "a memory overflow in the parser was fixed",
    "integer overflow occurred in the index computation",
    # resource exhaustion that is not an allocation
    "Resource exhaustion attack via large payloads",
    "How to prevent resource exhaustion when serving many users",
    "INFO: resource exhaustion on the cluster is monitored",
    # growth that ends well, a fix, a question
    "memory usage keeps increasing but the script exits normally",
    "memory usage keeps growing during warmup then stays flat",
    "crash fixed; unbounded memory growth was removed",
    "Does 8GB of VRAM seem to be enough?",
    "显存只有8G，够不够？",
    "显存只有8G能跑吗？",
    # other statuses with the same shape; a quota named by the misspelt status
    "RESOURCE_ENABLED is set for the pool",
    "RESPONSE_EXPECTED from the server",
    "RESSOURCE_EXHAUSTED: Quota exceeded for the project",
    # exit codes that are not SIGKILL
    "test exits with error -90",
    "the script exited with error 1",
    "DataLoader worker (pid 4242) exited unexpectedly with exit code 1",
)


(
    test_damaged_or_reworded_oom_is_recognised,
    test_damaged_or_reworded_oom_is_recognised_inside_a_log,
    test_near_miss_is_not_an_oom,
) = recognition_tests(_OOM, _NOT_OOM)


def test_a_host_kill_worded_in_a_title_is_host_ram() -> None:
    d = diagnose_text("run_clm.py exited with status -9 on checkpoint restart")
    assert d.oom_found
    assert d.cause == "host_ram"


def test_a_hidden_dataloader_pid_is_not_read_as_a_pid() -> None:
    d = diagnose_text("RuntimeError: DataLoader worker (pid xxxx) is killed by signal: Bus error.")
    assert d.primary is not None
    assert d.primary.pid is None
    assert d.cause == "host_ram"


def test_a_run_of_no_break_spaces_is_loosened_like_spaces() -> None:
    # a double space that a web page turned into two no-break spaces (doctor_metamorphic "nbsp")
    assert diagnose_text("the error came out:CUDA\u00a0out\u00a0of\u00a0\u00a0memory").oom_found
    assert diagnose_text("CUDA out of\u3000\u3000memory").oom_found
    assert not diagnose_text("CUDA\u00a0\u00a0works\u00a0\u00a0fine").oom_found
