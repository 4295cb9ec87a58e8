"""GGUF metadata -> :class:`ModelSpec`, the way llama.cpp reads its hyperparameters.

Keys are templates on ``general.architecture`` (``"{arch}.block_count"``), as in gguf-py
``constants.Keys``; per-layer values (``head_count_kv`` arrays) follow llama.cpp
``llama_model_loader::get_key_or_arr``. Sliding-window layers follow
``llama_hparams::set_swa_pattern`` (src/llama-hparams.cpp): with period ``n`` a layer ``il`` is
sliding when ``il % n < n - 1``; the periods llama.cpp hard-codes per architecture are in
:data:`SWA_PERIODS` (src/llama-model.cpp ``load_hparams``). Recurrent state sizes copy
``llama_hparams::n_embd_r``/``n_embd_s``.

Pure: takes a parsed :class:`GgufFile`, does no I/O.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import cast

from oomkit._gcpause import gc_paused
from oomkit.errors import GgufFormatError
from oomkit.loaders.gguf import GgufArray, GgufFile, GgufValue
from oomkit.loaders.gguf_required import first_missing_tensor
from oomkit.spec.model import (
    LAYER_FFN,
    LAYER_FULL,
    LAYER_LINEAR,
    LAYER_MAMBA,
    LAYER_SLIDING,
    MlaSpec,
    ModelSpec,
    MoESpec,
    RecurrentSpec,
)
from oomkit.spec.tensor_table import TensorTable
from oomkit.validate import key_limit

__all__ = ["ARCHITECTURES", "SWA_PERIODS", "gguf_tensor_infos", "gguf_to_spec"]

#: GGUF architecture -> (HF ``architectures[0]``, HF ``model_type``)
ARCHITECTURES: Mapping[str, tuple[str, str]] = {
    "llama": ("LlamaForCausalLM", "llama"),
    "llama4": ("Llama4ForConditionalGeneration", "llama4"),
    "mistral3": ("Mistral3ForConditionalGeneration", "mistral3"),
    "qwen2": ("Qwen2ForCausalLM", "qwen2"),
    "qwen2moe": ("Qwen2MoeForCausalLM", "qwen2_moe"),
    "qwen3": ("Qwen3ForCausalLM", "qwen3"),
    "qwen3moe": ("Qwen3MoeForCausalLM", "qwen3_moe"),
    "qwen3next": ("Qwen3NextForCausalLM", "qwen3_next"),
    # Qwen3.5/3.6/3.8 (llama-arch.cpp LLM_ARCH_QWEN35 / QWEN35MOE): Gated DeltaNet + full
    # attention every full_attention_interval layers, like qwen3next
    "qwen35": ("Qwen3_5ForCausalLM", "qwen3_5_text"),
    "qwen35moe": ("Qwen3_5MoeForCausalLM", "qwen3_5_moe_text"),
    "gemma": ("GemmaForCausalLM", "gemma"),
    "gemma2": ("Gemma2ForCausalLM", "gemma2"),
    "gemma3": ("Gemma3ForCausalLM", "gemma3_text"),
    "phi3": ("Phi3ForCausalLM", "phi3"),
    "deepseek2": ("DeepseekV3ForCausalLM", "deepseek_v3"),
    "gpt-oss": ("GptOssForCausalLM", "gpt_oss"),
    "command-r": ("CohereForCausalLM", "cohere"),
    "cohere2": ("Cohere2ForCausalLM", "cohere2"),
    "falcon": ("FalconForCausalLM", "falcon"),
    "starcoder2": ("Starcoder2ForCausalLM", "starcoder2"),
    "mamba": ("MambaForCausalLM", "mamba"),
    "mamba2": ("Mamba2ForCausalLM", "mamba2"),
    "granitehybrid": ("GraniteMoeHybridForCausalLM", "granitemoehybrid"),
    "nemotron_h": ("NemotronHForCausalLM", "nemotron_h"),
    # llama.cpp src/llama-arch.cpp { LLM_ARCH_NEMOTRON_H_MOE, "nemotron_h_moe" }: Nemotron 3 Nano
    "nemotron_h_moe": ("NemotronHForCausalLM", "nemotron_h"),
    "glm4moe": ("Glm4MoeForCausalLM", "glm4_moe"),
    # llama.cpp src/llama-arch.cpp { LLM_ARCH_MINIMAX_M2, "minimax-m2" }
    "minimax-m2": ("MiniMaxM2ForCausalLM", "minimax_m2"),
}

#: llama.cpp ``set_swa_pattern(n)`` periods hard-coded per architecture (src/llama-model.cpp).
SWA_PERIODS: Mapping[str, int] = {
    "gemma2": 2,
    "gemma3": 6,
    "gemma3n": 5,
    "cohere2": 4,
    "gpt-oss": 2,
    # OLMo 3: convert_hf_to_gguf.py registers Olmo3ForCausalLM as Olmo2Model (arch olmo2) and
    # writes its window; src/llama-model.cpp LLM_ARCH_OLMO2, with a window in the GGUF: swa_type
    # STANDARD and set_swa_pattern(4), every 4th layer full as OLMo 3's layer_types (OLMo 2 has
    # no window: all full)
    "olmo2": 4,
}

_MAMBA_ARCHS = frozenset({"mamba", "mamba2"})
#: hybrids whose blocks hold ONE sublayer (a Mamba-2 mixer, attention, or an MLP/MoE)
_ONE_SUBLAYER_ARCHS = frozenset({"nemotron_h", "nemotron_h_moe"})
_BLK_RE = re.compile(r"^blk\.(\d+)\.(.+)$")


def _split_blk(name: str) -> tuple[int | None, str]:
    """``"blk.12.attn_q.weight"`` -> ``(12, "attn_q.weight")``; ``(None, name)`` for a tensor
    outside the repeating layers (``_BLK_RE``; the common ASCII form without the regex)."""
    if name.startswith("blk."):
        num, dot, rest = name[4:].partition(".")
        if dot and rest and num.isascii() and num.isdigit() and "\n" not in rest:
            return int(num), rest
        m = _BLK_RE.match(name)
        if m:
            return int(m.group(1)), m.group(2)
    return None, name


def gguf_tensor_infos(g: GgufFile) -> TensorTable:
    """GGUF tensors as a :class:`TensorTable` (shapes in PyTorch order, exact stored bytes).

    Built from the header's columns; a :class:`TensorInfo` is made only for a consumer that
    indexes or iterates the table.
    """
    tt = g.tensors
    roles: list[str] = []
    layer_col: list[int | None] = []
    add_role = roles.append
    add_layer = layer_col.append
    layers: dict[str, int] = {}  # "12" -> 12, once per layer (its ~10 tensors share it)
    for name in tt.names:
        num, dot, rest = name[4:].partition(".")
        layer = layers.get(num) if name.startswith("blk.") and rest and "\n" not in rest else None
        if layer is not None:
            role = rest
        else:
            layer, role = _split_blk(name)
            if layer is not None and dot and role == rest and num.isascii() and num.isdigit():
                layers[num] = layer
        add_role(role)
        add_layer(layer)
    # the header's dims objects are shared (a dozen distinct ones): reverse each once, by identity
    distinct = dict(zip(map(id, tt.dims), tt.dims, strict=True))
    shapes = {key: dims[::-1] for key, dims in distinct.items()}
    return TensorTable(
        tt.names,
        tuple(map(shapes.__getitem__, map(id, tt.dims))),
        tuple(roles),
        tuple(layer_col),
        cast("tuple[str | None, ...]", tt.ggml_types),
        cast("tuple[int | None, ...]", tt.n_bytes),
    )


def _dims_of(g: GgufFile, name: str) -> tuple[int, ...] | None:
    """``ne`` dims of the first tensor called ``name``, or None."""
    names = g.tensors.names
    return g.tensors.dims[names.index(name)] if name in names else None


class _Keys:
    """Typed access to ``{arch}.*`` keys with errors that name the file and key."""

    def __init__(self, g: GgufFile, arch: str) -> None:
        self.g = g
        self.arch = arch

    def raw(self, key: str) -> GgufValue | None:
        return self.g.metadata.get(key.format(arch=self.arch))

    def error(self, key: str, why: str) -> GgufFormatError:
        full = key.format(arch=self.arch)
        return GgufFormatError(
            f"Reading GGUF metadata failed for '{self.g.path}' (key '{full}'): {why}. "
            "The file may come from a converter this version of oomkit does not know; "
            "try a config.json for the same model.",
            path=self.g.path,
            key=full,
        )

    def ints(self, key: str) -> tuple[int, ...] | None:
        """A scalar as a 1-tuple, or a per-layer array; None when absent."""
        v = self.raw(key)
        if v is None:
            return None
        items = v.values if isinstance(v, GgufArray) else (v,)
        if (
            items is None
            or not items
            or not all(isinstance(x, int) and not isinstance(x, str) for x in items)
        ):
            raise self.error(key, f"expected an integer or an array of integers, got {v!r}"[:300])
        hi = key_limit(key)
        for x in items:
            if isinstance(x, int) and not 0 <= x <= hi:
                raise self.error(key, f"value {x} is outside [0, {hi}]")
        return tuple(x for x in items if isinstance(x, int))

    def num(self, key: str, default: int | None = None) -> int | None:
        vals = self.ints(key)
        return max(vals) if vals is not None else default

    def req(self, key: str) -> int:
        v = self.num(key)
        if v is None:
            raise self.error(key, "the key is missing")
        return v


def _layer_types(
    k: _Keys, n_layer: int, kv: tuple[int, ...] | None
) -> tuple[tuple[str, ...], list[str]]:
    notes: list[str] = []
    if k.arch in _MAMBA_ARCHS:
        return (LAYER_MAMBA,) * n_layer, notes
    ff = k.ints("{arch}.feed_forward_length")
    if k.arch in _ONE_SUBLAYER_ARCHS and kv is not None and ff is not None:
        # llama.cpp load_hparams (nemotron_h, nemotron_h_moe): "A layer is recurrent IFF the
        # n_head_kv value is set to 0 and the n_ff value is set to 0"; the blocks with n_ff > 0
        # are the MLP/MoE blocks, those with n_head_kv > 0 attention
        heads = kv if len(kv) == n_layer else (kv[0],) * n_layer
        ffs = ff if len(ff) == n_layer else (ff[0],) * n_layer
        kinds = [
            LAYER_FULL if h else (LAYER_FFN if f else LAYER_MAMBA)
            for h, f in zip(heads, ffs, strict=True)
        ]
        return tuple(kinds), notes
    types = [LAYER_FULL] * n_layer
    interval = k.num("{arch}.full_attention_interval")
    if interval:
        # qwen3next: llama.cpp recurrent_layer_arr[i] = (i + 1) % full_attention_interval != 0
        types = [LAYER_LINEAR if (i + 1) % interval else LAYER_FULL for i in range(n_layer)]
    elif kv is not None and len(kv) == n_layer and 0 in kv and k.raw("{arch}.ssm.state_size"):
        # hybrid Mamba (granitehybrid, nemotron_h, jamba): layers without KV heads are SSM layers
        types = [LAYER_MAMBA if h == 0 else LAYER_FULL for h in kv]
    window = k.num("{arch}.attention.sliding_window")
    if window:
        pattern = k.raw("{arch}.attention.sliding_window_pattern")
        if isinstance(pattern, GgufArray) and pattern.values is not None:
            swa = [bool(x) for x in pattern.values]
            if len(swa) != n_layer:
                raise k.error(
                    "{arch}.attention.sliding_window_pattern",
                    f"{len(swa)} entries for {n_layer} layers",
                )
        else:
            period = k.num("{arch}.attention.sliding_window_pattern")
            if period is None:
                period = SWA_PERIODS.get(k.arch, 0)
                note = f"every {period}th layer full attention" if period else "all layers"
                notes.append(
                    f"sliding-window layers for '{k.arch}' follow llama.cpp's built-in pattern "
                    f"({note})"
                )
            swa = [period == 0 or i % period < period - 1 for i in range(n_layer)]
        types = [
            LAYER_SLIDING if s and t == LAYER_FULL else t for s, t in zip(swa, types, strict=True)
        ]
    return tuple(types), notes


def _recurrent(k: _Keys, layer_types: tuple[str, ...]) -> RecurrentSpec | None:
    if LAYER_MAMBA not in layer_types and LAYER_LINEAR not in layer_types:
        return None
    d_conv = k.req("{arch}.ssm.conv_kernel")
    d_inner = k.req("{arch}.ssm.inner_size")
    d_state = k.req("{arch}.ssm.state_size")
    n_group = k.num("{arch}.ssm.group_count", 0) or 0
    dt_rank = k.num("{arch}.ssm.time_step_rank", 0) or 0
    if LAYER_LINEAR in layer_types:
        kind, n_heads = "gated_delta_net", dt_rank
    elif k.arch == "mamba" or n_group == 0:
        kind, n_heads = "mamba", 0
    else:
        kind, n_heads = "mamba2", dt_rank
    return RecurrentSpec(
        kind=kind,
        d_inner=d_inner,
        d_state=d_state,
        d_conv=d_conv,
        n_groups=max(n_group, 1),
        n_heads=n_heads,
        head_dim=d_inner // n_heads if n_heads else 0,
        dt_rank=dt_rank,
        n_k_heads=n_group if kind == "gated_delta_net" else 0,
        k_head_dim=d_state if kind == "gated_delta_net" else 0,
        # llama_hparams::n_embd_r / n_embd_s (src/llama-hparams.cpp)
        conv_state_elements=max(d_conv - 1, 0) * (d_inner + 2 * n_group * d_state),
        ssm_state_elements=d_state * d_inner,
    )


def _moe(k: _Keys, n_ff: int, has: Callable[[str], bool]) -> MoESpec | None:
    n_expert = k.num("{arch}.expert_count", 0) or 0
    if n_expert == 0:
        return None
    n_ff_exp = k.num("{arch}.expert_feed_forward_length") or n_ff
    n_shared = k.num("{arch}.expert_shared_count", 0) or 0
    shared_ff = k.num("{arch}.expert_shared_feed_forward_length") or n_shared * n_ff_exp
    n_dense = k.num("{arch}.leading_dense_block_count", 0) or 0
    return MoESpec(
        num_experts=n_expert,
        num_experts_per_tok=k.req("{arch}.expert_used_count"),
        expert_intermediate_size=n_ff_exp,
        num_shared_experts=n_shared if n_shared or not shared_ff else 1,
        shared_expert_intermediate_size=shared_ff,
        dense_layers=tuple(range(n_dense)),
        router_bias=has("ffn_gate_inp.bias"),
        expert_bias=has("ffn_down_exps.bias"),
        shared_expert_gate=has("ffn_gate_inp_shexp.weight"),
        score_correction_bias=has("exp_probs_b.bias"),
    )


def _mla(k: _Keys, key_len: int | None, value_len: int | None) -> MlaSpec | None:
    kv_lora = k.num("{arch}.attention.kv_lora_rank", 0) or 0
    if kv_lora == 0:
        return None
    n_rot = k.req("{arch}.rope.dimension_count")
    # converters since 2025 write the absorbed MLA shapes to key_length/value_length and the
    # original per-head dims to *_mla (llama.cpp deepseek2 load_hparams)
    qk_head = k.num("{arch}.attention.key_length_mla") or key_len
    v_head = k.num("{arch}.attention.value_length_mla") or value_len
    if qk_head is None or v_head is None:
        raise k.error("{arch}.attention.key_length", "MLA needs key_length and value_length")
    return MlaSpec(
        q_lora_rank=k.num("{arch}.attention.q_lora_rank") or None,
        kv_lora_rank=kv_lora,
        qk_nope_head_dim=qk_head - n_rot,
        qk_rope_head_dim=n_rot,
        v_head_dim=v_head,
    )


@gc_paused
def gguf_to_spec(g: GgufFile) -> ModelSpec:
    """Build a :class:`ModelSpec` with exact tensors from a GGUF header.

    Raises:
        GgufFormatError: ``general.architecture`` or a required ``{arch}.*`` key is missing or
            has the wrong type, or the vocabulary size cannot be found.
    """
    arch = g.architecture
    if arch is None:
        raise GgufFormatError(
            f"Reading GGUF metadata failed for '{g.path}' (key 'general.architecture'): the key is "
            "missing or not a string. The file is not a model GGUF (a LoRA adapter or a vocab-only "
            "file?); pass the model GGUF.",
            path=g.path,
            key="general.architecture",
        )
    k = _Keys(g, arch)
    n_block = k.req("{arch}.block_count")
    if n_block < 1:
        raise k.error("{arch}.block_count", f"{n_block} blocks: a model GGUF has at least one")
    # llama.cpp counts multi-token-prediction layers in block_count (glm4moe, deepseek2 with
    # nextn_predict_layers); ModelSpec.num_hidden_layers does not (HF num_hidden_layers)
    nextn = k.num("{arch}.nextn_predict_layers", 0) or 0
    if nextn >= n_block:
        raise k.error("{arch}.nextn_predict_layers", f"{nextn} MTP layers of {n_block} blocks")
    n_layer = n_block - nextn
    n_embd = k.req("{arch}.embedding_length")
    n_head = k.num("{arch}.attention.head_count", 0) or 0
    kv = k.ints("{arch}.attention.head_count_kv")
    n_head_kv = max(kv) if kv is not None else n_head
    kv_per_layer = kv if kv is not None and len(set(kv)) > 1 else None
    if kv_per_layer is not None:
        if len(kv_per_layer) != n_block:
            why = f"{len(kv_per_layer)} entries for {n_block} layers"
            raise k.error("{arch}.attention.head_count_kv", why)
        kv_per_layer = kv_per_layer[:n_layer]
    key_len = k.num("{arch}.attention.key_length")
    value_len = k.num("{arch}.attention.value_length")
    mla = _mla(k, key_len, value_len)
    head_dim = key_len or (n_embd // n_head if n_head else 0)
    v_head_dim = value_len or head_dim
    if mla is not None:
        head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        v_head_dim = mla.v_head_dim
    n_ff = k.num("{arch}.feed_forward_length", 0) or 0
    block_types, notes = _layer_types(k, n_block, kv)
    layer_types = block_types[:n_layer]
    # llama_hparams n_embd_head_k_swa / n_embd_head_v_swa (LLM_KV_ATTENTION_KEY_LENGTH_SWA):
    # gemma4 writes key_length 512 for its full layers and key_length_swa 256 for the sliding
    # ones; the spec keeps the sliding size as head_dim (the HF config's head_dim) and the
    # per-layer sizes beside it
    key_swa = k.num("{arch}.attention.key_length_swa")
    value_swa = k.num("{arch}.attention.value_length_swa") or key_swa
    head_dims = None
    if mla is None and key_swa and LAYER_SLIDING in layer_types and key_swa != head_dim:
        if value_swa != key_swa or v_head_dim != head_dim:
            raise k.error(
                "{arch}.attention.value_length_swa", "K and V head sizes differ per layer"
            )
        head_dims = tuple(key_swa if t == LAYER_SLIDING else head_dim for t in layer_types)
        head_dim = v_head_dim = key_swa

    names = set(g.tensors.names)
    missing = first_missing_tensor(
        arch, names, n_layer=n_block, n_expert=k.num("{arch}.expert_count", 0) or 0
    )
    if missing is not None:
        # llama.cpp's llama_model_loader refuses the file (gguf_required)
        raise GgufFormatError(
            f"'{g.path}': missing tensor '{missing}': llama.cpp requires it of a {arch} GGUF "
            "and refuses to load the file (an incomplete or damaged download?)",
            path=g.path,
        )
    embd_dims = _dims_of(g, "token_embd.weight")
    tokens = g.metadata.get("tokenizer.ggml.tokens")
    if embd_dims is not None and len(embd_dims) == 2:
        vocab = embd_dims[1]
    elif (v := k.num("{arch}.vocab_size")) is not None:
        vocab = v
    elif isinstance(tokens, GgufArray):
        vocab = tokens.length
    else:
        raise k.error(
            "{arch}.vocab_size", "no token_embd.weight tensor, vocab_size key or tokenizer"
        )

    # distinct name tails ("attn_q.bias" for every blk.N.attn_q.bias): has() scans a few dozen
    # strings instead of every tensor name (~10 per layer), once per feature it asks about
    infos = gguf_tensor_infos(g)
    tails = set(infos.roles)  # the name past blk.N., or the whole name

    def has(suffix: str) -> bool:
        return any(t.endswith(suffix) for t in tails)

    arch_name, model_type = ARCHITECTURES.get(arch, (arch, arch))
    name = g.metadata.get("general.name")
    window = k.num("{arch}.attention.sliding_window")
    scaling = k.raw("{arch}.rope.scaling.type")
    if not isinstance(scaling, str) or scaling == "none":
        # the converter writes llama3 scaling as a rope_freqs tensor, LongRoPE as rope_factors_*
        scaling = (
            "llama3"
            if "rope_freqs.weight" in names
            else "longrope"
            if "rope_factors_long.weight" in names
            else None
        )
    pos = _dims_of(g, "position_embd.weight")
    return ModelSpec(
        name=name if isinstance(name, str) else os.path.basename(g.path).removesuffix(".gguf"),
        architecture=arch_name,
        model_type=model_type,
        num_hidden_layers=n_layer,
        hidden_size=n_embd,
        num_attention_heads=n_head,
        num_key_value_heads=n_head_kv,
        head_dim=head_dim,
        v_head_dim=v_head_dim,
        intermediate_size=n_ff,
        vocab_size=vocab,
        max_position_embeddings=k.num("{arch}.context_length"),
        tie_word_embeddings="output.weight" not in names,
        attention_bias=has("attn_q.bias") or has("attn_qkv.bias"),
        attention_out_bias=has("attn_output.bias"),
        mlp_bias=has("ffn_down.bias"),
        mlp_gated=(
            has("ffn_gate.weight")
            or has("ffn_gate_exps.weight")
            or has("ffn_gate_up_exps.weight")
            or not has("ffn_up.weight")
        )
        and k.arch not in _ONE_SUBLAYER_ARCHS,  # Nemotron-H: relu2 up/down MLPs and experts
        norm_type="layer" if has("attn_norm.bias") else "rms",
        qk_norm=has("attn_q_norm.weight"),
        layer_types=layer_types,
        sliding_window=window if LAYER_SLIDING in layer_types else None,
        kv_heads_per_layer=kv_per_layer,
        head_dim_per_layer=head_dims,
        moe=_moe(k, n_ff, has),
        mla=mla,
        recurrent=_recurrent(k, layer_types),
        tensors=infos,
        source="gguf",
        assumptions=tuple(notes),
        rope_scaling_type=scaling,
        position_embedding_rows=pos[1] if pos is not None and len(pos) == 2 else 0,
        num_nextn_predict_layers=nextn,
        final_norm="output_norm.weight" in names or not names,
    )
