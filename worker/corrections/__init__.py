"""Does a later memory note correct, restate, refine, or sit beside an earlier one?

Embedding similarity cannot tell: MiniLM scores "prefers dark mode" / "prefers light mode" (a
correction) 0.87 and "prefers bar charts" / "prefers dark backgrounds on charts" (two facts)
0.66. So the detector reads structure. Both notes become canonical token sequences
(`correction_parse`: first and third person folded, inflections, number words, synonyms,
light verbs ("goes running" = "runs") and equivalent idioms unified from the curated
`correction_synonyms` and `correction_knowledge`), are aligned, and the difference is judged
(`correction_rules` answers the structural questions): an explicit rejection ("Mochi, not
Miso"), a polarity reversal ("no longer vegetarian") unless the negation agrees with what the
earlier note already spoke against ("bars over pies" / "no pies"), a swapped comparison, one
short span replaced by a rival value of the same closed class (blue -> red, mild -> hot) or a
rival verb ("rents" -> "owns"), or in a one-value slot ("lives in X", "<slot> is X"), a named
thing of one kind (`correction_entities`: banks, brands, airlines...) replaced only with a
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
"teaches Spanish"). `correction_meaning`
adds what word overlap misses: a member that implies its category ("plays the cello" refines
"plays an instrument", "lives in Osaka" refines "lives in Japan"; the curated category knowledge
is in `correction_categories`), an acronym beside its expansion, and a changed date of a repeatable
past event or a changed day of the user's own habit, which is another occasion, not a
correction ("visited Japan in 2019" / "in 2023"); `correction_numbers` writes amounts and clock
times one way ("$500" = "five hundred dollars", "18:00" = "6 pm"); `correction_vocabulary`
and `correction_business` hold the everyday and the agent/business terms (abbreviations,
tools, environments); `correction_restate` recognizes a sentence turned around ("Dec 20 is
when the freeze begins" / "the freeze starts December 20") and a frequency made concrete
("weekly" / "every Sunday at 6"). The default is
DISTINCT: merging two facts loses a memory, keeping a duplicate costs little. Pure and fast:
regexes and a difflib alignment.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from worker.corrections import business as bz
from worker.corrections import lexicon as lx
from worker.corrections import meaning as mn
from worker.corrections import parse as cp
from worker.corrections import patterns as pt
from worker.corrections import restate as rs
from worker.corrections import rules as rl
from worker.corrections.parse import Note as _Note

__all__ = ["PARAPHRASE_MIN_SIMILARITY", "PREDICATE_CHANGE_MIN_SIMILARITY",
           "SUPERSEDE_MIN_CONFIDENCE", "Relation", "Verdict", "classify", "supersedes"]


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
MAX_TEXT_CHARS = cp.MAX_TEXT_CHARS
# Span analysis is for sentence-length notes; longer ones (alignment grows quadratically) are
# judged by the set-based rules only, which never merge on a value swap.
MAX_ALIGNED_TOKENS = 64

_BE, _RELOCATE = rl.BE, rl.RELOCATE
_STRONG_NAMES = frozenset(name for name, _ in pt.STRONG_MARKERS) | {"reversal"}
_PREF, _EXCLUSIVE, _MULTI, _LIGHT = rl.PREF, rl.EXCLUSIVE, rl.MULTI, rl.LIGHT
_PERSON, _GENERIC, _ANTONYMS = rl.PERSON, rl.GENERIC, rl.ANTONYMS
_POSSESSION = lx.keys(frozenset({"have", "get", "own"}))
_parse, _blocks, _content = cp.parse, cp.blocks, cp.content
_class_union = cp.class_union
_ENVIRONMENTS = lx.keys(frozenset(bz.ENVIRONMENTS.split()))
# Markers that come with a rejected value ("switched from X", "replaced X with", "instead of X").
_REJECTING_MARKERS = frozenset({"switched", "changed_to", "instead"})


def _verdict(relation: Relation, confidence: float, signals: list[str]) -> Verdict:
    confidence = round(min(1.0, max(0.0, confidence)), 3)
    return Verdict(relation, confidence, tuple(dict.fromkeys(signals)))


def _decide(old: _Note, new: _Note, similarity: float | None) -> Verdict:
    old, new = mn.fold_acronyms(old, new)  # "NDA" / "non-disclosure agreement"
    fresh = new.markers - old.markers  # a marker counts only if the later note brings it
    # A rejection of values the earlier note never named ("Email was replaced by Slack for
    # customer updates" after "Slack is used for team chat") replaced another thing: its
    # change marker says nothing about the earlier note.
    rejected = (new.rejected - new.content) - _GENERIC
    if rejected and not rejected & old.content:
        fresh -= _REJECTING_MARKERS
    if old.past and not new.past:
        # "now uses macOS" after "Used Windows at the old job", "is currently learning Korean"
        # after "learned French in school": the earlier note told of a past situation, so the
        # present one sits beside it.
        fresh -= {"now_pref", "now"}
    strong, weak = bool(fresh & _STRONG_NAMES), "now" in fresh
    additive = "additive" in new.markers
    anchors = (old.content & new.content) - _GENERIC  # before the relocation rewrite below
    signals = [name for name, fired in (("correction_marker", strong), ("weak_marker", weak),
                                        ("additive_marker", additive), ("shared_anchor", anchors))
               if fired]
    if _RELOCATE in new.tokens and _RELOCATE not in old.tokens:
        # "moved to Munich" answers "lives in Berlin"; elsewhere it is only a marker.
        live = lx.canon("live")
        swap = (live, "@in") if live in old.tokens and live not in new.tokens else ()
        tokens = tuple(x for t in new.tokens for x in ((*swap,) if t == _RELOCATE else (t,)))
        new = replace(new, tokens=tokens)
    e_content, l_content = old.content, new.content

    def fire(name: str, condition: bool) -> bool:
        if condition:
            signals.append(name)
        return condition

    related = similarity is None or similarity >= UNRELATED_MAX_SIMILARITY
    if similarity is not None:
        signals.append("similarity_high" if similarity >= PARAPHRASE_MIN_SIMILARITY
                       else "similarity_low" if not related else "similarity_mid")

    if not old.content or not new.content:
        return _verdict(Relation.DISTINCT, 0.5, [*signals, "no_content"])  # nothing to compare
    if old.tokens == new.tokens and old.negated == new.negated and not strong and not old.rejected:
        return _verdict(Relation.PARAPHRASE, 0.95, [*signals, "same_content"])

    # An explicit rejection of a value the earlier note asserted.
    positive = e_content - old.against
    # A rejected value naming a rival the earlier note lacks ("the staging database was
    # replaced" against "the production database runs Postgres") is about another thing.
    rival = any(lx.value_classes(t) or t in _ENVIRONMENTS for t in rejected - e_content)
    if not old.negated and rejected & positive and not rival and not rl.other_kind(old, new):
        return _verdict(Relation.CORRECTION, 0.95, [*signals, "explicit_rejection"])
    # The later note goes back to what the earlier one rejected ("replaced Zoom with Teams" ->
    # "uses Zoom for calls"), and says little else.
    taken_back = ((old.rejected - e_content) & (new.pro - new.rejected)) - _GENERIC
    if taken_back and not new.negated and len(l_content - taken_back - _GENERIC) <= 2:
        return _verdict(Relation.CORRECTION, 0.75, [*signals, "explicit_rejection"])

    # Another environment and another value ("Production uses the live key" / "the staging
    # key in tests was wrong"): the fact is about another system. A changed environment alone
    # ("deploys to staging" -> "actually to production") stays a value.
    e_env, l_env = (e_content - l_content) & _ENVIRONMENTS, (l_content - e_content) & _ENVIRONMENTS
    if e_env and l_env and ((e_content - l_content - e_env) | (l_content - e_content - l_env)) - (
            _GENERIC):
        return _verdict(Relation.DISTINCT, 0.75, [*signals, "subject_change"])

    if old.comparison and new.comparison:
        (el, er), (ll, lr) = old.comparison, new.comparison
        if el & lr and er & ll and not el & ll:
            return _verdict(Relation.CORRECTION, 0.9, [*signals, "comparison_swap"])

    # A clause that negates the earlier note's content: "no longer vegetarian" (about the same
    # holder: "User's sister is no longer vegetarian" says nothing of the user).
    core = e_content - _GENERIC
    agrees = rl.agrees(old, new)
    holders = {n.tokens[0] for n in (old, new) if n.tokens and n.tokens[0] in _PERSON}
    other_holder = bool(holders & (e_content ^ l_content))
    for clause, negated in new.clauses:
        shared = clause - _GENERIC
        reverses = negated != old.negated and (shared <= core or core <= shared)
        if reverses and core & shared and not additive and not agrees and not other_holder:
            return _verdict(Relation.CORRECTION, 0.9, [*signals, "polarity_reversal"])
    flip = fire("polarity_flip", old.negated != new.negated)
    if not (flip or old.negated or additive) and (l_content - _GENERIC) <= e_content and (
            old.against & new.pro or new.against & old.pro):
        # What one note speaks against the other wants: "answers without emoji" -> "emoji in
        # answers now", "coffee with milk" -> "coffee without milk".
        return _verdict(Relation.CORRECTION, 0.75, [*signals, "polarity_reversal"])

    e_only, l_only = e_content - l_content, l_content - e_content
    if not strong and not additive and mn.implies(old, new):
        # A member where the earlier note named the category ("plays the cello" for "plays an
        # instrument"): the later note implies the earlier, so replacing it loses nothing.
        return _verdict(Relation.REFINEMENT, 0.75, [*signals, "entailment"])
    if not strong and not weak and mn.implies(new, old):
        # The later note names the category of what the earlier named ("lives in Austin" ->
        # "lives in Texas"): nothing was corrected, and replacing the earlier loses detail.
        return _verdict(Relation.PARAPHRASE, 0.45, [*signals, "dropped_detail"])
    if not strong and not weak and related and rs.scheduled(old, new, e_only, l_only):
        # "a weekly call" -> "a call every Sunday at 6 p.m.": the frequency made concrete
        return _verdict(Relation.REFINEMENT, 0.7, [*signals, "scheduled"])
    # ("back" is a marker, but a return to a past event's place is another occasion)
    if (not strong or fresh & _STRONG_NAMES == {"back"}) and not (old.negated or new.negated) and (
            mn.another_occasion(old, new, e_only, l_only)
            or (not weak and mn.another_day(old, new, e_only, l_only))):
        # Another trip on another date, the user's habit on another day: both hold.
        return _verdict(Relation.DISTINCT, 0.8, [*signals, "another_occasion"])
    if mn.plan_and_outcome(old, new) or mn.one_occurrence(old, new) or (
            mn.other_period(old, new) or (not strong and mn.ended_state(old, new))):
        # A plan and what happened, a habit and one exception to it, this year's and last
        # year's, a state that ended ("lived in Madrid from 2015 to 2019") and the present
        # one: both hold.
        return _verdict(Relation.DISTINCT, 0.8, [*signals, "another_occasion"])
    if (holders & (e_only | l_only) or rl.holder_chain(old, new) or rl.holder_moved(old, new)) and (
            new.has_subject and not new.pronoun):
        # The fact moved to another holder ("User's wife works at Google"): never the same.
        return _verdict(Relation.DISTINCT, 0.8, [*signals, "holder_change"])
    if not (e_only | l_only) - _GENERIC and rl.roles_swapped(old, new):
        return _verdict(Relation.DISTINCT, 0.7, [*signals, "role_swap"])
    # A sentence turned around ("Dec 20 is when the freeze begins"): the aligner would read a
    # new subject, but every content word is matched in the other note. (A liking is no use,
    # "likes dogs" / "has dogs" no possession: those keep their own rules below.)
    pref_change = bool(old.verbs & _PREF) != bool(new.verbs & _PREF)
    if (e_only or l_only) and not (strong or weak or additive) and not pref_change and not (
            (e_only | l_only) & _POSSESSION) and rs.reordered_restatement(old, new, e_only, l_only):
        return _verdict(Relation.PARAPHRASE, 0.7, [*signals, "reordered"])
    fragment = fire("fragment", not new.has_subject and len(l_content) <= len(e_content))
    # Some value of the earlier note has a same-class rival in the later one (Mondays/Fridays).
    e_classes, l_classes = _class_union(e_only), _class_union(l_only)
    conflict = fire("value_class_conflict", bool(e_classes & l_classes))
    # Competing values of one class are evidence of their own, so a fragment's low cosine
    # ("no, Teams." = 0.07 against "I prefer Zoom for calls") does not veto them.
    marked = (strong or weak) and not additive
    # A short later note that only names the new value ("no, Teams.", "Switched to Firefox")
    # needs no shared word; one with a verb of its own ("now works in Munich") does.
    bare = not {t for t in l_only if not lx.value_classes(t)} & (_EXCLUSIVE | _MULTI | _LIGHT)
    # (a date that comes with the new value is no verb of its own: "got married last spring")
    undated = {t for t in l_content - {_RELOCATE} if not mn.dating(t)}
    # (a marker about another thing of the same kind, "Basic plan price raised to $12" after
    # "Pro plan costs $20", corrects nothing)
    change_verb = fresh & pt.CHANGE_VERB_MARKERS
    elsewhere = (bool(change_verb) and not (fresh & _STRONG_NAMES) - change_verb and (
        rl.other_subject(old, new))) or (bool(strong or weak) and rl.other_lead(old, new))
    # A rival thing with the polarity turned too ("Don't call Ana after 9 pm" / "Texts to Ana
    # after 9 pm are fine now") lifts nothing of the earlier rule: the change is elsewhere. A
    # new time or amount ("no meetings before 10 am" / "from 8:30 am is fine now") moves it.
    # ("are fine now" lifts a rule: it speaks of polarity, not of a value)
    value_marker = bool((fresh & _STRONG_NAMES) - {"now_allowed"})
    rival_thing = bool((e_classes & l_classes) - {"number"})
    if conflict and marked and not elsewhere and not (
            flip and rival_thing and not value_marker) and (
            anchors or fragment or (bare and len(undated) <= 2)):
        return _verdict(Relation.CORRECTION, 0.8, [*signals, "class_value_change"])
    if flip and agrees and not strong:
        if e_content == l_content:
            return _verdict(Relation.PARAPHRASE, 0.7, [*signals, "negation_agrees"])
        if e_content < l_content:
            return _verdict(Relation.REFINEMENT, 0.65, [*signals, "negation_agrees"])
        return _verdict(Relation.PARAPHRASE, 0.45, [*signals, "negation_agrees"])
    if flip:
        if strong and anchors and not additive and related and (
                value_marker or not rival_thing):
            return _verdict(Relation.CORRECTION, 0.7, [*signals, "marker_on_shared_topic"])
        if len(e_only) == 1 and len(l_only) == 1 and not strong:
            (a,), (b,) = e_only, l_only
            if _ANTONYMS.get(a) == b:  # negation of the antonym: the same fact
                return _verdict(Relation.PARAPHRASE, 0.7, [*signals, "negated_antonym"])
        return _verdict(Relation.DISTINCT, 0.7, signals)

    # "likes X" vs "uses X": both PRED, but not the same fact without more evidence.
    # (an instruction to the assistant, "Use metric units", is the user's preference: "prefers
    # metric units" restates it)
    instructed = old.instruction != new.instruction
    family_change = fire("predicate_family_change", bool(old.verbs and new.verbs) and (
        bool(old.verbs & _PREF) != bool(new.verbs & _PREF)) and not instructed)
    sim_high = similarity is not None and similarity >= PARAPHRASE_MIN_SIMILARITY
    if not e_only and not l_only:
        confidence = 0.5 if family_change and not sim_high else 0.9
        return _verdict(Relation.PARAPHRASE, confidence, [*signals, "same_content"])
    aligned = max(len(old.tokens), len(new.tokens)) <= MAX_ALIGNED_TOKENS
    blocks = _blocks(old.tokens, new.tokens, fragment) if aligned else []
    # Only the verb differs ("drives a hatchback" / "car is a hatchback", "speaks German" /
    # "is learning German"): MiniLM rates such pairs by what they share, so only a very high
    # cosine restates. A single swapped value ("with Bob" / "with Alice") never does.
    predicate_only = fire("predicate_change", len(blocks) == 1 and blocks[0].start == 0
                          and not blocks[0].tail)
    predicate_sim = similarity is not None and similarity >= PREDICATE_CHANGE_MIN_SIMILARITY and (
        not predicate_only or rl.light_swap(blocks[0]))
    if blocks and blocks[0].start == 0 and not blocks[0].earlier and not fragment and (
            set(_content(blocks[0].later)) - _GENERIC - e_content) and not strong:
        # Words put in front of the whole earlier note change its subject or its verb
        # ("User's son is learning Japanese"), they do not refine it; after "switched to"
        # they are the new value ("switched to T-Mobile for the phone plan"). Words moved
        # there from later in the note change nothing ("has an Echo smart speaker").
        return _verdict(Relation.DISTINCT, 0.7, [*signals, "subject_change"])
    if len(blocks) == 1 and not strong:
        if rl.phrasal(old, blocks[0]):
            return _verdict(Relation.DISTINCT, 0.8, [*signals, "phrasal_verb"])
        if rl.subject_change(old, blocks[0]):
            return _verdict(Relation.DISTINCT, 0.7, [*signals, "subject_change"])
        if rl.same_verb(blocks[0]) and (predicate_only or blocks[0].start > 0):
            # "drives" / "owns a Tesla"; after a subject, "flight lands" / "arrives at 6pm"
            return _verdict(Relation.PARAPHRASE, 0.7, [*signals, "equivalent_verb"])
    if not e_only or not l_only:
        # ("likes dogs" / "has dogs" is not one fact: a liking is not a possession)
        possession = bool(old.verbs) != bool(new.verbs) and (e_only | l_only) & _POSSESSION
        if not ((e_only | l_only) - _GENERIC) and not possession:
            return _verdict(Relation.PARAPHRASE, 0.75, [*signals, "generic_words_differ"])
        if len(blocks) == 1 and rl.new_head(old, new, blocks[0]):
            return _verdict(Relation.DISTINCT, 0.7, [*signals, "head_change"])
        if predicate_only:
            confidence = 0.6 + (similarity or 0.0) - PREDICATE_CHANGE_MIN_SIMILARITY
            return _verdict(Relation.PARAPHRASE, confidence if predicate_sim else 0.5, signals)
        if not l_only:
            return _verdict(Relation.PARAPHRASE, 0.45, [*signals, "dropped_detail"])
        confidence = 0.8 if related and not family_change else 0.5
        return _verdict(Relation.REFINEMENT, confidence, [*signals, "added_detail"])

    # Spans whose words only moved ("car is due for service" / "car service is due") change
    # nothing; what is left is the real change.
    shared = e_content & l_content
    changes = [b for b in blocks if not set(_content((*b.earlier, *b.later))) <= shared]
    if len(changes) == 1:
        rule = rl.value_change(old, changes[0], marked, new.names)
        if rule and (related or rule == "class_value_change") and not additive:
            confidence = 0.85 if rule == "class_value_change" else 0.7
            return _verdict(Relation.CORRECTION, confidence + 0.05 * marked, [*signals, rule])
        # The object in front of a kept qualifier changed ("code in Python" -> "tests in
        # Python"): another object, whatever marker comes with it.
        after = old.tokens[changes[0].end] if changes[0].end < len(old.tokens) else ""
        fire("object_swap", after.startswith("@") and not any(
            t.startswith("@") for t in changes[0].earlier))
    fire("multi_span_change", len(changes) != 1)
    # What left and what arrived are values of different classes ("concise" -> "in Spanish",
    # "bar charts" -> "dark backgrounds"): another slot, whatever marker comes with it.
    fire("slot_mismatch", bool(e_classes and l_classes and not conflict))
    # One value replaced after the same verb or copula ("uses a trackpad" -> "uses a mouse
    # now", "is a data engineer" -> "is a product manager now") shares the slot even when the
    # verb is the only word in common.
    frame = len(changes) == 1 and changes[0].start > 0 and (
        bool(old.verbs & new.verbs) or old.tokens[:changes[0].start] == (_BE,))
    marked_topic = (anchors or frame) and not additive and related and not elsewhere and not (
        {"object_swap", "slot_mismatch"} & set(signals))
    if strong and marked_topic:
        return _verdict(Relation.CORRECTION, 0.75, [*signals, "marker_on_shared_topic"])
    if weak and marked_topic and len(changes) == 1:
        return _verdict(Relation.CORRECTION, 0.65, [*signals, "marker_on_shared_topic"])
    # (a date word on one side only, "did a triathlon last August" / "is training for one this
    # August", makes two facts however close their wording)
    redated = any(map(mn.dating, e_only | l_only))
    if sim_high and aligned and not conflict and not strong and not redated and (
            len(blocks) > 1 or (predicate_only and predicate_sim)):
        assert similarity is not None
        confidence = 0.6 + (similarity - PARAPHRASE_MIN_SIMILARITY)
        return _verdict(Relation.PARAPHRASE, confidence, [*signals, "restated"])
    return _verdict(Relation.DISTINCT, 0.8 if not anchors else 0.65, signals)


def classify(earlier: str, later: str, similarity: float | None = None) -> Verdict:
    """How `later` relates to `earlier` (both short memory notes of one scope).

    `similarity` is the cosine of the two notes' embeddings (all-MiniLM-L6-v2 by default);
    without it the verdict rests on structure alone.
    """
    return _decide(_parse(earlier), _parse(later), similarity)


def supersedes(verdict: Verdict) -> bool:
    """Whether the later note should replace the earlier one (one rule for every caller)."""
    return verdict.relation is not Relation.DISTINCT and (
        verdict.confidence >= SUPERSEDE_MIN_CONFIDENCE
    )
