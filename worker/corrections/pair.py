"""One pair of parsed notes as the decision rules see it: the markers that count, the words
they share, the relocation rewrite, and what the observing steps recorded so far."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from worker.corrections import business, lexicon, meaning, patterns, rules
from worker.corrections.align import Block, blocks, class_union, content
from worker.corrections.parse import Note
from worker.corrections.verdict import (
    PARAPHRASE_MIN_SIMILARITY,
    PREDICATE_CHANGE_MIN_SIMILARITY,
    UNRELATED_MAX_SIMILARITY,
    Relation,
    Verdict,
    verdict,
)

# Span analysis is for sentence-length notes; longer ones (alignment grows quadratically) are
# judged by the set-based rules only, which never merge on a value swap.
MAX_ALIGNED_TOKENS = 64

GENERIC = rules.GENERIC
STRONG_NAMES = frozenset(name for name, _ in patterns.STRONG_MARKERS) | {"reversal"}
POSSESSION = lexicon.keys(frozenset({"have", "get", "own"}))
ENVIRONMENTS = lexicon.keys(frozenset(business.ENVIRONMENTS.split()))
# Markers that come with a rejected value ("switched from X", "replaced X with", "instead of X").
_REJECTING_MARKERS = frozenset({"switched", "changed_to", "instead"})


@dataclass
class Pair:
    """An earlier and a later note as the rules see them, with what the steps observed so far."""

    old: Note
    new: Note
    similarity: float | None
    fresh: frozenset[str]  # markers the later note brings
    rejected: frozenset[str]  # what the later note rejects, beyond what it asserts
    anchors: frozenset[str]  # content words both share (before the relocation rewrite)
    signals: list[str] = field(default_factory=list)
    flip: bool = False
    fragment: bool = False
    conflict: bool = False
    family_change: bool = False
    predicate_only: bool = False

    @property
    def strong(self) -> bool:
        return bool(self.fresh & STRONG_NAMES)

    @property
    def weak(self) -> bool:
        return "now" in self.fresh

    @property
    def additive(self) -> bool:
        return "additive" in self.new.markers

    @property
    def related(self) -> bool:
        return self.similarity is None or self.similarity >= UNRELATED_MAX_SIMILARITY

    @property
    def e_content(self) -> frozenset[str]:
        return self.old.content

    @property
    def l_content(self) -> frozenset[str]:
        return self.new.content

    @cached_property
    def e_only(self) -> frozenset[str]:
        return self.e_content - self.l_content

    @cached_property
    def l_only(self) -> frozenset[str]:
        return self.l_content - self.e_content

    @cached_property
    def agrees(self) -> bool:
        return rules.agrees(self.old, self.new)

    @cached_property
    def holders(self) -> set[str]:
        return {n.tokens[0] for n in (self.old, self.new)
                if n.tokens and n.tokens[0] in rules.PERSON}

    @cached_property
    def e_classes(self) -> frozenset[str]:
        return class_union(self.e_only)

    @cached_property
    def l_classes(self) -> frozenset[str]:
        return class_union(self.l_only)

    @property
    def marked(self) -> bool:
        return (self.strong or self.weak) and not self.additive

    @cached_property
    def value_marker(self) -> bool:
        # ("are fine now" lifts a rule: it speaks of polarity, not of a value)
        return bool((self.fresh & STRONG_NAMES) - {"now_allowed"})

    @cached_property
    def rival_thing(self) -> bool:
        return bool((self.e_classes & self.l_classes) - {"number"})

    @cached_property
    def elsewhere(self) -> bool:
        # A marker about another thing of the same kind ("Basic plan price raised to $12" after
        # "Pro plan costs $20") corrects nothing.
        change_verb = self.fresh & patterns.CHANGE_VERB_MARKERS
        return (bool(change_verb) and not (self.fresh & STRONG_NAMES) - change_verb and (
            rules.other_subject(self.old, self.new))) or (
            bool(self.strong or self.weak) and rules.other_lead(self.old, self.new))

    @property
    def sim_high(self) -> bool:
        return self.similarity is not None and self.similarity >= PARAPHRASE_MIN_SIMILARITY

    @cached_property
    def aligned(self) -> bool:
        return max(len(self.old.tokens), len(self.new.tokens)) <= MAX_ALIGNED_TOKENS

    @cached_property
    def blocks(self) -> list[Block]:
        return blocks(self.old.tokens, self.new.tokens, self.fragment) if self.aligned else []

    @cached_property
    def predicate_sim(self) -> bool:
        return self.similarity is not None and (
            self.similarity >= PREDICATE_CHANGE_MIN_SIMILARITY) and (
            not self.predicate_only or rules.light_swap(self.blocks[0]))

    @cached_property
    def changes(self) -> list[Block]:
        # Spans whose words only moved ("car is due for service" / "car service is due") change
        # nothing; what is left is the real change.
        shared = self.e_content & self.l_content
        return [b for b in self.blocks if not set(content((*b.earlier, *b.later))) <= shared]

    def fire(self, name: str, condition: bool) -> bool:
        if condition:
            self.signals.append(name)
        return condition

    def verdict(self, relation: Relation, confidence: float, *signals: str) -> Verdict:
        return verdict(relation, confidence, [*self.signals, *signals])


def pair_of(old: Note, new: Note, similarity: float | None) -> Pair:
    """The pair as every rule sees it: markers that count, anchors, the relocation rewrite."""
    old, new = meaning.fold_acronyms(old, new)  # "NDA" / "non-disclosure agreement"
    fresh = new.markers - old.markers  # a marker counts only if the later note brings it
    # A rejection of values the earlier note never named ("Email was replaced by Slack for
    # customer updates" after "Slack is used for team chat") replaced another thing: its
    # change marker says nothing about the earlier note.
    rejected = (new.rejected - new.content) - GENERIC
    if rejected and not rejected & old.content:
        fresh -= _REJECTING_MARKERS
    if old.past and not new.past:
        # "now uses macOS" after "Used Windows at the old job", "is currently learning Korean"
        # after "learned French in school": the earlier note told of a past situation, so the
        # present one sits beside it.
        fresh -= {"now_pref", "now"}
    anchors = (old.content & new.content) - GENERIC
    if rules.RELOCATE in new.tokens and rules.RELOCATE not in old.tokens:
        # "moved to Munich" answers "lives in Berlin"; elsewhere it is only a marker.
        live = lexicon.canon("live")
        swap = (live, "@in") if live in old.tokens and live not in new.tokens else ()
        tokens = tuple(x for t in new.tokens
                       for x in ((*swap,) if t == rules.RELOCATE else (t,)))
        new = replace(new, tokens=tokens)
    pair = Pair(old, new, similarity, frozenset(fresh), frozenset(rejected), frozenset(anchors))
    for name, fired in (("correction_marker", pair.strong), ("weak_marker", pair.weak),
                        ("additive_marker", pair.additive), ("shared_anchor", bool(anchors))):
        pair.fire(name, fired)
    if similarity is not None:
        pair.signals.append("similarity_high" if similarity >= PARAPHRASE_MIN_SIMILARITY
                            else "similarity_low" if not pair.related else "similarity_mid")
    return pair
