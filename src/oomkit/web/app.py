"""The FastAPI app of ``oomkit serve``: JSON API + the static page (``web/static``).

Every endpoint answers with the CLI's JSON (``schema_version``): ``/api/estimate`` and
``/api/plan`` run the CLI's own command (:mod:`oomkit.web.bridge`), ``/api/doctor`` calls
:func:`oomkit.diagnose_text` and returns ``Diagnosis.to_dict()`` as ``oomkit doctor --json``
does, ``/api/models`` and ``/api/gpus`` are ``oomkit models --json`` and
``oomkit gpus --catalog --json`` (plus the live GPUs NVML or nvidia-smi sees), and
``/api/gpu-name`` reads a name as ``--gpu`` does (the page's ``gpu=`` link parameter).

Bad input is a 4xx with a one-line ``detail`` (never a 500): pydantic's errors are joined
into one line, oomkit's errors keep their message, bodies above :data:`MAX_BODY_BYTES` are
refused with 413 before they are read.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oomkit import __version__, errors
from oomkit.web.bridge import (
    CliRejected,
    check_model_ref,
    cli_argv,
    option_keys,
    run_cli_json,
    with_field_names,
)
from oomkit.web.schemas import DoctorBody, EstimateBody, PlanBody, cli_body_model

if TYPE_CHECKING:
    from oomkit.hardware.live import GpuBackend, GpuStatus

__all__ = ["MAX_BODY_BYTES", "create_app"]

#: the largest request body (a pasted log); larger ones get 413 before they are read
MAX_BODY_BYTES = 2 * 1024 * 1024
STATIC_DIR = Path(__file__).with_name("static")
_LIVE_TTL_S = 5.0

#: oomkit error -> HTTP status (subclasses first)
_STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (errors.OfflineError, 503),
    (errors.GatedRepoError, 403),
    (errors.SourceNotFoundError, 404),
    (errors.UnknownNameError, 404),
    (errors.InvalidSettingError, 422),
    (errors.FormatError, 422),
    (errors.UnsupportedModelError, 422),
    (errors.HardwareError, 503),
    (errors.OomkitError, 400),
)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": _one_line(detail)}, status_code=status)


class _TooLarge(Exception):
    pass


class BodyLimit:
    """ASGI middleware: 413 for a body over ``limit`` bytes (declared or streamed)."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    def _response(self, scope: Scope) -> JSONResponse:
        big = f"Request body is larger than {self.limit // (1024 * 1024)} MiB"
        if str(scope.get("path", "")).rstrip("/").endswith("/api/doctor"):
            return _error(413, f"{big}: paste only the part of the log around the error.")
        # an estimate or plan request is a few options: no log advice there
        return _error(413, f"{big}: send the options as a small JSON object.")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = self.limit + 1
                if declared > self.limit:
                    await self._response(scope)(scope, receive, send)
                    return
        seen = 0
        too_large = False
        started = False

        async def limited_receive() -> Message:
            nonlocal seen, too_large
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    too_large = True
                    raise _TooLarge
            return message

        async def tracked_send(message: Message) -> None:
            # once the body overflowed, the app's own answer (FastAPI turns the exception
            # into "error parsing the body") is replaced by the 413
            nonlocal started
            if too_large:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        with contextlib.suppress(_TooLarge):
            await self.app(scope, limited_receive, tracked_send)
        if too_large and not started:
            await self._response(scope)(scope, receive, send)


#: the first entries of a FastAPI error location name where the value came from, not the field
_LOC_PREFIXES = frozenset({"body", "query", "path", "header", "cookie"})


def _validation_detail(exc: RequestValidationError | ValidationError) -> str:
    parts: list[str] = []
    seen: set[str] = set()
    for err in exc.errors():
        # a union field (int or "32k") reports one error per branch: keep the first
        # (the field itself: "body"/"query" are the route's prefixes, "constrained-int" a union
        # branch; an unreadable JSON body's location is its character offset, not a field)
        names = [p for p in err.get("loc", ()) if p not in _LOC_PREFIXES and isinstance(p, str)]
        loc = names[0] if names else "body"
        if loc in seen:
            continue
        seen.add(loc)
        msg = err.get("msg", "invalid")
        if err.get("type") == "json_invalid":
            msg = "the body is not valid JSON"
        elif err.get("type") == "extra_forbidden":
            msg = "unknown option (keys are the CLI's long options in snake_case)"
        got = err.get("input")
        shown = (
            f" (got {json.dumps(got)[:40]})"
            if isinstance(got, (int, float, str, bool)) and err.get("type") != "missing"
            else ""
        )
        parts.append(f"{loc}: {msg}{shown}")
    return "Invalid request: " + "; ".join(parts[:5])


