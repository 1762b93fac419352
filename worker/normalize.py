"""Text normalization shared by within-run idempotency and exact-restatement dedupe.

NFKC, case-fold, collapse whitespace, strip trailing punctuation: "Dark mode." == "dark  MODE".
Only punctuation is stripped, not symbols, so "UTC+1" and "UTC+2" stay different.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from functools import lru_cache
from importlib import resources

_WHITESPACE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    collapsed = _WHITESPACE.sub(" ", folded).strip()
    end = len(collapsed)
    while end > 0 and (
        unicodedata.category(collapsed[end - 1]).startswith("P") or collapsed[end - 1] == " "
    ):
        end -= 1
    return collapsed[:end]


def content_hash(text: str) -> str:
    """Hash of the normalized text (hex sha256), stored with every note."""
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


# --- folding for admission checks (SPEC 5) -------------------------------------------------
# Used only to *match* the admission patterns (worker/writes/admission/); never stored and never
# hashed, so `normalize_text` / `content_hash` above are unchanged.

# Characters that render as nothing (or as blank space) and are used to split a phrase so a
# pattern misses it: every format character (category Cf: zero-width space/joiners, word
# joiner, BOM, soft hyphen, bidi controls, tag characters) plus blank letters and symbols.
_BLANK_LOOKALIKES = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f")

# Letters (and a few marks) from other scripts that look like Latin ones, folded to the Latin
# they imitate: "Ignօre" (Armenian օ), "ignоre" (Cyrillic о), "ıgnore" all read "ignore".
# Derived once, at import, from Unicode's confusables list (UTS #39) as shipped by
# `confusable_homoglyphs`, rather than picked by hand: a hand list misses whole scripts. Built
# at import (about 20 ms, mostly parsing the JSON), so a prefork worker's children share it and
# no write pays for it. NFKC folds full-width and mathematical letters before these tables are
# applied; diacritics are stripped before the second one (see `fold_for_matching`).
#
# Only matching uses this: the stored note keeps its own text. A Russian, Greek or Armenian
# sentence folds into a string of Latin look-alikes, which does not make it match: every pattern
# needs whole English words and phrasings ("ignore ... instructions") that no real sentence in
# another script spells letter for letter (tests/unit/test_confusables.py holds notes in a
# dozen scripts to that).

# Punctuation look-alikes are folded only to the few ASCII marks the default patterns key on
# ("<system>", "system:", "rm -rf", "eval("). Others (quotes, slashes, apostrophes) are left
# alone: Katakana ノ reads "/", Ukrainian ґ "r'", and folding them would only mangle text.
_FOLDED_PUNCTUATION = frozenset("<>():-")

# Look-alikes the Unicode data has no ASCII prototype for (it maps them to other non-ASCII
# letters: ω to ⍵, ɔ to ↄ, ǝ to ə, ᴛ to т, ɴ to nothing). The first four are kept from the
# earlier hand-picked table; small mu is among them because it looks like u (only its capital Μ
# is confusable with M, which would otherwise fold μ to "m"). Latin small capitals ("ɪɢɴᴏʀᴇ")
# are a common obfuscation and Latin letters by definition (the hand table had ɪ ʀ ʏ).
_EXTRA_HOMOGLYPHS: dict[str, str] = {
    "μ": "u", "ω": "w", "ɔ": "c", "ǝ": "e",
    **dict(zip("ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘꞯʀꜱᴛᴜᴠᴡʏᴢ", "abcdefghijklmnopqrstuvwyz", strict=True)),
}


def _ascii_prototype(prototype: str) -> str | None:
    """The ASCII text a confusable prototype stands for, or None. Combining marks are dropped
    first, so "l̸" (the data's prototype for ł) and "n̩" (for η) count as "l" and "n", as the
    fold strips diacritics anyway."""
    if not prototype[:1].isascii():  # marks follow their base: most entries end here, cheaply
        return None
    bare = "".join(ch for ch in prototype if not unicodedata.combining(ch))
    if not bare.isascii():
        return None
    if bare.isalnum() or (len(bare) == 1 and bare in _FOLDED_PUNCTUATION):
        return bare.casefold()
    return None


def _load_homoglyphs() -> tuple[dict[int, str], dict[int, str]]:
    """Two `str.translate` tables from confusables.json, which maps each character to the
    characters it is confusable with (`c`; a character with an ASCII prototype has it there):

    - capitals (what case folding changes), applied before case folding: a capital looks like
      a Latin capital, not like its small letter (Greek Ν is N though ν is v, Η is H though η
      is n);
    - everything else, applied after case folding and stripping diacritics.

    Each maps every such non-ASCII character whose prototype is ASCII letters or digits (or
    one of `_FOLDED_PUNCTUATION`) to that ASCII text, lower-cased."""
    source = resources.files("confusable_homoglyphs").joinpath("confusables.json")
    data: dict[str, list[dict[str, str]]] = json.loads(source.read_text(encoding="utf-8"))
    direct: dict[str, str] = {}
    for char, homoglyphs in data.items():
        if len(char) != 1 or char.isascii():
            continue
        for homoglyph in homoglyphs:
            if (ascii_text := _ascii_prototype(homoglyph["c"])) is not None:
                direct[char] = ascii_text
                break
    # Unicode writes every I-shaped and l-shaped glyph as "l", which a capital cannot settle
    # (І, Ι, Ӏ are capital I's; Ł is an L): those fall through to case folding, where their
    # small letters decide (і, ι, ӏ read "i"; ł reads "l").
    capitals = {char: ascii_text for char, ascii_text in direct.items()
                if char.casefold() != char and "l" not in ascii_text}
    small = dict(direct)
    # Many small letters are small-capital shapes of their capitals and have no ASCII entry of
    # their own (Cyrillic в к м н т look like small B K M H T; the data maps them to the Latin
    # letters ʙ ĸ ʍ ʜ ᴛ, not to ASCII): they fold as their capital does. Armenian is left out,
    # its small letters being shaped unlike the capitals (Տ looks like S, տ does not).
    for char in sorted(direct):
        lower = char.casefold()
        if (len(lower) == 1 and not lower.isascii() and lower not in direct
                and not unicodedata.name(lower, "").startswith("ARMENIAN")):
            small.setdefault(lower, direct[char])
    small.update(_EXTRA_HOMOGLYPHS)
    return ({ord(char): text for char, text in capitals.items()},
            {ord(char): text for char, text in small.items()})


_CAPITAL_HOMOGLYPHS, _HOMOGLYPHS = _load_homoglyphs()

# Digits and symbols standing in for letters ("1gn0r3 pr3v10us").
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a",
                       "$": "s", "!": "i", "|": "l"})

# Four or more single characters separated by one kind of separator: "i g n o r e",
# "i.g.n.o.r.e". Real text rarely has four one-letter words in a row ("U S A" has three).
_SPACED_OUT = re.compile(r"(?<!\w)(?:\w[\s.\-_*·,/]+){3,}\w(?!\w)")
_SEPARATORS = re.compile(r"[\s.\-_*·,/]+")


def fold_for_matching(text: str) -> str:
    """Lower-case Latin skeleton of `text`: NFKC, invisible characters removed, diacritics
    stripped, look-alike letters mapped to Latin, whitespace collapsed."""
    composed = unicodedata.normalize("NFKC", text)
    visible = "".join(
        ch for ch in composed
        if unicodedata.category(ch) != "Cf" and ch not in _BLANK_LOOKALIKES
        and not 0xFE00 <= ord(ch) <= 0xFE0F  # variation selectors
    )
    # Capitals first, while their case still tells them apart (see `_load_homoglyphs`).
    decomposed = unicodedata.normalize(
        "NFKD", visible.translate(_CAPITAL_HOMOGLYPHS).casefold())
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    latin = unicodedata.normalize("NFKC", bare.translate(_HOMOGLYPHS)).casefold()
    return _WHITESPACE.sub(" ", latin).strip()


@lru_cache(maxsize=1024)  # pure; the write path asks it twice per note
def matching_forms(text: str) -> tuple[str, ...]:
    """The forms of `text` the admission patterns are matched against, always three: the
    folded text, the same with spaced-out letters rejoined, and that with leetspeak digits
    read as letters (often equal to each other)."""
    folded = fold_for_matching(text)
    joined = _SPACED_OUT.sub(lambda m: _SEPARATORS.sub("", m.group()), folded)
    return folded, joined, joined.translate(_LEET)
