"""vLLM's and SGLang's speculative-decoding flags, read into ``InferenceSettings``.

The spellings, as each runtime's argument parser has them:

* vLLM ``vllm/engine/arg_utils.py`` ``EngineArgs.add_cli_args``: ``--speculative-config`` (a
  JSON object: ``method``, ``model``, ``num_speculative_tokens``, ... of
  vllm/config/speculative.py ``SpeculativeConfig``); releases before 0.8 had
  ``--speculative-model`` (``"[ngram]"`` for n-gram lookup) and ``--num-speculative-tokens``;
* SGLang ``python/sglang/srt/server_args.py`` ``ServerArgs.add_cli_args``:
  ``--speculative-algorithm`` (EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM),
  ``--speculative-draft-model-path`` (argparse also takes the prefixes ``--speculative-algo`` and
  ``--speculative-draft``, as pasted commands use them), ``--speculative-num-steps``,
  ``--speculative-eagle-topk``, ``--speculative-num-draft-tokens``.

The estimate is :mod:`oomkit.estimate.speculative`. llama.cpp's draft model (``-md``) has its
own options (:mod:`oomkit.cli.draft_options`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from oomkit.errors import InvalidSettingError

__all__ = ["SPECULATIVE_PARAMS", "speculative_options", "speculative_settings"]

F = TypeVar("F", bound=Callable[..., Any])

#: the click parameter names :func:`speculative_options` adds
SPECULATIVE_PARAMS = (
    "speculative_config",
    "speculative_model",
    "num_speculative_tokens",
    "speculative_algorithm",
    "speculative_draft_model_path",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    # llama-server's own (common/arg.cpp): --spec-type draft-mtp, --spec-draft-n-max N
    "spec_type",
    "spec_draft_n_max",
)
#: SGLang's names among :data:`SPECULATIVE_PARAMS`
_SGLANG_PARAMS = SPECULATIVE_PARAMS[3:8]
#: llama-server ``--spec-type`` values oomkit prices -> ``speculative_method`` (None: off)
_LLAMACPP_SPEC_TYPES: dict[str, str | None] = {"none": None, "draft-mtp": "mtp"}

#: vLLM ``SpeculativeMethod`` values -> the method oomkit prices; ``MTPModelTypes`` (the
#: ``*_mtp`` names) are MTP, as ``SpeculativeConfig.__post_init__`` folds them into "mtp"
_VLLM_METHODS = {
    "mtp": "mtp",
    "eagle": "eagle",
    "eagle3": "eagle3",
    "draft_model": "draft_model",
    "ngram": "ngram",
    "ngram_gpu": "ngram",
}
#: vLLM methods oomkit does not price (refused by name)
_VLLM_UNMODELLED = ("medusa", "mlp_speculator", "suffix", "custom_class", "dflash", "dspark")


def speculative_options(f: F) -> F:
    """Add vLLM's and SGLang's speculative-decoding options to a command."""
    import click

    options = [
        click.option(
            "--speculative-config",
            "speculative_config",
            metavar="JSON",
            help='vLLM speculative decoding, e.g. \'{"method": "mtp", '
            '"num_speculative_tokens": 2}\' (methods: mtp, eagle, eagle3, draft_model, ngram; '
            "other keys go into the printed command as given)",
        ),
        click.option(
            "--speculative-model",
            "speculative_model",
            help="vLLM < 0.8: the draft model ('[ngram]': n-gram lookup)",
        ),
        click.option(
            "--num-speculative-tokens",
            "num_speculative_tokens",
            type=int,
            help="vLLM: speculative tokens per step",
        ),
        click.option(
            "--speculative-algorithm",
            "--speculative-algo",
            "speculative_algorithm",
            help="SGLang: EAGLE, EAGLE3, NEXTN, STANDALONE or NGRAM",
        ),
        click.option(
            "--speculative-draft-model-path",
            "--speculative-draft-model",
            "--speculative-draft",
            "speculative_draft_model_path",
            help="SGLang: the draft model (catalog name, path or repo id)",
        ),
        click.option("--speculative-num-steps", type=int, help="SGLang: draft steps (default 3)"),
        click.option("--speculative-eagle-topk", type=int, help="SGLang: EAGLE top-k"),
        click.option(
            "--speculative-num-draft-tokens", type=int, help="SGLang: draft tokens verified"
        ),
        click.option(
            "--spec-type",
            "spec_type",
            metavar="TYPE",
            help="llama-server: draft-mtp (the model's own MTP head: Qwen3.5/3.6/3.8 GGUFs with "
            "nextn layers) or none",
        ),
        click.option(
            "--spec-draft-n-max",
            "spec_draft_n_max",
            type=int,
            metavar="N",
            help="llama-server: tokens drafted per step with --spec-type draft-mtp (default 3)",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _positive(flag: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidSettingError(
            f"{flag} must be a whole number of at least 1, got {value!r}"[:200],
            setting=flag,
            value=value,
        )
    return value


def _vllm_method(method: object, model: str | None) -> str:
    """The method of a vLLM speculative config; with none given, vLLM's guess from the
    model's name (``SpeculativeConfig.__post_init__``: "eagle3"/"eagle" in the name, "[ngram]",
    else a draft model)."""
    if method is None:
        if model is None:
            raise InvalidSettingError(
                "--speculative-config needs 'method' or 'model' (vLLM SpeculativeConfig)",
                setting="--speculative-config",
            )
        low = model.lower()
        if low in ("[ngram]", "ngram"):
            return "ngram"
        if "eagle3" in low:
            return "eagle3"
        return "eagle" if "eagle" in low else "draft_model"
    if not isinstance(method, str):
        raise InvalidSettingError(
            f"--speculative-config 'method' must be a string, got {method!r}"[:200],
            setting="--speculative-config",
            value=method,
        )
    name = method.strip().lower()
    if name in _VLLM_METHODS:
        return _VLLM_METHODS[name]
    if name.endswith("_mtp"):
        return "mtp"
    if name in _VLLM_UNMODELLED:
        raise InvalidSettingError(
            f"--speculative-config method '{method}' is not modelled by oomkit (priced: "
            f"{', '.join(sorted(set(_VLLM_METHODS)))}); README: Limitations",
            setting="--speculative-config",
            value=method,
        )
    raise InvalidSettingError(
        f"--speculative-config method '{method}' is not a vLLM speculative method (known: "
        f"{', '.join(sorted(_VLLM_METHODS))}, the *_mtp names)",
        setting="--speculative-config",
        value=method,
    )


def _vllm(values: dict[str, Any], tp: int | None) -> dict[str, Any]:
    text = values.get("speculative_config")
    model = values.get("speculative_model")
    k = _positive("--num-speculative-tokens", values.get("num_speculative_tokens"))
    config: dict[str, Any] = {}
    if text is not None:
        try:
            parsed = json.loads(text)
        except RecursionError:
            raise InvalidSettingError(
                "--speculative-config is nested too deeply to be a speculative config",
                setting="--speculative-config",
            ) from None
        except json.JSONDecodeError as e:
            raise InvalidSettingError(
                f"--speculative-config is not valid JSON ({e.msg} at character {e.pos}): "
                'give an object such as \'{"method": "mtp", "num_speculative_tokens": 2}\'',
                setting="--speculative-config",
                value=text[:100],
            ) from None
        if not isinstance(parsed, dict):
            raise InvalidSettingError(
                '--speculative-config must be a JSON object, e.g. \'{"method": "ngram", '
                '"num_speculative_tokens": 4}\'',
                setting="--speculative-config",
                value=text[:100],
            )
        config = parsed
    if not config and model is None:
        if k is not None:
            raise InvalidSettingError(
                "--num-speculative-tokens needs a speculative method (--speculative-config or "
                "--speculative-model)",
                setting="--num-speculative-tokens",
            )
        return {}
    cfg_model = config.get("model")
    if cfg_model is not None and not isinstance(cfg_model, str):
        raise InvalidSettingError(
            f"--speculative-config 'model' must be a string, got {cfg_model!r}"[:200],
            setting="--speculative-config",
        )
    model = cfg_model or model
    k = _positive(
        "--speculative-config num_speculative_tokens", config.get("num_speculative_tokens", k)
    )
    dtp = config.get("draft_tensor_parallel_size")
    if dtp is not None and dtp != (tp or 1):
        raise InvalidSettingError(
            f"--speculative-config draft_tensor_parallel_size {dtp!r} differs from --tp "
            f"{tp or 1}: a draft with its own TP is not modelled by oomkit (it runs with the "
            "target's TP by default); drop the key",
            setting="--speculative-config",
            value=dtp,
        )
    method = _vllm_method(config.get("method"), model)
    if model is not None and model.strip().lower() == "[ngram]":
        model = None
    # every other key, and the method as spelled when oomkit prices it under another name
    # ("ngram_gpu", "deepseek_mtp"), goes into the printed command unchanged
    # (oomkit.estimate.speculative_keys)
    extra = {
        key: value
        for key, value in config.items()
        if key not in ("method", "model", "num_speculative_tokens")
    }
    spelled = str(config.get("method") or "").strip().lower()
    if spelled and spelled != method:
        extra = {"method": spelled, **extra}
    return {
        "speculative_method": method,
        "speculative_model": model,
        "num_speculative_tokens": k,
        "speculative_extra": json.dumps(extra, separators=(",", ":")) if extra else None,
    }


def _sglang(values: dict[str, Any]) -> dict[str, Any]:
    from oomkit.estimate.speculative import SGLANG_ALGORITHMS

    algo = values.get("speculative_algorithm")
    path = values.get("speculative_draft_model_path")
    steps = _positive("--speculative-num-steps", values.get("speculative_num_steps"))
    topk = _positive("--speculative-eagle-topk", values.get("speculative_eagle_topk"))
    tokens = _positive("--speculative-num-draft-tokens", values.get("speculative_num_draft_tokens"))
    if algo is None:
        given = next(
            (
                flag
                for flag, v in (
                    ("--speculative-draft-model-path", path),
                    ("--speculative-num-steps", steps),
                    ("--speculative-eagle-topk", topk),
                    ("--speculative-num-draft-tokens", tokens),
                )
                if v is not None
            ),
            None,
        )
        if given is not None:
            raise InvalidSettingError(
                f"{given} needs --speculative-algorithm (SGLang): name it or drop the flag",
                setting=given,
            )
        return {}
    key = algo.strip().upper()
    if key not in SGLANG_ALGORITHMS:
        raise InvalidSettingError(
            f"--speculative-algorithm '{algo}' is not one of SGLang's "
            f"{', '.join(SGLANG_ALGORITHMS)}",
            setting="--speculative-algorithm",
            value=algo,
        )
    return {
        "speculative_method": SGLANG_ALGORITHMS[key],
        "speculative_model": path,
        "num_speculative_tokens": steps,
        "speculative_eagle_topk": topk,
        "speculative_num_draft_tokens": tokens,
    }


def speculative_settings(runtime: str, values: dict[str, Any]) -> dict[str, Any]:
    """The ``InferenceSettings`` speculative fields for the options in ``values`` (click names;
    ``runtime`` canonical). A runtime's flags with another runtime are refused.

    Raises:
        InvalidSettingError: bad JSON, an unknown or unmodelled method, a count below 1, a
            flag of the other runtime, or a count without its method (named by its flag).
    """
    vllm_given = next(
        (
            flag
            for flag, name in (
                ("--speculative-config", "speculative_config"),
                ("--speculative-model", "speculative_model"),
                ("--num-speculative-tokens", "num_speculative_tokens"),
            )
            if values.get(name) is not None
        ),
        None,
    )
    sglang_given = next(
        ("--" + name.replace("_", "-") for name in _SGLANG_PARAMS if values.get(name) is not None),
        None,
    )
    llama_given = next(
        (
            "--" + name.replace("_", "-")
            for name in ("spec_type", "spec_draft_n_max")
            if values.get(name) is not None
        ),
        None,
    )
    owners = {"vllm": "vLLM", "sglang": "SGLang", "llama.cpp": "llama-server"}
    for flag, owner in ((vllm_given, "vllm"), (sglang_given, "sglang"), (llama_given, "llama.cpp")):
        if flag is not None and runtime != owner:
            other = {
                "llama.cpp": "-md/--draft-model, --spec-type draft-mtp",
                "vllm": "--speculative-config",
                "sglang": "--speculative-algorithm",
            }.get(runtime, "none")
            raise InvalidSettingError(
                f"{flag} is {owners[owner]}'s; --runtime {runtime} does not read it (its "
                f"speculative decoding: {other}): use --runtime {owner} or drop it",
                setting=flag,
            )
    if runtime == "vllm":
        return _vllm(values, values.get("tp"))
    if runtime == "sglang":
        return _sglang(values)
    if runtime == "llama.cpp":
        return _llamacpp(values)
    return {}


def _llamacpp(values: dict[str, Any]) -> dict[str, Any]:
    """llama-server's ``--spec-type`` / ``--spec-draft-n-max`` (common/arg.cpp): draft-mtp is
    priced (:mod:`oomkit.estimate.llamacpp_mtp`); the count's upper bound (-b) is checked there."""
    kind = values.get("spec_type")
    n_max = values.get("spec_draft_n_max")
    if n_max is not None and (isinstance(n_max, bool) or not isinstance(n_max, int) or n_max < 1):
        raise InvalidSettingError(
            f"--spec-draft-n-max must be a whole number of at least 1, got {n_max!r}"[:200],
            setting="--spec-draft-n-max",
            value=n_max,
        )
    if kind is None:
        if n_max is not None:
            raise InvalidSettingError(
                "--spec-draft-n-max needs --spec-type draft-mtp (the drafter it sizes)",
                setting="--spec-draft-n-max",
            )
        return {}
    key = str(kind).strip().lower()
    if key not in _LLAMACPP_SPEC_TYPES:
        raise InvalidSettingError(
            f"--spec-type '{kind}': oomkit prices draft-mtp (and none); for a draft model use "
            "-md/--draft-model",
            setting="--spec-type",
            value=str(kind)[:100],
        )
    method = _LLAMACPP_SPEC_TYPES[key]
    if method is None:
        if n_max is not None:
            raise InvalidSettingError(
                "--spec-draft-n-max with --spec-type none: nothing drafts; drop one",
                setting="--spec-draft-n-max",
            )
        return {}
    return {"speculative_method": method, "num_speculative_tokens": n_max}
