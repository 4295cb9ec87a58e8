"""Review 21, training plans: the ``check:`` command after "Nothing fits ... on 4 GPUs" runs.
With more than one card named (``--gpu 2x4090``) it kept the named cards beside the
suggested ``--gpus 4``, a pair estimate refuses ("--gpus 4 disagrees with --gpu '2x4090'")."""

from __future__ import annotations

import shlex

import pytest

from conftest import run_cli


@pytest.mark.parametrize(
    ("command", "gpus"),
    [("estimate", ("--gpu", "2x4090")), ("plan", ("--gpu", "rtx-4090", "--gpu", "rtx-3090"))],
)
def test_the_more_gpus_check_command_names_that_many_cards(
    capsys: pytest.CaptureFixture[str], command: str, gpus: tuple[str, ...]
) -> None:
    # 32 GiB of RAM: the FSDP offload of the 4-bit base (37 GiB on the host) does not fit either
    argv = (command, "llama-3.1-70b", "--train", "qlora", "--grad-checkpointing", *gpus,
            "--ram", "32GiB")  # fmt: skip
    _, out, _ = run_cli(capsys, *argv, "--offline")
    assert "more GPUs lower it only by sharding" in out
    check = next(x for x in out.splitlines() if x.startswith("  check: "))
    words = shlex.split(check.removeprefix("  check: "))[1:]
    n = words[words.index("--gpus") + 1]
    assert words[words.index("--gpu") + 1] == f"{n}xrtx-4090"  # the smaller card of the two
    code, out, err = run_cli(capsys, *words, "--offline")
    assert code == 0, err
    assert "fits" in out
