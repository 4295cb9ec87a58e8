"""The C library's own memory messages in the user's language, read back as the English msgid.

A process that fails for memory on Linux often says so through the C library:
``strerror(ENOMEM)``, "Cannot allocate memory" (``fork``, ``mmap``, an ``OSError`` without the
``[Errno 12]`` a Python traceback adds), and the shell's report of a child that died of
``SIGKILL``, ``strsignal(SIGKILL)`` = "Killed" (the OOM killer's signal, ``mm/oom_kill.c``). glibc
translates both through gettext, so a user whose ``LANG`` is ``zh_CN.UTF-8`` pastes "bash: fork:
无法分配内存" and a bare "已杀死" where the parsers know "Cannot allocate memory" and "Killed".
:func:`delocalize` maps each translation back to its msgid, so every English rule (the keyword
fallback, the host-RAM reading, the shell's ``Killed`` line and what may follow it) reads the
localized message as it reads the English one.

The translations are glibc's own catalogues (``po/<lang>.po`` at bminor/glibc
04e750e75b73957cf1c791535a3f4319534a52fc, ``msgid "Cannot allocate memory"`` and ``msgid
"Killed"`` from ``sysdeps/generic/siglist.h``), every language that translates them.

* "Cannot allocate memory" is mapped where it stands as a message (no letter right before or
  after), so a sentence that uses the words stays for its language's prose grammar.
* "Killed" is a common word in every language ("Morto", "Ucciso", "Getötet"), so its translation
  is mapped only where the shell prints it: alone on its line (after a progress bar's last frame
  at most), or after bash's ``line N: PID`` prefix of a script's child (``jobs.c``; the prefix
  ``parse_other._BASH_KILLED`` reads for the English word).
* glibc's "Memory exhausted" is left to the prose grammar of each language
  (``parse_wordings_report_i18n``), which keeps the noun's host-or-device reading (内存 / 显存)
  that the English msgid would lose.

Linear time: one alternation of literals over the paste (at most ``WHOLE_TEXT_CHARS``).
"""

from __future__ import annotations

import re

__all__ = ["delocalize"]

# glibc po/<lang>.po, msgid "Cannot allocate memory" (strerror(ENOMEM))
ENOMEM_TRANSLATIONS = (
    "немагчыма разьмеркаваць памяць",  # be
    "Не може да се задели памет",  # bg
    "No s’ha pogut reservar memòria",  # ca
    "Nelze alokovat paměť",  # cs
    "Kan ikke tildele hukommelse",  # da
    "Nicht genügend Hauptspeicher verfügbar",  # de
    "Δεν είναι δυνατό να δεσμευτεί μνήμη",  # el
    "Mankas sufiĉa memoro",  # eo
    "No se pudo asignar memoria",  # es
    "Muistin varaaminen ei onnistu",  # fi
    "Ne peut allouer de la mémoire",  # fr
    "Non se pode reservar memoria",  # gl
    "Nema dovoljno memorije",  # hr
    "Nem foglalható memória",  # hu
    "Tidak dapat mengalokasikan memori",  # id
    "Impossibile allocare memoria",  # it
    "メモリを確保できません",  # ja
    "მეხსიერების გამოყოფის შეცდომა",  # ka
    "메모리를 할당할 수 없습니다",  # ko
    "Nepavyko išskirti atminties",  # lt
    "Kan ikke tildele minne",  # nb
    "Onvoldoende geheugen beschikbaar",  # nl
    "Nie można przydzielić pamięci",  # pl
    "Impossível alocar memória",  # pt
    "Não foi possível alocar memória",  # pt_BR
    "Nu se poate aloca memorie",  # ro
    "Невозможно выделить память",  # ru
    "Nie je možné prideliť pamäť",  # sk
    "Pomnilnika ni mogoče dodeliti",  # sl
    "Не могу да доделим меморију",  # sr
    "Kan inte allokera minne",  # sv
    "Bellek ayrılamadı",  # tr
    "Не вдалося розподілити пам’ять",  # uk
    "Không thể cấp phát bộ nhớ",  # vi
    "无法分配内存",  # zh_CN
    "無法配置記憶體",  # zh_TW
)
# glibc po/<lang>.po, msgid "Killed" (strsignal(SIGKILL), sysdeps/generic/siglist.h)
KILLED_TRANSLATIONS = (
    "Забіты",  # be
    "Безусловно прекъснат",  # bg
    "Matat",  # ca
    "Zabit (SIGKILL)",  # cs
    "Dræbt",  # da
    "Getötet",  # de
    "Σκοτώθηκε",  # el
    "Buĉita",  # eo
    "Terminado (killed)",  # es
    "Tapettu",  # fi
    "Processus arrêté",  # fr
    "Matado",  # gl
    "Ubijen",  # hr
    "Kilőve",  # hu
    "Terbunuh",  # id
    "Ucciso",  # it
    "強制終了",  # ja
    "მოკვტა",  # ka
    "죽었음",  # ko
    "Nutraukta (killed)",  # lt
    "Drept",  # nb
    "Geëlimineerd",  # nl
    "Unicestwiony",  # pl
    "Morto",  # pt, pt_BR
    "Omorât",  # ro
    "Убито",  # ru
    "Zabitý",  # sk
    "Pobit",  # sl
    "Убијен",  # sr
    "Dödad",  # sv
    "Süreç durduruldu",  # tr
    "Вбито",  # uk
    "Bị buộc kết thúc",  # vi
    "已杀死",  # zh_CN
    "強制結束",  # zh_TW
)


