"""Numbers, amounts and clock times for the correction detector, folded into one written form
before anything else reads a note: "five hundred dollars" = "$500" = "500 usd", "half past
nine" = "9:30", "18:00" = "6pm".

Two notes that state one amount or one time in different notations must meet as the same
tokens; otherwise the aligner sees a rival value ("6 pm" / "18:00") and calls a restatement a
correction. Pure text rewriting on the lower-cased note (`patterns.prepare_text`); the number
words are data (`data/numbers.tsv`).
"""

from __future__ import annotations

import re

from worker.corrections import vocabulary

_UNITS = {word: int(value) for word, value in vocabulary.NUMBERS["cardinal"].items()}
_TENS = {word: int(value) for word, value in vocabulary.NUMBERS["tens"].items()}
_SCALES = {word: int(value) for word, value in vocabulary.NUMBERS["scale"].items()}
_WORD = "|".join((*_UNITS, *_TENS, *_SCALES))
# A run of number words that needs composing: a tens word with a unit ("twenty-five") or any
# run with a scale word ("two hundred", "a thousand", "one hundred and fifty"). A lone unit
# ("five") is left to the lexicon, which maps it to a digit.
_RUN = re.compile(rf"\b(?:a |an )?(?:(?:{_WORD})(?:[ -]|,? and ))*(?:{_WORD})\b")

_CURRENCY = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy"}
_SYMBOL_AMOUNT = re.compile(r"([$€£¥])\s?(\d[\d,]*(?:\.\d+)?)(k\b)?")
# Only after an amount: "the Milwaukee Bucks" are a team.
_BUCKS = re.compile(r"(?<=\d) ?bucks\b|\bus dollars?\b")

_HOURS = {w: n for w, n in _UNITS.items() if 1 <= n <= 12}
_HOUR = rf"(\d{{1,2}}|{'|'.join(_HOURS)})"
_PAST = re.compile(rf"\b(half|quarter|a quarter|ten|twenty|five) past {_HOUR}\b")
_TO = re.compile(rf"\b(quarter|a quarter|ten|twenty|five) to {_HOUR}\b")
_SPOKEN = re.compile(rf"\bat {_HOUR} (fifteen|thirty|forty[- ]five)\b")
# An hour said in words before its part of the day: "seven in the morning" = "7 in the morning".
_WORD_HOUR = re.compile(rf"\b({'|'.join(_HOURS)})(?= (?:in the (?:morning|afternoon|evening)|at "
                        r"night|o'?clock|a\.?m\b|p\.?m\b))")
_H24 = re.compile(r"\b(1[3-9]|2[0-3])[:.h]([0-5]\d)\b(?!\s*(?:am|pm|a\.m|p\.m))")
_MINUTES = {"half": 30, "quarter": 15, "a quarter": 15, "ten": 10, "twenty": 20, "five": 5,
            "fifteen": 15, "thirty": 30, "forty five": 45, "forty-five": 45}


# Thousands separators ("$10,000" = "10000 dollars"), dotted meridiems ("2 p.m." = "2pm") and
# ordinals after "the" ("the second floor" = "the 2nd floor"): one notation for each.
# One notation per release: "version 2", "v2.0" and "v2" are one version (never a bare "2.0",
# which may be an amount).
_VERSION = re.compile(r"\b(?:version|ver\.?)\s*(\d+)((?:\.\d+)*)\b|\bv(?=\d)(\d+)((?:\.\d+)*)\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_MERIDIEM = re.compile(r"\b(\d{1,2}(?::[0-5]\d)?)\s*([ap])\.\s?m\b\.?")
_ORDINALS = vocabulary.NUMBERS["ordinal"]
# ("the first person" of a narrative is no count: "first-person" keeps it as it is)
_ORDINAL = re.compile(rf"\bthe ({'|'.join(_ORDINALS)})\b(?![- ]person)")


def _value(words: list[str]) -> int | None:
    total, current = 0, 0
    for word in words:
        if word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word in _SCALES:
            total += max(current, 1) * _SCALES[word]
            current = 0
        elif word in ("a", "an"):
            current = max(current, 1)
    return total + current


def _compose(match: re.Match[str]) -> str:
    words = [w for w in re.split(r"[ ,-]+", match.group(0)) if w and w != "and"]
    composite = any(w in _SCALES for w in words) or (
        len(words) >= 2 and words[0] in _TENS and words[1] in _UNITS)
    if not composite or (words[-1] in _SCALES and words[0] in _SCALES):
        return match.group(0)  # "hundreds", a bare "thousand": not an amount
    value = _value(words)
    return f" {value} " if value is not None else match.group(0)


def _hour(raw: str) -> int:
    return _HOURS.get(raw) or int(raw)


def _clock(hour: int, minute: int) -> str:
    return f"{hour}:{minute:02d}" if minute else f"{hour}"


def _version(match: re.Match[str]) -> str:
    major, minor = (match.group(1), match.group(2)) if match.group(1) else match.group(3, 4)
    parts = [major, *minor.split(".")[1:]]
    while len(parts) > 1 and int(parts[-1]) == 0:
        parts.pop()  # "2.0" and "2.0.0" name release 2
    return "v" + ".".join(parts)


def one_notation(text: str) -> str:
    """One notation per amount, clock time and version (lower-cased text in and out)."""
    text = _VERSION.sub(_version, text)
    text = _THOUSANDS.sub("", text)
    text = _MERIDIEM.sub(lambda m: f"{m.group(1)}{m.group(2)}m", text)
    text = _ORDINAL.sub(lambda m: f"the {_ORDINALS[m.group(1)]}", text)
    text = _PAST.sub(lambda m: _clock(_hour(m.group(2)), _MINUTES[m.group(1)]), text)
    text = _TO.sub(lambda m: _clock((_hour(m.group(2)) - 2) % 12 + 1,
                                    60 - _MINUTES[m.group(1)]), text)
    text = _SPOKEN.sub(lambda m: "at " + _clock(_hour(m.group(1)),
                                               _MINUTES[m.group(2).replace("-", " ")]), text)
    text = _WORD_HOUR.sub(lambda m: str(_HOURS[m.group(1)]), text)
    # 24-hour clock as the 12-hour one the lexicon reads ("18:00" = "6pm").
    text = _H24.sub(lambda m: f"{int(m.group(1)) - 12}"
                    + (f":{m.group(2)}" if m.group(2) != "00" else "") + "pm", text)
    text = _RUN.sub(_compose, text)
    text = _BUCKS.sub(" dollars ", text)
    return _SYMBOL_AMOUNT.sub(
        lambda m: f" {m.group(2)}{'000' if m.group(3) else ''} {_CURRENCY[m.group(1)]} ", text)
