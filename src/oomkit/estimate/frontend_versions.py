"""``--runtime-version`` for the llama.cpp front-ends that number their own releases.

KoboldCpp (LostRuins/koboldcpp: releases ``v1.60`` ...) and LM Studio (its llama.cpp runtime
engines are versioned by LM Studio, e.g. ``v1.18.0``, in the runtime manager) vendor llama.cpp
without a published release -> llama.cpp build table that oomkit could cite, so their own
version numbers are refused in one line naming the front-end, asking for the llama.cpp build
(``bNNNN``) or the date the release was built from; a build or a date passes through to the
llama.cpp generation tables (:func:`oomkit.estimate.generations.parse_runtime_version`).

llama-cpp-python does publish one (``vendor/llama.cpp`` per release:
:mod:`oomkit.estimate.llamacpp_python_versions`); a flag its vendored llama.cpp lacks is refused
naming the binding's release and its ``Llama(...)`` keyword
(:func:`binding_flag_eras`).
"""

from __future__ import annotations

import re

from oomkit.errors import InvalidSettingError
from oomkit.spec.settings import InferenceSettings

__all__ = ["FRONTENDS", "binding_flag_eras", "check_frontend_version"]

#: runtime name -> how the front-end is called in a message
FRONTENDS = {"koboldcpp": "KoboldCpp", "lmstudio": "LM Studio"}

_RELEASE = re.compile(r"^v?\d+(\.\d+)+([a-z0-9.+-]*)$")
_DATE = re.compile(r"^\d{4}-\d{1,2}(-\d{1,2})?$")

#: oomkit setting -> llama-cpp-python's ``Llama(...)`` keyword (llama_cpp/llama.py)
_BINDING_KEYWORDS = {
    "flash_attn": "flash_attn",
    "cache_type_k": "type_k",
    "cache_type_v": "type_v",
    "ubatch": "n_ubatch",
}


def check_frontend_version(runtime: str | None, version: str | None) -> None:
    """Refuse a KoboldCpp / LM Studio release number as ``--runtime-version``.

    >>> check_frontend_version("koboldcpp", "b2500")
    >>> try:
    ...     check_frontend_version("koboldcpp", "1.60")
    ... except InvalidSettingError as err:
    ...     str(err).split(":")[0]
    'KoboldCpp 1.60'

    Raises:
        InvalidSettingError: a version-shaped value (``1.60``, ``v0.3.5``) for a front-end.
    """
    name = FRONTENDS.get((runtime or "").strip().lower())
    value = (version or "").strip().lower()
    if name is None or not value or _DATE.match(value) or not _RELEASE.match(value):
        return
    raise InvalidSettingError(
        f"{name} {version.strip() if version else ''}: oomkit has no cited table of the "
        f"llama.cpp each {name} release vendors; give --runtime-version as the llama.cpp build "
        "(bNNNN) or the date that release was built from (2024-06-15)",
        setting="runtime_version",
        value=version,
    )


def binding_flag_eras(settings: InferenceSettings, asked: str | None) -> None:
    """:func:`oomkit.estimate.flag_eras.check_flag_eras` for ``-r llama-cpp-python``, its
    refusal naming the binding's release ``asked`` and its ``Llama(...)`` keyword
    (``settings.runtime_version`` is already the vendored llama.cpp's date).

    Raises:
        InvalidSettingError: the vendored llama.cpp lacks the setting.
    """
    from oomkit.estimate.flag_eras import check_flag_eras, flag_era
    from oomkit.estimate.llamacpp_python import binding_version
    from oomkit.estimate.llamacpp_python_versions import vendored_llamacpp

    try:
        check_flag_eras(settings, "llama.cpp")
    except InvalidSettingError as err:
        release = binding_version(asked)
        found = vendored_llamacpp(release) if release is not None else None
        if found is None or err.setting is None:
            raise
        keys = {
            "flash_attn": "flash_attn",
            "ubatch": "ubatch",
            "cache_type_v": "quantized_v",
            "override_tensor": "override_tensor",
        }
        key = keys.get(err.setting, "cache_type")
        row = flag_era("llama.cpp", key)
        keyword = _BINDING_KEYWORDS.get(err.setting, err.setting)
        raise InvalidSettingError(
            f"llama-cpp-python {asked} has no {keyword}: it vendors llama.cpp {found[0]} of "
            f"{found[1].isoformat()}, and llama.cpp got {row.flag} in {row.source} "
            f"({row.first()}); drop {keyword} or give a later --runtime-version",
            setting=err.setting,
            value=err.value,
        ) from None
