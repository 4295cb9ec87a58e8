"""Issue 9 after heldout12: the OOM families added to the generic fallback and the parsers, on
forms other than the records they were found in, with near-misses that must not fire."""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.upstream_wordings_runtimes import RUNTIMES
from recognition_cases import WRAPPERS, recognition_tests

_WRAPPERS = WRAPPERS

# how users word an OOM in prose and titles (each family on several forms)
_PROSE = (
    # a memory's owner or size between "out of" and the memory word
    "my cpu ram keeps increasing until out of my 64G ram",
    "the training went out of GPU memory after two epochs",
    "it is out of system memory again",
    "strange to see the out-of-CPU-memory error when I am using GPU",
    "We got an out-of-host-memory crash",
    # exhaustion verbs with all of a memory as the object
    "it always fills up the memory and gets killed",
    "Loading the 70B model fills up all of the system RAM",
    "for high resolution images easyocr consume all ram",
    "The dataloader eats up all the VRAM",
    "ComfyUI consumed all available memory during VAE decode",
    "it reloads until all memory is reserved and the machine crashes",
    "works until the GPU memory is full",
    # an allocation that cannot be placed
    "a load-time compute buffer that can't be allocated in the slim free-VRAM headroom",
    "the KV cache cannot be allocated because not enough memory is left",
    "the buffer could not be allocated: 2.5 GiB requested",
    # a memory full, maxed out, exhausted or over its limit
    "GPU memory full when loading model",
    "VRAM runs full after a few generations",
    "RAM maxed out while loading",
    "it maxes out my VRAM and crashes",
    "VRAM exhaustion on long prompts",
    "the VRAM is exhausted",
    "hits the memory limit",
    "Memory limit reached",
    "exceeding available VRAM",
    # running low, nothing left, more than there is
    "crashes due to low memory",
    "running low on VRAM",
    "no VRAM left",
    "requires more VRAM than available",
    # a model against the card
    "model too big for my GPU",
    "model doesn't fit on a 24GB GPU",
    # a device's per-buffer limit in prose
    "At 512px the OpenCL decode graph previously exceeded device buffer limits (1.94GB",
    "the weights exceed the Vulkan max buffer size limit",
    # "memory out" as 显存溢出 reads word for word
    "use RTX 3090 24G, Train one memory out of",
    "CUDA memory out when batch size is 8",
    "GPU memory out",
)

_PROSE_NEAR_MISSES = (
    "copy the tensor out of CPU memory into pinned buffers",
    "pages are swapped out of my 64G ram disk",
    "fill the buffer with zeros before the copy",
    "the new kernel consumes less memory than the old one",
    "TensorFlow takes all GPU memory by default (allow_growth fixes the display)",
    "until the memory is freed, the allocator keeps the block",
    "the process was killed by the user with Ctrl-C",
    "job killed: walltime 7200 exceeded limit 7200",
    "Process was killed by signal 15 (SIGTERM)",
    "the worker killed after a timeout of 600 s",
    "this tensor cannot be allocated on a meta device",
    "the log output exceeded the buffer limit of the terminal",
    "read the device memory out of order",
    "dump the GPU memory out of the device for debugging",
    "the memory outline of the model is in the appendix",
    "load the model in VRAM full precision",
    "a buffer full of zeros in memory",
    "the memory full-scan took 3 s",
    "the model does not exceed VRAM",
    "fits on a 24GB GPU",
    "set the memory limit to 8 GB",
    "low memory mode enabled",
    "with low VRAM settings it works",
    "too big for the context window",
    "doesn't fit in one line",
)


(
    test_prose_oom_is_recognised,
    test_prose_oom_is_recognised_inside_a_log,
    test_prose_near_misses_are_not_an_oom,
) = recognition_tests(_PROSE, _PROSE_NEAR_MISSES)


@pytest.mark.parametrize("wrapper", _WRAPPERS)
def test_runtime_wordings_are_recognised_with_their_size_inside_a_log(wrapper: str) -> None:
    for w in RUNTIMES:
        text = "\n".join(wrapper.format(part) for part in w.example.split("\n"))
        d = diagnose_text(text)
        assert d.oom_found, text
        if w.requested is not None:
            assert d.primary is not None, text
            assert d.primary.requested_bytes == w.requested, text


