"""Issue 9 after heldout15: the prose families of ``parse_wordings_prose``, each on several forms
other than the record it was found in, inside the four log wrappers, with the neighbours that
must stay silent (a question, a plan, a negation, the same words about something else)."""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text
from recognition_cases import WRAPPERS, recognition_tests

_WRAPPERS = WRAPPERS

_OOM = (
    # out of a named accelerator memory (TPU / Gaudi HBM, Ascend NPU, Intel XPU)
    "Getting out of HBM memory error on a v3-8",
    "the job ran out of HBM after 300 steps",
    "training goes out of NPU memory with seq 8192",
    "running out of xpu memory on an Arc A770",
    # a shortage with an adverb between
    "with four cards the video memory is still insufficient",
    "VRAM was again not enough for the 34B model",
    "the GPU memory seems to be always exhausted at step 2",
    # Chinese with words between the memory and its bursting, or an adverb
    "训练时无论显存多少都会爆",
    "推理长视频时显存一下就爆了",
    "换了更大的卡显存还是不够",
    "量化以后内存依然不足",
    # a kill named with its memory cause, or with the kernel as the killer
    "inference was killed due to memory (100GB was used)",
    "the worker got killed because of OOM",
    "my script is killed for using too much RAM",
    "the kernel killed my training at epoch 3",
    "Linux killed the python process while loading",
    # bash's Killed quoted in lower case
    'I run it on an image and I get the error "killed".',
    'No error code, just "killed"',
    "python -m apps.run shows killed in line 163",
    "the console printed killed at epoch 2",
    # a memory explosion or a continuous rise as a noun
    "GPU memory explosion with the default batch size",
    "RAM blow-up when tokenizing the whole corpus",
    "the continuous rising of gpu memory during training",
    "constant growth in RAM usage across epochs",
    # a stated requirement above the stated memory
    "Ollama says I need 33.6 GB of 30.5 GB ram",
    "it needs 18GB out of my 12GB VRAM",
    'it refuses: "Model requires more system memory than is available"',
    # a model that needs more memory, in a title; a card that lacks it
    "[User] Chinese alpaca need more REQ memory",
    "Mixtral needs more GPU memory with long prompts",
    "the card lacks memory for this model",
    "my laptop lacks enough VRAM for SDXL",
    # a sequence larger than the whole KV cache; a memory problem with a big input; a high
    # usage with its consequence
    "the server hangs when a single sequence is larger than the system's KV cache size",
    "prompts longer than the KV cache capacity are dropped silently",
    "the server has a problem with memory when the model runs with a huge batch size",
    "memory problem with large images in the VAE",
    "issues with GPU memory during fine-tuning",
    "this leads to high memory usage and hanging the system",
    "huge RAM usage and then a crash",
    # short forms and consequences
    "Out-of-mem on A100 with batch 32",
    "RAM overflow when loading shards",
    "low VRAM crash on SDXL refiner",
    "limited VRAM causes crash at 1024px",
    "the webui crashes because VRAM fills",
    "VRAM filling up then OOM after 5 images",
    "the job exceeds available GPU memory at step 10",
    "Stuck at loading then killed",
    "loads to 99% and gets killed",
    # PyTorch's "Tried to allocate" translated
    "CUDA 内存不足。尝试分配 20.00 MiB（GPU 0；总容量 7.79 GiB）",
    "2.00 GiB を割り当てようとしました",
    "Se intentó asignar 2,00 GiB (GPU 0; 23,69 GiB de capacidad total)",
    "Tentative d'allocation de 2,00 Gio",
    "Versuchte 2,00 GiB zuzuweisen",
    "tentou alocar 512,00 MiB",
    "попытка выделить 2,00 ГиБ",
    "2.00 GiB를 할당하려고 했습니다",
    # vLLM V0's scheduler
    "Input prompt (300 tokens) + lookahead slots (4) is too long and exceeds the capacity of "
    "block_manager",
    # other languages
    "der VRAM reicht nicht aus für Flux",
    "Speicherüberlauf auf der GPU beim Training",
    "zabrakło pamięci GPU przy batch 16",
    "došla paměť při tréninku",
    "memori GPU tidak mencukupi",
    "VRAM habis saat inferensi",
    "bộ nhớ GPU không đủ khi chạy model",
    "otillräckligt minne på grafikkortet",
    "slut på minne vid inläsning",
    "ikke nok minne på GPU",
    "muisti loppui kesken",
    "nem elég a videó memória",
    "закінчилася відео пам'ять",
    "переполнение видеопамяти при генерации",
    "la VRAM è piena dopo due immagini",
    "esaurimento della memoria durante il training",
    "la mémoire vidéo est saturée",
)