class _LiveGpus:
    """``detect_gpus()`` at most every few seconds (nvidia-smi is slow); () without a GPU."""

    def __init__(self, backend: Callable[[], GpuBackend] | None) -> None:
        self._backend = backend
        self._lock = threading.Lock()
        self._at = -1e9
        self._value: tuple[list[dict[str, Any]], str | None] = ([], None)

    def get(self) -> tuple[list[dict[str, Any]], str | None]:
        with self._lock:
            if time.monotonic() - self._at > _LIVE_TTL_S:
                from oomkit.hardware.live import detect_gpus

                try:
                    source = self._backend() if self._backend is not None else None
                    self._value = ([_live_dict(g) for g in detect_gpus(source)], None)
                except errors.OomkitError as e:
                    self._value = ([], _one_line(str(e).splitlines()[0])[:300])
                self._at = time.monotonic()
            return self._value


def _live_dict(gpu: GpuStatus) -> dict[str, Any]:
    """``oomkit gpus --json``'s row plus ``catalog_key``: the catalog GPU of that name, if any."""
    from oomkit.hardware.catalog import find_gpu

    try:
        key: str | None = find_gpu(gpu.name).key
    except errors.UnknownNameError:
        key = None
    return {**gpu.to_dict(), "catalog_key": key}


