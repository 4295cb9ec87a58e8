"""Pipeline parallelism (vLLM / SGLang ``--pipeline-parallel-size``): which layers each stage holds.

Both engines split the decoder layers with ``get_pp_indices`` (vllm/distributed/utils.py; SGLang
copies it into python/sglang/srt/distributed/utils.py): ``n // pp`` layers per stage and the
remainder given one each to the stages just before the last (the last stage also runs the
norm, the LM head and the sampler, so it gets no extra layer). The first stage holds the input
embeddings; the last holds the final norm and the LM head, a copy of the embeddings when they
are tied (the tied weight lives on another rank: ``PPMissingLayer``).
"""

from __future__ import annotations

from collections.abc import Sequence

from oomkit.errors import InvalidSettingError
from oomkit.spec.model import TensorInfo

__all__ = ["stage_layers", "stage_spans", "stage_tensors"]

_FIRST_STAGE_ROLES = ("token_embd", "position_embd", "token_types")


def stage_layers(n_layers: int, pp_rank: int, pp: int) -> range:
    """Decoder layers of pipeline stage ``pp_rank`` of ``pp`` (vLLM ``get_pp_indices``).

    >>> [list(stage_layers(10, r, 4)) for r in range(4)]
    [[0, 1], [2, 3, 4], [5, 6, 7], [8, 9]]
    """
    if pp < 1 or not 0 <= pp_rank < pp:
        raise InvalidSettingError(f"pipeline stage {pp_rank} of {pp} is not valid", setting="pp")
    if pp > n_layers:
        raise InvalidSettingError(
            f"--pp {pp} is more pipeline stages than the model's {n_layers} layers",
            setting="pp",
            value=pp,
        )
    parts = [n_layers // pp] * pp
    for i in range(2, n_layers % pp + 2):
        parts[-i] += 1
    start = sum(parts[:pp_rank])
    return range(start, start + parts[pp_rank])


def stage_spans(n_layers: int, pp: int) -> str:
    """Every stage's first-last layer, as the estimates' pipeline note lists them.

    >>> stage_spans(10, 4)
    '0-1, 2-4, 5-7, 8-9'
    """
    return ", ".join(
        f"{r.start}-{r.stop - 1}" for r in (stage_layers(n_layers, i, pp) for i in range(pp))
    )


def stage_tensors(
    tensors: Sequence[TensorInfo], pp_rank: int, pp: int, n_layers: int
) -> tuple[TensorInfo, ...]:
    """The checkpoint tensors stage ``pp_rank`` loads (all of them when ``pp == 1``)."""
    if pp == 1:
        return tuple(tensors)
    layers = stage_layers(n_layers, pp_rank, pp)
    first, last = pp_rank == 0, pp_rank == pp - 1
    tied = not any(t.role.startswith("output.") for t in tensors if t.layer is None)
    out: list[TensorInfo] = []
    for t in tensors:
        if t.layer is not None:
            if t.layer in layers:
                out.append(t)
            continue
        if t.role.startswith(_FIRST_STAGE_ROLES):
            if first or (last and tied and t.role.startswith("token_embd")):
                out.append(t)
        elif t.role.startswith("output"):
            if last:
                out.append(t)
        elif first:  # vision towers / projectors run before the first decoder layer
            out.append(t)
    return tuple(out)
