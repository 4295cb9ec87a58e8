"""The doctor's base rate (oomkit.diagnose.priors): the key it reads from real message shapes,
the table it is computed from, and how it answers only what the rules leave open."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.priors import (
    MIN_RECORDS,
    PriorKey,
    base_rate,
    override_table,
    prior_key,
)

ROOT = Path(__file__).resolve().parent.parent

# Real message shapes from the development parts of tests/fixtures/oom_corpus
_LEGACY_SMALL = (  # pytorch_old without the allocator's tail hint (PyTorch < ~1.10)
    "RuntimeError: CUDA out of memory. Tried to allocate 60.00 MiB (GPU 0; 6.00 GiB total "
    "capacity; 4.11 GiB already allocated; 34.82 MiB free; 4.42 GiB reserved in total by PyTorch)"
)
_CACHED_SMALL = (  # PyTorch 1.0-1.3 "... cached)"
    "RuntimeError: CUDA out of memory. Tried to allocate 150.00 MiB (GPU 0; 4.00 GiB total "
    "capacity; 2.48 GiB already allocated; 147.70 MiB free; 54.93 MiB cached)"
)
_NEW_SMALL = (
    "OutOfMemoryError: CUDA out of memory. Tried to allocate 90.00 MiB. GPU 0 has a total "
    "capacity of 14.74 GiB of which 12.12 MiB is free. Process 4207 has 14.73 GiB memory in use. "
    "Of the allocated memory 14.60 GiB is allocated by PyTorch, and 4.05 MiB is reserved by "
    "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)
_SPILL = (  # Windows shared-memory fallback: allocated above the card's capacity
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1002.00 MiB. GPU 0 has a "
    "total capacity of 8.00 GiB of which 0 bytes is free. Of the allocated memory 13.98 GiB is "
    "allocated by PyTorch, and 129.48 MiB is reserved by PyTorch but unallocated. If reserved but "
    "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to "
    "avoid fragmentation."
)
_PADDLE_SMALL = (
    "Out of memory error on GPU 0. Cannot allocate 128.000000MB memory on GPU 0, 23.431824GB "
    "memory has been allocated and available memory is only 97.625000MB."
)
_CPU = (
    "RuntimeError: [enforce fail at ..\\c10\\core\\impl\\alloc_cpu.cpp:72] data. "
    "DefaultCPUAllocator: not enough memory: you tried to allocate 1073741824 bytes."
)
_BACKWARD_TB = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 88, in <module>\n'
    "    loss.backward()\n"
    '  File "/usr/lib/python3/site-packages/torch/_tensor.py", line 487, in backward\n'
)


def _key(text: str) -> PriorKey:
    d = diagnose_text(text)
    assert d.primary is not None
    return prior_key(d.primary, d.context)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("RuntimeError: CUDA out of memory.", ("pytorch", "unknown", "no_numbers")),
        ("RuntimeError: CUDA error: out of memory", ("pytorch", "unknown", "driver_no_numbers")),
        (
            "CUDA error 2 at ggml-cuda.cu:359: out of memory",
            ("ggml", "unknown", "driver_no_numbers"),
        ),
        (_LEGACY_SMALL, ("pytorch", "unknown", "small_request_legacy")),
        (_CACHED_SMALL, ("pytorch", "unknown", "small_request_legacy")),
        (_NEW_SMALL, ("pytorch", "unknown", "small_request")),
        # the request's share is of what the device holds (13.98 GiB), not of the 8 GiB card
        (_SPILL, ("pytorch", "unknown", "small_request")),
        # Paddle states held and free: 128 MB of 23.5 GB is small
        (_PADDLE_SMALL, ("gpu_framework", "unknown", "small_request")),
        # a host allocation is the host family whatever runtime printed it
        (_CPU, ("host", "unknown", "partial_numbers")),
        # a traceback places a generic CUDA error as surely as PyTorch's own message
        (
            _BACKWARD_TB + "RuntimeError: CUDA Error: out of memory",
            ("gpu_framework", "training_backward", "no_numbers"),
        ),
    ],
)
def test_prior_key_of_real_message_shapes(text: str, key: tuple[str, str, str]) -> None:
    assert _key(text) == PriorKey(*key)


def test_unfinished_loading_bar_places_the_failure_in_the_load() -> None:
    d = diagnose_text(
        "Loading checkpoint shards:  88%|########  | 7/8 [00:12<00:01,  1.84s/it]\n" + _NEW_SMALL
    )
    assert d.phase == "load"
    assert d.cause == "model_too_large"
    done = diagnose_text(
        "Loading checkpoint shards: 100%|########| 8/8 [00:12<00:00,  1.84s/it]\n" + _NEW_SMALL
    )
    assert done.phase == "unknown"  # loading finished: the failure came after it


def _cause_priors() -> ModuleType:
    path = ROOT / "benchmarks" / "cause_priors.py"
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location("cause_priors", path)
        assert spec is not None
        assert spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(path.parent))


def test_priors_table_is_what_the_script_computes_from_the_development_parts() -> None:
    mod = _cause_priors()
    # never a part that is still held out: a heldout part counts only once the corpus README
    # records its one scoring and its retirement to development
    readme = (ROOT / "tests" / "fixtures" / "oom_corpus" / "README.md").read_text(encoding="utf-8")
    for part in mod.DEVELOPMENT_PARTS:
        if part.startswith("heldout"):
            assert re.search(rf"`{part}`[^\n]*\n?[^\n]*scored once", readme, re.IGNORECASE), part
            assert re.search(rf"`{part}`(.|\n){{0,400}}retired to development", readme), part
    table = ROOT / "src" / "oomkit" / "data" / "cause_priors.json"
    assert table.read_text(encoding="utf-8") == mod.build(), (
        "cause_priors.json is stale: run `python benchmarks/cause_priors.py`"
    )


def test_a_records_key_does_not_depend_on_the_table() -> None:
    """``cause_priors.py --loo`` diagnoses each record once and reuses its key for every
    left-out part's table: the key must be the same whatever table the doctor runs with."""
    mod = _cause_priors()
    records = mod.labelled(["dev"])[:40]
    with override_table({}):
        bare = mod.keyed(records)
    with override_table(_FAVOURS_BATCH):
        biased = mod.keyed(records)
    assert bare == biased == mod.keyed(records)
    assert len(bare) >= 30  # recognised records carry keys
    assert mod.tabulate(bare) == mod.count(records)


