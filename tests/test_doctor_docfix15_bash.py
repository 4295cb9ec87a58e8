"""docfix15: bash's job reports of a SIGKILLed job, in English and in bash's CJK translations.

bash jobs.c ``pretty_print_job``: ``"[%d]%c "`` then ``print_pipeline`` (the pid with
``jobs -l``, ``j_strsignal`` = strsignal(SIGKILL), glibc-translated, padded to
LONGEST_SIGNAL_DESC, then the command); a script's child: ``notify_of_job_status`` prints
``_("%s: line %d: ")`` first (bash po/ko.po "%s: 줄 %d: ", ja.po "%s: %d 行: ", zh_CN.po
"%s: 第 %d 行：", zh_TW.po "%s: 第 %d 列："). Negatives first: other job endings.
"""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text


@pytest.mark.parametrize(
    "text",
    [
        "[1]+  Done                    python train.py\n",
        "[1]+  Stopped                 python train.py\n",
        "[2]-  Terminated              python train.py\n",
        "[1]+  Exit 1                  python train.py\n",
        "[1] Killed the flaky test by pinning the seed.\n",  # a citation in prose, one space
    ],
)
def test_other_job_endings_are_not_a_kill(text: str) -> None:
    d = diagnose_text(text)
    assert not any(e.kind == "killed" for e in d.events), [e.format for e in d.events]


@pytest.mark.parametrize(
    "text",
    [
        "$ python train.py &\n[1] 12345\n$\n[1]+  Killed                  python train.py\n",
        "[1]+ 12345 Killed                  python train.py\n",  # jobs -l
        "[1]+  죽었음                  python train.py\n",  # ko (glibc strsignal)
        "[1]+  已杀死                  python train.py\n",  # zh_CN
        "[1]+  強制終了                  python train.py\n",  # ja
        "train.sh: 줄 27:   318 죽었음                  python train.py\n",
        "train.sh: 행 27번:   318 죽었음                  python train.py\n",  # older ko.po
        "train.sh: 27 行:   318 Killed                  python train.py\n",
        "train.sh: 27 行:   318 強制終了                  python train.py\n",
        "train.sh: 第 27 行：  318 已杀死                  python train.py\n",
        "train.sh: 第 27 行：31812 已杀死                  python train.py\n",  # 5-digit pid
        "train.sh: 第 27 列：  318 強制結束                  python train.py\n",  # zh_TW
    ],
)
def test_bash_job_kill_is_the_host_oom_killer_lead(text: str) -> None:
    d = diagnose_text(text)
    bare = diagnose_text("$ python train.py\nKilled\n")
    assert [e.format for e in d.events] == ["linux_killed"]
    assert (d.cause, d.confidence) == (bare.cause, bare.confidence)
