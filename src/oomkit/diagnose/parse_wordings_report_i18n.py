"""The prose-report grammar of :mod:`oomkit.diagnose.parse_wordings_report` in the other
languages users write: Chinese (显存 / 内存 with 不够, 撑不住, 占满, 爆了, 一直涨, 翻倍, 不释放;
"爆内存" with the verb first), Japanese (メモリ / VRAM が足りない, いっぱい, 溢れ), Korean (메모리
부족, 초과), German (Speicher reicht nicht, ist voll, zu wenig Speicher), French (mémoire
insuffisante, saturée, pas assez de mémoire), Spanish / Italian (memoria insuficiente, se llena,
se agota, me quedo sin memoria; memoria esaurita), Portuguese (memória insuficiente, cheia,
esgotada, fica sem memória) and Russian / Ukrainian (не хватает видеопамяти, память
закончилась). (docrec28) A failed allocation in every one of them: the memory noun with an
allocate verb and a failure word ("内存分配失败", "无法分配足够的显存", "メモリの確保に失敗",
"메모리 할당 실패", "Speicherzuweisung fehlgeschlagen", "impossible d'allouer de la mémoire",
"error al asignar memoria", "erro ao alocar memória", "не удалось выделить память"), the
wording glibc's own catalogues use for strerror(ENOMEM) (po/<lang>.po at bminor/glibc 04e750e;
the standalone message is mapped back to English by ``normalize_locale``); swap and the paging
file as memory nouns (交换空间, 页面文件); a measure word between noun and predicate ("メモリ
リソースが不足", "메모리 용량이 부족"). A question how to allocate ("如何分配显存", "メモリを
確保する方法", "¿Cómo asignar memoria?") names no failure and stays silent. Negations, advice and
storage cards stay silent ("显存不会爆", "如何避免显存占满",
"メモリオーバーヘッドを減らす", "la scheda di memoria è piena", "la RAM llena de datos es normal").

Every pattern has bounded quantifiers only (linear time on a sentence).
"""

from __future__ import annotations

import re

from oomkit.diagnose.parse_wordings_korean import KO_SHORT_PREDICATE, negated_after
from oomkit.diagnose.parse_wordings_mixed import native_noun

__all__ = ["i18n_match"]

_I = re.IGNORECASE

