"""Which effect patterns could match a note at all, found in one pass over its words.

Scanning a note with a hundred alternation-heavy patterns costs most of a millisecond, and
nearly every note matches none of them. Each pattern has a set of literal strings one of
which every match must contain (the alternatives of "\\b(?:send|forward\\w*|mail)\\b" give
"send", "forwar", "mail"); a pattern none of whose strings occurs in the note cannot match
and is not run. The strings are derived from the parsed pattern, so the data file stays the
only place the rules are written; a pattern with no such set (every element optional or a
character class) has no prefilter and always runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

MAX_FACTOR = 6  # a longer literal adds nothing: its first six characters must occur too
_CACHE_WORDS = 50_000
_WORDS = re.compile(r"\w+")


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _best(candidates: list[frozenset[str]]) -> frozenset[str] | None:
    """The most selective of several factor sets that are each required: longest shortest
    member, then fewest members."""
    if not candidates:
        return None
    return max(candidates, key=lambda found: (min(map(len, found)), -len(found)))


def _factors(items: Iterable[tuple[Any, Any]]) -> frozenset[str] | None:
    """Word-character strings one of which every match of the parsed sequence contains, or
    None. Each element that a match cannot skip (a literal run, a group, a repeat of at least
    one) gives such a set; the most selective one is kept."""
    candidates: list[frozenset[str]] = []
    run = ""
    for op, av in items:
        if op is sre.LITERAL and _is_word(ch := chr(av).casefold()) and len(ch) == 1:
            run += ch
            continue
        if run:
            candidates.append(frozenset({run[:MAX_FACTOR]}))
            run = ""
        if op is sre.AT:
            continue
        found: frozenset[str] | None = None
        if op is sre.BRANCH:
            branches = [_factors(branch) for branch in av[1]]
            if all(b is not None for b in branches):
                found = frozenset().union(*branches)  # type: ignore[arg-type]
        elif op is sre.SUBPATTERN:
            found = _factors(av[3])
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and av[0] >= 1:
            found = _factors(av[2])
        if found:
            candidates.append(found)
    if run:
        candidates.append(frozenset({run[:MAX_FACTOR]}))
    return _best(candidates)


def literal_factors(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """Strings one of which occurs in every match, or None when there is no such set."""
    try:
        return _factors(sre_parse.parse(pattern.pattern, pattern.flags))
    except Exception:  # an unusual construct: no prefilter, the pattern always runs
        return None


class Prefilter:
    """Built once for a set of patterns; `possible(form)` says which of them could match."""

    def __init__(self, patterns: Iterable[re.Pattern[str]]) -> None:
        self.always: set[int] = set()
        self.by_factor: dict[str, list[int]] = {}
        self.stems: set[str] = set()  # every beginning of a factor, to stop a scan early
        # Words recur from note to note: what each one can wake is worked out once.
        self._cache: dict[str, frozenset[int]] = {}
        for pattern in patterns:
            key = id(pattern)
            factors = literal_factors(pattern)
            if factors is None:
                self.always.add(key)
                continue
            for factor in factors:
                self.by_factor.setdefault(factor, []).append(key)
                self.stems.update(factor[:n] for n in range(1, len(factor) + 1))

    def _word_keys(self, word: str) -> frozenset[int]:
        stems, by_factor = self.stems, self.by_factor
        keys: set[int] = set()
        for start in range(len(word)):
            end = start + 1
            while end <= len(word) and end - start <= MAX_FACTOR:
                piece = word[start:end]
                if piece not in stems:
                    break
                found = by_factor.get(piece)
                if found:
                    keys.update(found)
                end += 1
        return frozenset(keys)

    def possible(self, form: str) -> set[int]:
        """The ids of the patterns that could match `form` (which is lower case)."""
        found = set(self.always)
        cache = self._cache
        for word in set(_WORDS.findall(form)):
            keys = cache.get(word)
            if keys is None:
                if len(cache) >= _CACHE_WORDS:  # bounded: unusual words cannot grow it
                    cache.clear()
                keys = cache[word] = self._word_keys(word)
            found.update(keys)
        return found
