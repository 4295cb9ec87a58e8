"""The embedded model catalog: data integrity, fuzzy lookups, Ollama tags, exact parameter counts.

The parameter-count test is the catalog's accuracy check: every entry with a published ``params``
must derive exactly that count from its stored ``config`` (through ``parse_config`` and
``count_params``), or differ by a documented ``params_tolerance``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict

import pytest

from oomkit.catalog.models import (
    CatalogEntry,
    all_models,
    find_model,
    loose_name,
    normalize_name,
    ollama_default_quant,
    search_models,
)
from oomkit.errors import UnknownNameError

MODELS = all_models()
BY_KEY = {m.key: m for m in MODELS}

#: Entries the config.json loader cannot model yet (strict xfail: must pass once it can).
PARSER_GAPS: dict[str, str] = {}  # falcon-mamba-7b parses since issue 10 (FalconMamba = Mamba-1)
#: Entries that parse but whose derived count is off because of the loader (strict xfail).
COUNT_GAPS: dict[str, str] = {}  # phi-2 (PhiForCausalLM) and phi-3.5-moe (PhiMoE) fixed in issue 10
KNOWN_QUANTS = {"Q4_0", "Q4_K_M", "Q8_0", "F16", "MXFP4"}


def _text_config(entry: CatalogEntry) -> dict[str, object]:
    config = entry.to_dict()["config"]
    nested = config.get("text_config")
    return nested if isinstance(nested, dict) else config


def _first(config: dict[str, object], *names: str) -> object:
    return next((config[n] for n in names if config.get(n) is not None), None)


def test_catalog_has_at_least_150_models() -> None:
    assert len(MODELS) >= 150


def test_keys_are_unique_lowercase_slugs() -> None:
    keys = [m.key for m in MODELS]
    assert len(keys) == len(set(keys))
    for key in keys:
        assert key == key.lower().strip(), key
        assert " " not in key, key


def test_no_name_maps_to_two_entries() -> None:
    # Every spelling an entry answers to (key, display name, repo, alias, Ollama tag) must fold to a
    # lookup form no other entry uses; otherwise find_model would silently pick one of them.
    owners: dict[str, set[str]] = defaultdict(set)
    for m in MODELS:
        for name in m.names():
            owners[normalize_name(name)].add(m.key)
    clashes = {name: keys for name, keys in owners.items() if len(keys) > 1}
    assert clashes == {}


@pytest.mark.parametrize("entry", MODELS, ids=lambda m: m.key)
def test_entry_has_source_and_required_config_keys(entry: CatalogEntry) -> None:
    assert entry.source.startswith("https://")
    assert entry.name
    config = entry.to_dict()["config"]
    assert isinstance(config["architectures"], list)
    assert config["architectures"]
    assert isinstance(config["model_type"], str)
    text = _text_config(entry)
    assert isinstance(_first(text, "num_hidden_layers", "n_layer"), int)
    assert isinstance(_first(text, "hidden_size", "n_embd"), int)
    assert isinstance(text.get("vocab_size"), int)
    is_ssm = str(config["model_type"]) in {"mamba", "mamba2", "falcon_mamba"}
    if not is_ssm:
        assert isinstance(_first(text, "num_attention_heads", "n_head"), int)


@pytest.mark.parametrize("entry", MODELS, ids=lambda m: m.key)
def test_params_fields_are_consistent(entry: CatalogEntry) -> None:
    if entry.params is None:
        assert entry.params_source is None
        assert entry.params_tolerance == 0
    else:
        assert entry.params > 0
        assert entry.params_source
    if entry.params_tolerance:
        assert entry.params_note, "a tolerance needs its reason"


@pytest.mark.parametrize("entry", MODELS, ids=lambda m: m.key)
def test_ollama_tags_name_a_default_quant(entry: CatalogEntry) -> None:
    for tag, quant in entry.ollama_tags.items():
        model, _, variant = tag.partition(":")
        assert model, tag
        assert variant, tag
        assert quant in KNOWN_QUANTS, (tag, quant)


@pytest.mark.parametrize(
    ("query", "key"),
    [
        ("llama-3.1-8b", "llama-3.1-8b"),
        ("LLAMA-3.1-8B", "llama-3.1-8b"),
        ("llama_3.1_8b", "llama-3.1-8b"),
        ("llama 3.1 8b", "llama-3.1-8b"),
        ("llama-31-8b", "llama-3.1-8b"),  # dots ignored when that stays unambiguous
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),  # HF repo id
        ("meta-llama/Llama-3.1-8B", "llama-3.1-8b"),
        ("Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
        ("llama3.1-8b-instruct", "llama-3.1-8b"),
        ("unsloth/Llama-3.1-8B-Instruct", "llama-3.1-8b"),  # any org prefix
        ("llama3.1:8b", "llama-3.1-8b"),  # Ollama tag
        ("llama3.1:8b-instruct-q4_K_M", "llama-3.1-8b"),  # Ollama tag with a quant suffix
        ("llama3.1", "llama-3.1-8b"),  # bare Ollama name = :latest
        ("qwen3:30b-a3b", "qwen3-30b-a3b"),
        ("Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b"),
        ("gpt-oss:20b", "gpt-oss-20b"),
        ("openai/gpt-oss-120b", "gpt-oss-120b"),
        ("deepseek-r1-distill-qwen-32b", "deepseek-r1-distill-qwen-32b"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "deepseek-r1-distill-qwen-32b"),
        ("deepseek-r1:32b", "deepseek-r1-distill-qwen-32b"),
        ("gemma-2-9b-it", "gemma-2-9b"),  # "-it" suffix stripped
        ("google/gemma-3-27b-it", "gemma-3-27b"),
        ("Qwen2.5-7B-Instruct", "qwen2.5-7b"),
        ("qwen2.5-coder:32b", "qwen2.5-coder-32b"),
        ("mistral", "mistral-7b-v0.3"),
        ("Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
        ("opt-1.3b", "opt-1.3b"),  # the decimal point keeps these two apart
        ("opt-13b", "opt-13b"),
        ("hf.co/bartowski/Llama-3.3-70B-Instruct-GGUF", "llama-3.3-70b"),
        ("moonshotai/Kimi-K2-Instruct", "kimi-k2"),
    ],
)
def test_find_model(query: str, key: str) -> None:
    assert find_model(query).key == key


def test_unknown_name_suggests_the_nearest_size_of_the_family() -> None:
    with pytest.raises(UnknownNameError) as info:
        find_model("llama-3.1-7b")
    err = info.value
    assert err.kind == "model"
    assert err.name == "llama-3.1-7b"
    assert err.suggestions[0] == "llama-3.1-8b"
    assert "Did you mean 'llama-3.1-8b'" in str(err)
    assert "oomkit models --search" in str(err)


@pytest.mark.parametrize(
    ("query", "first"),
    [("qwen3-31b", "qwen3-32b"), ("gpt-oss-21b", "gpt-oss-20b"), ("mixtral-8x8b", "mixtral-8x7b")],
)
def test_did_you_mean(query: str, first: str) -> None:
    with pytest.raises(UnknownNameError) as info:
        find_model(query)
    assert info.value.suggestions[0] == first


def test_far_name_has_no_suggestion_and_is_a_lookup_error() -> None:
    with pytest.raises(LookupError) as info:
        find_model("zzzz-nothing-like-it")
    assert isinstance(info.value, UnknownNameError)
    assert info.value.suggestions == ()


def test_dots_are_not_ignored_when_that_is_ambiguous() -> None:
    # Dropping every dot would make OPT 1.3B and OPT 13B one name; the strict form keeps the
    # decimal point, and the loose form is used only when it names a single entry.
    assert loose_name("opt-1.3b") == loose_name("opt-13b")
    assert normalize_name("opt-1.3b") != normalize_name("opt-13b")


@pytest.mark.parametrize(
    ("tag", "quant"),
    [
        ("llama3.1:8b", "Q4_K_M"),
        ("llama3.1", "Q4_K_M"),  # :latest
        ("llama3.2:1b", "Q8_0"),
        ("gpt-oss:20b", "MXFP4"),
        ("gpt-oss:120b", "MXFP4"),
        ("qwen3:30b-a3b", "Q4_K_M"),
        ("llama2:7b", "Q4_0"),
        ("llama3.1:8b-instruct-q8_0", "Q8_0"),  # an explicit quant suffix wins
        ("qwen2.5:7b-instruct-fp16", "FP16"),
        ("no-such-model:1b", None),
    ],
)
def test_ollama_default_quant(tag: str, quant: str | None) -> None:
    assert ollama_default_quant(tag) == quant


def test_search() -> None:
    assert search_models() == MODELS
    assert search_models("  ") == MODELS
    assert [m.key for m in search_models("llama3.1")] == [
        "llama-3.1-8b",
        "llama-3.1-70b",
        "llama-3.1-405b",
    ]
    coder = {m.key for m in search_models("Qwen3-Coder")}
    assert coder == {"qwen3-coder-30b-a3b", "qwen3-coder-480b-a35b"}
    assert {m.key for m in search_models("deepseek-ai/")} >= {"deepseek-v3", "deepseek-r1"}
    assert search_models("no-such-thing-xyz") == ()


def test_entries_are_immutable_and_serialise_to_plain_json() -> None:
    entry = find_model("gpt-oss-20b")
    with pytest.raises(TypeError):
        entry.config["hidden_size"] = 1  # type: ignore[index]
    doc = entry.to_dict()
    assert json.loads(json.dumps(doc)) == doc
    assert doc["ollama"] == {"gpt-oss:20b": "MXFP4", "gpt-oss:latest": "MXFP4"}
    assert doc["config"]["quantization_config"]["quant_method"] == "mxfp4"
    assert isinstance(doc["config"]["layer_types"], list)


def test_catalog_is_loaded_once() -> None:
    assert all_models() is all_models()


def test_loading_is_light_and_fast() -> None:
    # A fresh interpreter: loading must not pull in the loaders, numpy or torch, and stays fast
    # (50 ms is the target on a developer machine; the bound here leaves room for slow CI).
    code = (
        "import sys, time; t = time.perf_counter();"
        "from oomkit.catalog.models import all_models; n = len(all_models());"
        "dt = time.perf_counter() - t;"
        "heavy = [m for m in ('torch', 'numpy', 'oomkit.loaders.hf_config', 'click')"
        " if m in sys.modules];"
        "print(n, dt, heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    n, dt, heavy = out.stdout.split(maxsplit=2)
    assert int(n) == len(MODELS)
    assert heavy.strip() == "[]"
    assert float(dt) < 0.5


def _params_cases() -> list[object]:
    cases: list[object] = []
    for m in MODELS:
        if m.params is None:
            continue
        marks = []
        if m.key in PARSER_GAPS or m.key in COUNT_GAPS:
            reason = PARSER_GAPS.get(m.key) or COUNT_GAPS[m.key]
            marks.append(pytest.mark.xfail(reason=reason, strict=True))
        cases.append(pytest.param(m, id=m.key, marks=marks))
    return cases


def _spec_cases() -> list[object]:
    return [
        pytest.param(
            m,
            id=m.key,
            marks=[pytest.mark.xfail(reason=PARSER_GAPS[m.key], strict=True)]
            if m.key in PARSER_GAPS
            else [],
        )
        for m in MODELS
    ]


@pytest.mark.parametrize("entry", _spec_cases())
def test_every_config_parses(entry: CatalogEntry) -> None:
    spec = entry.spec()
    assert spec.source == "catalog"
    assert spec.name == entry.key
    assert spec.declared_params == entry.params
    assert spec.num_hidden_layers > 0
    assert spec.vocab_size > 0


@pytest.mark.parametrize("entry", _params_cases())
def test_derived_parameter_count_matches_the_published_one(entry: CatalogEntry) -> None:
    from oomkit.spec.tensors import count_params

    assert entry.params is not None
    derived = count_params(entry.spec())
    assert abs(derived - entry.params) <= entry.params_tolerance, (
        f"{entry.key}: derived {derived:,} vs published {entry.params:,} ({entry.params_note})"
    )


def test_at_least_100_counts_are_checked_exactly() -> None:
    exact = [
        m
        for m in MODELS
        if m.params is not None
        and m.params_tolerance == 0
        and m.key not in PARSER_GAPS
        and m.key not in COUNT_GAPS
    ]
    assert len(exact) >= 100