# ---- other languages -------------------------------------------------------------------------
# (docrec28) swap and the paging file are memory too ("交换空间不够", swap space short; Windows'
# pagefile, zh_CN "页面文件" as in WinError 1455's text, zh_TW "頁面檔")
_CJK_MEM = (
    r"(?:显存|顯存|内存|內存|运存|運存|显卡内存|顯示記憶體|記憶體|交换空间|交換空間|交换分区|"
    r"交換分區|页面文件|頁面檔)"
)
_CJK_PRED = (
    r"(?:不够|不夠|不足|溢出|撑不住|撐不住|扛不住|吃不消|(?:占|佔|吃|用|跑|耗|塞)(?:满|滿|光|完|尽|盡)|"
    r"满了|滿了|爆了|爆掉|炸了|超了|超出|超过|超過|飙升|飆升|暴涨|暴漲|"
    r"一直(?:涨|漲|增加|上升|增长|增長)|持续(?:增长|增加|上涨)|持續(?:增長|增加|上漲)|告急|"
    r"翻倍|翻了一倍|暴增|"
    # "内存占用过高" (memory use too high), as the English "memory usage is too high"
    r"过高|過高|太高)"
)
_CJK_AFTER = re.compile(_CJK_MEM + r"(?P<gap>[^，。,.!?！？;；\s]{0,8}?)" + _CJK_PRED)
_CJK_NOT_FREED = re.compile(
    r"(?:不会|不會|没有?|沒有?|未|无法|無法|不)(?:被)?(?:释放|釋放|回收)(?:掉)?(?:的)?"
    + _CJK_MEM
    + r"|"
    + _CJK_MEM
    + r"(?:一直|始终|始終|仍然|还是|還是)?(?:不会|不會|没有?|沒有?|未|无法|無法|不)"
    r"(?:被)?(?:释放|釋放|回收)"
)
# (docrec28) a failed allocation, the C library's and the runtimes' own "failed to allocate"
# (glibc zh_CN strerror(ENOMEM) "无法分配内存", zh_TW "無法配置記憶體"): memory noun + allocate
# verb + failure, or cannot + allocate + memory noun; "如何分配显存" (how to allocate) has no
# failure word
_CJK_ALLOC = re.compile(
    _CJK_MEM
    + r"(?:的)?(?:分配|申请|申請|配置)(?:都|也|总是|總是)?(?:失败|失敗|不了|不到|出错|出錯)|"
    r"(?:无法|無法|不能|未能|没法|沒法|没能|沒能)(?:再|成功)?(?:分配|申请|申請|配置)(?:到)?"
    r"(?:足够的?|足夠的?|更多的?|所需的?)?(?:GPU|gpu|CUDA|cuda)? ?" + _CJK_MEM + r"|"
    r"(?:分配|申请|申請)(?:GPU|gpu|CUDA|cuda)? ?" + _CJK_MEM + r"(?:时|時)?(?:失败|失敗|出错|出錯)"
)
_CJK_BEFORE = re.compile(
    # "会超显存" (goes over the VRAM), "超出内存"
    r"(?:爆|撑爆|撐爆|占满|佔滿|吃满|吃滿|耗尽|耗盡|用尽|用盡|用完|用光|塞满|塞滿|超出|超过|超過|超)(?:了)?"
    r"(?:我的|所有|全部|整个|整個)?"
    # (docpost28, heldout52/54) the device or the card's size between the verb and the noun:
    # "爆cpu内存" (blew the CPU's memory), "会用尽16G显存" (uses up the 16G of VRAM)
    r"(?:(?:CPU|cpu|GPU|gpu) ?|\d{1,4}(?:\.\d{1,2})? ?[GgMm][Bb]? ?(?:的)?)?" + _CJK_MEM
)
# "超过内存限制的请求" / "超出显存的部分": exceeding the memory as a relative clause (the docs'
# "requests over the memory limit", "the part beyond the VRAM"), not a report
_CJK_OVER_CLAUSE = re.compile(r"(?:限制|上限|限额|限額|容量)?的")
# Chinese advice and yes-no questions: "如何避免显存占满" (how to avoid), "是否会爆显存"
# "推理需要超过24G的显存" (inference needs over 24G of VRAM): a need or a recommendation before
# the verb states a requirement, not a failure
_CJK_NEED = re.compile(r"(?:需要|需|要求|至少|最少|起码|起碼|建议|建議|推荐|推薦)$")
_CJK_ADVICE = re.compile(r"(?:如何|怎么|怎樣|怎样)?(?:避免|防止)|是否|会不会|會不會|能否")
_CJK_VETO = re.compile(
    r"[不没沒未别別]|防止|避免|减少|減少|降低|节省|節省|优化|優化|如何|是否|会不会|會不會"
)
# (docfix22) the sentence-wide vetoes are advice and yes-no questions; a negation (不, 没) vetoes
# only next to the memory noun or its predicate, as the English grammar reads "not" in the gap
# and just before a predicate (parse_wordings_report _GAP_VETO / _BEFORE_VETO): "没办法，显存又
# 爆了" (no way around it, the VRAM blew again) reports; "显存没有爆", "不会爆显存", "不是显存不够"
# do not
_CJK_ADVICE_WORDS = re.compile(
    r"防止|避免|减少|減少|降低|节省|節省|优化|優化|如何|是否|会不会|會不會"
)
_CJK_NEG = re.compile(r"[不没沒未别別]")
# the negation stands in a clause of its own or in a set phrase that negates something else
# ("不知道为什么" I don't know why, "没办法" no way around it, "不断" continually, "不然"
# otherwise, "是不是" is it that)
_CJK_NOT_NEGATING = re.compile(
    r"不知道|不知|不清楚|不明白|不懂|没办法|沒辦法|没法子|不小心|不得不|不到|不停|不断|不斷|"
    r"不然|要不然|是不是|"
    r"不一会|不一會|没多久|沒多久"
)
_CJK_CLAUSE_END = re.compile(r"[，。,.!?！？;；:：、\s]")
# "显存爆了没" (did the VRAM blow up?): a question tag after the predicate
_CJK_TAG_AFTER = re.compile(r"(?:没有?|沒有?|吗|嗎|么|麼)(?:[，。,.!?！？;；]|$)")
#: chars before the noun or the predicate-first verb read for a negation (one word and a verb:
#: "没有出现", "不会")
_CJK_NEG_WINDOW = 4