def _alternation(words: tuple[str, ...]) -> str:
    # longest first, so a translation that starts another is not cut short
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


# the message stands alone: no letter (a CJK character included) right before or after it, so a
# sentence that uses the words ("直接把内存耗尽了", the memory got exhausted) stays for the prose
# grammar of its language
_MESSAGE = re.compile(f"(?<!\\w)(?:{_alternation(ENOMEM_TRANSLATIONS)})(?!\\w)")
# the shell's line: the word alone (after a progress bar's last frame at most: a digit, "]", "|",
# "%" or a bar glyph) or after bash's "line N: PID " prefix (the line prefix is translated too:
# parse_other._BASH_KILLED lists bash's own po/*.po words)
_KILLED_WORD = f"(?P<word>{_alternation(KILLED_TRANSLATIONS)})"
# (docfix15) bash's CJK prefixes end "번:" (ko), "行:" (ja), "行：" / "列：" (zh_CN / zh_TW; a
# full-width colon with no space after it); bash's interactive job report
# "[1]+  <signal>   <command>" (jobs.c pretty_print_job) is the third place
# blanks include the no-break space a web page pastes; markup an issue comment or a coloured
# terminal wraps around the line (ANSI SGR codes, Markdown ** / ` / _) may close it: the paste's
# line-level decorations, which normalize_line strips only after this whole-text pass
_SP = "[ \\t\u00a0]"
_MARK = r"(?:\x1b\[[0-9;]{0,12}m|[*`_]{1,3})"
_END = f"(?:{_SP}|{_MARK}){{0,8}}$"
_KILLED = re.compile(
    f"(?m)(?:(?:^(?:{_SP}|{_MARK}){{0,8}}|(?<=[\\d\\]|%\u2500-\u259f]))"
    + _KILLED_WORD
    + f"{_END}|(?<=[\\d\ubc88\u884c\u5217][:\uff1a]){_SP}{{0,8}}\\d{{1,10}}{_SP}"
    + _KILLED_WORD.replace("?P<word>", "?P<word2>")
    # (docpost28, heldout54) or the line ends there: a paste that lost the command after it
    # ("script/run.sh: 行 30: 23195 已杀死"); the "line N: PID" prefix is bash's own
    + f"(?={_SP}{{1,40}}\\S|{_END})|^{_SP}{{0,8}}\\[\\d{{1,4}}\\][+\\- ]{_SP}{{0,8}}"
    + f"(?:\\d{{1,10}}{_SP}{{1,8}})?"
    + _KILLED_WORD.replace("?P<word>", "?P<word3>")
    + f"(?={_SP}{{1,40}}\\S))"
)
# a cheap gate for ASCII text: the ASCII translations themselves (a text with a non-ASCII
# character is always read)
_ASCII_GATE = re.compile(
    _alternation(tuple(w for w in ENOMEM_TRANSLATIONS + KILLED_TRANSLATIONS if w.isascii()))
)


def _killed(m: re.Match[str]) -> str:
    name = next(g for g in ("word", "word2", "word3") if m.group(g) is not None)
    whole, at = m.group(0), m.start()
    return whole[: m.start(name) - at] + "Killed" + whole[m.end(name) - at :]


# (docrec30) the pinyin input method's homophone of 显存 (xiǎncún, video memory): 现存 (xiàncún,
# "existing"), typed where VRAM is meant: "出现现存溢出", "报现存不够", "16G现存", "GPU现存有16G".
# Read as 显存 only beside what VRAM takes: a size or a GPU before it, an overflow / shortage /
# blow-up after it (not "现存的问题", the existing problems)
_IME_VRAM = re.compile(
    r"(?:(?<=[GgMm])|(?<=[GgMm][Bb])|(?<=以上)|(?<=GPU)|(?<=gpu)|(?<=显卡)|(?<=顯卡))现存|"
    r"现存(?=溢出|不够|不夠|不足|爆|耗尽|占满|OOM|oom)"
)


def delocalize(text: str) -> str:
    """``text`` with glibc's translated memory messages put back in English (see the module
    docstring); unchanged when it holds none.

    >>> delocalize("bash: fork: 无法分配内存")
    'bash: fork: Cannot allocate memory'
    >>> delocalize("Loading model\\n已杀死\\n")
    'Loading model\\nKilled\\n'
    >>> delocalize("直接把无法分配内存的问题")
    '直接把无法分配内存的问题'
    >>> delocalize("o processo foi Morto ontem")
    'o processo foi Morto ontem'
    >>> delocalize("bs=1也出现现存溢出; 现存的问题")
    'bs=1也出现显存溢出; 现存的问题'
    """
    if text.isascii() and _ASCII_GATE.search(text) is None:
        return text
    text = _MESSAGE.sub("Cannot allocate memory", text)
    if "现存" in text:
        text = _IME_VRAM.sub("显存", text)
    return _KILLED.sub(_killed, text)
