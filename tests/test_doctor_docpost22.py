"""docpost22 (issue #9 leftovers): every fix line's prompt kind holds what it promises (config,
Lua, JavaScript), and a stated micro-batch caps the batch cut."""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.prompt_lines import line_ok
from oomkit.diagnose.shell_lines import prompt, shell_ready


@pytest.mark.parametrize(
    ("line", "kind", "ok"),
    [
        ("per_device_train_batch_size: 1", "config: ", True),
        ("batch_size: 8   # data layer in the train prototxt", "config: ", True),
        ("vae_tiling: true   # LocalAI model config", "config: ", True),
        ('"num_gpu": 19', "config: ", True),
        ("resources: {limits: {memory: 1Gi}, requests: {memory: 1Gi}}   # pod", "config: ", True),
        ('fsdp_config: {"state_dict_type": "SHARDED_STATE_DICT"}', "config: ", True),
        ('"zero_optimization": {"offload_optimizer": {"device": "cpu"}}', "config: ", True),
        # main printed these after "config:": neither is a key: value a config file reads
        ('"context_window_size": <N> (mlc-chat-config / engine config)', "config: ", False),
        ('deepspeed: zero_optimization.offload_optimizer.device = "cpu"', "config: ", False),
        ("batch_size: smaller one", "config: ", False),
        ('"num_gpu": nineteen', "config: ", False),
        ("cudnn.benchmark = false  -- Lua", "Lua: ", True),
        ("cudnn.benchmark = false and more  -- Lua", "Lua: ", False),
        ("tf.tidy(() => model.predict(x))   // TensorFlow.js", "JavaScript: ", True),
        ("await tf.setBackend('wasm')   // TensorFlow.js", "JavaScript: ", True),
        ("tf.split(t, 4   // TensorFlow.js", "JavaScript: ", False),
    ],
)
def test_config_lua_and_javascript_lines_keep_their_prompt(line: str, kind: str, ok: bool) -> None:
    assert prompt(line) == kind
    assert line_ok(kind, line) is ok


def test_python_floor_division_and_tf_python_stay_python() -> None:
    assert prompt("batch_size = max(1, batch_size // 4)") == "Python: "
    assert prompt("batch_size //= 2") == "Python: "
    assert prompt("tf.config.experimental.set_memory_growth(gpu, True)") == "Python: "


def test_a_lua_line_is_no_longer_printed_as_python() -> None:
    # main printed "Python: cudnn.benchmark = false  -- Lua" (ast reads it as false - (-Lua))
    d = diagnose_text(
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 7.79 GiB total "
        "capacity; 1.10 GiB already allocated; 1.50 GiB free; 1.20 GiB reserved in total by "
        'PyTorch)\n  File "x.py", line 3, in forward\n  torch.backends.cudnn  cudnnFind'
    )
    lua = [c for f in d.fixes for c in f.commands if c.endswith("-- Lua")]
    assert all(prompt(c) == "Lua: " for c in lua)


def test_prose_in_a_config_line_moves_into_the_text() -> None:
    (fix,) = shell_ready(
        [generic("t", "why.", ('"context_window_size": <N> (mlc-chat-config / engine config)',))]
    )
    assert fix.commands == ()
    assert "mlc-chat-config" in fix.why