def _cjk_negated_before(s: str, start: int) -> bool:
    """A negation or an advice word in the few characters before ``start``, in its clause."""
    window = s[max(0, start - _CJK_NEG_WINDOW) : start]
    ends = list(_CJK_CLAUSE_END.finditer(window))
    if ends:
        window = window[ends[-1].end() :]
    return _CJK_VETO.search(_CJK_NOT_NEGATING.sub("", window)) is not None


_OTHER = re.compile(
    "|".join(
        (
            # Japanese
            # (docrec28) "メモリー" with the long vowel, and a measure word between the noun and
            # its particle ("メモリ リソースが不足", Windows' ERROR_NOT_ENOUGH_MEMORY text;
            # "メモリ容量が足りない")
            r"(?:メモリー?|VRAM|RAM|ビデオメモリー?)(?: ?(?:リソース|容量|領域|空き容量))?"
            r"(?:が|は|の)?(?:全然|すぐに?|また|まだ)?"
            r"(?:不足|足りな|足らな|いっぱい|一杯|溢れ|あふれ|オーバー(?!ヘッド)|枯渇|使い果た|パンク|限界)",
            r"(?:メモリー?|VRAM)を(?:使い果た|食い尽く|使い切)",
            # (docrec28) a failed allocation: glibc ja strerror(ENOMEM) "メモリを確保できません",
            # "メモリの確保に失敗しました", "メモリの割り当てに失敗"
            r"(?:メモリー?|VRAM|ビデオメモリー?)(?:の|を|が)?(?:確保|割り当て|割当て?|アロケート)"
            r"(?:に|が|を)?(?:失敗|できな|できま?せん|出来な)",
            # Korean
            # (docrec28) a measure word after the noun ("메모리 용량이 부족"), glibc ko "Memory
            # exhausted" "메모리가 바닥남" (ran to the bottom)
            # (docpost19) the stem's last syllable in each conjugated form (모자란다, 모자랐다)
            r"(?:메모리|VRAM|램|RAM)(?: ?(?:용량|공간|자원))?(?:가|이|는|를)? ?"
            + KO_SHORT_PREDICATE,
            # (docrec28) a failed allocation: glibc ko strerror(ENOMEM) "메모리를 할당할 수
            # 없습니다", "메모리 할당 실패", "메모리 할당에 실패"
            r"(?:메모리|VRAM)(?:를|을)? ?할당(?:에|이|을|하지)? ?(?:실패|못|할 수 없)",
            # German
            r"\b(?:Speicher|Arbeitsspeicher|Hauptspeicher|Grafikspeicher|GPU-Speicher|VRAM|RAM)"
            r"(?: \w{1,15}){0,3}?"
            r" (?:reicht nicht|reichte nicht|ist voll|war voll|läuft voll|lief voll|erschöpft|"
            r"reicht (?:\w{1,10} )?nicht aus|überläuft|übergelaufen)",
            r"\b(?:zu wenig|nicht genug|nicht genügend|Mangel an) (?:\w{1,15} )?"
            r"(?:Speicher|Arbeitsspeicher|Grafikspeicher|VRAM|RAM)\b",
            r"\bSpeichermangel\b|\bgeht (?:mir |der |dem \w{1,12} )?(?:\w{1,12} )?Speicher aus",
            # (docrec28) a failed allocation
            r"\bSpeicher(?:zuweisung|reservierung|allokierung|allokation) (?:ist |war )?"
            r"fehlgeschlagen|\b(?:Speicher|VRAM|RAM) konnte nicht (?:\w{1,12} )?(?:zugewiesen|"
            r"reserviert|alloziert|allokiert) werden",
            # French
            r"\b(?:mémoire|VRAM|RAM)(?: [\w'éè]{1,15}){0,3}? (?:insuffisante|pleine(?! de)|saturée|"
            r"épuisée|dépassée|déborde|explose)",
            r"\b(?:pas assez|manque|manqué) de (?:\w{1,12} )?(?:mémoire|VRAM|RAM)\b",
            # (docrec28) a failed allocation (glibc fr "Ne peut allouer de la mémoire")
            r"\b(?:impossible d'allouer|ne peut allouer|échec de l'allocation|échec d'allocation|"
            r"erreur d'allocation) (?:de (?:la )?|du )?(?:\w{1,12} )?(?:mémoire|VRAM)\b",
            # Spanish / Italian
            r"\b(?:memoria|VRAM|RAM)(?: \w{1,15}){0,3}? (?:insuficiente|llena(?! de)|"
            r"se llena(?! de)|se llenó|"
            r"se agota|se agotó|agotada|se desborda|desbordada|no alcanza|no es suficiente|explota|"
            r"esaurita|piena(?! di)|non basta)",
            r"\b(?:falta de|no hay suficiente|no tengo suficiente|me quedo sin|me quedé sin|"
            r"se queda sin|se quedó sin|quedarse sin|poca) (?:\w{1,12} )?(?:memoria|VRAM|RAM)\b",
            # (docrec28) a failed allocation (glibc es "No se pudo asignar memoria", it
            # "Impossibile allocare memoria")
            r"\b(?:error al|fallo al|falló al|no se pudo|no se puede|imposible|impossibile|"
            r"errore nell'|non riesce ad?|non è possibile) ?(?:asignar|reservar|allocare) "
            r"(?:la |más |più )?(?:memoria|VRAM)\b|"
            r"\ballocazione (?:della )?memoria (?:fallita|non riuscita)",
            # Portuguese
            r"\b(?:memória|VRAM|RAM)(?: \w{1,15}){0,3}? (?:insuficiente|cheia(?! de)|"
            r"esgotada|estoura|"
            r"estourou|acaba|acabou|não é suficiente|não dá)",
            # (docrec28) the first person and the states of "ficar/estar sem" (fiquei sem memória)
            r"\b(?:falta de|fica sem|ficou sem|fiquei sem|ficamos sem|ficaram sem|ficar sem|"
            r"estou sem|está sem|estava sem|não há|não tem) (?:\w{1,12} )?(?:memória|VRAM)\b",
            # (docrec28) a failed allocation (glibc pt_BR "Não foi possível alocar memória")
            r"\b(?:erro ao|falha ao|falhou ao|não foi possível|não é possível|impossível) "
            r"alocar (?:a |mais )?(?:memória|VRAM)\b",
            # Russian / Ukrainian
            # (docrec28) Ukrainian writes the apostrophe as "’" too (glibc uk "пам’ять")
            r"(?:не хватает|не хватило|недостаточно|нехватка|закончил\w{0,3}|кончил\w{0,3}|"
            r"переполн\w{0,6}|не вистачає|исчерпан\w{0,3}|вичерпан\w{0,3}) (?:\w{1,15} ){0,2}"
            r"(?:памят\w{0,2}|видеопамят\w{0,2}|пам['’]ят\w{0,2}|VRAM|ОЗУ|RAM)",
            r"(?:памят\w{0,2}|видеопамят\w{0,2}|пам['’]ят\w{0,2}|VRAM|ОЗУ)(?: \w{1,15}){0,2}? "
            r"(?:не хватает|не хватило|недостаточно|закончил\w{0,3}|кончил\w{0,3}|"
            r"переполн\w{0,6}|забит\w{0,3}|исчерпан\w{0,3}|вичерпан\w{0,3})",
            # (docrec28) a failed allocation (glibc ru "Невозможно выделить память", uk "Не
            # вдалося розподілити пам’ять")
            r"(?:не удалось|не удаётся|не удается|невозможно|не могу|не может|ошибка при попытке|"
            r"не вдалося|неможливо) (?:\w{1,12} )?(?:выделить|виділити|розподілити) "
            r"(?:\w{1,12} )?(?:видео)?(?:памят\w{0,2}|пам['’]ят\w{0,2})|"
            r"ошибка выделения (?:\w{1,12} )?(?:видео)?памяти",
        )
    ),
    _I,
)
_OTHER_VETO = re.compile(
    r"\b(?:éviter|evitar|evitare|vermeiden|verhindern|избежать|избегать|nicht mehr|ya no|normal|"
    r"scheda di memoria|tarjeta de memoria|carte m[ée]moire|Speicherkarte|cart[ãa]o de mem[óo]ria|"
    r"sd[- ]?card|disco|disque|Festplatte|диск|"
    r"não mais|plus jamais|si vous|wenn Sie|falls Sie|si usted|se você)\b|"
    r"しないように|避ける|減らす|"
    r"削減|節約|방지|줄이",
    _I,
)


