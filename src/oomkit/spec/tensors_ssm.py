"""Tensor layout of recurrent mixers: Mamba, Mamba-2 and the gated delta net (Qwen3-Next).

Shapes copy llama.cpp ``src/llama-model.cpp`` ``load_tensors`` (cases ``LLM_ARCH_MAMBA``,
``LLM_ARCH_MAMBA2``/``LLM_ARCH_GRANITE_HYBRID``; ``src/models/qwen3next.cpp``), ``ne`` reversed to
``[out, in]``. ``ssm_a``/``ssm_d`` have no ``.weight`` suffix in GGUF (``tn(LLM_TENSOR_SSM_A, i)``).
The conv kernel is listed as GGUF stores it, ``[channels, d_conv]`` (HF ``[channels, 1, d_conv]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.tensors_blocks import Builder

__all__ = ["gated_delta_net", "mamba_mixer"]


def mamba_mixer(b: Builder, spec: ModelSpec, i: int) -> None:
    """Mamba (``kind="mamba"``) or Mamba-2 (``"mamba2"``) mixer tensors of block ``i``."""
    rec = spec.recurrent
    assert rec is not None, "a mamba layer needs ModelSpec.recurrent"
    hidden = spec.hidden_size
    d_inner, d_state, d_conv = rec.d_inner, rec.d_state, rec.d_conv
    if rec.kind == "mamba":
        b.linear("ssm_in", 2 * d_inner, hidden, i, rec.proj_bias)
        b.linear("ssm_conv1d", d_inner, d_conv, i, False)
        if rec.conv_bias:
            b.add("ssm_conv1d.bias", (d_inner,), i)
        b.add("ssm_x.weight", (rec.dt_rank + 2 * d_state, d_inner), i)
        b.linear("ssm_dt", d_inner, rec.dt_rank, i, True)
        b.add("ssm_a", (d_inner, d_state), i)
        b.add("ssm_d", (d_inner,), i)
        b.linear("ssm_out", hidden, d_inner, i, rec.proj_bias)
        return
    # Mamba-2: in_proj emits z, xBC and dt (one per head)
    n_heads, n_groups = rec.n_heads, rec.n_groups
    conv_dim = d_inner + 2 * n_groups * d_state
    b.linear("ssm_in", 2 * d_inner + 2 * n_groups * d_state + n_heads, hidden, i, rec.proj_bias)
    b.add("ssm_conv1d.weight", (conv_dim, d_conv), i)
    if rec.conv_bias:
        b.add("ssm_conv1d.bias", (conv_dim,), i)
    b.add("ssm_dt.bias", (n_heads,), i)
    b.add("ssm_a", (n_heads, 1), i)
    b.add("ssm_d", (n_heads, 1), i)
    b.add("ssm_norm.weight", (n_groups, d_inner // n_groups), i)
    b.linear("ssm_out", hidden, d_inner, i, rec.proj_bias)


def gated_delta_net(b: Builder, spec: ModelSpec, i: int) -> None:
    """Qwen3-Next linear-attention (gated delta net) tensors of block ``i``.

    HF ``Qwen3NextGatedDeltaNet``: ``in_proj_qkvz`` [2*key_dim + 2*value_dim, H], ``in_proj_ba``
    [2*n_v_heads, H], ``conv1d`` [2*key_dim + value_dim, 1, kernel] (no bias), ``dt_bias`` and
    ``A_log`` [n_v_heads], ``norm`` [v_head_dim], ``out_proj`` [H, value_dim]. Current llama.cpp
    (``src/models/qwen3next.cpp`` ``load_arch_tensors``) stores ``in_proj_qkvz`` as ``attn_qkv``
    [2*key_dim + value_dim, H] plus ``attn_gate`` [value_dim, H] (legacy GGUFs: one ``ssm_in``).
    """
    rec = spec.recurrent
    assert rec is not None, "a linear-attention layer needs ModelSpec.recurrent"
    hidden = spec.hidden_size
    key_dim = rec.n_k_heads * rec.k_head_dim
    value_dim = rec.n_heads * rec.head_dim
    conv_dim = 2 * key_dim + value_dim
    b.add("attn_qkv.weight", (conv_dim, hidden), i)
    b.add("attn_gate.weight", (value_dim, hidden), i)
    b.add("ssm_conv1d.weight", (conv_dim, rec.d_conv), i)  # no bias in Qwen3-Next
    b.add("ssm_dt.bias", (rec.n_heads,), i)
    b.add("ssm_a", (rec.n_heads,), i)
    if spec.architecture.startswith("Qwen3_5"):
        # llama.cpp src/models/qwen35.cpp load_arch_tensors: HF Qwen3.5 keeps in_proj_b and
        # in_proj_a apart (ssm_beta, ssm_alpha [n_v_heads, H] each) where Qwen3-Next fuses them
        b.add("ssm_beta.weight", (rec.n_heads, hidden), i)
        b.add("ssm_alpha.weight", (rec.n_heads, hidden), i)
    else:
        b.add("ssm_ba.weight", (2 * rec.n_heads, hidden), i)
    b.add("ssm_norm.weight", (rec.head_dim,), i)
    b.add("ssm_out.weight", (hidden, value_dim), i)
