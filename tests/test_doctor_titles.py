"""How users word an OOM in titles and prose (oomkit.diagnose.parse_wordings_titles, issue 9).

Each family is checked on several wordings that no corpus record holds, and on neighbours with the
same words that are not an OOM (a question, a statement of use, a hardware error, a fix that says
it no longer crashes).
"""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text

_OOM = {
    "memory error": [
        "But I found cuda memory error.",
        "I keep getting a GPU memory error when training with batch 16",
        "VRAM memory errors after a few epochs",
    ],
    "a device's memory problem, or one in an allocating phase": [
        "CUDA memory issue",
        "GPU memory problems with batch 8",
        "memory issue when loading the 70B model",
        "the memory issues during loss.backward() came from keeping the graph",
    ],
    "insufficient / shortage / lack": [
        "VRAM insufficient when loading Qwen2-72B",
        "[Bug] GPU memory insufficient for SDXL refiner",
        "RAM shortage during GGUF conversion",
        "shortage of GPU memory on the second GPU",
        "crash from lack of VRAM on 6GB cards",
    ],
    "exceeded / filled / 100 %": [
        "causing GPU RAM to be exceeded unexpectedly.",
        "the VRAM limit was exceeded after the third image",
        "RAM fills up and the PC freezes",
        "VRAM usage spikes to 100% and crashes",
        "GPU memory spikes and then the app crashes",
    ],
    "ran through": [
        "quickly ran through the 32GB RAM on my Linux PC.",
        "it burns through all my VRAM in ten steps",
        "the conversion chewed through 64 GB of RAM",
    ],
    "memory pressure": [
        "SIGABRT when loading large image models under GPU memory pressure",
        "the app crashes due to memory pressure on an 8 GB iPad",
        "ollama was killed because of memory pressure",
    ],
    "a card's size": [
        "Not enough on 4GB vRAM",
        "Can't run SDXL on a 6GB GPU",
        "Cannot generate images on GTX1060 6GB (Linux Mint 21.2)",
        "unable to load 70B with 2x 24GB",
        "It crashes on 12gb at 54%",
        "VRAM too small for the model",
        "leaving only ~14 GB free - not enough for subsequent inference runs.",
    ],
    "allocator exception": [
        "Crash due to unhandled exception from ggml_vk_allocate in llama_kv_cache_init",
        "unhandled exception in ggml_backend_cpu_buffer_type_alloc_buffer",
        "Can't find nonce with device, maximum number of memory allocation attempts exceeded",
    ],
    "romance languages": [
        "Erreur : mémoire GPU insuffisante",
        "memoria de GPU insuficiente al generar",
        "memória de vídeo insuficiente",
        "memoria GPU esaurita durante il training",
    ],
    "usage with its consequence": [
        "High VRAM usage causes crash",
        "excessive memory consumption then the container is OOM-killed",
        "System freezes due to high RAM usage",
        "crashes due to memory usage when batching",
    ],
    "all of a memory with its consequence": [
        "Loading model takes all RAM and crashes",
        "uses 100% of RAM and freezes",
        "GPU memory at 100% and then crash",
    ],
    "exhausted / explodes / none available": [
        "GPU memory exhausted",
        "memory usage explodes during training",
        "no GPU memory available",
    ],
    "CUDA / HIP error 2": [
        "Trying to load 70B on 24GB, got CUDA error 2",
        "HIP error 2 on gfx1100",
        "F0601 syncedmem.cpp:71] Check failed: error == cudaSuccess (2 vs. 0)",
        "cudaMalloc returned error 2",
    ],
    "size with fit / fail": [
        "Model loading fails with 16GB RAM",
        "Can't fit 13B on 24GB",
        "doesn't fit into a single 80GB A100",
    ],
    "the shortage in other grammar": [
        "my GPU doesn't have enough memory",
        "there isn't enough VRAM for the 13B model",
        "insufficient amount of memory",
        "it exceeds my 24GB",
        "goes beyond the available memory",
        "consumes more than the available VRAM",
        "it runs out of GPU during the backward pass",
        "my RAM isn't big enough",
        "no room left on the GPU",
        "too little VRAM",
    ],
    "leak and kill in other languages": [
        "内存泄漏",
        "训练过程中显存泄漏",
        "显存一直增长",
        "内存占用越来越大，最后崩溃",
        "进程被kill了",
        "程序被系统杀死",
        "メモリリーク",
        "메모리 누수",
        "fuite de mémoire",
        "pérdida de memoria",
        "vazamento de memória",
        "Speicherleck",
        "утечка памяти",
    ],
    "a requirement above the memory, the swap full": [
        "it needs 20GB but I only have 12GB",
        "requires ~40 GB of VRAM while my card has 24 GB",
        "The model takes 14 GB but my GPU is only 8 GB",
        "swap is full and the desktop freezes",
        "Out of swap space?",
    ],
    "windows virtual memory": [
        "Your system is low on virtual memory",
        "Windows - Out of Virtual Memory",
    ],
    "more languages": [
        "推理时超出显存",
        "显存超了，无法生成",
        "内存被耗尽后进程退出",
        "VRAMが溢れる",
        "메모리가 모자라서 종료됩니다",
        "no hay suficiente VRAM",
        "pas assez de VRAM pour SDXL",
        "zu wenig VRAM für Flux",
        "не хватает VRAM",
        "se queda sin VRAM",
        "ficou sem VRAM",
        "VRAM esaurita",
        "VRAM pleine",
        "VRAM voll",
        "закончилась видеопамять",
        "za mało VRAM",
        "za mało pamięci GPU",
        "onvoldoende geheugen",
        "nedostatek paměti",
        "не вистачає відеопам'яті",
        "الذاكرة غير كافية",
        "حافظه کافی نیست",
        "หน่วยความจำไม่พอ",
    ],
}

