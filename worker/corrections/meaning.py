"""Meaning relations between two parsed notes that word overlap misses, for the correction
detector (`worker.corrections`): a member that implies its category ("plays the cello" implies
"plays an instrument"), an acronym beside its expansion ("IBM" / "International Business
Machines"), and a changed date or weekday that names another occasion rather than a corrected
one ("visited Japan in 2019" / "in 2023", "is in the office on Wednesdays" / "on Thursdays").

Each function takes parsed notes (`parse.Note`) or the words only one of them has,
and answers one question; `corrections._decide` weighs the answers.
"""

from __future__ import annotations

import re
from dataclasses import replace

from worker.corrections import lexicon, parse, vocabulary
from worker.corrections.parse import Note as _Note

_YEAR = re.compile(r"^(?:1[89]|20)\d\ds?$")
# Prepositions before a year that close or place a past span ("until 2019", "in 2015").
_CLOSING = frozenset({"@to", "@in", "@until", "@till", "@through", "@from", "@since"})
_DATE_CLASSES = frozenset({"month", "season", "weekday"})
# Words that only place a date ("last summer", "two years ago"); they come and go with it.
_DATE_WORDS = lexicon.keys(frozenset(vocabulary.WORD_SETS["date-word"]))
_DAY_CLASSES = frozenset({"weekday", "daypart"})
# The verb forms of a trip told as a plan ("is going back to", "heads back to").
_GOING = lexicon.keys(frozenset({"go", "going", "head", "return", "fly", "travel", "visit", "@to"}))
_HAVE = lexicon.canon("have")
_INNER = frozenset({"@of", "@for", "@and"})  # "Bank of America" = BoA


def dated(token: str) -> bool:
    """A year, month, season or weekday: the date of something."""
    return bool(_YEAR.match(token) or lexicon.value_classes(token) & _DATE_CLASSES)


def dating(token: str) -> bool:
    """A date or a word that only places one ("last spring", "two years ago")."""
    return dated(token) or token in _DATE_WORDS


def another_occasion(old: _Note, new: _Note, e_only: frozenset[str],
                     l_only: frozenset[str]) -> bool:
    """Both notes tell a repeatable past event ("went to Lisbon", "ran the marathon") and only
    its date differs: two trips, not a corrected one. Both can hold."""
    changed = (e_only | l_only) - parse.GENERIC
    # "went to Paris in 2022" / "is going back to Paris in 2025": a return is another visit.
    returning = "back" in new.markers and not new.negated
    return old.event and (new.event or returning) and any(map(dated, e_only)) and any(
        map(dated, l_only)) and all(dated(t) or t in _DATE_WORDS or (returning and t in _GOING)
                                    for t in changed)


# An intention ("aimed to finish by March", "plans to visit Rome"): what then happened is
# another fact beside it.
# A goal is one too, and anything done in the past beside it is an outcome ("savings goal this
# year is $12,000" / "saved $9,500 last year"); a "plan" may be a subscription ("Spotify plan"
# / "downgraded to Spotify Individual"), so it takes a repeatable event.
_GOALS = lexicon.keys(frozenset(vocabulary.WORD_SETS["goal"]))
_INTENT = lexicon.keys(frozenset(vocabulary.WORD_SETS["intent"])) | _GOALS
# A recurring schedule, and the words that open a note about one occurrence of it ("This
# month's dinner", "Today's standup").
_RECURRING = lexicon.keys(frozenset(vocabulary.WORD_SETS["recurring"]))
_OCCURRENCE = lexicon.keys(frozenset(vocabulary.WORD_SETS["occurrence"]))


def plan_and_outcome(old: _Note, new: _Note) -> bool:
    """The earlier note tells an intention and the later one what happened ("The team aimed
    to finish the migration by March" / "The migration was completed in May"): both hold."""
    intent = set(old.tokens) & _INTENT
    return bool(intent) and (new.event or (new.past and bool(intent & _GOALS))) and not (
        set(new.tokens) & _INTENT)


def other_period(old: _Note, new: _Note) -> bool:
    """One note is scoped to this period and the other to the last ("reading goal this year
    is 30 books" / "read 22 books last year")."""
    periods = ("this_period", "last_period")
    return any(a in old.markers and b in new.markers and a not in new.markers
               and b not in old.markers for a, b in (periods, periods[::-1]))


def ended_state(old: _Note, new: _Note) -> bool:
    """The earlier note tells, in the past, of a span that ended ("lived in Madrid from 2015
    to 2019", "until 2019", "in 2015") and the later one tells the present without that
    span."""
    if not old.past or new.past:
        return False
    years = [i for i, t in enumerate(old.tokens) if _YEAR.match(t)]
    return any(i > 0 and old.tokens[i - 1] in _CLOSING and old.tokens[i] not in new.tokens
               for i in years)


