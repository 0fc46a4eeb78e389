"""A small, deterministic language identifier for IFEval's `language:response_language` and the
"in English" part of the change-case checks.

It is a heuristic (no model, no extra dependency): the dominant Unicode script decides when the
script has one language (Thai, Korean, Tamil...), letters peculiar to a language split shared
scripts (Urdu/Persian/Arabic, Russian/Bulgarian), and frequent function words decide among the
Latin-script and Devanagari languages. It returns None when the text gives too little to go on.
"""

from __future__ import annotations

import re
import unicodedata

_SCRIPTS: list[tuple[str, list[tuple[int, int]]]] = [
    ("latin", [(0x41, 0x5A), (0x61, 0x7A), (0xC0, 0x24F), (0x1E00, 0x1EFF)]),
    ("cyrillic", [(0x400, 0x4FF)]),
    ("greek", [(0x370, 0x3FF)]),
    ("arabic", [(0x600, 0x6FF), (0x750, 0x77F), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF)]),
    ("hebrew", [(0x590, 0x5FF)]),
    ("devanagari", [(0x900, 0x97F)]),
    ("bengali", [(0x980, 0x9FF)]),
    ("gurmukhi", [(0xA00, 0xA7F)]),
    ("gujarati", [(0xA80, 0xAFF)]),
    ("tamil", [(0xB80, 0xBFF)]),
    ("telugu", [(0xC00, 0xC7F)]),
    ("kannada", [(0xC80, 0xCFF)]),
    ("malayalam", [(0xD00, 0xD7F)]),
    ("thai", [(0xE00, 0xE7F)]),
    ("hangul", [(0xAC00, 0xD7AF), (0x1100, 0x11FF), (0x3130, 0x318F)]),
    ("kana", [(0x3040, 0x30FF)]),
    ("han", [(0x4E00, 0x9FFF), (0x3400, 0x4DBF)]),
]

_SINGLE = {
    "greek": "el",
    "hebrew": "he",
    "bengali": "bn",
    "gurmukhi": "pa",
    "gujarati": "gu",
    "tamil": "ta",
    "telugu": "te",
    "kannada": "kn",
    "malayalam": "ml",
    "thai": "th",
    "hangul": "ko",
    "kana": "ja",
}

_STOPWORDS: dict[str, frozenset[str]] = {
    lang: frozenset(words.split())
    for lang, words in {
        "en": "the and is are of to in that it with for this you was be on as have not they "
        "will can your we an or but from by at",
        "de": "der die das und ist nicht ein eine zu mit den von ich sie es auf für sich dem "
        "auch wir sind wie im werden",
        "fi": "ja on ei että se hän oli mutta kun ovat tai myös joka niin minä sinä he ole kuin "
        "mitä tämä voi sen olla",
        "it": "il di che è un una per non sono con del della le si gli ma come anche questo più "
        "nel alla lo questa nella essere",
        "pt": "o de que é um uma para não com os do da em se mais por mas como no na são você "
        "muito ao",
        "es": "el los las y es de que en un una por con no se para del al lo como más pero su "
        "este son",
        "fr": "le les et est de des un une que pas pour dans ce il qui ne sur vous avec sont au "
        "du je",
        "nl": "de het een en van is dat niet ik je op te zijn met voor die er maar wat ook als "
        "aan dit",
        "sw": "na ya wa kwa ni za katika kuwa hii au lakini kama hiyo yake sana pia watu kwamba "
        "wewe mimi ili hivyo cha vya",
        "vi": "và của là có không những được trong một người các cho với này đã để khi cũng như "
        "tôi bạn đến từ về rất",
        "hi": "है हैं के में की और से का को यह नहीं था थे कि पर भी एक लिए",
        "mr": "आहे आहेत आणि च्या मध्ये हे नाही या ते केले होते की तर पण एक साठी",
        "ne": "छ छन् र मा हो पनि गर्न भएको थियो यो त्यो एक लागि गर्छ हुन्छ",
        "ru": "и в не на что это как он я с по но они мы вы был она так все",  # noqa: RUF001
        "bg": "е на и за се от да съм са това че не как той ние вие бе тя",  # noqa: RUF001
    }.items()
}
_CANDIDATES = {
    "latin": ["en", "de", "fi", "it", "pt", "es", "fr", "nl", "sw", "vi"],
    "devanagari": ["hi", "mr", "ne"],
    "cyrillic": ["ru", "bg"],
}
_VI_MARKS = set("ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ")
# Split on spaces and punctuation, not on \W: Indic vowel signs are not word characters.
_SPLIT_RE = re.compile(r"[\s.,;:!?\"'()\[\]{}«»“”\u2018\u2019।॥*#\-\u2013\u2014/]+")


def _script(ch: str) -> str | None:
    code = ord(ch)
    for name, ranges in _SCRIPTS:
        if any(lo <= code <= hi for lo, hi in ranges):
            return name
    return None


def detect_language(text: str) -> str | None:
    """ISO 639-1 code of the language `text` is mostly written in, or None if unsure."""
    counts: dict[str, int] = {}
    for ch in text:
        if ch.isalpha():
            script = _script(ch)
            if script is not None:
                counts[script] = counts.get(script, 0) + 1
    if not counts:
        return None
    script, n = max(counts.items(), key=lambda kv: kv[1])
    total = sum(counts.values())
    if script == "han" and counts.get("kana", 0) > 0.05 * total:
        return "ja"
    if script == "han":
        return "zh"
    if script in _SINGLE:
        return _SINGLE[script]
    lowered = text.lower()
    if script == "arabic":
        if any(c in lowered for c in "ےںٹڈڑ"):
            return "ur"
        persian = sum(lowered.count(c) for c in "پچژگیک")
        arabic = sum(lowered.count(c) for c in "يكة")
        return "fa" if persian > arabic else "ar"
    if script == "cyrillic":
        ru = sum(lowered.count(c) for c in "ыэё")
        if ru > 0.005 * n:
            return "ru"
    if script == "latin":
        marks = sum(1 for c in lowered if c in _VI_MARKS)
        if marks > 0.03 * n:
            return "vi"
    return _by_stopwords(lowered, _CANDIDATES.get(script, []))


def _by_stopwords(lowered: str, candidates: list[str]) -> str | None:
    tokens = [t for t in _SPLIT_RE.split(unicodedata.normalize("NFC", lowered)) if t]
    if not tokens or not candidates:
        return None
    scores = {lang: sum(t in _STOPWORDS[lang] for t in tokens) for lang in candidates}
    best = max(candidates, key=lambda lang: scores[lang])
    if scores[best] == 0:
        return None
    return best


def is_language(text: str, language: str) -> bool:
    """True when `text` is in `language`, or when the language cannot be told (as IFEval does
    when its detector fails)."""
    detected = detect_language(text)
    return detected is None or detected == language
