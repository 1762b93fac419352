"""The lexicon of the correction detector (`worker.corrections`): the stemmer, the canonical
form every word is compared in, and the word lists read through it.

The lists are data (`data/*.tsv`, loaded by `vocabulary`): closed vocabularies (subjects,
stopwords, verb classes, value classes, prepositions), synonyms, irregular forms and category
knowledge. This module gives them the names the parser and the rules use and derives the
lookups: the canonical form of a word, the value classes of a token, the members of a
category, the verb pairs. Words are listed in plain form; the lookup keys are derived with the
same stemmer the detector applies to notes, so "Mondays" finds "monday".
"""

from __future__ import annotations

import re
from functools import lru_cache

from worker.corrections import vocabulary

_SETS = vocabulary.WORD_SETS
# Who the note is about: every subject word is dropped so that first and third person align.
SUBJECT_WORDS = frozenset(_SETS["subject"])
STOPWORDS = frozenset(_SETS["stopword"])
PREPOSITIONS = vocabulary.PREPOSITIONS
PRONOUNS = frozenset(_SETS["pronoun"])
BE_WORDS = frozenset(_SETS["be"])
NEGATORS = frozenset(_SETS["negator"])
PREFERENCE_VERBS = frozenset(_SETS["preference-verb"])
USAGE_VERBS = frozenset(_SETS["usage-verb"])
NEGATIVE_VERBS = frozenset(_SETS["negative-verb"])
EXCLUSIVE_VERBS = frozenset(_SETS["exclusive-verb"])
EXCLUSIVE_PREFERENCE_VERBS = frozenset(_SETS["exclusive-preference-verb"])
MULTI_VERBS = frozenset(_SETS["multi-verb"])
GENERIC_WORDS = frozenset(_SETS["generic"])
LIGHT_VERBS = frozenset(_SETS["light-verb"])
PERSON_NOUNS = frozenset(_SETS["person"])
TITLES = frozenset(_SETS["title"])
MULTI_RELATIONS = frozenset(_SETS["multi-relation"])
PARTICIPLES = frozenset(_SETS["participle"])
PAST_FORMS = frozenset(_SETS["past-form"])
PAST_EVENT_VERBS = frozenset(_SETS["past-event-verb"])
PARTICLES = frozenset(_SETS["particle"])
# (verb, particle) pairs where the particle is optional ("wakes up" = "wakes").
OPTIONAL_PARTICLES = frozenset(vocabulary.VERB_PAIRS["optional-particle"])

SYNONYMS = vocabulary.SYNONYMS
# Value class -> its members, space-separated.
VALUE_CLASSES = {name: " ".join(words) for name, words in vocabulary.VALUE_CLASSES.items()}
# Classes whose members describe one attribute of a thing, so a verb that takes many objects
# still holds only one of them ("drinks decaf" / "drinks regular").
ATTRIBUTE_CLASSES = tuple(c for c, kind in vocabulary.CLASS_KINDS.items() if kind == "attribute")
# Kinds of named things a person may have several of: they compete only in a one-value slot or
# after a correction marker.
OPEN_CLASSES = frozenset(c for c, kind in vocabulary.CLASS_KINDS.items() if kind == "open")
IRREGULAR = vocabulary.INFLECTIONS
ANTONYMS = vocabulary.ANTONYMS
# Zero to twelve are read as digits before anything else; larger number words are synonyms,
# which their stems reach too ("twenties").
NUMBER_WORDS = {word: value for word, value in vocabulary.NUMBERS["cardinal"].items()
                if int(value) <= 12}
# Raw words of the category knowledge; the tokenizer keeps the hyphenated ones whole
# ("low-fodmap").
CATEGORY_WORDS = vocabulary.CATEGORY_WORDS

HAS_DIGIT = re.compile(r"\d")
# A date pattern spelled with its letters ("dd/mm/yyyy", "yyyy-mm-dd"; the stemmer may turn a
# final y into i).
DATE_FORMAT = re.compile(r"^(?:[dmy]{1,4}[-/. ]){2}[dmyi]{1,4}$")
TOKEN = re.compile(r"[$€£]?[\w]+(?:[-+:./,][\w]+)*[+-]?\d*")