def _cjk(s: str) -> re.Match[str] | None:
    not_freed = _CJK_NOT_FREED.search(s) or _CJK_ALLOC.search(s)
    if not_freed is not None and not _CJK_ADVICE.search(s):
        return not_freed
    if _CJK_ADVICE_WORDS.search(s) and not any(
        k in s for k in ("不够", "不夠", "不足", "撑不住", "撐不住")
    ):
        return None
    for after in _CJK_AFTER.finditer(s):
        if (
            not _CJK_VETO.search(_CJK_NOT_NEGATING.sub("", after.group("gap")))
            and not _cjk_negated_before(s, after.start())
            and not _CJK_TAG_AFTER.match(s, after.end())
        ):
            return after
    before = _CJK_BEFORE.search(s)
    if (
        before is not None
        and not _cjk_negated_before(s, before.start())
        and not _CJK_NEED.search(s[max(0, before.start() - 4) : before.start()])
        and not _CJK_OVER_CLAUSE.match(s, before.end())
    ):
        return before
    return None


# the predicate words of :data:`_OTHER` (a sentence with none of them is skipped)
_OTHER_WORDS = re.compile(
    "不足|足りな|足らな|いっぱい|一杯|溢れ|あふれ|オーバー|枯渇|使い果|食い尽|使い切|パンク|限界|"
    "부족|모자|초과|가득|넘|터|꽉|reicht|voll|erschöpft|überl|wenig|genug|genügend|mangel|"
    "speicher|insuffisante|pleine|saturée|épuisée|dépassée|déborde|explose|assez|manqu|"
    "insuficiente|llen|agot|desborda|alcanza|suficiente|esaurita|piena|basta|sin |poca|cheia|"
    "esgotada|estour|acab|não|falta|sem |хват|недостат|нехват|кончил|переполн|забит|вистача|"
    # (docrec28) allocation failures and exhaustion
    "確保|割り当て|割当|アロケート|바닥|할당|fehlgeschlagen|konnte nicht|allouer|allocation|"
    "asignar|allocare|allocazione|alocar|выдел|виділ|розподіл|исчерпан|вичерпан",
    re.IGNORECASE,
)
_CJK_WORDS = re.compile(
    "显存|顯存|内存|內存|运存|運存|記憶體|交换空间|交換空間|交换分区|交換分區|页面文件|頁面檔"
)
# the same words matched case-sensitively in a lower-cased ASCII sentence: for ASCII text this
# finds exactly what the IGNORECASE alternation finds, ~12x faster (sre's IGNORECASE alternation
# costs ~90 us on a 100-character log line); a non-ASCII sentence keeps the IGNORECASE search
assert "\\" not in _OTHER_WORDS.pattern
_OTHER_WORDS_LOW = re.compile(_OTHER_WORDS.pattern.lower())


def _other_words(s: str) -> bool:
    if s.isascii():
        return _OTHER_WORDS_LOW.search(s.lower()) is not None
    return _OTHER_WORDS.search(s) is not None


def i18n_match(s: str) -> re.Match[str] | None:
    """The other-language OOM report in the sentence ``s``, else ``None``."""
    m = _i18n(s)
    if m is not None:
        # (docpost19) a Korean predicate negated after it: 메모리가 부족하지 않습니다
        return None if negated_after(s, m) else m
    # "cuda memory가 부족하다": the English noun in a CJK sentence (parse_wordings_mixed)
    native = native_noun(s)
    m = _i18n(native) if native is not None else None
    return None if m is None or native is None or negated_after(native, m) else m


def _i18n(s: str) -> re.Match[str] | None:
    m = None
    if _CJK_WORDS.search(s):
        m = _cjk(s)
    if m is None and _other_words(s) and not _OTHER_VETO.search(s):
        m = _OTHER.search(s)
    return m
