"""Does a later memory note correct, restate, refine, or sit beside an earlier one?

Embedding similarity cannot tell: MiniLM scores "prefers dark mode" / "prefers light mode" (a
correction) 0.87 and "prefers bar charts" / "prefers dark backgrounds on charts" (two facts)
0.66. So the detector reads structure. Both notes become canonical token sequences
(`parse`: first and third person folded, inflections, number words, synonyms,
light verbs ("goes running" = "runs") and equivalent idioms unified from the curated
`synonyms` and `knowledge`), are aligned, and the difference is judged
(`rules` answers the structural questions): an explicit rejection ("Mochi, not
Miso"), a polarity reversal ("no longer vegetarian") unless the negation agrees with what the
earlier note already spoke against ("bars over pies" / "no pies"), a swapped comparison, one
short span replaced by a rival value of the same closed class (blue -> red, mild -> hot) or a
rival verb ("rents" -> "owns"), or in a one-value slot ("lives in X", "<slot> is X"), a named
thing of one kind (`entities`: banks, brands, airlines...) replaced only with a
marker or in such a slot, correction markers ("actually", "switched to", "now") that count only
with a shared topic word or the same verb, added detail (refinement) or nothing (paraphrase);
words that only moved ("car service is due") change nothing. Other verbs ("works" / "works
out"), other heads ("a window" / "a window seat"), other holders ("the dog's vet", "their
parents visit them"), swapped roles ("from London to Paris") and other objects of one habit
("checks email at 9" / "checks Slack at 9") are distinct, and so is a marker about another
subject ("Production runs Postgres 14" / "Staging was upgraded to 16"), another kind of the
thing ("feature branches" / "hotfix branches ... rather than a squash") or a situation the
earlier note already placed in the past ("used Windows at the old job" / "now uses macOS"),
and a plan beside what happened or a habit beside one cancelled occurrence.
Similarity, when given, only breaks ties, and never between two content verbs ("learns" /
"teaches Spanish"). `meaning`
adds what word overlap misses: a member that implies its category ("plays the cello" refines
"plays an instrument", "lives in Osaka" refines "lives in Japan"; the curated category knowledge
is in `categories`), an acronym beside its expansion, and a changed date of a repeatable
past event or a changed day of the user's own habit, which is another occasion, not a
correction ("visited Japan in 2019" / "in 2023"); `numbers` writes amounts and clock
times one way ("$500" = "five hundred dollars", "18:00" = "6 pm"); `vocabulary`
and `business` hold the everyday and the agent/business terms (abbreviations,
tools, environments); `restate` recognizes a sentence turned around ("Dec 20 is
when the freeze begins" / "the freeze starts December 20") and a frequency made concrete
("weekly" / "every Sunday at 6"). The default is
DISTINCT: merging two facts loses a memory, keeping a duplicate costs little. Pure and fast:
regexes and a difflib alignment.

The decision itself is `decision.DECISION_RULES`, an ordered tuple of small named rules over the
parsed pair; `verdict` holds the answer's shape and the thresholds. This module is the whole
public surface: `classify`, `supersedes`, `Relation`, `Verdict` and the thresholds.
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
