"""Request bodies of the JSON API: the CLI's long options in snake_case, strictly typed.

Field names are the option names of ``oomkit estimate`` / ``oomkit plan`` (``--batch-size``
-> ``batch_size``) so that :func:`oomkit.web.bridge.cli_argv` can hand them to the command
unchanged. Unknown keys are refused (``extra="forbid"``): a typo is a 422, not a silently
ignored option. Numbers are strict (``"8192"`` is not an int); counts and sizes may also be
strings with a unit (``"32k"``, ``"16GiB"``), which the CLI's own parsers read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    create_model,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from oomkit.cli.gpu_choice import BACKEND_CHOICES
from oomkit.units import CONTEXT_FORMS, is_context_max

if TYPE_CHECKING:
    import click

__all__ = ["DoctorBody", "EstimateBody", "PlanBody", "cli_body_model"]

#: CLI options that are not request keys: the API always answers JSON, offline unless --hub
#: (``model``: the ``-m/--model`` option of estimate/plan is the body's own ``model`` field)
NOT_IN_BODY = frozenset({"json", "explain", "offline", "model"})

#: vLLM's --max-num-batched-tokens ceiling here (16M tokens per step)
_MAX_BATCHED = 1 << 24

Name = Annotated[StrictStr, Field(min_length=1, max_length=200)]
Short = Annotated[StrictStr, Field(min_length=1, max_length=64)]
#: a token count (ctx, min_ctx): its form only. The range is the CLI's (one ceiling, one
#: wording for the page and the command line: ``oomkit.validate.MAX_CTX``, checked where the
#: CLI checks it), so an int and the same count with a unit ("20M") get the same answer
Count = (
    StrictInt
    | Annotated[
        StrictStr, Field(min_length=1, max_length=16, pattern=r"^\s*\d+(\.\d+)?\s*[kKmM]?\s*$")
    ]
)


def _context(value: int | str) -> int | str:
    """A ``ctx`` as ``--ctx`` reads it; a string that is neither a count nor ``max`` gets the
    command line's wording (:data:`oomkit.units.CONTEXT_FORMS`), not a union's first error."""
    if isinstance(value, str):
        try:
            is_context_max(value)
        except ValueError:
            raise PydanticCustomError(
                "ctx", "Input should be {forms}", {"forms": CONTEXT_FORMS}
            ) from None
    return value


#: a context (estimate's and plan's ``ctx``): a count, or ``"max"`` as ``--ctx max`` takes it
Context = Annotated[
    StrictInt | Annotated[StrictStr, Field(min_length=1, max_length=16)], AfterValidator(_context)
]
Size = (
    Annotated[StrictInt, Field(ge=0, le=1 << 50)]
    | Annotated[StrictStr, Field(min_length=1, max_length=24)]
)
Small = Annotated[StrictInt, Field(ge=1, le=1 << 20)]


def _backend(value: str) -> str:
    """A ``--backend`` value, as click's case-insensitive choice reads it."""
    key = value.lower()
    if key not in BACKEND_CHOICES:
        raise PydanticCustomError(
            "backend",
            "Input should be one of {choices}",
            {"choices": ", ".join(BACKEND_CHOICES)},
        )
    return key