_NOT_OOM = (
    # out of HBM as a place, or other HBM resources
    "weights are streamed out of HBM into SRAM",
    "we are running out of NPU cores",
    # an adverb shortage about something else
    "the documentation on memory is still insufficient",
    # Chinese negations and other words
    "显存不会爆",
    "这样显存就不会炸了",
    "显存还是够的",
    "内存炸弹",
    # kills that are not for memory
    "the job was killed due to timeout",
    "killed by the user with ctrl-c",
    "I killed the process myself",
    "htop shows killed processes in red",
    "the kernel killed the idle connection",
    # an explosion or a rise that is not a memory problem
    "this change avoids memory explosion in the tokenizer",
    "to prevent memory blowup we stream the data",
    "gradient explosion after 100 steps",
    "a continuous increase in memory bandwidth across generations",
    "the kernel's traffic exceeds the memory bandwidth of the card",
    "a steady growth of RAM prices",
    # a requirement that fits, a question, a plan
    "I need 8 GB of my 24 GB VRAM for this model",
    "Do I need more memory for the 70B model?",
    "we will need more VRAM for batch 64",
    "requires more time than is available",
    # lacking something else
    "the library lacks memory safety",
    "the dashboard lacks memory stats",
    # other languages: sufficiency stated, or other things
    "der VRAM reicht aus",
    "ein Speicherüberlauf im Parser",
    "nie zabrakło pamięci",
    "memori cukup",
    "bộ nhớ đủ",
    "tillräckligt minne",
    "muisti riittää",
    "elég memória",
    "пам'яті вистачає",
    "переполнение буфера",
    "la scheda di memoria è piena",
    # the KV cache, a memory problem, a high usage in other senses
    "the prefix is smaller than the KV cache",
    "a problem with memory alignment when packing structs",
    "high memory usage and performance tips",
    # allocation verbs without a size (assigning tasks, counting tries)
    "尝试分配任务给 worker",
    "Versuchte 3 Mal zuzuweisen",
    # short forms in other senses
    "started the server and killed it",
    "the workers and killed processes are listed",
    "enable low VRAM mode for 4GB cards",
    "integer overflow in the tokenizer",
    "fills the memory with zeros before use",
    "the archive exceeds available disk space",
    "support for small memory devices",
    # kvcached with room left
    "[kvcached][INFO] available_size()=40 >= need_size=30",
)


(
    test_prose_oom_is_recognised,
    test_prose_oom_is_recognised_inside_a_log,
    test_near_miss_is_not_an_oom,
) = recognition_tests(_OOM, _NOT_OOM)


def test_a_requirement_is_compared_with_the_memory_stated() -> None:
    # the sizes decide: above the memory is a shortage, below it is a plan
    assert diagnose_text("it needs 18GB of my 12GB VRAM").oom_found
    assert not diagnose_text("it needs 8GB of my 12GB VRAM").oom_found
    assert not diagnose_text("it needs 12GB of 12GB VRAM").oom_found


def test_kvcached_alloc_failure_is_read_as_a_kv_pool_shortage() -> None:
    d = diagnose_text(
        "(EngineCore_DP0 pid=10311) [kvcached][WARNING][2025-10-25 11:17:27]"
        "[kv_cache_manager.py:164] available_size()=9.0 < need_size=30\n"
        "(EngineCore_DP0 pid=10311) ERROR 10-25 11:17:27 [core.py:720] EngineCore encountered a "
        "fatal error."
    )
    assert d.oom_found


# transport encodings a paste went through (normalize.decode_transport / _undo_transport)
_TRANSPORTED = (
    # UTF-8 shown as Latin-1 / cp1252 (a console or editor in the wrong code page)
    "RuntimeError: 显存不足，请减小 batch size".encode().decode("latin-1"),
    "メモリ不足です".encode().decode("latin-1"),
    # a JSON dump with ensure_ascii, a repr of the UTF-8 bytes
    '{"msg": "\\u663e\\u5b58\\u4e0d\\u8db3"}',
    "b'\\xe6\\x98\\xbe\\xe5\\xad\\x98\\xe4\\xb8\\x8d\\xe8\\xb6\\xb3'",
    "b'loading checkpoint shards\\nKilled'",
    # a link's percent- or plus-encoding
    "CUDA%20out%20of%20memory",
    "https://github.com/x/y/issues/new?title=CUDA%20out%20of%20memory%20on%204090",
    "train_ppo_ray%20OOM",
    "CUDA+out+of+memory",
)

_NOT_TRANSPORTED = (
    "price is 100% + 20% tax",
    "a+b+c",
    "Café résumé naïve",
    "b'\\x00\\x01\\x02'",
)


@pytest.mark.parametrize("text", _TRANSPORTED)
def test_a_transport_encoded_oom_is_recognised(text: str) -> None:
    assert diagnose_text(text).oom_found, text


@pytest.mark.parametrize("text", _NOT_TRANSPORTED)
def test_text_that_only_looks_encoded_is_not_an_oom(text: str) -> None:
    assert not diagnose_text(text).oom_found, text
