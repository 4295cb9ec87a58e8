"""docfix15: a vLLM log's own model line sizes the doctor's fixes, and the no-blocks
explanation names the profile batch of the engine generation the log ran.

Synthetic lines in vLLM's own formats: ``args: Namespace(model='...')`` (api_server argparse
repr), ``Initializing an LLM engine (v0.6.3.post1) with config: model='...'`` (V0
vllm/engine/llm_engine.py), ``Initializing a V1 LLM engine (v0.8.5) with config: model='...'``
(vllm/v1/engine/core.py) and ``non-default args: {'model_tag': ..., 'model': ...}``
(vllm/entrypoints/utils.py, 0.9+).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from oomkit.cli.doctor import doctor_command
from oomkit.diagnose.parse import parse_log

LOGS = Path(__file__).parent / "fixtures" / "oom_logs"
VLLM2 = LOGS / "constructed-review15-vllm2.txt"
_NO_BLOCKS = (
    "ERROR 05-02 14:05:02 engine.py:160] ValueError('No available memory for the cache blocks. "
    "Try increasing `gpu_memory_utilization` when initializing the engine.')\n"
)


def _doctor(*argv: str, stdin: str | None = None) -> dict[str, Any]:
    args = ["-", "--no-input", "--json", *argv] if stdin is not None else [*argv, "--json"]
    r = CliRunner().invoke(doctor_command, args, input=stdin)
    assert r.exit_code == 0, r.output
    out: dict[str, Any] = json.loads(r.stdout)
    return out


def test_vllm_log_model_sizes_the_fixes_as_dash_m_does() -> None:
    plain = _doctor(str(VLLM2))
    named = _doctor(str(VLLM2), "-m", "llama-3.1-70b")
    assert plain["fixes"] == named["fixes"]
    assert any(f.get("estimated") for f in plain["fixes"]), plain["fixes"]


def test_each_vllm_model_line_is_read() -> None:
    lines = {
        "namespace": "INFO api_server.py:713] args: Namespace(host=None, "
        "model='Qwen/Qwen2.5-72B-Instruct', served_model_name=['x'], tokenizer=None)",
        "v0": "INFO llm_engine.py:237] Initializing an LLM engine (v0.6.3.post1) with config: "
        "model='Qwen/Qwen2.5-72B-Instruct', speculative_config=None, "
        "tokenizer='Qwen/Qwen2.5-72B-Instruct', max_seq_len=32768",
        "v1": "INFO [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: "
        "model='Qwen/Qwen2.5-72B-Instruct', speculative_config=None, max_seq_len=32768",
        "nondefault": "(APIServer pid=1) INFO [utils.py:326] non-default args: {'model_tag': "
        "'Qwen/Qwen2.5-72B-Instruct', 'model': 'Qwen/Qwen2.5-72B-Instruct'}",
    }
    engines = {"namespace": None, "v0": "V0", "v1": "V1", "nondefault": None}
    for key, line in lines.items():
        ctx = parse_log(line + "\n" + _NO_BLOCKS).context
        assert ctx.model_name == "Qwen/Qwen2.5-72B-Instruct", key
        assert ctx.vllm_engine == engines[key], key


def test_served_name_or_tokenizer_alone_is_no_model() -> None:
    ctx = parse_log(
        "INFO args: Namespace(served_model_name='llama-3.1-70b', tokenizer='gpt2')\n" + _NO_BLOCKS
    ).context
    assert ctx.model_name is None


def test_an_unknown_model_id_is_left_alone() -> None:
    text = (
        "INFO llm_engine.py:237] Initializing an LLM engine (v0.6.3.post1) with config: "
        "model='acme/private-finetune', max_seq_len=131072, tensor_parallel_size=2\n" + _NO_BLOCKS
    )
    d = _doctor(stdin=text)
    assert not any(f.get("estimated") for f in d["fixes"]), d["fixes"]


def test_v0_log_names_v0s_profile_batch_not_v1s() -> None:
    d = _doctor(stdin=VLLM2.read_text(encoding="utf-8"))
    assert "V1 profiles 1024" not in d["explanation"]
    assert "vLLM V0 0.6.3.post1 profiles max_num_seqs sequences, 256 by default" in d["explanation"]
    # without the model the generic fix does not suggest V0's own default of 256 sequences
    text = "\n".join(
        ln for ln in VLLM2.read_text(encoding="utf-8").splitlines() if "model=" not in ln
    )
    d = _doctor(stdin=text)
    cmds = [c for f in d["fixes"] for c in f["commands"]]
    assert "--max-num-seqs 256" not in cmds
    assert "--max-num-seqs 128" in cmds


def test_v1_log_names_v1s_profile_batch() -> None:
    text = (
        "INFO [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: "
        "model='acme/private-finetune', max_seq_len=32768\n" + _NO_BLOCKS
    )
    d = _doctor(stdin=text)
    assert "vLLM V1 0.8.5 profiles max_num_seqs sequences, 1024 by default" in d["explanation"]
