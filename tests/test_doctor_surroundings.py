"""The lines around the failing message (paste_context, rules_surroundings)."""

from __future__ import annotations

import time

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.paste_context import EDGE_LINES, MAX_PROSE, NEAR_LINES, read_surroundings

_BARE = "RuntimeError: CUDA error: out of memory"


def test_a_sentence_above_the_message_decides_what_the_message_left_open() -> None:
    # h13-sentence-transformers-3245: the launcher line says every tensor goes to cuda:0, the
    # message below it is only "cuda:0 OOM!"
    d = diagnose_text(corpus_text("h13-sentence-transformers-3245"))
    assert d.cause == "multi_gpu_imbalance"
    assert d.confidence == 0.4  # 0.05 below the same statement on the message's own line
    assert "read from line 1 of the paste" in d.explanation
    assert d.context.paste_prose[0][0] == 1


def test_the_same_statement_inside_the_message_keeps_its_own_confidence() -> None:
    one_line = corpus_text("h13-sentence-transformers-3245").replace("\n", " ")
    d = diagnose_text(one_line)
    assert d.cause == "multi_gpu_imbalance"
    assert d.confidence == 0.45
    assert "read from line" not in d.explanation


def test_words_beside_the_message_on_its_own_line_are_read() -> None:
    # the parser's message is only "CUDA out of memory"; the words before it are the poster's
    d = diagnose_text("everything goes to cuda:0 and then CUDA out of memory")
    assert d.cause == "multi_gpu_imbalance"
    assert "read from line 1" in d.explanation


def test_a_growth_title_above_a_bare_driver_error() -> None:
    d = diagnose_text(
        "Memory keeps growing with each request until the server dies\n"
        "Traceback (most recent call last):\n"
        '  File "serve.py", line 40, in handle\n'
        "    out = model(x)\n" + _BARE
    )
    assert d.cause == "leak_or_accumulation"
    assert "read from line 1" in d.explanation


def test_traceback_frames_exceptions_and_code_are_not_prose() -> None:
    text = (
        '  File "train.py", line 9, in <module> everything goes to cuda:0 here\n'
        "    x = torch.zeros(1024, device='cuda:0')  # everything goes to cuda:0\n"
        "ValueError: everything goes to cuda:0 and the other GPUs stay idle\n" + _BARE
    )
    assert read_surroundings(text, (_BARE,)).prose == ()
    assert diagnose_text(text).cause != "multi_gpu_imbalance"


def test_a_line_that_is_an_oom_message_is_not_read_again() -> None:
    message = "the other GPUs stay idle while this one is out of memory"
    assert read_surroundings(message + "\n" + _BARE, (message, _BARE)).prose == ()
    assert read_surroundings(message + "\n" + _BARE, (_BARE,)).prose == ((1, message),)


def test_host_ram_kills_keep_their_own_reading() -> None:
    # tc-chatglm-webui-3: the kernel killed the loader for RAM; a GPU statement around it would
    # not explain that
    text = "All the weights are loaded to cuda:0 before the split happens\n" + corpus_text(
        "tc-chatglm-webui-3"
    )
    d = diagnose_text(text)
    assert d.cause == "host_ram"


def test_log_prefixes_are_stripped_as_the_parsers_strip_them() -> None:
    # the doctor normalizes the paste first (a collector's timestamp prefix goes there); the
    # runtimes' own prefixes (rank, level) go as the parsers strip them
    text = corpus_text("h13-sentence-transformers-3245")
    for prefix in ("[rank3]: ", "2024-05-01 12:00:00,123 ERROR [worker-1] ", "> **", "\x1b[1;31m"):
        pasted = "\n".join(prefix + line for line in text.split("\n"))
        d = diagnose_text(pasted)
        assert d.context.paste_prose == ((1, text.split("\n")[0]),)
        assert d.cause == "multi_gpu_imbalance"


def test_a_sentence_that_states_no_mechanism_changes_nothing() -> None:
    plain = diagnose_text(_BARE)
    d = diagnose_text("I was running the demo script from the readme today\n" + _BARE)
    assert (d.cause, d.confidence) == (plain.cause, plain.confidence)


def test_prose_is_bounded_and_keeps_the_head_and_the_tail() -> None:
    lines = [f"this is sentence number {i} of a very long report" for i in range(50_000)]
    text = "\n".join([*lines, _BARE])
    start = time.process_time()
    s = read_surroundings(text, (_BARE,), (50_001,))
    elapsed = time.process_time() - start
    assert len(s.prose) == MAX_PROSE
    assert s.prose[0] == (1, lines[0])
    assert s.prose[-1] == (50_000, lines[-1])
    assert elapsed < 5.0  # one pass; a quadratic reader would take minutes here


def test_only_the_edges_and_the_lines_near_a_message_are_read() -> None:
    noise = ["step 17 loss 0.25"] * 2_000
    remark = "all tensor be sent to the cuda:0 first"
    far = [*noise, remark, *noise, _BARE]
    assert read_surroundings("\n".join(far), (_BARE,), (len(far),)).prose == ()
    near = [*noise, remark, *noise[:3], _BARE, *noise]
    at = near.index(_BARE) + 1
    assert NEAR_LINES > 4
    assert EDGE_LINES < 2_000
    s = read_surroundings("\n".join(near), (_BARE,), (at,))
    assert s.prose == ((near.index(remark) + 1, remark),)
    assert read_surroundings("\n".join(near), (_BARE,), ()).prose == ()


def test_the_prose_rules_read_around_the_message_are_those_of_its_own_line() -> None:
    # one list decides on the message's line (rules_evidence.EVIDENCE_RULES); the sentences around
    # it are read by its prose rules, in the same order (they had drifted: two were missing)
    from oomkit.diagnose.rules_evidence import EVIDENCE_RULES
    from oomkit.diagnose.rules_stated import colocated_rollout_engine
    from oomkit.diagnose.rules_surroundings import PROSE_RULES

    prose = tuple(
        r
        for r in EVIDENCE_RULES
        if r.__name__.startswith("stated_") or r is colocated_rollout_engine
    )
    assert prose == PROSE_RULES
    assert all(r.__module__.startswith("oomkit.diagnose.rules_stated") for r in prose)


_BARE_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 3, in <module>\n'
    "RuntimeError: CUDA error: out of memory"
)


def test_a_lora_comparison_above_a_bare_message_is_read() -> None:
    d = diagnose_text(
        "LoRA works on 1 gpu, but full parameter fine-tuning gives OOM on 8*A100\n" + _BARE_TRACE
    )
    assert d.cause == "model_too_large"
    assert "LoRA runs and full fine-tuning does not" in d.explanation
    assert "read from line 1 of the paste" in d.explanation


def test_weights_over_one_card_above_a_bare_message_are_read() -> None:
    d = diagnose_text("My 70B model in bf16 on one 80 GB card.\n" + _BARE_TRACE)
    assert d.cause == "model_too_large"
    assert "read from line 1 of the paste" in d.explanation
    # near miss: several cards may split the weights, nothing is read
    d = diagnose_text("My 70B model in bf16 on 8 80 GB cards.\n" + _BARE_TRACE)
    assert "read from line 1 of the paste" not in d.explanation
