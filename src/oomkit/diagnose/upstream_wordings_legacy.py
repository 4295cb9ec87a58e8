"""Pre-2020 frameworks' and a few libraries' own OOM wordings (issue 9, after heldout24).

The frameworks of classic computer vision print their own words when ``cudaMalloc`` fails:
Theano's old CUDA backend, darknet's ``check_error``, Caffe2's enforce and the glog/c10 checks
against ``cudaSuccess`` with CUDA error 2 (``cudaErrorMemoryAllocation``); hosts add ``[Errno
12]`` cut short, gperftools' failed large allocation, imageio's memory guard and Ollama's full KV
cache. The doctor reads them in :mod:`oomkit.diagnose.parse_legacy` (before the keyword
fallback, which read most of them without their numbers or runtime). Each entry cites the file
that prints it; the example carries the numbers the format states, which
``tests/test_doctor_upstream_wordings.py`` checks are read. OpenCV's and OneFlow's wordings were
already read by the keyword fallback, with the request; they are listed so that the table covers
the family. :data:`LEGACY_NEAR_MISSES` use the same words where no allocation failed.
"""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["LEGACY", "LEGACY_NEAR_MISSES"]

_THEANO = "Theano/Theano:theano/sandbox/cuda/cuda_ndarray.cu (device_malloc)"
_DARKNET = "pjreddie/darknet:src/cuda.c (check_error)"
_ALEXEYAB = "AlexeyAB/darknet:src/dark_cuda.c (check_error / check_error_extended)"

