"""Review 21 finding 2: sizing ``num_gpu`` from an Ollama plan that put every layer on the GPU
(log 16c: CUDA0 model 7987 MiB + KV 3072 MiB, then the 916 MiB compute buffer fails). The rule
took a layer's weights as everything the runner had allocated on the GPU / layers (10.80 GiB /
49, KV included) and then added memory.required.kv / blocks again, and it charged the
full-offload graph (676 MiB) for what its own advice makes a partial offload (llm/memory.go
sizes that with memory.graph.partial). Advice was num_gpu 34; about 41 layers fit."""

from __future__ import annotations

from pathlib import Path

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.model_fixes import HEADROOM_BYTES
from oomkit.diagnose.sizes import to_bytes
from oomkit.units import MiB

LOG = (
    Path(__file__).parent
    / "fixtures"
    / "oom_logs"
    / ("constructed-review21-ollama-full-offload-graph.txt")
)


def test_num_gpu_counts_the_kv_once_and_uses_the_partial_graph() -> None:
    d = diagnose_text(LOG.read_text(encoding="utf-8"))
    first = d.fixes[0]
    assert first.title == "Put fewer layers on the GPU: num_gpu 41"
    assert "916.10 MiB partial-offload graph" in first.why
    per = to_bytes("7.8", "GiB", "ollama") // 48 + to_bytes("3.0", "GiB", "ollama") // 48
    low = round((7987.12 + 3072) * MiB)  # model + KV buffers the runner had on CUDA0
    graph = to_bytes("916.1", "MiB", "ollama")
    assert 41 * per + graph + HEADROOM_BYTES <= low < 42 * per + graph + HEADROOM_BYTES
