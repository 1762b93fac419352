"""Span and structure predicates of the correction detector (`worker.corrections`): is one
replaced span a new value for the same slot, does an addition change the head noun, the verb
(a particle) or the subject, did the holder or the roles move, do two negations agree.

Each takes parsed notes (`parse.Note`) or an aligned span (`align.Block`) and answers one
structural question; the rules of `decision.DECISION_RULES` weigh the answers.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from itertools import takewhile

from worker.corrections import align, lexicon, parse
from worker.corrections.align import Block as _Block
from worker.corrections.parse import Note as _Note

PRED, BE, RELOCATE = parse.PRED, parse.BE, parse.RELOCATE
PREF, EXCLUSIVE, MULTI = parse.PREF, parse.EXCLUSIVE, parse.MULTI
PERSON, GENERIC, ANTONYMS = parse.PERSON, parse.GENERIC, parse.ANTONYMS
LIGHT = lexicon.keys(lexicon.LIGHT_VERBS)
_STRUCTURAL_PRED, _BE, _RELOCATE = PRED, BE, RELOCATE
_EXCLUSIVE, _MULTI, _EXCLUSIVE_PREF = EXCLUSIVE, MULTI, parse.EXCLUSIVE_PREF
_PERSON, _GENERIC, _LIGHT = PERSON, GENERIC, LIGHT
_ATTRIBUTES = frozenset(lexicon.ATTRIBUTE_CLASSES)
_RIVALS = lexicon.RIVAL_VERBS
# Titles between a slot's copula and a name: "advisor is Professor Kim" -> "Professor Alvarez".
_TITLES = lexicon.keys(lexicon.TITLES)
# Relations a person has many of: "User's friend is Sofia" / "User's friend is Daniel" names two
# friends; an advisor, landlord or spouse is one at a time ("best friend" is one too).
_MANY = lexicon.keys(lexicon.MULTI_RELATIONS)
_ONE = lexicon.keys(frozenset({"best", "closest", "oldest", "eldest", "youngest", "only", "main"}))
_DWELLING = frozenset({"dwelling"})
_DIRECTIONAL = frozenset({"@from", "@to", "@over", lexicon.canon("before"), lexicon.canon("after")})
# Words whose two sides may trade places without changing the fact ("Spanish and French").
_SYMMETRIC = frozenset(lexicon.canon(w) for w in ("and", "or", "plus", "&", "both", "nor"))
_RELATIVE = frozenset(lexicon.canon(w) for w in ("where", "when", "while"))
_content, _class_match, _class_union = align.content, align.class_match, align.class_union
_structural, _is_content = parse.structural, parse.is_content


def verb_before(head: tuple[str, ...]) -> str | None:
    """The last word before a slot's preposition: "lives" in "lives in X"."""
    return next((t for t in reversed(head) if not t.startswith("@")), None)


def respelled(es: tuple[str, ...], ls: tuple[str, ...]) -> bool:
    """One word for another that differs in a letter or two: a fixed spelling ("Mia" / "Mila",
    "Katherine" / "Catherine"), not another value."""
    return len(es) == len(ls) == 1 and SequenceMatcher(None, es[0], ls[0]).ratio() >= 0.75


