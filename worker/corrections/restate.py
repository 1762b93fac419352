"""Restatements the span alignment misreads, and schedules that refine a frequency.

The aligner compares notes in word order, so a sentence turned around ("Dec 20 is when the
deployment freeze begins" / "The deploy freeze starts December 20", "Cilantro isn't something
the user enjoys" / "User doesn't like cilantro") looks like a changed subject. When every content
word of each note is matched in the other (stems, synonyms, number notations are already folded
by `parse`) and what is left over is only cleft scaffolding ("where", "when",
"something"), the notes say the same thing. Word sets that match can still hide swapped roles
("Alice manages Bob" / "Bob manages Alice"), so two named things that trade places without a
passive "by" block the rule.

A frequency made concrete ("a weekly call" -> "a call every Sunday at 6 p.m.", "backed up
nightly" -> "backed up at 2 am") adds detail without changing the fact, but only when the new
detail fits the frequency: a weekday fits "weekly" and not "daily" ("daily standup" -> "standup
on Mondays" is a correction).
"""

from __future__ import annotations

import re

from worker.corrections import lexicon, parse
from worker.corrections.parse import Note as _Note

_GENERIC = parse.GENERIC
# Words a cleft or pseudo-cleft brings in ("X is where ...", "Y is something the user ...",
# "Z is how I learn"): they carry no content of their own.
CLEFT_FILLERS = lexicon.keys(frozenset({"where", "when", "something", "what", "how"}))
_SCAFFOLD = CLEFT_FILLERS | lexicon.keys(frozenset({"have", "get", "do", "make"})) | {
    parse.PRED, parse.BE}
_BY = "@by"
_WEEKLY = lexicon.keys(frozenset({"weekly"}))
_DAILY = lexicon.keys(frozenset({"daily", "nightly", "night"}))
_FREQUENCY = _WEEKLY | _DAILY | lexicon.keys(
    frozenset({"monthly", "yearly", "hourly", "quarterly"}))
# (a bare number is no time of day: "two walks daily")
_CLOCK = re.compile(r"^\d{1,2}(?::\d\d)?(?:am|pm)$|^\d{1,2}:\d\d$")


def _name_order(note: _Note, names: frozenset[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t for t in note.tokens if t in names))


def reordered_restatement(old: _Note, new: _Note, e_only: frozenset[str],
                          l_only: frozenset[str]) -> bool:
    """Both notes hold the same content words, in another order or with cleft scaffolding."""
    if old.negated != new.negated or (old.rejected | new.rejected):
        return False
    # Only scaffolding may be left over: a generic noun is still content ("Italian food" /
    # "Italian music" differ though both nouns are generic).
    if (e_only | l_only) - _SCAFFOLD:
        return False
    if not (old.content & new.content) - _GENERIC:
        return False  # only generic words in common: nothing to restate
    # (the fillers stand in a cleft only; "User works where she lives" has no copula)
    if (l_only & CLEFT_FILLERS and parse.BE not in new.tokens) or (
            e_only & CLEFT_FILLERS and parse.BE not in old.tokens):
        return False
    names = old.names & new.names
    if len(names) >= 2 and _BY not in old.tokens and _BY not in new.tokens:
        # "Alice manages Bob" / "Bob manages Alice": the same words, other roles
        return _name_order(old, names) == _name_order(new, names)
    return True


def scheduled(old: _Note, new: _Note, e_only: frozenset[str], l_only: frozenset[str]) -> bool:
    """The later note replaces a frequency of the earlier with a time that fits it."""
    gone = e_only - _GENERIC
    if not gone or not gone <= _FREQUENCY or old.negated or new.negated:
        return False
    if l_only & _FREQUENCY:
        return False  # another frequency: a change, not a detail
    days = {t for t in l_only if "weekday" in lexicon.value_classes(t)}
    clocks = {t for t in l_only if _CLOCK.match(t) and t not in days}
    if gone <= _WEEKLY:
        return len(days) == 1  # one weekday a week
    if gone <= _DAILY:
        return bool(clocks) and not days  # a time of day, every day
    return False