_NOT_OOM = [
    # hardware memory errors and access faults
    "Xid 48: uncorrectable ECC GPU memory error",
    "GPU memory errors detected by the ECC counters",
    "CUDA error: an illegal memory access was encountered",
    # a memory problem fixed, absent, or bare
    "GPU memory issue fixed in v2",
    "no GPU memory issues anymore",
    "memory issue",
    "memory issues in the documentation",
    # the words without a shortage
    "lack of memory safety in the parser",
    "the test ran through the memory checks",
    "the memory is not exceeded",
    "make sure the VRAM is never exceeded",
    "the cache fills up slowly",
    "GPU utilization spikes to 100%",
    "VRAM usage: 10 GB of 24 GB",
    "the buffer is too small for the frame",
    # a fix or an observation that says nothing crashed
    "it doesn't crash under memory pressure anymore",
    "Memory usage stays under 50%, no crash under memory pressure",
    "I want to know the memory consumption under memory pressure",
    # questions and sizes of files, not of memory
    "Can it run on 8GB VRAM?",
    "How to run 70B on a 24GB GPU",
    "It crashes on 12gb files",
    "can't download the 8GB model file",
    "cannot load the model from an 8GB ssd",
    "Unable to run on CPU",
    # an exception that names no allocating function
    "exception in allocate_request_id handler",
    "we handle exceptions from the allocator gracefully",
    # a size statement without a failure
    "tensors larger than 2GB are saved in shards",
    # usage without a consequence, or with none
    "high memory usage but no crash",
    "High VRAM usage, but it doesn't crash",
    "memory usage is high",
    "virtual memory settings",
    # a whole memory taken by design (vLLM, TF preallocate), a prediction, other CUDA codes
    "takes all GPU memory",
    "GPU memory usage at 100% with vLLM",
    "takes all RAM but doesn't crash",
    "memory will blow up",
    "CUDA error 209",
    "CUDA 12.2 error",
    "Check failed: error == cudaSuccess (209 vs. 0)",
    "cudaMalloc returned error 20",
    # sizes of storage, not memory
    "can't fit the 8GB model on my 4GB sd card",
    "it fails with 16GB files",
    # a card's size beside another named error is that error; a missing VRAM readout
    "Cannot train with 2x 24GB GPUs using DeepSpeed (NCCL timeout)",
    "Can't run on 16GB Mac: unsupported architecture",
    "Error loading model on 8GB: DLL load failed",
    "Unable to run on 6GB GPU because CUDA 11 is required",
    "Fails to load GGUF on 16GB RAM: invalid magic",
    "lack of VRAM info in logs",
    # storage limits, cluster quotas, a disk, bandwidth, too little used
    "exceeds the 5GB upload limit",
    "The checkpoint exceeds the 10GB file size limit",
    "it doesn't exceed my 24GB",
    "we run out of GPU hours",
    "we run out of GPUs on the cluster",
    "OSError: [Errno 28] No space left on device",
    "vLLM uses too little memory for the KV cache",
    "The GPU doesn't have enough memory bandwidth",
    # no leak, a fixed leak, a process killed by hand
    "没有内存泄漏",
    "修复了显存泄漏",
    "进程被我kill了",
    "メモリリークはない",
    "메모리 누수 없음",
    "pas de fuite de mémoire",
    "sin fuga de memoria",
    "нет утечки памяти",
    # a requirement the memory covers; a swap that is fine
    "needs 20GB but I have 24GB so it should fit",
    "needs 900MB but the card has 2GB",
    "swap is fine",
    # gRPC's RESOURCE_EXHAUSTED for a cloud API's quota or a message size
    "google.api_core.exceptions.ResourceExhausted: 429 RESOURCE_EXHAUSTED: Quota exceeded for "
    "quota metric 'Generate Content API requests per minute'",
    "grpc: RESOURCE_EXHAUSTED: grpc: received message larger than max (8653851 vs. 4194304)",
    # the same words in other languages without a shortage
    "不会超出显存",
    "显存占用 10 GB",
    "メモリオーバーヘッドを減らす",
    "brak pamięci podręcznej",
    "sin RAM adicional",
    "la RAM llena de datos es normal",
]


@pytest.mark.parametrize(
    "text", [t for texts in _OOM.values() for t in texts], ids=lambda t: str(t)[:40]
)
def test_users_wording_of_an_oom_is_recognised(text: str) -> None:
    assert diagnose_text(text).oom_found, text


@pytest.mark.parametrize("text", _NOT_OOM, ids=lambda t: str(t)[:40])
def test_same_words_without_a_shortage_are_not_an_oom(text: str) -> None:
    assert not diagnose_text(text).oom_found, text


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("Arrays larger than 4 GB crashes", 4 << 30),
        ("[XPU] allocations bigger than 4GB fail on Arc A770", 4 << 30),
        ("Tensors larger than 2 GiB cannot be created on WebGPU", 2 << 30),
    ],
)
def test_a_per_allocation_limit_in_prose_is_a_buffer_limit(text: str, limit: int) -> None:
    d = diagnose_text(text)
    assert d.oom_found, text
    e = d.primary
    assert e is not None
    assert e.kind == "buffer_limit"
    assert e.allowed_bytes is not None
    assert abs(e.allowed_bytes - limit) <= limit * 0.08
    # a limit on one buffer, not the total: free memory would not decide it
    assert d.cause == "unknown"


def test_ram_wording_of_a_host_shortage_is_host_ram() -> None:
    assert diagnose_text("quickly ran through the 32GB RAM on my Linux PC.").cause == "host_ram"
    assert diagnose_text("RAM fills up and the PC freezes").cause == "host_ram"
