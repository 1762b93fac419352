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
