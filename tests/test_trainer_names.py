"""``plan --train`` (and ``estimate --train``'s suggestions) spell each plan in the trainer's own
names (``TrainingArguments``, ``LoraConfig``, ``BitsAndBytesConfig``, DeepSpeed JSON, accelerate
FSDP keys), not only oomkit's flags; the names are checked against the installed transformers
where it is there."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import re

import pytest
from click.testing import CliRunner

from oomkit.cli import cli as main
from oomkit.planner.trainer_names import HF_OPTIM, trainer_options
from oomkit.spec.settings import TrainingSettings

ENV = {"NO_COLOR": "1", "COLUMNS": "100"}
SETTINGS = [
    TrainingSettings(method="qlora", micro_batch=2, grad_accum=2, grad_checkpointing="full",
                     optimizer="paged_adamw8bit", lora_targets=("q_proj", "v_proj")),
    TrainingSettings(zero=3, gpus=8, offload_optimizer=True, offload_params=True,
                     optimizer="adamw8bit", loss="fused", mixed_precision="fp16"),
    TrainingSettings(fsdp=True, fsdp_strategy="SHARD_GRAD_OP", gpus=4, offload_params=True,
                     optimizer_impl="fused", expandable_segments=True),
    TrainingSettings(method="lora", lora_targets=("all-linear",), optimizer="torchao_adamw8bit",
                     master_weights=False),
]  # fmt: skip


def _call(line: str, name: str) -> dict[str, object]:
    """The keyword arguments of the ``name(...)`` call on ``line``."""
    m = re.match(rf"{name}\((.*)\)   #", line)
    assert m, line
    call = ast.parse(f"f({m.group(1)})", mode="eval").body
    assert isinstance(call, ast.Call)

    def value(v: ast.expr) -> object:  # a literal, or a name such as torch.bfloat16 as text
        return ast.unparse(v) if isinstance(v, ast.Attribute) else ast.literal_eval(v)

    return {k.arg: value(k.value) for k in call.keywords if k.arg}


def test_hf_trainer_spelling_of_a_qlora_plan() -> None:
    lines = trainer_options(SETTINGS[0])
    args = _call(lines[0], "TrainingArguments")
    assert args == {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 2,
                    "gradient_checkpointing": True, "optim": "paged_adamw_8bit",
                    "bf16": True}  # fmt: skip
    assert _call(lines[1], "LoraConfig") == {"r": 16, "target_modules": ["q_proj", "v_proj"]}
    assert _call(lines[2], "BitsAndBytesConfig") == {
        "load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True,
        "bnb_4bit_compute_dtype": "torch.bfloat16",
    }  # fmt: skip


@pytest.mark.parametrize(
    "sharded",
    [{"fsdp": True, "offload_params": True}, {"zero": 3}],
    ids=["fsdp", "zero3"],
)
def test_sharded_qlora_stores_the_4bit_weights_in_a_float_dtype(
    sharded: dict[str, object],
) -> None:
    """FSDP and ZeRO-3 shard only float tensors: bitsandbytes' FSDP-QLoRA guide
    (docs/source/fsdp_qlora.md) names ``bnb_4bit_quant_storage`` "the important change that
    enables FSDP-QLoRA", in the model's dtype; a single-GPU QLoRA keeps the uint8 default.
    Both take the run's compute dtype (transformers' default is float32)."""
    s = TrainingSettings(method="qlora", gpus=2, mixed_precision="fp16", **sharded)  # type: ignore[arg-type]
    line = next(x for x in trainer_options(s) if x.startswith("BitsAndBytesConfig("))
    bnb = _call(line, "BitsAndBytesConfig")
    assert bnb["bnb_4bit_quant_storage"] == "torch.float16"
    assert bnb["bnb_4bit_compute_dtype"] == "torch.float16"
    single = trainer_options(TrainingSettings(method="qlora"))
    assert not any("quant_storage" in x for x in single)


def test_deepspeed_fsdp_and_torchtune_spellings() -> None:
    ds = trainer_options(SETTINGS[1])
    args = _call(ds[0], "TrainingArguments")
    assert (args["deepspeed"], args["optim"], args["fp16"], args["use_liger_kernel"]) == (
        "ds_config.json", "adamw_bnb_8bit", True, True,
    )  # fmt: skip
    zero = json.loads("{" + ds[1].split("   #")[0] + "}")
    assert zero == {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
                                          "offload_param": {"device": "cpu"}}}  # fmt: skip
    fsdp = trainer_options(SETTINGS[2])
    assert _call(fsdp[0], "TrainingArguments")["fsdp"] == "shard_grad_op offload auto_wrap"
    assert _call(fsdp[0], "TrainingArguments")["optim"] == "adamw_torch_fused"
    assert "fsdp_sharding_strategy: SHARD_GRAD_OP, fsdp_offload_params: true" in fsdp[1]
    assert fsdp[-1].startswith("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    tt = trainer_options(TrainingSettings(micro_batch=2, optimizer_in_backward=True,
                                          master_weights=False,
                                          grad_checkpointing="full"))  # fmt: skip
    assert tt[0].startswith(
        "batch_size=2 optimizer_in_bwd=True enable_activation_checkpointing=True"
    )
    assert "gradient_accumulation_steps" not in tt[0]


def test_names_exist_in_the_installed_transformers() -> None:
    """Every TrainingArguments field, optim value, FSDP word and BitsAndBytesConfig keyword we
    print is one transformers itself defines (transformers ``training_args.py``,
    ``trainer_utils.FSDPOption``, ``utils/quantization_config.py``)."""
    transformers = pytest.importorskip("transformers")
    from transformers.trainer_utils import FSDPOption
    from transformers.training_args import OptimizerNames

    fields = {f.name for f in dataclasses.fields(transformers.TrainingArguments)}
    optims = {o.value for o in OptimizerNames}
    assert set(HF_OPTIM.values()) | {"adamw_torch_fused"} <= optims
    bnb = set(inspect.signature(transformers.BitsAndBytesConfig.__init__).parameters)
    words = {o.value for o in FSDPOption}
    for s in SETTINGS:
        lines = trainer_options(s)
        hf = _call(lines[0], "TrainingArguments")
        assert set(hf) <= fields, set(hf) - fields
        assert hf["optim"] in optims
        assert set(str(hf.get("fsdp", "")).split()) <= words
        for line in lines:
            if line.startswith("BitsAndBytesConfig("):
                assert set(_call(line, "BitsAndBytesConfig")) <= bnb


def test_plan_train_prints_the_trainer_spelling() -> None:
    # micro-batch 16: Liger's fused cross-entropy (review 19) made b4 fit without a smaller one
    argv = ["plan", "qwen2.5-7b", "--train", "qlora", "--micro-batch", "16", "--seq", "4096",
            "--gpu", "rtx-4090"]  # fmt: skip
    res = CliRunner().invoke(main, argv, env=ENV)
    assert res.exit_code == 0, res.output
    plan = res.stdout.split("Alternative 1")[0]
    assert "micro-batch 8 x 2 accumulation steps, effective batch 16 kept" in plan
    assert ("  set: TrainingArguments(per_device_train_batch_size=8, "
            "gradient_accumulation_steps=2, gradient_checkpointing=True") in plan  # fmt: skip
    assert "use_liger_kernel=True" in plan
    assert '  set: BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", ' in plan
    assert "  set: LoraConfig(r=16)" in plan
    doc = json.loads(CliRunner().invoke(main, [*argv, "--json"], env=ENV).stdout)
    first = doc["plans"][0]
    assert first["trainer_options"] == list(trainer_options(TrainingSettings(**{
        **first["settings"], "lora_targets": None,
    })))  # fmt: skip


def test_plan_train_deepspeed_names_match_its_config_file() -> None:
    """The ``set:`` line's DeepSpeed keys and batch are those of the ``ds_config.json`` the
    plan prints (the same ``--emit deepspeed`` config)."""
    argv = ["plan", "llama-3.1-8b", "--train", "full", "--gpu", "8xh100-sxm", "--micro-batch",
            "6", "--seq", "8192", "--json"]  # fmt: skip
    res = CliRunner().invoke(main, argv, env=ENV)
    assert res.exit_code == 0, res.output
    p = json.loads(res.stdout)["plans"][0]
    cfg = json.loads(p["config"])
    hf = _call(p["trainer_options"][0], "TrainingArguments")
    assert hf["deepspeed"] == p["config_file"] == "ds_config.json"
    assert hf["per_device_train_batch_size"] == cfg["train_micro_batch_size_per_gpu"]
    assert hf["gradient_accumulation_steps"] == cfg["gradient_accumulation_steps"]
    zero = next(x for x in p["trainer_options"] if x.startswith('"zero_optimization"'))
    assert f'"stage": {cfg["zero_optimization"]["stage"]}' in zero


def test_estimate_train_suggestions_carry_the_trainer_spelling() -> None:
    argv = ["estimate", "qwen2.5-7b", "--train", "full", "--micro-batch", "4", "--gpu",
            "rtx-4090"]  # fmt: skip
    res = CliRunner().invoke(main, argv, env=ENV)
    assert res.exit_code in (0, 3), res.output
    assert "     set: TrainingArguments(per_device_train_batch_size=" in res.stdout
    doc = json.loads(CliRunner().invoke(main, [*argv, "--json"], env=ENV).stdout)
    assert all(s["trainer_options"][0].startswith("TrainingArguments(")
               for s in doc["suggestions"])  # fmt: skip
