"""The held-out checker keys GitHub and forum threads so a reused thread is refused."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

_PATH = Path(__file__).parent / "fixtures" / "oom_corpus" / "check_new_threads.py"
_spec = importlib.util.spec_from_file_location("check_new_threads", _PATH)
assert _spec is not None
assert _spec.loader is not None
check_new_threads = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_new_threads)


def _check_heldout3() -> Any:
    import sys

    folder = Path(__file__).parent / "fixtures" / "verdict_runs"
    for extra in (folder, _PATH.parent):
        if str(extra) not in sys.path:
            sys.path.insert(0, str(extra))
    spec = importlib.util.spec_from_file_location("check_heldout3", folder / "check_heldout3.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_github_issue_and_pull_share_a_key() -> None:
    key = check_new_threads.thread_key
    assert key("https://github.com/ggerganov/llama.cpp/issues/12") == ("ggml-org/llama.cpp", 12)
    assert key("https://github.com/ggml-org/llama.cpp/pull/12") == ("ggml-org/llama.cpp", 12)


def test_discourse_topic_with_and_without_slug_and_post() -> None:
    key = check_new_threads.thread_key
    want = ("discuss.pytorch.org", 55592)
    assert key("https://discuss.pytorch.org/t/training-on-multi-gpus-out-of-memory/55592/2") == want
    assert key("https://discuss.pytorch.org/t/training-on-multi-gpus-out-of-memory/55592") == want
    # a bare /t/<topic>/<post> is not read as slug <topic> and topic <post>
    assert key("https://discuss.pytorch.org/t/55592/2") == want
    hf = ("discuss.huggingface.co", 4242)
    assert key("https://discuss.huggingface.co/t/oom-on-a100/4242") == hf


def test_stack_exchange_and_reddit() -> None:
    key = check_new_threads.thread_key
    assert key("https://stackoverflow.com/questions/59129812/how-to-avoid") == (
        "stackoverflow.com",
        59129812,
    )
    assert key("https://www.reddit.com/r/LocalLLaMA/comments/1abcde/title/") == (
        "reddit.com",
        int("1abcde", 36),
    )
    assert key("https://example.com/blog/oom") is None


def test_forum_threads_named_anywhere_count_as_known() -> None:
    keys = check_new_threads._all_keys(
        "see https://discuss.pytorch.org/t/slug/101/3 and https://stackoverflow.com/q/7"
    )
    assert keys == [("discuss.pytorch.org", 101), ("stackoverflow.com", 7)]


def test_hugging_face_discussions_are_keyed_by_their_repository() -> None:
    key = check_new_threads.thread_key
    want = ("huggingface.co/thebloke/mixtral-8x7b-instruct-v0.1-awq", 2)
    url = "https://huggingface.co/TheBloke/Mixtral-8x7B-Instruct-v0.1-AWQ/discussions/2"
    assert key(url) == want
    assert key(url + "#x") == want
    # another model's discussion 2 is another thread; a Space keeps its prefix
    assert key("https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/discussions/2") != want
    assert key("https://huggingface.co/spaces/org/demo/discussions/7") == (
        "huggingface.co/spaces/org/demo",
        7,
    )


def test_arxiv_paper_is_one_source_whatever_the_version_or_format() -> None:
    key = check_new_threads.thread_key
    want = ("arxiv.org", 240202750)
    assert key("https://arxiv.org/abs/2402.02750") == want
    assert key("https://arxiv.org/abs/2402.02750v2") == want
    assert key("https://arxiv.org/html/2402.02750v2#S4") == want
    assert key("https://arxiv.org/pdf/2402.02750v1") == want
    assert key("https://arxiv.org/abs/2402.02751") != want


def test_hacker_news_items_are_keyed_by_their_id() -> None:
    # the id sits in the query string, which the verdict checker's bare-URL key strips: every
    # item read as one source (colver38)
    key = check_new_threads.thread_key
    assert key("https://news.ycombinator.com/item?id=39123456") == (
        "news.ycombinator.com",
        39123456,
    )
    assert key("https://news.ycombinator.com/item?id=39123457") != key(
        "https://news.ycombinator.com/item?id=39123456"
    )
    thread = _check_heldout3().thread
    assert thread("https://news.ycombinator.com/item?id=1") != thread(
        "https://news.ycombinator.com/item?id=2"
    )


def test_non_english_article_hosts_are_keyed_by_their_ids() -> None:
    key = check_new_threads.thread_key
    assert key("https://blog.csdn.net/some_user/article/details/131234567") == (
        "blog.csdn.net",
        131234567,
    )
    assert key("https://zhuanlan.zhihu.com/p/667123456") == ("zhuanlan.zhihu.com", 667123456)
    assert key("https://www.zhihu.com/question/612345678/answer/3123456789") == (
        "zhihu.com",
        612345678,
    )
    assert key("https://habr.com/ru/articles/812345/") == ("habr.com", 812345)
    assert key("https://habr.com/ru/companies/x/articles/812345/") == ("habr.com", 812345)
    assert key("https://qiita.com/user/items/0123456789abcdef0123") == (
        "qiita.com",
        int("0123456789abcdef0123", 16),
    )
    assert key("https://note.com/user/n/n1a2b3c4d5e6f") == ("note.com", int("1a2b3c4d5e6f", 16))
    # the same CSDN article named in another file is a used source
    keys = check_new_threads._all_keys("see https://blog.csdn.net/u/article/details/42 for it")
    assert ("blog.csdn.net", 42) in keys
