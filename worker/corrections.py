"""Does a later memory note correct, restate, refine, or sit beside an earlier one?

Embedding similarity cannot tell: MiniLM scores "prefers dark mode" / "prefers light mode" (a
correction) 0.87 and "prefers bar charts" / "prefers dark backgrounds on charts" (two facts)
0.66. So the detector reads structure. Both notes become canonical token sequences (first and
third person folded, synonyms unified), are aligned, and the difference is judged: an explicit
rejection ("Mochi, not Miso"), a polarity reversal ("no longer vegetarian"), a swapped
comparison, one short span replaced by a rival value of the same closed class (blue -> red) or
in a one-value slot ("lives in X", "<slot> is X"), correction markers ("actually", "switched
to") that count only with a shared topic word, added detail (refinement) or nothing (paraphrase).
Similarity, when given, only breaks ties. The default is DISTINCT: merging two facts loses a
memory, keeping a duplicate costs little. Pure and fast: regexes and a difflib alignment.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from enum import StrEnum
from functools import lru_cache
from itertools import takewhile

from worker import correction_lexicon as lx

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
MAX_TEXT_CHARS = 2000
# Span analysis is for sentence-length notes; longer ones (alignment grows quadratically) are
# judged by the set-based rules only, which never merge on a value swap.
MAX_ALIGNED_TOKENS = 64

_STRUCTURAL_PRED = "PRED"  # any preference/usage verb; the kind is kept on the note
_BE = "="
_RELOCATE = lx.RELOCATE
_STRONG_NAMES = frozenset(name for name, _ in lx.STRONG_MARKERS) | {"reversal"}


@dataclass(frozen=True)
class _Note:
    tokens: tuple[str, ...]  # content words, "@prep", "=" (copula) and PRED, in order
    negated: bool
    clauses: tuple[tuple[frozenset[str], bool], ...]  # (content, negated) per clause
    markers: frozenset[str]
    rejected: frozenset[str]  # values the note explicitly rejects
    has_subject: bool
    pronoun: bool  # refers back with he/she/her...
    verbs: frozenset[str]  # stems behind PRED tokens ("prefer", "lik", "us", ...)
    clause_starts: frozenset[int]  # token indices where a clause begins
    comparison: tuple[frozenset[str], frozenset[str]] | None  # (preferred, dispreferred)

    @property
    def content(self) -> frozenset[str]:
        return frozenset(filter(_is_content, self.tokens))


def _structural(token: str) -> bool:
    return token in (_STRUCTURAL_PRED, _BE) or token.startswith("@")


def _is_content(token: str) -> bool:
    return not _structural(token)


# Lexicon words in the canonical form `_tokenize` produces.
_PREF, _USE = lx.keys(lx.PREFERENCE_VERBS), lx.keys(lx.USAGE_VERBS)
_NEG = lx.keys(lx.NEGATIVE_VERBS)
_EXCLUSIVE, _MULTI = lx.keys(lx.EXCLUSIVE_VERBS), lx.keys(lx.MULTI_VERBS)
_EXCLUSIVE_PREF = lx.keys(lx.EXCLUSIVE_PREFERENCE_VERBS)
_PERSON = lx.keys(lx.PERSON_NOUNS)
_GENERIC = lx.keys(lx.GENERIC_WORDS) | {_STRUCTURAL_PRED, _BE}
_ANTONYMS = {lx.canon(a): lx.canon(b) for a, b in lx.ANTONYMS.items()}


def _tokenize(text: str) -> tuple[list[str], int, int, set[str]]:
    """Canonical tokens of one clause, its negation count, subject mentions (1 = the user,
    2 = a pronoun), and the verbs behind its PRED tokens."""
    tokens: list[str] = []
    negations, subject, verbs = 0, 0, set()
    words = lx.TOKEN.findall(text)
    for index, raw in enumerate(words):
        raw = raw.rstrip(".,") if lx.HAS_DIGIT.search(raw) else raw.strip(".,:/+-")
        if raw == _RELOCATE:
            tokens.append(raw)
        elif raw in lx.SUBJECT_WORDS:
            subject |= 2 if raw in lx.PRONOUNS else 1
        elif raw in lx.NEGATORS:
            negations += 1
        elif raw in lx.BE_WORDS:
            if not tokens or tokens[-1] != _BE:
                tokens.append(_BE)
        elif raw in lx.PREPOSITIONS:
            tokens.append(lx.PREPOSITIONS[raw])
        elif raw in ("a", "an") and index == len(words) - 1:
            tokens.append("a")  # a trailing letter is a value ("building A"), not an article
        elif raw in ("have", "has", "had") and index + 1 < len(words) and (
                words[index + 1] in lx.PARTICIPLES or words[index + 1] == _RELOCATE
                or words[index + 1].endswith("ed")):
            continue  # auxiliary: "I've relocated", "has switched"
        elif raw in lx.STOPWORDS or not raw:
            continue
        elif (stem := lx.canon(raw)) in _NEG or stem in _PREF or stem in _USE:
            negations += stem in _NEG
            verbs.add(stem)
            tokens.append(_STRUCTURAL_PRED)
        else:
            tokens.append(stem)
    return tokens, negations, subject, verbs


def _comparison(tokens: list[str]) -> tuple[frozenset[str], frozenset[str]] | None:
    if "@over" not in tokens:
        return None
    pivot = tokens.index("@over")  # "X over Y": the words next to "over", up to a structure
    left = frozenset(takewhile(_is_content, reversed(tokens[:pivot])))
    right = frozenset(takewhile(_is_content, tokens[pivot + 1:]))
    return (left, right) if left and right else None


@lru_cache(maxsize=4096)
def _parse(text: str) -> _Note:
    t, markers, rejected = lx.extract_cues(lx.normalize(text[:MAX_TEXT_CHARS]))
    t = lx.rewrite(t)
    tokens: list[str] = []
    clauses: list[tuple[frozenset[str], bool]] = []
    subject, verbs, starts = 0, set(), set()
    for clause in lx.CLAUSE_SPLIT.split(t):
        c_tokens, c_neg, c_subject, c_verbs = _tokenize(clause)
        starts.add(len(tokens))
        tokens += c_tokens
        subject |= c_subject
        verbs |= c_verbs
        if content := frozenset(filter(_is_content, c_tokens)):
            clauses.append((content, c_neg % 2 == 1))
    # The note's polarity is its main (first) clause's: in "is vegetarian and also avoids
    # eggs" the second clause's "avoids" does not negate the first.
    negated = bool(clauses) and clauses[0][1]
    rejected_tokens = frozenset(x for r in rejected for x in _tokenize(lx.rewrite(r))[0])
    return _Note(tuple(tokens), negated, tuple(clauses), markers,
                 frozenset(filter(_is_content, rejected_tokens)), bool(subject),
                 bool(subject & 2), frozenset(verbs), frozenset(starts), _comparison(tokens))


@dataclass(frozen=True)
class _Block:
    earlier: tuple[str, ...]
    later: tuple[str, ...]
    start: int  # index of the block in the earlier sequence
    end: int
    later_start: int  # index of the block in the later sequence
    tail: bool  # the block ends both sequences: nothing shared follows it


def _content(tokens: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(filter(_is_content, tokens))


def _blocks(e: tuple[str, ...], n: tuple[str, ...], fragment: bool) -> list[_Block]:
    """Differing spans. A fragment ("actually, red charts!") restates only the tail of the
    earlier note, so what it omits is context, not a deletion."""
    out: list[_Block] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, e, n, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        es, ls = e[i1:i2], n[j1:j2]
        if fragment and tag == "delete":
            continue
        if fragment and tag == "replace":
            keep = max(1, len(_content(ls)))
            while len(_content(es)) > keep:
                es, i1 = es[1:], i1 + 1
        if not _content(es) and not _content(ls):
            continue  # only a preposition or copula moved
        out.append(_Block(es, ls, i1, i2, j1, i2 == len(e) and j2 == len(n)))
    return out


def _class_match(left: tuple[str, ...], right: tuple[str, ...]) -> bool:
    """Every changed word has a competitor of the same class on the other side."""
    lc, rc = [lx.value_classes(t) for t in left], [lx.value_classes(t) for t in right]
    return bool(lc and rc) and all(any(c & o for o in rc) for c in lc) and all(
        any(c & o for o in lc) for c in rc)


def _class_union(tokens: frozenset[str]) -> frozenset[str]:
    return frozenset().union(*map(lx.value_classes, tokens))


def _value_change(e: _Note, block: _Block, markers: bool) -> str | None:
    """Name of the rule by which one replaced span is a new value for the same slot."""
    es, ls = _content(block.earlier), _content(block.later)
    if len(es) > 3 or len(ls) > 3:
        return None
    preps_e = {t for t in block.earlier if t.startswith("@")}
    preps_l = {t for t in block.later if t.startswith("@")}
    if preps_e != preps_l and preps_e and preps_l:
        return None  # "in Berlin" -> "with roommates": another slot
    before = e.tokens[block.start - 1] if block.start > 0 else None
    head = e.tokens[: block.start]
    exclusive_pref = bool(e.verbs & _EXCLUSIVE_PREF)
    if block.start == 0 and not markers:
        return None  # the subject or the verb changed: "car is red" / "bike is red"
    if _class_match(es, ls):
        # "speaks French" / "speaks Spanish", "likes Python" / "likes Rust", "hates meetings
        # before 10" / "hates meetings after 4": both values can hold at once.
        liking = _STRUCTURAL_PRED in head and not exclusive_pref
        object_of_multi = block.tail and (before in _MULTI or liking)
        if (object_of_multi or e.negated) and not markers:
            return None
        return "class_value_change"
    if (before == _BE and any(not _structural(t) and t not in _GENERIC for t in head)
            and not any(t in _MULTI for t in head)):
        return "slot_value_change"  # "<slot> is X" -> "<slot> is Y" (not "has a dog named X")
    verb = next((t for t in reversed(head) if not t.startswith("@")), None)
    if before is not None and before.startswith("@") and verb in _EXCLUSIVE and block.tail:
        return "slot_value_change"  # "lives in X", "works as X"
    if before in _EXCLUSIVE and before != _STRUCTURAL_PRED and not preps_l:
        return "slot_value_change"  # "supports X", "banks with X"
    return None


def _new_head(old: _Note, new: _Note, block: _Block) -> bool:
    """A bare noun appended to the earlier note's last word makes that word a modifier:
    "has a cat" -> "has a cat allergy" is about the allergy. Values of a closed class stay
    values ("reports as PDF" -> "PDF attachments")."""
    if block.earlier or block.start != len(old.tokens) or not block.later:
        return False
    if block.later_start in new.clause_starts:
        return False  # "..., mostly Le Guin": a new clause adds detail
    last, first = old.tokens[-1], block.later[0]
    return not any(_structural(t) or lx.value_classes(t) for t in (last, first)) and (
        first not in _GENERIC)


def _verdict(relation: Relation, confidence: float, signals: list[str]) -> Verdict:
    confidence = round(min(1.0, max(0.0, confidence)), 3)
    return Verdict(relation, confidence, tuple(dict.fromkeys(signals)))


def _decide(old: _Note, new: _Note, similarity: float | None) -> Verdict:
    fresh = new.markers - old.markers  # a marker counts only if the later note brings it
    strong, weak = bool(fresh & _STRONG_NAMES), "now" in fresh
    additive = "additive" in new.markers
    anchors = (old.content & new.content) - _GENERIC  # before the relocation rewrite below
    signals = [name for name, fired in (("correction_marker", strong), ("weak_marker", weak),
                                        ("additive_marker", additive), ("shared_anchor", anchors))
               if fired]
    if _RELOCATE in new.tokens:
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
    positive = e_content - (old.comparison[1] if old.comparison else frozenset())
    if not old.negated and ((new.rejected - l_content) & positive) - _GENERIC:
        return _verdict(Relation.CORRECTION, 0.95, [*signals, "explicit_rejection"])

    if old.comparison and new.comparison:
        (el, er), (ll, lr) = old.comparison, new.comparison
        if el & lr and er & ll and not el & ll:
            return _verdict(Relation.CORRECTION, 0.9, [*signals, "comparison_swap"])

    # A clause that negates the earlier note's content: "no longer vegetarian".
    core = e_content - _GENERIC
    for clause, negated in new.clauses:
        shared = clause - _GENERIC
        reverses = negated != old.negated and (shared <= core or core <= shared)
        if reverses and core & shared and not additive:
            return _verdict(Relation.CORRECTION, 0.9, [*signals, "polarity_reversal"])
    flip = fire("polarity_flip", old.negated != new.negated)

    e_only, l_only = e_content - l_content, l_content - e_content
    holders = {n.tokens[0] for n in (old, new) if n.tokens and n.tokens[0] in _PERSON}
    if holders & (e_only | l_only) and new.has_subject and not new.pronoun:
        # The fact moved to another holder ("User's wife works at Google"): never the same.
        return _verdict(Relation.DISTINCT, 0.8, [*signals, "holder_change"])
    fragment = fire("fragment", not new.has_subject and len(l_content) <= len(e_content))
    # Some value of the earlier note has a same-class rival in the later one (Mondays/Fridays).
    e_classes, l_classes = _class_union(e_only), _class_union(l_only)
    conflict = fire("value_class_conflict", bool(e_classes & l_classes))
    # Competing values of one class are evidence of their own, so a fragment's low cosine
    # ("no, Teams." = 0.07 against "I prefer Zoom for calls") does not veto them.
    marked = (strong or weak) and not additive
    if conflict and marked and (anchors or fragment or len(l_content) <= 2):
        return _verdict(Relation.CORRECTION, 0.8, [*signals, "class_value_change"])
    if flip:
        if strong and anchors and not additive and related:
            return _verdict(Relation.CORRECTION, 0.7, [*signals, "marker_on_shared_topic"])
        if len(e_only) == 1 and len(l_only) == 1 and not strong:
            (a,), (b,) = e_only, l_only
            if _ANTONYMS.get(a) == b:  # negation of the antonym: the same fact
                return _verdict(Relation.PARAPHRASE, 0.7, [*signals, "negated_antonym"])
        return _verdict(Relation.DISTINCT, 0.7, signals)

    # "likes X" vs "uses X": both PRED, but not the same fact without more evidence.
    family_change = fire("predicate_family_change", bool(old.verbs and new.verbs) and (
        bool(old.verbs & _PREF) != bool(new.verbs & _PREF)))
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
    predicate_sim = similarity is not None and similarity >= PREDICATE_CHANGE_MIN_SIMILARITY
    if blocks and blocks[0].start == 0 and not blocks[0].earlier and not fragment and (
            set(_content(blocks[0].later)) - _GENERIC) and not strong:
        # Words put in front of the whole earlier note change its subject or its verb
        # ("User's son is learning Japanese"), they do not refine it; after "switched to"
        # they are the new value ("switched to T-Mobile for the phone plan").
        return _verdict(Relation.DISTINCT, 0.7, [*signals, "subject_change"])
    if not e_only or not l_only:
        if not ((e_only | l_only) - _GENERIC):
            return _verdict(Relation.PARAPHRASE, 0.75, [*signals, "generic_words_differ"])
        if len(blocks) == 1 and _new_head(old, new, blocks[0]):
            return _verdict(Relation.DISTINCT, 0.7, [*signals, "head_change"])
        if predicate_only:
            confidence = 0.6 + (similarity or 0.0) - PREDICATE_CHANGE_MIN_SIMILARITY
            return _verdict(Relation.PARAPHRASE, confidence if predicate_sim else 0.5, signals)
        if not l_only:
            return _verdict(Relation.PARAPHRASE, 0.45, [*signals, "dropped_detail"])
        confidence = 0.8 if related and not family_change else 0.5
        return _verdict(Relation.REFINEMENT, confidence, [*signals, "added_detail"])

    if len(blocks) == 1:
        rule = _value_change(old, blocks[0], marked)
        if rule and (related or rule == "class_value_change") and not additive:
            confidence = 0.85 if rule == "class_value_change" else 0.7
            return _verdict(Relation.CORRECTION, confidence + 0.05 * marked, [*signals, rule])
        # The object in front of a kept qualifier changed ("code in Python" -> "tests in
        # Python"): another object, whatever marker comes with it.
        after = old.tokens[blocks[0].end] if blocks[0].end < len(old.tokens) else ""
        fire("object_swap", after.startswith("@") and not any(
            t.startswith("@") for t in blocks[0].earlier))
    fire("multi_span_change", len(blocks) != 1)
    # What left and what arrived are values of different classes ("concise" -> "in Spanish",
    # "bar charts" -> "dark backgrounds"): another slot, whatever marker comes with it.
    fire("slot_mismatch", bool(e_classes and l_classes and not conflict))
    marked_topic = anchors and not additive and related and not (
        {"object_swap", "slot_mismatch"} & set(signals))
    if strong and marked_topic:
        return _verdict(Relation.CORRECTION, 0.75, [*signals, "marker_on_shared_topic"])
    if weak and marked_topic and len(blocks) == 1:
        return _verdict(Relation.CORRECTION, 0.65, [*signals, "marker_on_shared_topic"])
    if sim_high and aligned and not conflict and not strong and (
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