_FAVOURS_BATCH = {"pytorch|unknown|no_numbers": {"batch_or_activations": 9, "model_too_large": 1}}


def test_backoff_needs_min_records_and_never_borrows_another_family() -> None:
    key = PriorKey("pytorch", "training_forward", "no_numbers")
    thin = {
        "pytorch|training_forward|no_numbers": {"model_too_large": MIN_RECORDS - 1},
        "pytorch|training_forward|*": {"batch_or_activations": MIN_RECORDS + 2},
    }
    with override_table(thin):
        rate = base_rate(key)
    assert rate is not None
    assert rate.key == "pytorch|training_forward|*"
    assert rate.cause == "batch_or_activations"
    with override_table({"tf_xla|*|*": {"batch_or_activations": 50}}):
        assert base_rate(key) is None


def test_a_level_rate_is_flat() -> None:
    key = PriorKey("pytorch", "unknown", "no_numbers")
    # 14 vs 13: the lead is far below one standard error of the difference
    with override_table({key.at((True, True, True)): {"model_too_large": 14, "batch": 13}}):
        rate = base_rate(key)
    assert rate is not None
    assert rate.cause is None
    with override_table({key.at((True, True, True)): {"model_too_large": 14, "batch": 3}}):
        rate = base_rate(key)
    assert rate is not None
    assert rate.cause == "model_too_large"


def test_bare_message_gets_the_base_rate_at_low_confidence() -> None:
    with override_table(_FAVOURS_BATCH):
        d = diagnose_text("RuntimeError: CUDA out of memory.")
    assert d.cause == "batch_or_activations"
    assert d.open_question
    assert d.confidence < 0.5
    assert "similar reports oomkit has labelled" in d.explanation
    # the table's key and counts are internal: never in what the user reads
    assert "with key" not in d.explanation
    assert "batch_or_activations 10" not in d.explanation
    assert "What would decide" in d.explanation
    assert d.fixes[0].title.startswith("Halve the batch")
    with override_table({}):  # no rate: the rules' answer stays
        assert diagnose_text("RuntimeError: CUDA out of memory.").cause == "unknown"


def test_flat_rate_keeps_a_tied_guess_and_otherwise_says_unknown() -> None:
    key = "pytorch|unknown|small_request"
    with override_table({key: {"model_too_large": 14, "batch_or_activations": 13}}):
        tied = diagnose_text(_NEW_SMALL)
    assert tied.cause == "model_too_large"  # the rule's own reading is one of the leaders
    assert tied.confidence <= 0.35
    assert "about equally common" in tied.explanation
    assert "model_too_large 14" not in tied.explanation  # internal counts stay internal
    with override_table({key: {"leak_or_accumulation": 14, "batch_or_activations": 13}}):
        other = diagnose_text(_NEW_SMALL)
    assert other.cause == "unknown"  # model_too_large needs evidence; the rate gives none