def value_change(e: _Note, block: _Block, markers: bool,
                 names: frozenset[str] = frozenset()) -> str | None:
    """Name of the rule by which one replaced span is a new value for the same slot."""
    es, ls = _content(block.earlier), _content(block.later)
    if len(es) > 3 or len(ls) > 3:
        return None
    if es and ls and len(es) <= 2 and len(ls) <= 2 and frozenset((es[0], ls[0])) in _RIVALS and (
            not set(es + ls) & parse.PARTICLES):
        # "rents" -> "bought a flat": one tenure replaces the other ("rents out" is a landlord's)
        return "rival_verb"
    preps_e = {t for t in block.earlier if t.startswith("@")}
    preps_l = {t for t in block.later if t.startswith("@")}
    if preps_e != preps_l and preps_e and preps_l:
        return None  # "in Berlin" -> "with roommates": another slot
    before = e.tokens[block.start - 1] if block.start > 0 else None
    head = e.tokens[: block.start]
    exclusive_pref = bool(e.verbs & _EXCLUSIVE_PREF)
    if (block.start == 0 or e.negated) and not markers:
        # The subject or the verb changed ("car is red" / "bike is red"), or both notes rule
        # things out ("never works weekends" / "never works late"): both can hold.
        return None
    titled = before in _TITLES and block.start > 1 and e.tokens[block.start - 2] == _BE
    head_slot = (before == _BE or titled) and any(
        not _structural(t) and t not in _GENERIC for t in head)
    # "owns one car, a Subaru" -> "one car, a Mazda": a counted single thing holds one value.
    single = len(head) >= 2 and head[-2] == "1" and _is_content(head[-1])
    # "keeps all of their photos in iCloud" -> "in Google Photos": where all of them are kept
    whole = e.whole and before is not None and before.startswith("@") and (
        block.end == len(e.tokens))
    slot = head_slot or single or whole or before == _RELOCATE or (
        before is not None and before.startswith("@") and verb_before(head) in _EXCLUSIVE)
    if not (markers or slot) and all(
            lexicon.value_classes(t) <= lexicon.OPEN_CLASSES for t in (*es, *ls)):
        # Named things of one kind ("holds Bitcoin" / "holds Ethereum", "a Netflix" / "a
        # Spotify subscription") are often held side by side: without a marker or a one-value
        # slot a second one is another fact.
        return None
    if _class_match(es, ls):
        # "speaks French" / "speaks Spanish", "likes Python" / "likes Rust", "hates meetings
        # before 10" / "hates meetings after 4": both values can hold at once. So can the
        # objects of an action with a kept qualifier ("checks email at 9" / "checks Slack at
        # 9"); counts and amounts ("has 2 kids" / "has 3 kids") cannot.
        liking = _STRUCTURAL_PRED in head and not exclusive_pref
        after = e.tokens[block.end] if block.end < len(e.tokens) else ""
        counted = all(lexicon.value_classes(t) == {"number"} for t in (*es, *ls))
        action_object = (after.startswith("@") and before is not None
                         and not _structural(before) and not lexicon.value_classes(before))
        attribute = all(lexicon.value_classes(t) & _ATTRIBUTES for t in (*es, *ls))
        # (a change inside the object of such a verb is another object: "eats wet food" /
        # "eats dry food")
        object_of_multi = not counted and not attribute and (
            before in _MULTI or liking or action_object)
        if object_of_multi and not markers and not whole:
            return None
        return "class_value_change"
    person = {t for t in head if _is_content(t)} <= _PERSON
    if person and bool(_class_union(frozenset(es))) != bool(_class_union(frozenset(ls))):
        return None  # a person's other attribute: "partner is vegan" / "partner is a vet"
    subject = [t for t in head[:head.index(_BE)] if _is_content(t)] if _BE in head else []
    # Another name for one of many ("friend is Sofia" / "Daniel") is another person, unless it
    # only respells the name ("daughter is called Mia" / "Mila"); another attribute ("sister
    # is a doctor" / "a lawyer") is still about the same one.
    many = bool(subject) and subject[-1] in _MANY and not set(subject) & _ONE and all(
        t in e.names or t in names for t in (*es, *ls)) and not respelled(es, ls)
    # "hometown is Melbourne" -> "went to university in Sydney": a new noun with a preposition
    # of its own opens another slot, the place is no longer the hometown's.
    # (a verb before the preposition is how the value changed: "was extended to 15 September")
    objects = [b for a, b in zip(block.later, block.later[1:], strict=False) if a.startswith("@")]
    framed = not preps_e and any(_is_content(t) and not lexicon.value_classes(t) and t not in es
                                 and t not in _GENERIC for t in objects)
    if head_slot and not any(t in _MULTI for t in head) and not many and not framed:
        return "slot_value_change"  # "<slot> is X" -> "<slot> is Y" (not "has a dog named X")
    # "lives in France" / "lives in a nice house": the kind of home is no rival of the place
    dwelling = [bool(_DWELLING & lexicon.value_classes(t)) for t in (*es, *ls)]
    if before is not None and before.startswith("@") and verb_before(head) in _EXCLUSIVE and (
            block.tail) and not any(dwelling):
        return "slot_value_change"  # "lives in X", "works as X"
    if before == _RELOCATE:
        return "slot_value_change"  # "is moving to X": one destination
    if single and es and ls and block.end == len(e.tokens):
        return "slot_value_change"  # "one car, a Honda Civic" -> "a Ford Focus": renamed
    return None


def new_head(old: _Note, new: _Note, block: _Block) -> bool:
    """A bare noun appended to the earlier note's last word makes that word a modifier:
    "has a cat" -> "has a cat allergy" is about the allergy. Values of a closed class stay
    values ("reports as PDF" -> "PDF attachments")."""
    if block.earlier or block.start != len(old.tokens) or not block.later:
        return False
    if block.later_start in new.clause_starts:
        return False  # "..., mostly Le Guin": a new clause adds detail
    if len(list(takewhile(_is_content, block.later))) > 2:
        return False  # a compound noun is one or two bare words ("car seat", "cat allergy")
    last, first = old.tokens[-1], block.later[0]
    if _structural(last) or _structural(first) or first in _GENERIC or first.endswith(
            ("ly", "li")):
        return False  # "speaks German" -> "speaks German fluently" adds detail
    # A value of a closed class in a slot ("reports as PDF") stays a value when a noun follows
    # ("PDF attachments"); the object of a verb does not ("has a window" -> "has a window
    # seat", "prefers email" -> "prefers email newsletters").
    slot = len(old.tokens) > 1 and old.tokens[-2].startswith("@")
    return not lexicon.value_classes(first) and not (slot and lexicon.value_classes(last))