def one_occurrence(old: _Note, new: _Note) -> bool:
    """A recurring thing and one occurrence of it ("Dinner with the in-laws is on the first
    Sunday of every month" / "This month's dinner was cancelled"): the exception leaves the
    habit standing."""
    return bool(set(old.tokens) & _RECURRING) and not set(new.tokens) & _RECURRING and (
        bool(new.tokens) and new.tokens[0] in _OCCURRENCE)


def another_day(old: _Note, new: _Note, e_only: frozenset[str], l_only: frozenset[str]) -> bool:
    """The user's own habit on another day ("works from home on Tuesdays" / "on Thursdays"):
    people do one thing on several days, so both can hold. A scheduled thing that is the
    subject ("the standup is on Mondays") has one day, and so has an appointment the user has
    ("has piano lessons on Tuesdays"): those days compete."""
    changed = (e_only | l_only) - parse.GENERIC
    days = [bool(lexicon.value_classes(t) & _DAY_CLASSES) for t in changed]
    weekday = any(lexicon.value_classes(t) & {"weekday"} for t in changed)
    first = [next((t for t in n.tokens if parse.is_content(t)), "") for n in (old, new)]
    chosen = (old.verbs | new.verbs) & parse.EXCLUSIVE_PREF  # "prefers Monday deadlines": one
    return bool(days) and all(days) and weekday and bool(e_only) and bool(l_only) and (
        old.own and new.own) and _HAVE not in first and not chosen


def _covers(general: str, specific: str) -> bool:
    return general == specific or specific in lexicon.HYPONYMS.get(general, frozenset())


def implies(old: _Note, new: _Note) -> bool:
    """The later note says everything the earlier one does, naming a member where the earlier
    named its category: "child plays an instrument" <- "son plays the cello in an orchestra",
    "has a pet bird" <- "has a conure named Kiwi". Every earlier token, in order, is met by the
    same token or a member of it (one member may stand for a compound category, "pet bird"),
    at least one by a member; the verbs are of one family. Negated notes entail the other way
    round and are left out."""
    if old.negated or new.negated or bool(old.verbs & parse.PREF) != bool(new.verbs & parse.PREF):
        return False
    if new.tokens and new.tokens[0] in parse.PERSON and not (
            old.tokens and _covers(old.tokens[0], new.tokens[0])):
        return False  # "User's neighbor has a Siamese cat" is about someone else
    later, at, by_member = new.tokens, -1, False
    for token in old.tokens:
        if at >= 0 and later[at] != token and _covers(token, later[at]):
            continue  # "pet bird" <- "conure": one member covers both categories
        at = next((j for j in range(at + 1, len(later)) if _covers(token, later[j])), -1)
        if at < 0:
            return False
        by_member |= later[at] != token or (  # "a pet" <- "a pet rabbit"
            at + 1 < len(later) and later[at + 1] in lexicon.HYPONYMS.get(token, frozenset()))
    return by_member


def _expansion(tokens: tuple[str, ...], letters: str) -> tuple[int, int] | None:
    """Where a run of content words spells `letters` by their initials."""
    for start, first in enumerate(tokens):
        if not parse.is_content(first) or first[0] != letters[0]:
            continue
        spelled, end = "", start
        while end < len(tokens) and len(spelled) < len(letters):
            token = tokens[end]
            if token in _INNER and spelled and end + 1 < len(tokens):
                end += 1
                continue
            if not parse.is_content(token):
                break
            spelled, end = spelled + token[0], end + 1
        if spelled == letters and end - start >= 2:
            return start, end
    return None


def _same_context(a: tuple[str, ...], a_start: int, a_end: int, b: tuple[str, ...],
                  b_start: int, b_end: int) -> bool:
    """The acronym and its expansion stand in the same place: the same word before or after
    ("works at IBM" / "works at International Business Machines"), not a coincidence of
    initials elsewhere ("go-to cloud provider" is no GCP)."""
    before = a_start > 0 and b_start > 0 and a[a_start - 1] == b[b_start - 1]
    after = a_end < len(a) and b_end < len(b) and a[a_end] == b[b_end]
    return before or after


def _fold(target: _Note, source: _Note) -> _Note:
    for acronym in source.acronyms:
        token = lexicon.canon(acronym)
        if token not in source.tokens or token in target.tokens:
            continue
        span = _expansion(target.tokens, acronym)
        at = source.tokens.index(token)
        if span is not None and _same_context(source.tokens, at, at + 1, target.tokens, *span):
            start, end = span
            target = replace(target, tokens=(*target.tokens[:start], token,
                                             *target.tokens[end:]))
    return target


def fold_acronyms(a: _Note, b: _Note) -> tuple[_Note, _Note]:
    """An acronym one note writes in capitals ("NDA") replaces the words the other note spells
    it out with ("non disclosure agreement"), so the two meet as one token."""
    if not (a.acronyms or b.acronyms):
        return a, b
    return _fold(a, b), _fold(b, a)
