"""Does a later memory note correct, restate, refine, or sit beside an earlier one?

Embedding similarity cannot tell: MiniLM scores "prefers dark mode" / "prefers light mode" (a
correction) 0.87 and "prefers bar charts" / "prefers dark backgrounds on charts" (two facts)
0.66. So the detector reads structure. Both notes become canonical token sequences (`parse`:
first and third person folded, inflections, number words, synonyms, light verbs ("goes
running" = "runs") and equivalent idioms unified), are aligned, and the difference is judged:
an explicit rejection ("Mochi, not Miso"), a polarity reversal ("no longer vegetarian") unless
the negation agrees with what the earlier note already spoke against ("bars over pies" / "no
pies"), a swapped comparison, one short span replaced by a rival value of the same closed class
(blue -> red, mild -> hot) or a rival verb ("rents" -> "owns"), or in a one-value slot ("lives
in X", "<slot> is X"), a named thing of one kind (banks, brands, airlines...) replaced only
with a marker or in such a slot, correction markers ("actually", "switched to", "now") that
count only with a shared topic word or the same verb, added detail (refinement) or nothing
(paraphrase); words that only moved ("car service is due") change nothing. Other verbs
("works" / "works out"), other heads ("a window" / "a window seat"), other holders ("the dog's
vet"), swapped roles ("from London to Paris") and other objects of one habit ("checks email at
9" / "checks Slack at 9") are distinct, and so is a marker about another subject, another kind
of the thing, a situation the earlier note already placed in the past ("used Windows at the
old job" / "now uses macOS"), a plan beside what happened or a habit beside one cancelled
occurrence. A member implies its category ("plays the cello" refines "plays an instrument"),
an acronym equals its expansion, a changed date of a repeatable past event is another
occasion ("visited Japan in 2019" / "in 2023"). Similarity, when given, only breaks ties, and
never between two content verbs ("learns" / "teaches Spanish"). The default is DISTINCT:
merging two facts loses a memory, keeping a duplicate costs little. Pure and fast: regexes and
a difflib alignment.

Modules: `verdict` (the answer's shape, the thresholds) · `decision` (`DECISION_RULES`, the
ordered tuple of small named rules) · `claims` (the rules on what the notes assert: sameness,
rejections, polarity, meaning, rival values) · `wording` (the rules on where their words
differ) · `pair` (what the rules read of a pair) · `rules` (the structural questions: slots,
holders, phrasal verbs, heads) · `meaning` (categories, acronyms, occasions, periods) ·
`restate` (sentences turned around, frequencies made concrete) · `parse` (canonical tokens) ·
`align` (the spans where two notes differ) · `patterns` (markers, rewrites) · `numbers`
(amounts and clock times written one way) · `lexicon` (word classes, stems, canonical forms) ·
`vocabulary` (loads `data/*.tsv`: the curated vocabulary, one fact a line with its domain;
frozen — a change must raise the score on a set written blind after it) · `business`
(environment names).

This module is the whole public surface: `classify`, `supersedes`, `Relation`, `Verdict` and
the thresholds.
"""

from __future__ import annotations

from worker.corrections.decision import decide
from worker.corrections.parse import parse
from worker.corrections.verdict import (
    PARAPHRASE_MIN_SIMILARITY,
    PREDICATE_CHANGE_MIN_SIMILARITY,
    SUPERSEDE_MIN_CONFIDENCE,
    Relation,
    Verdict,
    supersedes,
)

__all__ = ["PARAPHRASE_MIN_SIMILARITY", "PREDICATE_CHANGE_MIN_SIMILARITY",
           "SUPERSEDE_MIN_CONFIDENCE", "Relation", "Verdict", "classify", "supersedes"]


def classify(earlier: str, later: str, similarity: float | None = None) -> Verdict:
    """How `later` relates to `earlier` (both short memory notes of one scope).

    `similarity` is the cosine of the two notes' embeddings (all-MiniLM-L6-v2 by default);
    without it the verdict rests on structure alone.
    """
    return decide(parse(earlier), parse(later), similarity)
