"""Ollama tags are built only from the quantizations each library family publishes
(src/oomkit/data/ollama_library_tags.json, read from ollama.com/library/<name>/tags)."""

from __future__ import annotations

import json
import re

import pytest

from oomkit.catalog.models import all_models
from oomkit.cli import main
from oomkit.planner.ollama_tags import library_families, ollama_from

_SUFFIX = re.compile(r"-(q\d\w*|fp16|bf16)$")


def _quant(suffix: str) -> str:
    return {"fp16": "F16", "bf16": "BF16"}.get(suffix, suffix.upper())


def _entry_for(name: str, size: str) -> str:
    """The catalog key whose Ollama tags include ``name:size`` (as a size or a full tag)."""
    for entry in all_models():
        for tag in entry.ollama_tags:
            if tag.split(":", 1)[0] == name and _SUFFIX.sub("", tag.split(":", 1)[1]) == size:
                return entry.key
    raise AssertionError(f"no catalog entry has {name}:{size}")


@pytest.mark.parametrize("family", sorted(library_families()))
def test_each_family_builds_its_cited_example(family: str) -> None:
    row = library_families()[family]
    name, rest = row["example"].split(":", 1)
    assert name == family
    assert row["seen"]
    found = _SUFFIX.search(rest)
    if found is None:  # a default tag (gpt-oss publishes nothing else)
        entry = next(e for e in all_models() if row["example"] in e.ollama_tags)
        assert ollama_from(entry.key, entry.ollama_tags[row["example"]]).value == row["example"]
        return
    prefix = rest[: found.start()]
    size = row["tags"][prefix]["sizes"][0]
    key = _entry_for(family, size)
    quant = _quant(found.group(1))
    assert quant in row["tags"][prefix]["quants"]
    got = ollama_from(key, quant).value
    defaults = {t: q for e in all_models() if e.key == key for t, q in e.ollama_tags.items()}
    if quant in defaults.values():  # the family's default quant: its size tag serves it
        assert got in defaults, got
    else:
        assert got == row["example"]


def test_every_table_row_serves_a_catalog_model() -> None:
    for family, row in library_families().items():
        for prefix, tags in row["tags"].items():
            assert tags["quants"], (family, prefix)
            for size in tags["sizes"]:
                _entry_for(family, size)


@pytest.mark.parametrize(
    ("model", "quant", "tag"),
    [
        ("qwen3-8b", "Q8_0", "qwen3:8b-q8_0"),
        ("qwen3-8b", "Q4_K_M", "qwen3:8b"),  # the default quant: the size tag
        ("qwen3-30b-a3b", "F16", "qwen3:30b-a3b-fp16"),
        ("qwen2.5-coder-14b", "Q6_K", "qwen2.5-coder:14b-instruct-q6_K"),
        ("gemma-3-12b", "Q8_0", "gemma3:12b-it-q8_0"),
        ("gemma-2-9b", "Q8_0", "gemma2:9b-instruct-q8_0"),
        ("mistral-7b-v0.3", "Q5_K_M", "mistral:7b-instruct-v0.3-q5_K_M"),
        ("mistral-nemo-12b", "Q6_K", "mistral-nemo:12b-instruct-2407-q6_K"),
        ("mistral-small-24b-2501", "Q8_0", "mistral-small:24b-instruct-2501-q8_0"),
        ("mistral-small-3.2-24b", "Q8_0", "mistral-small3.2:24b-instruct-2506-q8_0"),
        ("phi-3-mini-4k", "Q8_0", "phi3:3.8b-mini-4k-instruct-q8_0"),
        ("phi-4", "Q8_0", "phi4:14b-q8_0"),
        ("deepseek-r1-distill-qwen-14b", "Q8_0", "deepseek-r1:14b-qwen-distill-q8_0"),
        ("deepseek-r1-distill-llama-8b", "Q8_0", "deepseek-r1:8b-llama-distill-q8_0"),
        ("gpt-oss-20b", "MXFP4_MOE", "gpt-oss:20b"),
        ("llama-3.2-11b-vision", "Q8_0", "llama3.2-vision:11b-instruct-q8_0"),
        ("mixtral-8x7b", "Q4_K_M", "mixtral:8x7b-instruct-v0.1-q4_K_M"),
        ("codellama-7b", "Q4_K_M", "codellama:7b-instruct-q4_K_M"),
        ("command-r-35b", "Q8_0", "command-r:35b-v0.1-q8_0"),
    ],
)
def test_tags_people_run_today(model: str, quant: str, tag: str) -> None:
    got = ollama_from(model, quant)
    assert (got.value, got.note) == (tag, None)


@pytest.mark.parametrize(
    ("model", "quant", "nearest", "nearest_tag"),
    [
        ("qwen3-8b", "Q6_K", "Q4_K_M", "qwen3:8b"),  # qwen3 publishes q4_K_M, q8_0, fp16
        ("gemma-3-12b", "Q5_K_M", "Q4_K_M", "gemma3:12b"),
        ("phi-4", "Q2_K", "Q4_K_M", "phi4:14b"),  # nothing below: the smallest published
        ("gpt-oss-20b", "Q8_0", "MXFP4_MOE", "gpt-oss:20b"),
        # the legacy set has gaps: llama3.3 lists no q3_K_L (the old builder printed one)
        ("llama-3.3-70b", "Q3_K_L", "Q3_K_M", "llama3.3:70b-instruct-q3_K_M"),
    ],
)
def test_unpublished_quant_keeps_the_placeholder_and_names_the_nearest(
    model: str, quant: str, nearest: str, nearest_tag: str
) -> None:
    got = ollama_from(model, quant)
    assert got.value.startswith("${OLLAMA_TAG:?"), got.value
    assert got.note is not None
    assert f"not {quant}" in got.note
    assert f"--quant {nearest} ({nearest_tag})" in got.note