#: llama.cpp's ggml backend: the values ``oomkit estimate/plan --backend`` take (one list)
Backend = Annotated[
    Short,
    AfterValidator(_backend),
    Field(
        description="llama.cpp's ggml backend (default: the GPU vendor's)",
        json_schema_extra={"enum": list(BACKEND_CHOICES)},
    ),
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class EstimateBody(_Body):
    """``oomkit estimate MODEL [options]`` (``shared/DESIGN.md`` CLI section)."""

    model: Name = Field(description="Catalog name (see /api/models), or a Hub id with --hub")
    runtime: Short = Field("llama.cpp", description="llama.cpp | ollama | vllm | sglang | ...")
    quant: Short | None = Field(None, description="Q4_K_M, Q8_0, bf16, fp8, awq, ...")
    ctx: Context | None = Field(None, description="Context length: 8192, '32k' or 'max'")
    parallel: Small | None = None
    batch_size: Small | None = None
    ubatch: Small | None = None
    kv_dtype: Short | None = None
    cache_type_k: Short | None = None
    cache_type_v: Short | None = None
    kv_unified: StrictBool | None = None
    swa_full: StrictBool | None = None
    flash_attn: StrictBool | None = None
    n_gpu_layers: Annotated[StrictInt, Field(ge=-1, le=1 << 16)] | None = None
    n_cpu_moe: Annotated[StrictInt, Field(ge=0, le=1 << 16)] | None = None
    gpu: Short | None = Field(None, description="rtx-4090, 2xA100-80GB, a,b, or cpu")
    vram: Size | None = Field(None, description="Bytes, or a size with a unit: '24GiB'")
    ram: Size | None = None
    tp: Annotated[StrictInt, Field(ge=1, le=1024)] | None = None
    gpu_memory_utilization: Annotated[StrictFloat | StrictInt, Field(gt=0, le=1)] | None = None
    max_num_seqs: Small | None = None
    max_num_batched_tokens: Annotated[StrictInt, Field(ge=1, le=_MAX_BATCHED)] | None = None
    enforce_eager: StrictBool | None = None
    overhead: Size | None = None
    backend: Backend | None = None


class PlanBody(_Body):
    """``oomkit plan MODEL [options]``."""

    model: Name
    gpu: Short | list[Short] | None = Field(
        None, description="GPU(s): 'rtx-4090', '2x3090' or a list", max_length=16
    )
    vram: Size | None = None
    ram: Size | None = None
    runtime: Short = "llama.cpp"
    ctx: Context | None = None
    min_ctx: Count | None = None
    parallel: Small | None = None
    quant: Short | None = None
    min_quant: Short | None = None
    no_offload: StrictBool = False
    headroom: Size | None = None
    prefer: Literal["quality", "speed", "context"] = "quality"
    backend: Backend | None = None
    tp: Annotated[StrictInt, Field(ge=1, le=1024)] | None = None
    gpu_memory_utilization: Annotated[StrictFloat | StrictInt, Field(gt=0, le=1)] | None = None
    max_num_seqs: Small | None = None


class DoctorBody(_Body):
    """``oomkit doctor``: the log text, and optionally what the user knows."""

    log: Annotated[StrictStr, Field(min_length=1)] = Field(description="The pasted log")
    model: Name | None = None
    runtime: Short | None = None
    quant: Short | None = None
    ctx: Count | None = None
    gpu: Short | None = None
    vram: Size | None = Field(
        default=None, description="Memory per GPU: bytes, or '24GiB' (as --vram)"
    )
    when: Literal["load", "first-step", "later"] | None = Field(
        default=None, description="When it fails, if the log does not show it (as --when)"
    )
    answers: Annotated[dict[Short, Short], Field(max_length=16)] | None = Field(
        default=None,
        description="Answers to the deciding question the finding asks, {id: value} "
        "(as --answer ID=VALUE): the finding's question lists its id and values",
    )


def _annotation(param: click.Option) -> Any:
    """A strict pydantic type for a click option the hand-written bodies do not list."""
    import click

    base: Any
    if param.is_flag:
        return StrictBool | None
    if isinstance(param.type, click.types.IntParamType):
        base = StrictInt
    elif isinstance(param.type, click.types.FloatParamType):
        base = StrictFloat | StrictInt
    elif param.type.name in ("SIZE", "N", "N|max"):  # oomkit.cli.params: a number or text
        base = StrictInt | Short
    else:  # text, choices (click checks them: a wrong one is a one-line 422)
        base = Short
    if param.multiple:
        return Annotated[list[base], Field(max_length=16)] | None
    return base | None


def _optional(field: FieldInfo) -> Any:
    """A hand-written field's type and constraints, as an optional alias field's type."""
    annotation: Any = field.annotation
    if field.metadata:
        annotation = Annotated.__class_getitem__((annotation, *field.metadata))  # type: ignore[attr-defined]
    return annotation | None


def _one_key_an_option(groups: dict[str, tuple[str, ...]]) -> Any:
    """An after-validator: two keys of one option (``ctx`` and ``max_model_len``) are refused,
    as the command line would silently keep the last one."""

    def check(body: _Body) -> _Body:
        for keys in groups.values():
            given = [k for k in keys if k in body.model_fields_set and getattr(body, k) is not None]
            if len(given) > 1:
                raise PydanticCustomError(
                    "one_key_an_option",
                    "{keys} name one option: give one of them",
                    {"keys": " and ".join(f"'{k}'" for k in given)},
                )
        return body

    return model_validator(mode="after")(check)


def cli_body_model(name: str, base: type[_Body], command: str) -> type[_Body]:
    """``base`` plus a field for every other long option of ``oomkit COMMAND``.

    The hand-written fields carry ranges and descriptions; an option the command gains later
    (another runtime knob) is accepted without editing this module, typed from click's type.
    An alias (``max_model_len`` for ``ctx``, as ``--max-model-len``) takes the type and the
    ranges of the field it names; a flag's ``--no-...`` form (``no_flash_attn``) is a boolean.
    """
    from oomkit.web.bridge import option_keys

    extra: dict[str, Any] = {}
    groups: dict[str, tuple[str, ...]] = {}
    for key, (param, flag, negated) in option_keys(command).items():
        canonical = _long(param.opts)[2:].replace("-", "_")
        if canonical in NOT_IN_BODY:
            continue
        groups[canonical] = (*groups.get(canonical, ()), key)
        if key in base.model_fields:
            continue
        if negated:
            annotation: Any = StrictBool | None
            about: str | None = f"{flag}: true is {canonical} false"
        elif key != canonical and canonical in base.model_fields:
            annotation = _optional(base.model_fields[canonical])
            about = f"{flag}: another name of {canonical}"
        else:
            annotation = _annotation(param)
            about = param.help if key == canonical else f"{flag}: another name of {canonical}"
        extra[key] = (annotation, Field(None, description=about))
    if not extra:
        return base
    validators = {"_one_key_an_option": _one_key_an_option(groups)}
    return create_model(name, __base__=base, __validators__=validators, **extra)


def _long(opts: list[str]) -> str:
    return next(o for o in opts if o.startswith("--"))
