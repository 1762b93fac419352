"""What the detector answers: a relation, a confidence, and the names of the signals behind it;
the thresholds that turn it into "replace the earlier note"."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Relation(StrEnum):
    CORRECTION = "correction"
    PARAPHRASE = "paraphrase"
    REFINEMENT = "refinement"
    DISTINCT = "distinct"


@dataclass(frozen=True)
class Verdict:
    relation: Relation
    confidence: float  # 0..1
    signals: tuple[str, ...]  # names of the signals that fired; never note text


# A verdict replaces the earlier note only at or above this confidence. Rules whose evidence is
# structural score >= 0.65; guesses (dropped detail, predicate change) score below it.
SUPERSEDE_MIN_CONFIDENCE = 0.6
# MiniLM cosine from which notes that differ in several places count as restatements. Distinct
# pairs reach 0.84 ("speaks German" / "is learning German", caught structurally first) and
# 0.81 ("Google Calendar at work" / "Apple Calendar at home"); restatements mostly exceed 0.85.
PARAPHRASE_MIN_SIMILARITY = 0.85
# When only the verb differs MiniLM mostly measures the shared rest ("speaks German" / "is
# learning German" = 0.84, "watches" / "plays football on Sundays" = 0.89), so a restatement
# needs a much higher cosine. A single swapped value ("MacBook Pro" / "MacBook Air" = 0.92)
# never counts as a restatement by similarity.
PREDICATE_CHANGE_MIN_SIMILARITY = 0.92
# Below this cosine the notes share no meaning; a marker plus a shared word is then a
# coincidence ("actually" about something else), not a correction.
UNRELATED_MAX_SIMILARITY = 0.25


def verdict(relation: Relation, confidence: float, signals: list[str]) -> Verdict:
    """A well-formed verdict: confidence clamped to 0..1, each signal named once, in order."""
    confidence = round(min(1.0, max(0.0, confidence)), 3)
    return Verdict(relation, confidence, tuple(dict.fromkeys(signals)))


def supersedes(verdict: Verdict) -> bool:
    """Whether the later note should replace the earlier one (one rule for every caller)."""
    return verdict.relation is not Relation.DISTINCT and (
        verdict.confidence >= SUPERSEDE_MIN_CONFIDENCE
    )