def test_small_request_of_the_pre_110_era_reads_as_the_batch() -> None:
    with override_table(
        {"pytorch|unknown|small_request_legacy": {"batch_or_activations": 11, "model_too_large": 3}}
    ):
        d = diagnose_text(_LEGACY_SMALL)
    assert d.cause == "batch_or_activations"
    assert d.confidence < 0.5


def test_what_the_rules_decide_is_never_overridden() -> None:
    frag = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 250.00 MiB. GPU 0 has a "
        "total capacity of 23.65 GiB of which 0 bytes is free. Of the allocated memory 8.73 GiB "
        "is allocated by PyTorch, and 2.48 GiB is reserved by PyTorch but unallocated."
    )
    big = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.80 GiB. GPU 0 has a "
        "total capacity of 14.76 GiB of which 3.89 GiB is free. Of the allocated memory 9.94 GiB "
        "is allocated by PyTorch, and 160.79 MiB is reserved by PyTorch but unallocated."
    )
    everything = {
        f"{f}|{p}|{e}": {"host_ram": 100}
        for f in ("pytorch", "ggml", "tf_xla")
        for p in ("unknown", "*")
        for e in ("small_request", "large_request", "partial_numbers", "*")
    }
    for text in (frag, big, "Requested buffer size exceeds device memory allocation limit"):
        with override_table({}):
            alone = diagnose_text(text)
        with override_table(everything):
            d = diagnose_text(text)
        assert (d.cause, d.confidence) == (alone.cause, alone.confidence)
        assert not d.open_question


def test_others_must_cover_the_shortfall() -> None:
    # 25 GiB unaccounted on the card, but the 55.6 GiB request is short by 41 GiB: stopping
    # the others would not have served it
    d = diagnose_text(
        "RuntimeError: CUDA out of memory. Tried to allocate 55.62 GiB (GPU 0; 79.19 GiB total "
        "capacity; 31.25 GiB already allocated; 14.34 GiB free; 39.41 GiB reserved in total by "
        "PyTorch)"
    )
    assert d.cause == "batch_or_activations"


# Real corpus messages: the bare PyTorch line (heldout4 h4-tgi-1354) and the driver-level error
# (heldout2 h2-ssdpytorch-257); what decides them below is the table, set per test
_BARE = "torch.cuda.OutOfMemoryError: CUDA out of memory"
_DRIVER = "RuntimeError: CUDA error: out of memory"
_FAMILY_FAVOURS_BATCH = {"pytorch|unknown|*": {"batch_or_activations": 40, "model_too_large": 20}}


def test_flat_rate_whose_top_a_coarser_rate_favours_guesses_it() -> None:
    # without heldout3 the bare-message key is 7 vs 7 (flat); the family rate favours the
    # batch, which the flat key counts most too: two rates agree, the doctor guesses it
    table = {
        "pytorch|unknown|no_numbers": {
            "batch_or_activations": 7,
            "model_too_large": 7,
            "leak_or_accumulation": 3,
        },
        **_FAMILY_FAVOURS_BATCH,
    }
    key = PriorKey("pytorch", "unknown", "no_numbers")
    with override_table(table):
        rate = base_rate(key)
        d = diagnose_text(_BARE)
    assert rate is not None
    assert rate.cause is None
    assert rate.confirmed_by is not None
    assert rate.confirmed_by.key == "pytorch|unknown|*"
    assert d.cause == "batch_or_activations"
    assert d.open_question
    assert d.confidence <= 0.35
    assert "a broader group" in d.explanation  # the coarser rate, without its internal key
    assert "pytorch|unknown" not in d.explanation
    assert "What would decide" in d.explanation
    assert d.fixes[0].title.startswith("Halve the batch")


def test_coarser_rate_never_confirms_a_cause_the_flat_key_puts_below_others() -> None:
    # the driver-level key of the development parts: the family favours the batch, but
    # messages of this shape count the batch fourth; nothing decides, it stays unknown
    table = {
        "pytorch|unknown|driver_no_numbers": {
            "other_process_holding_memory": 7,
            "model_too_large": 6,
            "leak_or_accumulation": 5,
            "batch_or_activations": 4,
        },
        **_FAMILY_FAVOURS_BATCH,
    }
    with override_table(table):
        rate = base_rate(PriorKey("pytorch", "unknown", "driver_no_numbers"))
        d = diagnose_text(_DRIVER)
    assert rate is not None
    assert rate.confirmed_by is None
    assert d.cause == "unknown"
    assert "What would decide" in d.explanation


