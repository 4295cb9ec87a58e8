"""Wordings of real corpus messages that the doctor read as no OOM at all (heldout5, retired to
development): llama.cpp's 2024 KV-slot message as koboldcpp prints it, and bash reporting a
child the OOM killer took. Each decides its cause from the message alone."""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text

# heldout5 h5-koboldcpp-1535 (LostRuins/koboldcpp#1535)
_KOBOLD_KV_SLOT = (
    "[Context Shifting: Erased 143 tokens at position 1379]\n"
    "Processing Prompt [BLAS] (454 / 454 tokens)update: applying K-shift\n"
    "decode: failed to find KV cache slot for ubatch of size 454\n"
    "llama_decode: failed to decode, ret = 1\n"
    "\n"
    "Failed to predict at token position 15480! Check your context buffer sizes!"
)
# heldout5 h5-kingdra-2: Keras training run from a shell script, SIGKILLed by the OOM killer
_BASH_KILLED = (
    "2020-11-24 20:18:25.069 Epoch 5/5\n"
    "\n"
    "2020-11-24 20:18:25.069 - 24s - loss: 5.9945\n"
    "\n"
    "2020-11-24 20:22:28.106 /bin/bash: line 27: 318 Killed sh start.sh"
)


def test_llamacpp_kv_slot_wording_of_2024_is_the_context() -> None:
    d = diagnose_text(_KOBOLD_KV_SLOT)
    assert d.oom_found
    assert d.primary is not None
    assert d.primary.kind == "kv_slots_full"
    assert d.cause == "kv_cache_or_context"
    assert d.allocation == "kv_pool"


def test_bash_reporting_a_killed_child_is_host_ram() -> None:
    d = diagnose_text(_BASH_KILLED)
    assert d.primary is not None
    assert d.primary.kind == "killed"
    assert d.primary.pid == 318
    assert d.cause == "host_ram"


def test_bash_words_that_are_not_a_kill_report_stay_silent() -> None:
    # "Killed" must be bash's job status (line N: PID Killed COMMAND), not prose about a kill
    for text in (
        "script.sh: line 3: the job was Killed earlier, retrying",
        "line 27: Killed sh start.sh",  # no pid: not bash's format
        "decode: found KV cache slot for ubatch of size 454",
    ):
        assert not diagnose_text(text).oom_found, text
