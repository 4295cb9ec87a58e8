"""vLLM's Mamba cache blocks of a hybrid (attention + Mamba/linear-attention) model, and the
start-up check that every decode sequence has one.

``CompilationConfig.resolve_cudagraph_mode_and_sizes`` (vllm/config/compilation.py; in the
0.20.0, 0.21.0, 0.22.0 and 0.27.0 sdists) raises ``ValueError: max_num_seqs (N) exceeds
available Mamba cache blocks (M) ... Please lower max_num_seqs to at most M or increase
gpu_memory_utilization`` when the KV cache config has Mamba layers, the CUDA-graph mode has full
graphs (not ``--enforce-eager``; hybrid models default to FULL_AND_PIECEWISE) and
``max_num_seqs > kv_cache_config.num_blocks`` (vllm-project/vllm#34094). The 0.19.0 and 0.19.1
sdists only cap the CUDA-graph capture sizes at the blocks, with a warning
(``CompilationConfig.adjust_cudagraph_sizes_for_mamba_cache``), so the refusal starts with the
``v1-0.20`` generation row (0.20.0, 2026-04-27).

``num_blocks`` (vllm/v1/core/kv_cache_utils.py ``get_kv_cache_config_from_groups``, general
case) is ``available_memory // page_size // group_size``:

* ``page_size``: ``Platform._align_hybrid_block_size`` (vllm/platforms/interface.py, 0.20.0, 0.27.0)
  raises the attention block to ``16 x cdiv(mamba_page, 16 x attention bytes per token)``
  tokens (16: the backends' smallest kernel block and the default block size; without
  ``mamba_cache_mode == "all"``) and pads the Mamba page to that attention page;
* the Mamba page: conv state in the model dtype plus the temporal (SSM) state in
  ``mamba_ssm_cache_dtype`` ("auto": the conv dtype); Qwen3.5's configs set
  ``mamba_ssm_dtype: float32``, which ``Qwen3_5ForConditionalGenerationConfig`` (vllm/model_
  executor/models/config.py, 0.17.0 on) copies into the cache config;
* ``group_size``: ``_get_kv_cache_groups_uniform_page_size``: the smallest layer type's count,
  or the largest when it is under 1.5 x the smallest (0.20.0, 0.27.0).
"""

from __future__ import annotations

from oomkit.estimate.hf_kv import KvLayer
from oomkit.spec.model import ModelSpec
from oomkit.units import ceil_div

__all__ = [
    "MAMBA_SEQS_CHECK_ENGINES",
    "mamba_block_bytes",
    "mamba_cache_blocks",
    "mamba_seqs_blocker",
]

#: engine rows whose releases run the check (the 0.20.0 sdist on; current vLLM)
MAMBA_SEQS_CHECK_ENGINES = frozenset({"v1-0.20", "current"})

#: architectures whose published configs carry ``mamba_ssm_dtype: float32`` and whose vLLM
#: config hook applies it (``Qwen3_5ForConditionalGenerationConfig`` and its MoE twin)
_FP32_SSM_STATE = ("Qwen3_5",)

_KERNEL_BLOCK = 16


def _ssm_elem_bytes(spec: ModelSpec, model_elem: int) -> int:
    return 4 if spec.architecture.startswith(_FP32_SSM_STATE) else model_elem


def mamba_block_bytes(spec: ModelSpec, layers: tuple[KvLayer, ...], *, tp: int) -> int | None:
    """Bytes of one KV-cache block over every tensor of a hybrid model (``page_size x
    group_size``: the divisor of ``get_kv_cache_config_from_groups``' general case), or None
    when the model has no recurrent layers or no attention layers of one page size."""
    rec = spec.recurrent
    mamba = [lay for lay in layers if lay.kind == "recurrent"]
    attn = [lay for lay in layers if lay.kind != "recurrent"]
    if rec is None or not mamba or not attn:
        return None
    per_tok = {lay.bytes_per_token for lay in attn}
    if len(per_tok) != 1 or min(per_tok) <= 0:
        return None
    attn_tok = per_tok.pop()
    # the state's dtype as plan_vllm gave it (the model dtype vLLM runs)
    model_elem = max(
        1,
        mamba[0].state_bytes_per_seq
        // max(1, ceil_div(rec.conv_state_elements + rec.ssm_state_elements, tp)),
    )
    mamba_page = ceil_div(rec.conv_state_elements, tp) * model_elem + ceil_div(
        rec.ssm_state_elements, tp
    ) * _ssm_elem_bytes(spec, model_elem)
    block = _KERNEL_BLOCK * ceil_div(mamba_page, _KERNEL_BLOCK * attn_tok)
    page = block * attn_tok
    lo, hi = min(len(mamba), len(attn)), max(len(mamba), len(attn))
    group = hi if hi < lo * 1.5 else lo
    return page * group


def mamba_cache_blocks(
    spec: ModelSpec, layers: tuple[KvLayer, ...], pool: int, *, tp: int
) -> int | None:
    """``kv_cache_config.num_blocks`` for a hybrid model's pool of ``pool`` bytes (None when the
    model has no recurrent layers or no attention layers of one page size)."""
    per_block = mamba_block_bytes(spec, layers, tp=tp)
    return None if per_block is None else max(0, pool) // per_block


def mamba_seqs_blocker(max_num_seqs: int, blocks: int) -> str:
    """The start-up refusal, in vLLM's words, with its fix."""
    return (
        f"max_num_seqs ({max_num_seqs}) exceeds available Mamba cache blocks ({blocks}): vLLM "
        "refuses to capture full CUDA graphs (each decode sequence needs one Mamba state "
        f"block); lower --max-num-seqs to at most {blocks}, give it more memory, or "
        "--enforce-eager"
    )
