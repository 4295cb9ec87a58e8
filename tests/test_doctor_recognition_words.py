"""Issue 9, docrec27: recognition of the families heldout29 and heldout30 left unrecognised,
each built from the runtime's format string (or the mechanism it reports) with realistic numbers,
with the neighbours that must stay silent: PyTorch's DataLoader SIGBUS sentences quoted alone, a
notebook kernel that died, exit code 137 reported by any verb, the memory kinds of a translated
显存不足 (graphics / display memory), "out of mem", "No enough memory", and a memory that
continues to rise until it runs out."""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.parse_wordings_exits import exit_match
from recognition_cases import recognition_tests

_OOMS = (
    # torch/csrc/DataLoader.cpp handler_SIGBUS, the second sentence alone
    "This might be caused by insufficient shared memory (shm).",
    # torch/csrc/DataLoader.cpp _error_if_any_worker_fails after a SIGBUS, without its first line
    "It is possible that dataloader's workers are out of shared memory. Please try to raise your "
    "shared memory limit.",
    # Jupyter Notebook / JupyterLab's dialog, VS Code Jupyter's kernel crash
    "The kernel appears to have died. It will restart automatically.",
    "The kernel for notebooks/train_lora.ipynb appears to have died. It will restart "
    "automatically.",
    "The Kernel crashed while executing code in the the current cell or a previous cell. Please "
    "review the code in the cell(s) to identify a possible cause of the failure.",
    # 128 + SIGKILL, whatever verb reports it (Docker Compose, CI runners, supervisors)
    "sd-webui-1 exited with code 137",
    "The job failed with exit code 137 after 41 minutes",
    "subprocess returned code 137",
    "worker 3: return code 137",
    "Status code 137 from the inference container",
    # 显存不足 as machine translation renders it
    "Error: insufficient graphics memory, the model needs 22.5 GB",
    "Insufficient display memory when decoding 1024x1024 with the VAE",
    "there is not enough graphics memory to load the refiner",
    # memory's short form
    "vllm server outofmem with 4 concurrent requests",
    "GPU out of mem when batch is 64",
    # "No enough memory" as runtimes print it (PlaidML's scheduler, Spark's aggregation)
    "No enough memory for the current schedule: required 4294967296, available 2147483648",
    "there is no enough GPU memory for the 13B model",
    # a memory that continues to rise until it runs out
    "With num_workers=8 the RAM will continue to rise until the machine freezes",
    "GPU memory continued to grow with each epoch until the OOM",
)

_NEAR_MISSES = (
    "If the kernel appears to have died, restart it from the Kernel menu.",
    "When the Kernel crashed while executing code in the current cell, save the log.",
    "Restart the kernel to clear the variables before running the cell again.",
    "The container exited with code 0 after the job finished.",
    "The script returned code 1 because the config file was missing.",
    "Process finished with code 1370 entries written.",
    "Error on line 137 of config.py",
    "Graphics memory bandwidth is the bottleneck here, not its capacity.",
    "The display memory clock runs at 7000 MHz on this card.",
    "We read the weights straight out of mem-mapped storage.",
    "Get the most out of mem0 by giving it a persistent store.",
    "No, enough memory is left for the cache.",
    "Memory use will continue to rise with larger batch sizes, so pick the batch that fits.",
    "The memory continues to rise during warmup and then stays flat.",
    "Workers write each batch into shared memory before the main process reads it.",
    "Set --shm-size=8g so that the DataLoader workers have room in shared memory.",
    "The new attention kernel makes long-context training OOM-free on 24 GB cards.",
    "an OOM-safe batch size finder",
)

(
    test_docrec27_wordings_are_recognised,
    test_docrec27_wordings_are_recognised_inside_a_log,
    test_docrec27_near_misses_stay_silent,
) = recognition_tests(_OOMS, _NEAR_MISSES)


@pytest.mark.parametrize(
    "text",
    [
        "This might be caused by insufficient shared memory (shm).",
        "I get the error 'dataloader's workers are out of shared memory'.",
    ],
)
def test_pytorch_shm_sentences_alone_are_the_dataloader_bus_error(text: str) -> None:
    assert [e.format for e in parse_log(text).events] == ["dataloader_bus_error"]
    d = diagnose_text(text)
    assert d.cause == "host_ram"
    assert "/dev/shm" in d.explanation


def test_a_notebook_kernel_death_reads_host_ram_low_with_the_deciding_fact() -> None:
    d = diagnose_text("The kernel appears to have died. It will restart automatically.")
    assert d.cause == "host_ram"
    assert d.confidence == pytest.approx(0.3)
    assert "dmesg" in d.explanation
    assert "SIGSEGV" in d.explanation


def test_the_kernel_death_is_read_with_the_prose_only() -> None:
    # advice that quotes the dialog is vetoed by the exit grammar itself
    t = "If the kernel appears to have died, restart it from the Kernel menu."
    assert exit_match(t, t.lower()) is None


@pytest.mark.parametrize(
    "text",
    [
        "whisper-webui  | whisper-webui exited with code 137",
        "The job failed with exit code 137",
        "Status code 137 indicates the container was killed",
    ],
)
def test_exit_137_by_any_verb_is_the_exit_137_event(text: str) -> None:
    assert [e.format for e in parse_log(text).events] == ["exit_137"]
    assert diagnose_text(text).cause == "host_ram"


@pytest.mark.parametrize(
    "record_id",
    [
        # the records of heldout29 / heldout30 (retired to development) these families recognise
        "h29-superpoint_transformer-153",
        "h29-Whisper-WebUI-331",
        "h29-vllm-8853",
        "h29-projection-conditioned-point-cloud-diffusion-13",
        "h30-hf-Mistral-7B-v0.1-121",
        "h30-hf-deepseek-coder-33b-base-2",
    ],
)
def test_the_development_records_of_these_families_are_recognised(record_id: str) -> None:
    assert diagnose_text(corpus_text(record_id)).oom_found