def create_app(
    *, hub: bool = False, gpu_backend: Callable[[], GpuBackend] | None = None
) -> FastAPI:
    """The app.

    Args:
        hub: allow Hugging Face Hub ids (network) besides catalog names.
        gpu_backend: where ``/api/gpus`` reads the live GPUs from (as
            :func:`oomkit.cli.gpus.use_backend`); ``None``: NVML, nvidia-smi, rocm-smi, Apple.
    """
    app = FastAPI(
        title="oomkit",
        version=__version__,
        description="Will it fit? The oomkit CLI's estimates, plans and OOM doctor as JSON. "
        "Bodies use the CLI's long options in snake_case; responses are the CLI's --json.",
    )
    app.add_middleware(BodyLimit)
    live = _LiveGpus(gpu_backend)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, _validation_detail(exc))

    @app.exception_handler(errors.OomkitError)
    async def _oomkit(_: Request, exc: errors.OomkitError) -> JSONResponse:
        status = next(code for cls, code in _STATUS if isinstance(exc, cls))
        return _error(status, str(exc))

    @app.exception_handler(CliRejected)
    async def _rejected(_: Request, exc: CliRejected) -> JSONResponse:
        return _error(422, str(exc).removeprefix("Error: "))

    @app.exception_handler(ValueError)
    async def _value(_: Request, exc: ValueError) -> JSONResponse:
        return _error(400, str(exc))

    @app.exception_handler(Exception)
    async def _bug(_: Request, exc: Exception) -> JSONResponse:
        # not bad input: a bug. Still one JSON line, never a traceback in the response.
        return _error(
            500, f"Internal error ({type(exc).__name__}: {exc}); please report it with the input."
        )

    def _cli(command: str, body: EstimateBody | PlanBody, response: Response) -> dict[str, Any]:
        model = check_model_ref(body.model, hub=hub)
        options = body.model_dump(exclude={"model"})
        keys = option_keys(command)
        for key, value in options.items():  # read like MODEL: no server paths (any alias)
            if isinstance(value, str) and key in keys and keys[key][0].name == "draft_model":
                options[key] = check_model_ref(value, hub=hub)
        if "runtime" not in body.model_fields_set:
            # the CLI's own default: passing it would read as an explicit --runtime, which
            # `--train` refuses (an inference option)
            options.pop("runtime", None)
        if isinstance(body, PlanBody) and isinstance(options.get("gpu"), str):
            options["gpu"] = [options["gpu"]]
        for key, value in options.items():  # a size as a number of bytes: the CLI wants a unit
            size = key in keys and keys[key][0].type.name == "SIZE"
            if size and isinstance(value, int) and not isinstance(value, bool):
                options[key] = f"{value}B"
        if not hub:
            options["offline"] = True
        try:
            _code, doc, warnings = run_cli_json(
                cli_argv(command, [model], options), gpu_backend=gpu_backend
            )
        except (errors.OomkitError, CliRejected, ValueError) as e:
            # the CLI's message names its flags (--vram 0: ...); the request has fields
            raise with_field_names(e, command) from e
        if warnings:  # the body stays exactly the CLI's JSON; its stderr warnings ride along
            response.headers["X-Oomkit-Warnings"] = json.dumps(warnings)
        return doc

    def estimate(body: EstimateBody, response: Response) -> dict[str, Any]:
        """Memory per device for one configuration; ``suggestions`` when it does not fit.

        Warnings the CLI prints on stderr come as a JSON list in ``X-Oomkit-Warnings``.
        """
        return _cli("estimate", body, response)

    def plan(body: PlanBody, response: Response) -> dict[str, Any]:
        """The best configurations that fit (``runtime: "any"`` compares runtimes)."""
        return _cli("plan", body, response)

    # the bodies take every option the CLI commands have now (see cli_body_model)
    estimate.__annotations__["body"] = cli_body_model("EstimateRequest", EstimateBody, "estimate")
    plan.__annotations__["body"] = cli_body_model("PlanRequest", PlanBody, "plan")
    app.post("/api/estimate", summary="oomkit estimate --json")(estimate)
    app.post("/api/plan", summary="oomkit plan --json")(plan)

    @app.post(
        "/api/doctor",
        summary="oomkit doctor --json",
        openapi_extra={
            "requestBody": {
                "content": {
                    "text/plain": {"schema": {"type": "string"}},
                    "application/json": {"schema": DoctorBody.model_json_schema()},
                },
                "required": True,
            }
        },
    )
    async def doctor(request: Request) -> dict[str, Any]:
        """Diagnose a pasted log: ``text/plain``, or ``{"log": ..., "model": ...}``."""
        raw = await request.body()
        if not raw.strip():
            raise errors.InvalidSettingError(
                "Invalid request: the body is empty; paste the log.", setting="log"
            )
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype == "application/json":
            try:
                body = DoctorBody.model_validate_json(raw)
            except ValidationError as e:
                raise RequestValidationError(e.errors()) from e
            _check_text(body.log)
        else:
            body = DoctorBody(log=_text_log(raw))
        # parsing a 2 MiB log takes a while: off the event loop, like the sync endpoints
        try:
            return await run_in_threadpool(_diagnose, body, hub=hub)
        except (errors.OomkitError, ValueError) as e:  # as /api/estimate: fields, not flags
            raise with_field_names(e, "doctor", DoctorBody.model_fields) from e

    @app.get("/api/models", summary="oomkit models --json")
    def models(
        q: str | None = Query(None, max_length=200), limit: int | None = Query(None, ge=1)
    ) -> dict[str, Any]:
        """Search the embedded model catalog (empty ``q``: every model)."""
        from oomkit.catalog.models import search_models

        hits = search_models(q or None)
        return {"schema_version": 1, "models": [m.to_dict() for m in hits[:limit]]}

    @app.get("/api/gpus", summary="oomkit gpus --catalog --json (+ live GPUs)")
    def gpus(
        q: str | None = Query(None, max_length=200), limit: int | None = Query(None, ge=1)
    ) -> dict[str, Any]:
        """Search the GPU catalog; ``live`` lists this machine's GPUs when a driver answers."""
        from oomkit.hardware.catalog import search_gpus

        rows = search_gpus(q or None)[:limit]
        live_gpus, live_error = live.get()
        return {
            "schema_version": 1,
            "gpus": [r.to_dict() for r in rows],
            "live": live_gpus,
            "live_error": live_error,
            # what the estimate budgets against per OS (the page's labels): the CUDA total on
            # Linux, the NVML total under WDDM (hardware.catalog.runtime_capacity_bytes)
            "capacity_bytes_by_os": {r.key: _capacities(r) for r in rows},
        }

    @app.get("/api/gpu-name", summary="the catalog GPUs a --gpu value names")
    def gpu_name(name: str = Query(..., min_length=1, max_length=200)) -> dict[str, Any]:
        """``gpus``: the catalog keys ``--gpu NAME`` reads (``h100`` -> ``["h100-sxm"]``,
        ``2x4090`` -> two ``rtx-4090``), so a link's ``gpu=`` takes what the CLI takes; an unknown
        name is the CLI's one-line error."""
        from oomkit.cli.params import parse_gpu_list

        return {"schema_version": 1, "name": name, "gpus": [g.key for g in parse_gpu_list(name)]}

    @app.get("/api/context", summary="the longest context a catalog model takes")
    def context(model: str = Query(..., min_length=1, max_length=200)) -> dict[str, Any]:
        """``max_context``: the model's longest context (None when oomkit cannot tell: not a
        catalog name), bounding the page's context slider."""
        return {"schema_version": 1, "model": model, "max_context": _max_context(model)}

    @app.get("/api/health", include_in_schema=False)
    def health() -> dict[str, Any]:
        return {"ok": True, "version": __version__, "hub": hub}

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    return app