def test_flat_all_the_way_up_stays_unknown() -> None:
    flat = {"batch_or_activations": 7, "model_too_large": 7}
    with override_table({"pytorch|unknown|no_numbers": flat, "pytorch|unknown|*": flat}):
        d = diagnose_text(_BARE)
    assert d.cause == "unknown"


def test_rule_guess_among_the_leaders_outranks_a_confirmed_guess() -> None:
    # the small-request reading's own guess (model_too_large) is one of the level leaders: it
    # stays, though the family rate would confirm the batch
    table = {
        "pytorch|unknown|small_request": {"model_too_large": 14, "batch_or_activations": 14},
        **_FAMILY_FAVOURS_BATCH,
    }
    with override_table(table):
        d = diagnose_text(_NEW_SMALL)
    assert d.cause == "model_too_large"
    assert d.confidence <= 0.35


# doccause16: the phase the words state, where no traceback or stage places the failure. Real
# texts of the development parts (heldout11, heldout14, heldout24, heldout27, heldout16).
_LOAD_HOST = "The app always says it would exceed the internal memory and fails to load the model."
_LOAD_HOST_2 = (
    "Trying to convert the 420gb ollama4 but, seems like it has to load the whole thing into "
    "memory first, then fails when the memory is full."
)
_LOAD_DEVICE = "insufficient VRAM to load any model layers"
_TRAINING = "OOM while training lora."


@pytest.mark.parametrize(
    ("text", "stated"),
    [
        (_LOAD_HOST, "load"),
        (_LOAD_HOST_2, "load"),
        (_LOAD_DEVICE, "load_device"),
        (_TRAINING, "training"),
        ("Is there any chance to inference with tile option to avoid oom errors? tnx", "inference"),
        ("RuntimeError: CUDA out of memory.", ""),
        ("I can't get it to work, I keep running out of memory", ""),
    ],
)
def test_the_phase_the_words_state(text: str, stated: str) -> None:
    assert _key(text).stated == stated


def test_a_placed_phase_is_never_overruled_by_words() -> None:
    key = _key(_BACKWARD_TB + "RuntimeError: CUDA out of memory. (while loading the model)")
    assert key.phase == "training_backward"
    assert key.stated == ""
    assert "|load" not in " ".join(key.table_keys())


def test_a_stated_load_naming_no_device_reads_as_host_ram_by_base_rate() -> None:
    """The committed table: a load whose words name no device answers host RAM (the loaders
    read a checkpoint into RAM before copying it to the device), at low confidence, with the
    counts of its own key and a question about host RAM. Without the finer key it was the
    generic prose key's batch/activations."""
    for text in (_LOAD_HOST, _LOAD_HOST_2):
        d = diagnose_text(text)
        assert d.cause == "host_ram", text
        assert d.confidence < 0.5
        assert "no_numbers|load" not in d.explanation  # the key is internal; the question says load
        assert "does host RAM run out while it loads" in d.explanation


def test_a_load_naming_the_device_keeps_the_coarse_rate_and_asks_whether_the_model_fits() -> None:
    d = diagnose_text(_LOAD_DEVICE)
    assert d.cause != "host_ram"
    assert "|load" not in d.explanation.split("What would decide")[0]
    assert "does the model alone fit the card" in d.explanation


def test_a_thin_stated_key_falls_back_to_the_coarse_key() -> None:
    key = PriorKey("gpu_framework", "unknown", "no_numbers", "load")
    assert key.table_keys()[:2] == (
        "gpu_framework|unknown|no_numbers|load",
        "gpu_framework|unknown|no_numbers",
    )
    thin = {
        "gpu_framework|unknown|no_numbers|load": {"host_ram": MIN_RECORDS - 1},
        "gpu_framework|unknown|no_numbers": {"batch_or_activations": 20, "host_ram": 4},
    }
    with override_table(thin):
        rate = base_rate(key)
    assert rate is not None
    assert rate.key == "gpu_framework|unknown|no_numbers"
    thin["gpu_framework|unknown|no_numbers|load"] = {"host_ram": MIN_RECORDS}
    with override_table(thin):
        rate = base_rate(key)
    assert rate is not None
    assert (rate.key, rate.cause) == ("gpu_framework|unknown|no_numbers|load", "host_ram")


def test_the_deciding_question_follows_the_stated_training_phase() -> None:
    d = diagnose_text(_TRAINING)
    assert "What would decide: does it still fail at batch size 1, on the first step" in (
        d.explanation
    )
