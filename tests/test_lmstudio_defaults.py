"""``-r lmstudio`` runs llama.cpp's estimator with LM Studio's own flash-attention default: Auto
(passed to llama.cpp as ``-fa auto``; lmstudio-bug-tracker #1454: LM Studio 0.4.0 logs "Flash
Attention was auto, set to disabled"; #1943: 0.4.14 "Flash Attention set to Auto"), an opt-in
toggle before llama.cpp's own ``-fa auto`` (a --runtime-version before 2025-08-30)."""

from __future__ import annotations

import dataclasses

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

HW = hardware_for(parse_gpu_list("rtx-4090"))
BASE = InferenceSettings(runtime="lmstudio", quant="Q4_K_M", ctx=8192)


def _run(**kw: object) -> tuple[bool, tuple[str, ...]]:
    est = estimate("llama-3.1-8b", dataclasses.replace(BASE, **kw), HW, offline=True)
    return bool(est.settings["flash_attn"]), est.assumptions


def test_lmstudio_default_is_auto_and_says_so() -> None:
    fa, notes = _run()
    assert fa is True
    assert any("LM Studio's default" in a and "#1454" in a for a in notes)


def test_lmstudio_before_fa_auto_is_off_and_says_so() -> None:
    fa, notes = _run(runtime_version="2025-06-01")
    assert fa is False
    assert any("LM Studio kept it an opt-in toggle" in a for a in notes)


def test_lmstudio_note_only_without_an_explicit_choice() -> None:
    for choice in (True, False):
        fa, notes = _run(flash_attn=choice)
        assert fa is choice
        assert not any("LM Studio" in a for a in notes)
    _, server = _run(runtime="llama.cpp")
    assert not any("LM Studio" in a for a in server)