LEGACY: tuple[Wording, ...] = (
    _w(
        "theano",
        _THEANO + ": PyErr_Format(PyExc_MemoryError, ...) after cudaMemGetInfo",
        "Error allocating %llu bytes of device memory (%s). Driver report %llu bytes free and "
        "%llu bytes total",
        "Error allocating 71323200 bytes of device memory (out of memory). Driver report "
        "10526720 bytes free and 4294770688 bytes total",
        req=71323200,
        free=10526720,
        total=4294770688,
    ),
    _w(
        "theano",
        _THEANO + ": the MemoryError Python raises (no driver report)",
        "MemoryError: Error allocating %li bytes of device memory (%s).",
        "MemoryError: Error allocating 147865600 bytes of device memory (out of memory).\n"
        "Apply node that caused the error: GpuElemwise{Composite{(i0 * (i1 + Abs(i1)))}}[(0, 1)]",
        req=147865600,
    ),
    _w(
        "theano",
        _THEANO + " (builds that print the CUDA error string in angle brackets)",
        "Error allocating %llu bytes of device memory < %s >. Driver report %llu bytes free and "
        "%llu bytes total",
        "Error allocating 411041792 bytes of device memory < out of memory >. Driver report "
        "169512960 bytes free and 2147483648 bytes total",
        req=411041792,
        free=169512960,
        total=2147483648,
    ),
    _w(
        "theano",
        _THEANO + " with CNMeM (cnmemMalloc, lib.cnmem=...)",
        "Error allocating %llu bytes of device memory (%s).",
        "MemoryError: Error allocating 2097152000 bytes of device memory "
        "(CNMEM_STATUS_OUT_OF_MEMORY).",
        req=2097152000,
    ),
    _w(
        "darknet",
        _DARKNET + ': printf("CUDA Error: %s\\n", cudaGetErrorString(status)); assert(0)',
        "CUDA Error: %s",
        "    0 CUDA Error: out of memory\n"
        "darknet: ./src/cuda.c:36: check_error: Assertion `0' failed.\nAborted (core dumped)",
    ),
    _w(
        "darknet",
        _ALEXEYAB + ': "CUDA status Error: file: %s() : line: %d : build time: %s", then '
        'error("CUDA Error: %s") (perror adds ": No error")',
        "CUDA status Error: file: %s() : line: %d : build time: %s\nCUDA Error: %s",
        "CUDA status Error: file: C:\\local\\darknet\\src\\dark_cuda.c : cuda_make_array() : "
        "line: 373 : build time: Apr 13 2020 - 12:33:34\n CUDA Error: out of memory\n"
        "CUDA Error: out of memory: No error",
    ),
    _w(
        "darknet",
        _ALEXEYAB + ': "CUDA Error Prev: %s" (cudaGetLastError of an earlier call)',
        "CUDA Error Prev: %s",
        " CUDA Error Prev: out of memory\nCUDA Error Prev: out of memory: No error",
    ),
    _w(
        "caffe2",
        "pytorch/pytorch:caffe2/core/context_gpu.cu@v0.4.0..v1.x (the GPU allocator's "
        "enforce of cudaMalloc against cudaSuccess: '<lhs> == <rhs>. <lhs value> vs <rhs "
        "value>. Error at: <file>:<line>: <cudaGetErrorString>')",
        "[enforce fail at context_gpu.cu:%d] error == cudaSuccess. %d vs %d. Error at: %s:%d: %s",
        "RuntimeError: [enforce fail at context_gpu.cu:343] error == cudaSuccess. 2 vs 0. "
        "Error at: /root/caffe2/caffe2/core/context_gpu.cu:343: out of memory",
    ),
    _w(
        "caffe2",
        "pytorch/pytorch:caffe2/core/context_gpu.cu (the same enforce, pasted without the "
        "error string, as Detectron titles write it)",
        "error == cudaSuccess. %d vs %d. Error at: %s:%d",
        "Dectectron error == cudaSuccess. 2 vs 0. Error at: "
        "/root/caffe2/caffe2/core/context_gpu.cu:343",
    ),
    _w(
        "caffe",
        "BVLC/caffe:include/caffe/util/device_alternate.hpp (CUDA_CHECK: CHECK_EQ(error, "
        "cudaSuccess) << cudaGetErrorString(error)), the paste cut before the error string",
        "Check failed: error == cudaSuccess (%d vs. %d)",
        "F0312 10:11:12.123456  4711 syncedmem.cpp:56] Check failed: error == cudaSuccess "
        "(2 vs. 0)",
    ),
    _w(
        "oneflow",
        "Oneflow-Inc/oneflow:oneflow/core/device/cuda_util.h (OF_CUDA_CHECK: CHECK_EQ of the "
        "call against cudaSuccess)",
        "Check failed: (%s) == (cudaSuccess) (%d vs %d) %s",
        "terminate called after throwing an instance of 'oneflow::RuntimeException'\n"
        "  what():  Check failed: (cudaMalloc(&ptr, size)) == (cudaSuccess) (2 vs 0) "
        "out of memory",
    ),
    _w(
        "opencv",
        "opencv/opencv:modules/core/src/alloc.cpp (OutOfMemoryError: CV_Error_(CV_StsNoMem, "
        '("Failed to allocate %llu bytes", size)))',
        "OpenCV(%s) %s:%d: error: (-4:Insufficient memory) Failed to allocate %llu bytes in "
        "function 'OutOfMemoryError'",
        "cv2.error: OpenCV(4.5.1) /tmp/pip-req-build/opencv/modules/core/src/alloc.cpp:73: "
        "error: (-4:Insufficient memory) Failed to allocate 6220800 bytes in function "
        "'OutOfMemoryError'",
        req=6220800,
    ),
    _w(
        "opencv",
        "opencv/opencv:modules/core/src/alloc.cpp@2.4 (OpenCV 2.x/3.x error format)",
        "OpenCV Error: Insufficient memory (Failed to allocate %llu bytes) in OutOfMemoryError, "
        "file %s, line %d",
        "OpenCV Error: Insufficient memory (Failed to allocate 1244160000 bytes) in "
        "OutOfMemoryError, file /build/opencv/modules/core/src/alloc.cpp, line 52",
        req=1244160000,
    ),
    _w(
        "opencv",
        "opencv/opencv:modules/dnn/src/cuda4dnn/csl/memory.hpp (CUDA4DNN_CHECK_CUDA of "
        "cudaMalloc in ManagedPtr::reset)",
        "OpenCV(%s) %s:%d: error: (-217:Gpu API call) %s in function 'ManagedPtr'",
        "cv2.error: OpenCV(4.2.0) /opencv/modules/dnn/src/cuda4dnn/csl/memory.hpp:54: error: "
        "(-217:Gpu API call) out of memory in function 'ManagedPtr'",
    ),
    _w(
        "linux",
        "python/cpython:Modules/errnomodule.c (ENOMEM is errno 12 on Linux, macOS and the "
        "Windows CRT); OSError's str() '[Errno 12] <strerror>', cut in the paste",
        "[Errno 12] %s",
        "    self.pid = os.fork()\nOSError: [Errno 12] Cannot allocate memor",
    ),
    _w(
        "linux",
        "gperftools/gperftools:src/tcmalloc.cc (ReportLargeAlloc: 'tcmalloc: large alloc %zu "
        "bytes == %p @ ' with the pointer the allocation returned; (nil) is a failed one)",
        "tcmalloc: large alloc %zu bytes == (nil) @ %p...",
        "tcmalloc: large alloc 140113840283648 bytes == (nil) @  0x7f6eccf3b887 0x7f6ecb831c29 "
        "0x7f6ecb832afb",
        req=140113840283648,
    ),
    _w(
        "imageio",
        "imageio/imageio:imageio/core/functions.py (mimread: memtest limit, in bytes)",
        "imageio.mimread() has read over %dB of image data.\nStopped to avoid memory problems. "
        "Use imageio.get_reader(), increase threshold, or memtest=False",
        "RuntimeError: imageio.mimread() has read over 256000000B of image data.\n"
        "Stopped to avoid memory problems. Use imageio.get_reader(), increase threshold, or "
        "memtest=False",
    ),
    _w(
        "imageio",
        "imageio/imageio:imageio/core/functions.py@v2.1..v2.4 (mimread: a fixed 256 MiB)",
        "imageio.mimread() has read over 256 MiB of image data.\nStopped to avoid memory "
        "problems. Use imageio.get_reader() or memtest=False.",
        "RuntimeError: imageio.mimread() has read over 256 MiB of image data.\n"
        "Stopped to avoid memory problems. Use imageio.get_reader() or memtest=False.",
    ),
    _w(
        "ollama",
        'ollama/ollama:kvcache/causal.go (ErrKvCacheFull = errors.New("could not find a kv '
        "cache slot\")), the runner's panic",
        "failed to decode batch: could not find a kv cache slot (length: %d)",
        "panic: failed to decode batch: could not find a kv cache slot (length: 6656)",
    ),
    _w(
        "linux",
        "deepspeedai/DeepSpeed:deepspeed/launcher/launch.py (sigkill_handler: '{cmd} exits "
        "with return code = {returncode}'), run on in a CJK title",
        "%s exits with return code = -9",
        "deepspeed ds_z3_offload_config单卡全量微调训练glm4出现exits with return code = -9。",
    ),
)

#: The same words where no allocation failed: a check of another CUDA error (1 =
#: cudaErrorInvalidValue, 700 = an illegal address), darknet's other errors, a tcmalloc report of
#: an allocation that succeeded, Errno 2, a KV cache slot that was found.
LEGACY_NEAR_MISSES: tuple[str, ...] = (
    "Check failed: error == cudaSuccess (1 vs. 0)  invalid argument",
    "[enforce fail at context_gpu.cu:343] error == cudaSuccess. 700 vs 0. Error at: "
    "/root/caffe2/caffe2/core/context_gpu.cu:343: an illegal memory access was encountered",
    "CUDA Error: invalid device function",
    "CUDA Error Prev: no kernel image is available for execution on the device",
    "FileNotFoundError: [Errno 2] No such file or directory: 'data/obj.data'",
    "OSError: [Errno 120] Cannot allocate a device handle",
    "Error allocating the device handle for GPU 0: driver version is insufficient",
    "imageio.mimread() read 40 frames of image data",
    "the runner found a kv cache slot for the batch after shifting the context",
    # (a large host allocation that succeeded, a non-null pointer, is a memory-pressure report
    # since docrec23: parse_wordings_warnings, tests/test_doctor_warnings.py)
)