def phrasal(old: _Note, block: _Block) -> bool:
    """A particle added to, dropped from or swapped on a verb makes another verb: "works on
    Mondays" / "works out on Mondays", "logs in at 8" / "logs off at 8"."""
    moved = (*block.earlier, *block.later)  # "logs in" / "logs off": both sides particles
    if not moved or len(moved) > 2 or not all(t in parse.PARTICLES | {"@in"} for t in moved):
        return False
    verb = old.tokens[block.start - 1] if block.start > 0 else ""
    return _is_content(verb) and all((verb, p) not in parse.OPTIONAL_PARTICLES for p in moved)


def subject_change(old: _Note, block: _Block) -> bool:
    """The words changed sit in the subject, right before its copula: "work laptop is a Dell"
    / "personal laptop is a Dell", "cat is called Toast" / "cat sitter is called Toast"."""
    rest = old.tokens[block.end:]
    after = next((t for t in rest if _structural(t)), None)  # past the rest of the subject
    changed = (*block.earlier, *block.later)
    return after == _BE and not any(map(_structural, changed)) and all(
        map(_is_content, old.tokens[:block.start])) and bool(set(changed) - _GENERIC)


def same_verb(block: _Block) -> bool:
    """Only the verb differs, and the two verbs state one fact ("owns" / "drives a Tesla")."""
    es, ls = _content(block.earlier), _content(block.later)
    return len(es) == 1 and len(ls) == 1 and frozenset((es[0], ls[0])) in lexicon.VERB_EQUIVALENTS


def light_swap(block: _Block) -> bool:
    """One side of a changed verb is empty or light ("keeps" / "has a garden"), so similarity
    may judge it; two content verbs ("learns" / "teaches") are two activities."""
    es, ls = set(_content(block.earlier)), set(_content(block.later))
    return not es or not ls or es <= _LIGHT or ls <= _LIGHT


def agrees(a: _Note, b: _Note) -> bool:
    """Both notes speak against one thing and neither is against what the other is for, so a
    negation restates rather than reverses: "prefers bar charts over pie charts" / "bars, not
    pies"; "answers without emoji" / "no emoji in answers"."""
    return bool(a.against & b.against) and not (a.pro & b.against or a.against & b.pro)


def holder_chain(old: _Note, new: _Note) -> bool:
    """The holder gained or lost a link: "User's dog" / "User's dog's vet"."""
    def link(n: _Note) -> str:
        return n.tokens[1] if len(n.tokens) > 1 and n.tokens[1] in _PERSON else ""
    return bool(old.tokens and new.tokens) and old.tokens[0] == new.tokens[0] in _PERSON and (
        link(old) != link(new))


def holder_moved(old: _Note, new: _Note) -> bool:
    """A person who leads one note follows its verb in the other: "visits their parents" /
    "User's parents visit them". Not a moved phrase ("In September the user's daughter starts
    school") nor a name's complement ("Priya is the user's manager")."""
    for a, b in ((old.tokens, new.tokens), (new.tokens, old.tokens)):
        if not (a and b and a[0] in _PERSON and a[0] != b[0] and a[0] in b):
            continue
        at = b.index(a[0])
        if _BE in (b[at - 1], b[at + 1] if at + 1 < len(b) else None):
            continue
        verb = next((t for t in a[1:] if _is_content(t) and t in b), None)
        if verb is not None and b.index(verb) < at:
            return True
    return False


def neighbors(tokens: tuple[str, ...], pivot: str) -> tuple[str | None, str | None]:
    """The nearest meaningful words on either side of a direction word."""
    at = tokens.index(pivot)
    meaningful = [t for t in tokens[:at] if _is_content(t) and t not in _GENERIC]
    after = (t for t in tokens[at + 1:] if _is_content(t) and t not in _GENERIC)
    return (meaningful[-1] if meaningful else None), next(after, None)