def test_ggml_init_assert_is_host_ram() -> None:
    # ggml_init's arena is a host malloc, whichever backend holds the tensors
    for w in RUNTIMES:
        if w.family == "ggml":
            d = diagnose_text(w.example)
            assert d.cause == "host_ram", w.example
            assert d.primary is not None
            assert d.primary.kind == "host_oom"


def test_openvino_reads_the_engine_use_and_the_device_total() -> None:
    d = diagnose_text(
        "[GPU] Exceeded max size of memory allocation: Required 2147483648 bytes, already "
        "occupied : 14495514624 bytes, but available memory size is 16106127360 bytes"
    )
    e = d.primary
    assert e is not None
    assert e.runtime == "openvino"
    assert (e.requested_bytes, e.process_in_use_bytes, e.total_bytes) == (
        2147483648,
        14495514624,
        16106127360,
    )


def test_openvino_per_object_limit_is_not_capacity() -> None:
    d = diagnose_text(
        "[GPU] Exceeded max size of memory object allocation: requested 5368709120 bytes, but "
        "max alloc size supported by device is 4294959104 bytes."
    )
    assert d.primary is not None
    assert d.primary.kind == "buffer_limit"
    assert d.primary.allowed_bytes == 4294959104
    assert d.cause == "unknown"


def test_torch_npu_reads_only_the_memory_codes() -> None:
    d = diagnose_text("NPU function error: call aclnnMatmul failed, error code is 207018")
    assert d.primary is not None
    assert d.primary.detail == "ACL_ERROR_RT_DEVIDE_OOM"
    assert not diagnose_text(
        "NPU function error: call aclnnMatmul failed, error code is 2070011"
    ).oom_found


def test_the_tf_chunk_dump_alone_is_an_oom() -> None:
    dump = (
        "I tensorflow/core/common_runtime/bfc_allocator.cc:687] Free at 0x1215affb00 of size "
        "263424\nI tensorflow/core/common_runtime/bfc_allocator.cc:693]      Summary of in-use "
        "Chunks by size: \nI tensorflow/core/common_runtime/bfc_allocator.cc:696] 24 Chunks of "
        "size 256 totalling 6.0KiB"
    )
    assert diagnose_text(dump).oom_found


# "not enough memory" in the languages users write titles in
_I18N = (
    "El modelo da error de memoria insuficiente al cargar",
    "No hay suficiente memoria para cargar el modelo",
    "El proceso se quedó sin memoria",
    "Erro: memória insuficiente ao carregar o modelo",
    "Errore: memoria esaurita durante il training",
    "Mémoire insuffisante pour charger le modèle",
    "manque de mémoire GPU",
    "Nicht genügend Arbeitsspeicher",
    "Grafikspeicher ist voll",
    "Недостаточно памяти для загрузки модели",
    "не хватает видеопамяти",
    "Память закончилась",
    "bellek yetersiz",
    "hết bộ nhớ khi chạy model",
    "kehabisan memori saat training",
    "显存被占满",
    "內存不足",
    "显存不够用",
    "メモリが足りない",
    "メモリー不足",
    "메모리가 부족합니다",
)

_I18N_NEAR_MISSES = (
    "nicht genügend Speicherplatz auf dem Datenträger",
    "Festplattenspeicher voll",
    "Speicher freigeben",
    "hay suficiente memoria",
    "un modelo sin memoria (stateless)",
    "память освобождена",
    "la mémoire est libérée",
    "memória RAM: 16 GB",
    "显存占用 12GB",
)


@pytest.mark.parametrize("text", _I18N)
def test_translated_oom_is_recognised(text: str) -> None:
    assert diagnose_text(text).oom_found, text
    assert diagnose_text(f"2025-03-01 10:00:00,123 - ERROR - {text}").oom_found, text


@pytest.mark.parametrize("text", _I18N_NEAR_MISSES)
def test_translated_near_misses_are_not_an_oom(text: str) -> None:
    assert not diagnose_text(text).oom_found, text
