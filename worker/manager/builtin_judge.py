"""The deterministic built-in judge: no network, no model, the embedded default.

Pairs: exact restatement after normalization is a duplicate; otherwise the correction
detector (`worker.corrections`: token alignment, correction markers, polarity flips, topic
nouns, embedding similarity) decides, and says `UNSURE` below its confidence bar.
Extraction: explicit first-person statements ("I prefer…", "my timezone is…", "call me…")
and rating comments. Consolidation: only clusters whose members all restate one fact; the most
specific (longest) statement is kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import combinations

from db.enums import NoteType
from worker.corrections import Relation, classify, supersedes
from worker.manager.judge import (
    ExtractedCandidate,
    Extraction,
    MessageView,
    PairRelation,
    PairVerdict,
)
from worker.normalize import normalize_text

# A "distinct" the detector is not this sure of is left to the model judge (when there is one).
DISTINCT_MIN_CONFIDENCE = 0.8

_RELATIONS = {
    Relation.CORRECTION: PairRelation.CONTRADICTION,
    Relation.PARAPHRASE: PairRelation.DUPLICATE,
    Relation.REFINEMENT: PairRelation.REFINEMENT,
}

# Explicit statements: (pattern over one sentence, note template, type, confidence).
# Templates are third person so extracted notes read like every other note.
_STATEMENTS: list[tuple[re.Pattern[str], str, NoteType, int]] = [
    (re.compile(r"^(?:i|we)\s+(?:really\s+|much\s+|strongly\s+)?prefer\s+(?P<x>.+)$", re.I),
     "User prefers {x}", NoteType.PREFERENCE, 92),
    (re.compile(r"^(?:i|we)\s+(?:really\s+)?(?:like|love|enjoy)\s+(?P<x>.+)$", re.I),
     "User likes {x}", NoteType.PREFERENCE, 88),
    (re.compile(r"^(?:i|we)\s+(?:really\s+)?(?:hate|dislike|can't stand|cannot stand|"
                r"don't like|do not like)\s+(?P<x>.+)$", re.I),
     "User dislikes {x}", NoteType.PREFERENCE, 88),
    (re.compile(r"^(?:please\s+)?(?:always)\s+(?P<x>.+)$", re.I),
     "User asks to always {x}", NoteType.PREFERENCE, 85),
    (re.compile(r"^(?:please\s+)?(?:never|don't ever|do not ever)\s+(?P<x>.+)$", re.I),
     "User asks to never {x}", NoteType.PREFERENCE, 85),
    (re.compile(r"^my\s+(?P<slot>name|time ?zone|role|job title|title|email|email address|"
                r"preferred language|language|(?:favou?rite|preferred)\s+[a-z]+)\s+is\s+"
                r"(?P<x>.+)$", re.I),
     "User's {slot} is {x}", NoteType.CONTEXT, 92),
    (re.compile(r"^(?:please\s+)?call\s+me\s+(?P<x>.+)$", re.I),
     "User wants to be called {x}", NoteType.PREFERENCE, 90),
    (re.compile(r"^i\s+(?:live|am based|'m based)\s+in\s+(?P<x>.+)$", re.I),
     "User lives in {x}", NoteType.CONTEXT, 88),
    (re.compile(r"^i\s+work\s+(?P<rel>at|for|as|on)\s+(?P<x>.+)$", re.I),
     "User works {rel} {x}", NoteType.CONTEXT, 88),
]

_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_EDGE_PUNCT = " \t\"'“”‘’.,!?;:"


def _sentences(text: str) -> list[str]:
    return [s.strip(_EDGE_PUNCT) for s in _SENTENCE.split(text) if s.strip(_EDGE_PUNCT)]


def explicit_statements(text: str) -> list[tuple[str, NoteType, int]]:
    """Third-person notes for the explicit first-person statements in `text`."""
    found = []
    for sentence in _sentences(text):
        for pattern, template, note_type, confidence in _STATEMENTS:
            match = pattern.match(sentence)
            if match:
                parts = {k: v.strip(_EDGE_PUNCT) for k, v in match.groupdict().items()}
                found.append((template.format(**parts), note_type, confidence))
                break
    return found


class BuiltinJudge:
    name = "builtin"

    def compare(self, older: str, newer: str, similarity: float | None) -> PairVerdict:
        if normalize_text(older) == normalize_text(newer):
            return PairVerdict(PairRelation.DUPLICATE, 1.0, self.name)
        verdict = classify(older, newer, similarity)
        if verdict.relation is Relation.DISTINCT:
            sure = verdict.confidence >= DISTINCT_MIN_CONFIDENCE
            return PairVerdict(PairRelation.DISTINCT if sure else PairRelation.UNSURE,
                               verdict.confidence, self.name)
        if not supersedes(verdict):
            return PairVerdict(PairRelation.UNSURE, verdict.confidence, self.name)
        return PairVerdict(_RELATIONS[verdict.relation], verdict.confidence, self.name)

    def extract(self, messages: Sequence[MessageView], neighbours: Sequence[str]) -> Extraction:
        # Known notes are not filtered here: the extraction phase rejects duplicates itself, so
        # every rejection gets its disposition.
        known: set[str] = set()
        candidates: list[ExtractedCandidate] = []
        for message in messages:
            sources: list[tuple[str, int]] = []
            if message.role == "user":
                sources.append((message.text, 0))
            if message.rating is not None and message.rating_comment:
                # A rating comment is the user's own words about what they liked or not.
                bonus = 0 if (message.rating >= 8 or message.rating <= 3) else -10
                sources.append((message.rating_comment, bonus))
            for source, bonus in sources:
                for note, note_type, confidence in explicit_statements(source):
                    if normalize_text(note) in known:
                        continue
                    known.add(normalize_text(note))
                    candidates.append(ExtractedCandidate(
                        note=note, type=note_type.value, scope="user",
                        confidence=confidence + bonus, message_id=message.message_id))
        return Extraction(candidates)

    def consolidate(self, texts: Sequence[str]) -> str | None:
        if len(texts) < 2:
            return None
        for older, newer in combinations(texts, 2):
            relation = self.compare(older, newer, None).relation
            if relation not in (PairRelation.DUPLICATE, PairRelation.REFINEMENT):
                return None
        return max(texts, key=lambda t: (len(normalize_text(t)), t))