def _capacities(gpu: Any) -> dict[str, int]:
    """The capacity the estimate gives ``gpu`` for each OS the page offers ("" = not said)."""
    from oomkit.hardware.catalog import runtime_capacity_bytes

    return {o: runtime_capacity_bytes(gpu, os=o or None) for o in _PAGE_OS}


#: the page's OS choices ("" = not said: the Linux figure)
_PAGE_OS = ("", "linux", "windows", "wsl", "macos")


def _max_context(model: str) -> int | None:
    """A catalog model's longest context: ``max_position_embeddings`` (times a rope_scaling
    factor vLLM applies: estimate.checks.vllm_max_model_len), never past a learned absolute
    position table (GPT-2 ``n_positions``, OPT ``max_position_embeddings``), which has no row
    for a later position; None for a name the catalog lacks."""
    from oomkit.catalog.models import find_model
    from oomkit.estimate.checks import vllm_max_model_len

    try:
        spec = find_model(model).spec()
    except errors.OomkitError:
        return None
    longest = vllm_max_model_len(spec) or spec.max_position_embeddings
    if spec.position_embedding_rows and spec.max_position_embeddings:
        longest = min(longest or spec.max_position_embeddings, spec.max_position_embeddings)
    return longest


def _not_text(e: ValueError) -> errors.InvalidSettingError:
    return errors.InvalidSettingError(
        f"'log' is not a text log: {e}. Paste the log itself (the program's output), not a "
        "binary file.",
        setting="log",
    )


def _text_log(raw: bytes) -> str:
    """A ``text/plain`` body read as ``oomkit doctor LOG`` reads a file (UTF-8, or UTF-16 with
    or without a byte-order mark).

    Raises:
        InvalidSettingError: it is binary (an executable, an archive), as the CLI refuses it.
    """
    from oomkit.cli.doctor import NotTextError, decode_log

    try:
        return decode_log(raw)
    except NotTextError as e:
        raise _not_text(e) from None


def _check_text(log: str) -> None:
    """The CLI's binary check on a JSON ``log``: one byte a character, so the control
    characters (JSON escapes them, ``\\u0000``) count as the bytes of a file do."""
    from oomkit.cli.doctor import SNIFF_BYTES, NotTextError, decode_log

    try:
        decode_log(log[:SNIFF_BYTES].encode("latin-1", errors="replace"))
    except NotTextError as e:
        raise _not_text(e) from None


def _diagnose(body: DoctorBody, *, hub: bool) -> dict[str, Any]:
    """``oomkit doctor --json`` for the body (same keywords as the CLI's ``_user_facts``)."""
    from oomkit.diagnose.doctor import diagnose_text
    from oomkit.spec.settings import InferenceSettings

    facts: dict[str, Any] = {}
    if body.runtime is not None:
        from oomkit.estimate.registry import normalize_runtime

        facts["runtime"] = normalize_runtime(body.runtime)
    if body.model is not None:
        from oomkit.api import load_model

        facts["model"] = load_model(check_model_ref(body.model, hub=hub), offline=not hub)
    ctx: int | None = None
    if body.ctx is not None:
        from oomkit.units import parse_count

        ctx = body.ctx if isinstance(body.ctx, int) else parse_count(body.ctx)
    if body.quant is not None:  # an unknown quant is refused, as `oomkit doctor -q` does
        from oomkit.cli.doctor import check_user_quant

        check_user_quant(body.quant, facts.get("runtime"))
    if body.quant is not None or ctx is not None:
        facts["settings"] = InferenceSettings(
            runtime=facts.get("runtime", "llama.cpp"), quant=body.quant, ctx=ctx
        )
    if body.gpu is not None or body.vram is not None:
        from oomkit.cli.params import parse_gpu_list
        from oomkit.hardware.targets import hardware_for
        from oomkit.units import parse_size

        vram = body.vram
        if isinstance(vram, str):
            try:
                vram = parse_size(vram)
            except ValueError as e:
                raise ValueError(f"vram: {e}") from None
        gpus = parse_gpu_list(body.gpu) if body.gpu is not None else ()
        facts["hardware"] = hardware_for(gpus, vram_bytes=vram)
    answers: dict[str, str] = {}
    if body.answers:
        from oomkit.diagnose.questions import check_answers

        answers = check_answers(body.answers, flag="answers")
        said = answers.get("when")
        if said is not None and body.when is not None and said != body.when:
            raise errors.InvalidSettingError(
                f"answers: when={said} disagrees with when={body.when}; give one",
                setting="answers",
            )
    d = diagnose_text(body.log, **facts, when=body.when, answers=answers)
    if body.quant is not None and body.runtime is None:  # as `oomkit doctor -q` without -r
        from oomkit.cli.doctor import check_quant_for_log

        check_quant_for_log(body.quant, d)
    return dict(d.to_dict())