def _plan(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code = main(["plan", *args, "-r", "ollama", "--ctx", "8192", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


@pytest.mark.parametrize(
    ("model", "gpu", "quant", "line"),
    [
        ("qwen3-8b", "rtx-3060", "Q8_0", "printf 'FROM qwen3:8b-q8_0\\nPARAMETER num_ctx 8192"),
        (
            "gemma-3-12b",
            "rtx-4090",
            "Q8_0",
            "printf 'FROM gemma3:12b-it-q8_0\\nPARAMETER num_ctx 8192",
        ),
    ],
)
def test_cli_plan_prints_the_library_tag(
    capsys: pytest.CaptureFixture[str], model: str, gpu: str, quant: str, line: str
) -> None:
    doc = _plan(capsys, model, "--gpu", gpu, "--quant", quant)
    plans = doc["plans"]
    assert isinstance(plans, list)
    first = plans[0]
    assert first["runtime"] == "ollama"
    assert first["settings"]["quant"] == quant
    assert line in first["command"], first["command"]
    assert "OLLAMA_TAG" not in first["command"]


def test_cli_plan_for_an_unpublished_quant_says_what_to_replan(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _plan(capsys, "qwen3-8b", "--gpu", "rtx-3060", "--quant", "Q6_K")
    plans = doc["plans"]
    assert isinstance(plans, list)
    command = plans[0]["command"]
    assert "# qwen3:8b is published as Q4_K_M, Q8_0, F16 only, not Q6_K" in command
    assert "--quant Q4_K_M (qwen3:8b)" in command
    assert '"${OLLAMA_TAG:?set OLLAMA_TAG to a qwen3 tag serving Q6_K}"' in command


def test_plan_without_quant_keeps_to_published_quants(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # qwen3:8b publishes Q4_K_M, Q8_0 and F16 only; at 32k on a 12 GB card the unrestricted
    # search picked Q6_K (q8_0 cache) and printed the ${OLLAMA_TAG:?...} placeholder
    code = main(
        ["plan", "qwen3-8b", "--gpu", "rtx-3060", "-r", "ollama", "--ctx", "32768", "--json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    plans = doc["plans"]
    first = plans[0]
    assert first["settings"]["quant"] in ("Q4_K_M", "Q8_0")
    assert "OLLAMA_TAG" not in first["command"], first["command"]
    assert "printf 'FROM qwen3:8b" in first["command"]
    assert all(p["settings"]["quant"] in ("Q4_K_M", "Q8_0") for p in plans)
    assert any("the Ollama library publishes" in n for n in doc["notes"])


def test_plan_any_keeps_the_ollama_leg_to_published_quants(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["plan", "qwen3-8b", "--gpu", "rtx-3060", "-r", "any", "--ctx", "32768", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    ollama = [p for p in json.loads(out)["plans"] if p["runtime"] == "ollama"]
    assert ollama
    assert "OLLAMA_TAG" not in ollama[0]["command"]


def test_plan_of_an_unknown_family_keeps_the_unrestricted_search(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # granite3.3 is not in the table: nothing is known to be missing, Q8_0 is planned and
    # its FROM stays the placeholder with the note saying where to find a tag
    assert "granite3.3" not in library_families()
    doc = _plan(capsys, "granite-3.3-8b", "--gpu", "rtx-3060")
    plans, notes = doc["plans"], doc["notes"]
    assert isinstance(plans, list)
    assert isinstance(notes, list)
    assert plans[0]["settings"]["quant"] == "Q8_0"
    assert "${OLLAMA_TAG:?set OLLAMA_TAG to a granite3.3 tag serving Q8_0}" in plans[0]["command"]
    assert not any("the Ollama library publishes" in n for n in notes)


def test_published_quants_limit_the_ladder_and_keep_the_default() -> None:
    import oomkit
    from oomkit.planner.knobs import quant_ladder

    spec = oomkit.load_model("qwen3-8b")
    full, default = quant_ladder("ollama", spec, None, None)
    assert full[default] == "Q4_K_M"
    assert "Q6_K" in full
    ladder, index = quant_ladder("ollama", spec, None, None, ("Q4_K_M", "Q8_0", "F16"))
    assert ladder == ("Q8_0", "Q4_K_M")
    assert ladder[index] == "Q4_K_M"
    # a pinned quant is the user's: no limit
    assert quant_ladder("ollama", spec, "Q6_K", None, ("Q4_K_M",))[0][0] == "Q6_K"
    # --min-quant cuts the full ladder first (Q6_K floor: Q8_0 is what is published above it)
    assert quant_ladder("ollama", spec, None, "Q6_K", ("Q4_K_M", "Q8_0"))[0] == ("Q8_0",)