def roles_swapped(old: _Note, new: _Note) -> bool:
    """The same words stand on the other sides of a direction: "from London to Paris" / "from
    Paris to London", "walks the dog before breakfast" / "has breakfast before walking the
    dog". Word sets match; the facts do not. So do the two sides of a shared verb traded
    ("Alice manages Bob" / "Bob manages Alice", "works where she lives" / "lives where she
    works"); a passive was already turned active by the parser, so "Bob is managed by Alice"
    keeps its sides."""
    shared = set(old.tokens) & set(new.tokens)
    for pivot in _DIRECTIONAL & shared:
        a, b = neighbors(old.tokens, pivot), neighbors(new.tokens, pivot)
        # Something crossed the pivot; a verb that only moved to the front of a passive
        # ("Translate docs to German before release" / "Docs must be translated to German
        # before release") leaves both sides where they were.
        if None not in (*a, *b) and a != b and (a[0] == b[1] or a[1] == b[0]):
            return True
    names = old.names | new.names
    for pivot in shared - _SYMMETRIC:
        # Two named parties around a content word, or two clauses around a relative word. Not
        # the copula ("User's manager is Priya" / "Priya is the user's manager") and not two
        # nouns that only moved ("flight seat preference is aisle" / "aisle seat on flights").
        relative = pivot in _RELATIVE
        acting = relative or (_is_content(pivot) and pivot not in _GENERIC and pivot != BE)
        if not acting or old.tokens.count(pivot) != 1 or new.tokens.count(pivot) != 1:
            continue
        a, b = neighbors(old.tokens, pivot), neighbors(new.tokens, pivot)
        if None in (*a, *b) or a[0] == a[1] or a != b[::-1]:
            continue
        if relative or {a[0], a[1]} <= names:
            return True
    return False



def other_subject(old: _Note, new: _Note) -> bool:
    """Both notes open with different words and differ again later ("Ticket #101 is assigned
    to Dana" / "Ticket #202 ... to Omar", "Pro plan costs $20" / "Basic plan price is $12",
    "Production runs Postgres 14" / "Staging was upgraded to Postgres 16"): the value belongs
    to another thing, so a marker with a rival value is no correction of the earlier one."""
    e_content, l_content = old.content, new.content
    swaps, mixed = [], False
    for block in align.blocks(old.tokens, new.tokens, False):
        es = set(_content(block.earlier)) - _GENERIC - l_content
        ls = set(_content(block.later)) - _GENERIC - e_content
        swaps.append(bool(es and ls) and block.start <= 1 and block.later_start <= 1)
        # one span that swaps both a named thing and its value ("Dog Max weighs 30" / "Cat
        # Luna is 4")
        mixed = mixed or (len(swaps) == 1 and all(
            any(not lexicon.value_classes(t) for t in side)
            and any(map(lexicon.value_classes, side))
            for side in (es, ls)))
    return bool(swaps) and swaps[0] and (len(swaps) >= 2 or mixed)


def other_lead(old: _Note, new: _Note) -> bool:
    """Both notes open with a named thing of their own and the things differ ("Production runs
    Postgres 14" / "Staging was upgraded to Postgres 16", "Team A uses Jira" / "Team B switched
    to Linear"): a marker then speaks of the other thing. The user, people and notes that open
    with their verb have no lead, so "User's layout is QWERTY" / "User switched to Dvorak"
    stays a correction."""
    if not (old.lead and new.lead) or old.lead == new.lead:
        return False

    def within(lead: str, note: _Note) -> bool:
        # The word after the note's own lead is its verb, which a synonym may fold into the
        # other lead ("Hotfixes now ship" reads "hotfix deploy": no mention of deploys).
        own = {lexicon.canon(w) for w in note.lead.split()}
        n = next((i for i, t in enumerate(note.tokens) if t not in own), len(note.tokens))
        body = set(note.tokens[:n] + note.tokens[n + 1:])
        return {lexicon.canon(w) for w in lead.split()} <= body
    return not within(old.lead, new) and not within(new.lead, old)


def other_kind(old: _Note, new: _Note) -> bool:
    """One head noun with another qualifier in each note ("squash when merging feature
    branches" / "hotfix branches get a merge commit rather than a squash"): the later note
    speaks of another kind of the thing, so rejecting the earlier note's value there is an
    exception beside the rule, not a correction of it. Value qualifiers ("a red car" / "a
    blue car", "the magma palette, not viridis") are the corrected value itself and do not
    count."""
    e_tokens, l_tokens = set(old.tokens), set(new.tokens)
    for i, head in enumerate(old.tokens):
        if i == 0 or head not in l_tokens or head in _GENERIC or head not in _content((head,)):
            continue
        before = old.tokens[i - 1]
        j = new.tokens.index(head)
        if j == 0:
            continue
        after = new.tokens[j - 1]
        if before == after or before in l_tokens or after in e_tokens or before in new.rejected:
            continue
        if any(t in _GENERIC or t.startswith("@") or lexicon.value_classes(t)
               or t not in _content((t,)) for t in (before, after)):
            continue
        return True
    return False
