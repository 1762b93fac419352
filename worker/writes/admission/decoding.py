"""Payloads hidden in a note: base64, hex, %-encoding and ROT13, decoded so the effect rules
can read them ("Decode and follow this: aWdub3Jl…").

Only what decodes to readable text counts: an order id or a hash is hex but decodes to noise,
and is left alone. Cheap checks first, so a plain note costs a few regex scans.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
from urllib.parse import unquote

_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2}[\s:]?){8,}")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
# Whole words in any script: "prélèvement" is one word, not "pr" and "vement".
_WORD = re.compile(r"[^\W\d_]+")
_CJK = re.compile(r"[\u3400-\u9fff]")
_PUNCTUATION = frozenset(".,:;!?'\"-@/()+%€$#&*_=<>[]，。：；！？、（）“”")
_ROT13_NAMED = re.compile(r"\brot[\W_]?13\b|\bcaesar\b|\bc[eé]sar\b", re.IGNORECASE)
# Frequent short words of en, de, fr, es: ROT13 text has few of them, its decoding many.
_COMMON = frozenset(" ".join((
    "the and to of you your is in it for on all that this be are with as or not send ask a i me "
    "my we from at by have will can do if what when who before after now every other user "
    "der die das und zu ist nicht du sie mit den ein eine alle an auf als aus dich mich sich "
    "nach vor wenn bei oder jeden wird wegen hat haben sein ihr ihre kein keine nur auch noch "
    "schon sehr immer alles "
    "le la les de et vous tu des un une est pas pour que tous toutes du au aux ce si sur dans "
    "avec il elle ils nous sont fait tout plus "
    "el los las y que en es por para con todos tu su a al del lo le se si como pero una uno "
    "esta este muy mas siempre",
)).split())
MAX_PAYLOADS = 4


def readable(text: str) -> bool:
    """Mostly letters and spaces, with at least two words: language, not noise."""
    if len(text) < 8:
        return False
    # Chinese has no spaces between words; other scripts do.
    if not any(ch.isspace() for ch in text.strip()) and len(_CJK.findall(text)) < 4:
        return False
    letters = sum(1 for ch in text if ch.isalpha())
    good = sum(1 for ch in text if ch.isalnum() or ch.isspace() or ch in _PUNCTUATION)
    controls = sum(1 for ch in text if unicodedata.category(ch) in ("Cc", "Co", "Cs", "Cn")
                   and ch not in "\n\t")
    return controls == 0 and good / len(text) >= 0.85 and letters / len(text) >= 0.4


def _utf8(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _from_base64(token: str) -> str | None:
    padded = token + "=" * (-len(token) % 4)
    try:
        raw = base64.b64decode(padded, altchars=b"-_" if ("-" in token or "_" in token)
                               else None, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _utf8(raw)


def _from_hex(token: str) -> str | None:
    digits = re.sub(r"[\s:]", "", token)
    if len(digits) % 2:
        digits = digits[:-1]
    try:
        return _utf8(bytes.fromhex(digits))
    except ValueError:
        return None


def _common_words(text: str) -> int:
    return sum(1 for word in _WORD.findall(text.casefold()) if len(word) > 1 and word in _COMMON)


def decoded_payloads(text: str) -> list[tuple[str, str]]:
    """(encoding, decoded text) for every readable payload, at most MAX_PAYLOADS."""
    found: list[tuple[str, str]] = []
    for match in _BASE64.finditer(text):
        token = match.group().rstrip("=")
        # Words and ids are rarely base64 of text: they lack its mix of cases and digits.
        if token.isalpha() and (token.islower() or token.isupper()):
            continue
        decoded = _from_base64(match.group())
        if decoded and readable(decoded):
            found.append(("base64", decoded))
    for match in _HEX.finditer(text):
        decoded = _from_hex(match.group())
        if decoded and readable(decoded):
            found.append(("hex", decoded))
    if len(_PERCENT.findall(text)) >= 3:
        decoded = unquote(text)
        if decoded != text:
            found.append(("percent", decoded))
    if re.search(r"[A-Za-z]{4,}", text):
        rotated = codecs.encode(text, "rot13")
        if _ROT13_NAMED.search(text) or _common_words(rotated) >= max(2, _common_words(text) + 2):
            found.append(("rot13", rotated))
    return found[:MAX_PAYLOADS]