# --- Lookups: the stemmer and the canonical form every word list above is matched in. ------


# "-ness" nouns that are no adjective plus "-ness".
_NESS_NOUNS = frozenset({"business", "witness", "harness", "wilderness", "fitness"})


def stem(word: str) -> str:
    """Light suffix stripping so inflections meet ("prefers"/"preferred", "Mondays")."""
    if len(word) <= 3 or HAS_DIGIT.search(word):
        return word
    if word.endswith(("ies", "ied")):
        # "pies" -> "pie" (as "pie"), "flies" -> "fly" (as "fly"), "cities" -> "citi" (as
        # "city" -> "citi")
        base = word[:-3]
        return word[:-1] if len(base) <= 1 else base + "y" if len(base) == 2 else base + "i"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ness") and len(word) > 7 and word not in _NESS_NOUNS:
        word = word[:-4]  # "blindness" -> "blind"
    if word.endswith(("ection", "ption")) and len(word) > 9:
        word = word[:-3]  # "interruption" -> "interrupt", like "interrupted"
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # "preferred" -> "prefer", "planning" -> "plan"
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]  # "move"/"moved"/"moving" all end as "mov"
    if word.endswith("y") and len(word) > 3:
        word = word[:-1] + "i"  # "pie"/"pies", "study"/"studies" meet as "pi", "studi"
    return word


_SYNONYM_STEMS = {stem(k): v for k, v in SYNONYMS.items()} | SYNONYMS


@lru_cache(maxsize=16384)
def canon(raw: str) -> str:
    """The canonical form of one lower-cased word: numbers as digits, irregular forms and
    synonyms folded, then stemmed."""
    if raw in NUMBER_WORDS:
        return NUMBER_WORDS[raw]
    raw = IRREGULAR.get(raw, raw)
    target = _SYNONYM_STEMS.get(raw) or _SYNONYM_STEMS.get(stem(raw))
    return stem(target) if target else stem(raw)


def keys(words: frozenset[str]) -> frozenset[str]:
    return frozenset(canon(w) for w in words)


# Unordered pairs of canonical verbs that state the same fact about one object.
VERB_EQUIVALENTS = frozenset(frozenset((canon(a), canon(b)))
                             for a, b in vocabulary.VERB_PAIRS["equivalent"]
                             if canon(a) != canon(b))
# Unordered pairs of canonical verbs that rival each other for one object ("rents" / "owns").
RIVAL_VERBS = frozenset(frozenset((canon(a), canon(b)))
                        for a, b in vocabulary.VERB_PAIRS["rival"])


def _hyponyms() -> dict[str, frozenset[str]]:
    """Canonical category noun -> every canonical member, nested categories included."""
    direct: dict[str, set[str]] = {}
    for names, member in vocabulary.CATEGORIES:
        words = vocabulary.VALUE_CLASSES[member[6:]] if member.startswith("class:") else (member,)
        for name in names:
            direct.setdefault(canon(name), set()).update(canon(w) for w in words)
    closed = {k: set(v) for k, v in direct.items()}
    for _ in range(3):  # nesting is shallow: pet > bird > conure, europe > france > paris
        for members in closed.values():
            members |= {m for k in list(members) if k in closed for m in closed[k]}
    return {k: frozenset(v - {k}) for k, v in closed.items()}


# Category noun -> members that imply it ("instrument" -> cello, piano, ...).
HYPONYMS = _hyponyms()


_CLASS_OF: dict[str, frozenset[str]] = {}
for _name, _members in vocabulary.VALUE_CLASSES.items():
    for _member in _members:
        _CLASS_OF[canon(_member)] = _CLASS_OF.get(canon(_member), frozenset()) | {_name}


@lru_cache(maxsize=16384)
def value_classes(token: str) -> frozenset[str]:
    """Closed classes a canonical token belongs to; any number is in "number"."""
    if HAS_DIGIT.search(token):
        return frozenset({"number"})
    if len(token) == 1 and token.isalpha():
        return frozenset({"letter"})  # "building A" -> "building C"
    if DATE_FORMAT.match(token):
        return frozenset({"date_format"})  # "DD/MM/YYYY" -> "YYYY-MM-DD"
    return _CLASS_OF.get(token, frozenset())
