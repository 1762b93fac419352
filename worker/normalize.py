"""Text normalization shared by within-run idempotency and exact-restatement dedupe.

NFKC, case-fold, collapse whitespace, strip trailing punctuation: "Dark mode." == "dark  MODE".
Only punctuation is stripped, not symbols, so "UTC+1" and "UTC+2" stay different.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

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

# Letters from other scripts that look like Latin ones (after case folding). NFKC folds
# full-width and mathematical letters already; these it leaves alone.
_HOMOGLYPHS = str.maketrans({
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d",
    "ԛ": "q", "ԝ": "w", "ӏ": "l", "һ": "h", "ɡ": "g", "ү": "y", "ѵ": "v", "ԍ": "g",
    # Greek
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "γ": "y", "ω": "w", "ς": "s", "σ": "o", "η": "n", "μ": "u",
    # Latin look-alikes NFKD does not decompose
    "ı": "i", "ł": "l", "ø": "o", "đ": "d", "ɑ": "a", "ʀ": "r", "ɪ": "i", "ʏ": "y", "ß": "ss",
    "ɩ": "i", "ɔ": "c", "ǝ": "e",
})

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
    decomposed = unicodedata.normalize("NFKD", visible.casefold())
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    latin = unicodedata.normalize("NFKC", bare.translate(_HOMOGLYPHS)).casefold()
    return _WHITESPACE.sub(" ", latin).strip()


def matching_forms(text: str) -> tuple[str, ...]:
    """The forms of `text` the admission patterns are matched against, always three: the
    folded text, the same with spaced-out letters rejoined, and that with leetspeak digits
    read as letters (often equal to each other)."""
    folded = fold_for_matching(text)
    joined = _SPACED_OUT.sub(lambda m: _SEPARATORS.sub("", m.group()), folded)
    return folded, joined, joined.translate(_LEET)
