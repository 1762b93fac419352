"""The correction detector's vocabulary files (`worker/corrections/data/*.tsv`): each parses, no
fact is listed twice or contradicted, every domain is a known one, every regex compiles, and
the loader hands the detector the structures it reads. Pure: no services, no model."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable
from importlib import resources

import pytest

from worker.corrections import business, lexicon, patterns, vocabulary
from worker.corrections.vocabulary import FILES, rows

DATA = resources.files("worker.corrections") / "data"
Row = tuple[str, ...]


def _names(row: Row) -> tuple[str, ...]:
    """A category row's names, or "" for a member kept whole that implies no category."""
    return tuple(row[0].split()) or ("",)


# What may appear only once in each file. A categories row speaks for each of its names.
KEYS: dict[str, Callable[[Row], list[Hashable]]] = {
    "domains.tsv": lambda r: [r[0]],
    "synonyms.tsv": lambda r: [r[0]],
    "value_classes.tsv": lambda r: [(r[0], r[1])],
    "classes.tsv": lambda r: [r[0]],
    "words.tsv": lambda r: [(r[0], r[1])],
    "prepositions.tsv": lambda r: [r[0]],
    "inflections.tsv": lambda r: [r[0]],
    "antonyms.tsv": lambda r: [r[0]],
    "numbers.tsv": lambda r: [(r[2], r[0])],
    "verb_pairs.tsv": lambda r: [(r[2], frozenset(r[:2]))],
    "categories.tsv": lambda r: [(name, r[1]) for name in _names(r)],
    "phrases.tsv": lambda r: [r[0]],
    "early_phrases.tsv": lambda r: [r[0]],
}


def _facts(name: str) -> list[str]:
    text = (DATA / name).read_text(encoding="utf-8")
    lines = [line for line in text.split("\n") if line.strip() and not line.startswith("#")]
    return lines[1:]  # past the header


def test_every_data_file_is_loaded_and_keyed():
    on_disk = {p.name for p in DATA.iterdir() if p.name.endswith(".tsv")}
    assert on_disk == set(FILES) == set(KEYS)


@pytest.mark.parametrize("name", sorted(FILES))
def test_rows_have_their_columns_and_a_known_domain(name):
    table = rows(name)  # the loader rejects another header or another width itself
    assert table
    for row in table:
        assert len(row) == len(FILES[name])
        if name == "domains.tsv":
            assert row[0] and row[1].strip(), row
        else:
            assert row[-1] in vocabulary.DOMAINS, f"{name}: unknown domain in {row}"
        if "phrases" not in name:  # (a pattern or replacement may have its own spaces)
            assert all(field == field.strip() for field in row), f"{name}: padded field {row}"


@pytest.mark.parametrize("name", sorted(FILES))
def test_no_fact_twice(name):
    twice = [key for key, n in Counter(k for row in rows(name) for k in KEYS[name](row)).items()
             if n > 1]
    assert twice == [], f"{name}: listed twice: {twice}"


@pytest.mark.parametrize("name", sorted(FILES))
def test_no_line_twice(name):
    """(Across files one line may well recur: "weekday monday" is both a rival value of the
    weekday class and a member of the weekday category.)"""
    lines = Counter(_facts(name))
    assert [line for line, n in lines.items() if n > 1] == []


def test_every_domain_is_used():
    used = {row[-1] for name in FILES if name != "domains.tsv" for row in rows(name)}
    assert set(vocabulary.DOMAINS) - used == set()


def test_synonyms_fold_in_one_step():
    """canon() looks a word up once: a canonical word that were itself a synonym of another
    word (a chain) would leave the two spellings apart."""
    chains = {word: canonical for word, canonical in vocabulary.SYNONYMS.items()
              if lexicon.canon(canonical) != lexicon.canon(word)}
    assert chains == {}


def test_synonyms_whose_stems_meet_agree():
    """Lookups also go by stem, so two words of one stem must name one canonical word, unless
    the stem is a listed word itself ("doc" / "docs"): the listed word wins."""
    by_stem: dict[str, set[str]] = {}
    for word, canonical in vocabulary.SYNONYMS.items():
        by_stem.setdefault(lexicon.stem(word), set()).add(lexicon.stem(canonical))
    conflicts = {s: c for s, c in by_stem.items() if len(c) > 1 and s not in vocabulary.SYNONYMS}
    assert conflicts == {}


def test_no_synonym_is_shadowed():
    """Number words and irregular forms are folded before the synonyms are consulted."""
    assert set(vocabulary.SYNONYMS) & (set(lexicon.NUMBER_WORDS) | set(lexicon.IRREGULAR)) == set()


def test_tokenizer_lists_share_no_word():
    """The tokenizer tests these lists in turn; a word in two would be dead in the later one."""
    lists = {"subject": lexicon.SUBJECT_WORDS, "negator": lexicon.NEGATORS,
             "be": lexicon.BE_WORDS, "preposition": frozenset(lexicon.PREPOSITIONS),
             "stopword": lexicon.STOPWORDS}
    shared = {(a, b): lists[a] & lists[b] for a in lists for b in lists if a < b}
    assert {pair: words for pair, words in shared.items() if words} == {}


def test_antonyms_go_both_ways():
    assert all(vocabulary.ANTONYMS.get(b) == a for a, b in vocabulary.ANTONYMS.items())


def test_every_class_has_one_kind():
    assert set(vocabulary.VALUE_CLASSES) == set(vocabulary.CLASS_KINDS)
    assert set(vocabulary.CLASS_KINDS.values()) == {"closed", "attribute", "open"}


def test_numbers_are_numbers():
    for kind, words in vocabulary.NUMBERS.items():
        for word, value in words.items():
            assert re.fullmatch(r"\d+(?:st|nd|rd|th)" if kind == "ordinal" else r"\d+", value), (
                word, value)


def test_categories_name_known_classes_and_domains():
    for _, member, _ in rows("categories.tsv"):
        if member.startswith("class:"):
            assert member[6:] in vocabulary.VALUE_CLASSES, member
        derived = re.fullmatch(r"\{(\w+):([\w-]+)\}", member)
        if derived:
            assert derived[1] in ("first", "members", "spellings"), member
            assert any(row[-1] == derived[2] for row in rows("categories.tsv")), member
    assert all(re.fullmatch(r"[^{}\s]+", member) for _, member in vocabulary.CATEGORIES)


def test_categories_nest_at_most_three_deep():
    """HYPONYMS closes the nesting in three rounds; a deeper chain would be cut short."""
    hyponyms = lexicon.HYPONYMS
    short = {(category, member) for category, members in hyponyms.items() for member in members
             if member in hyponyms and not hyponyms[member] - {category} <= members}
    assert short == set()


@pytest.mark.parametrize("name", ["phrases.tsv", "early_phrases.tsv"])
def test_every_regex_compiles(name):
    table = vocabulary.PHRASES if name == "phrases.tsv" else vocabulary.EARLY_PHRASES
    assert len(table) == len(rows(name))
    for pattern, replacement in table:
        assert "{synonyms:" not in pattern, pattern  # every placeholder was expanded
        compiled = re.compile(pattern)
        compiled.sub(replacement, "")  # group references in the replacement exist
        assert all(int(g) <= compiled.groups for g in re.findall(r"\\(\d)", replacement))


def test_the_loader_returns_the_documented_structures():
    assert vocabulary.SYNONYMS["mom"] == "mother"
    assert vocabulary.SYNONYMS["guitarist"] == "guitar"
    assert lexicon.canon("mum") == lexicon.canon("mother")
    assert lexicon.canon("twenties") == "20" and lexicon.canon("three") == "3"
    assert lexicon.NUMBER_WORDS["twelve"] == "12" and "thirteen" not in lexicon.NUMBER_WORDS
    assert lexicon.IRREGULAR["went"] == "go" and lexicon.ANTONYMS["before"] == "after"
    assert lexicon.PREPOSITIONS["on"] == "@in"
    assert {"size", "spiciness", "doneness"} <= lexicon.value_classes(lexicon.canon("medium"))
    assert {"bank", "database"} <= lexicon.OPEN_CLASSES
    assert "doneness" in lexicon.ATTRIBUTE_CLASSES and "bank" not in lexicon.ATTRIBUTE_CLASSES
    assert "wife" in lexicon.PERSON_NOUNS and "the" in lexicon.STOPWORDS
    assert ("wake", "up") in lexicon.OPTIONAL_PARTICLES
    assert frozenset({lexicon.canon("own"), lexicon.canon("drive")}) in lexicon.VERB_EQUIVALENTS
    assert frozenset({lexicon.canon("rent"), lexicon.canon("own")}) in lexicon.RIVAL_VERBS
    assert business.ENVIRONMENTS == "production staging sandbox preprod uat"

    def members(category: str) -> frozenset[str]:
        return lexicon.HYPONYMS[lexicon.canon(category)]
    for category, member in (("instrument", "cello"), ("pet", "conure"), ("country", "japan"),
                             ("city", "osaka"), ("abroad", "france"), ("food", "sushi"),
                             ("team", "lakers"), ("genre", "jazz"), ("car", "tesla")):
        assert lexicon.canon(member) in members(category), (category, member)
    assert lexicon.canon("dolly-parton") not in members("country")  # kept as it was
    assert "dolly-parton" in lexicon.CATEGORY_WORDS
    assert any("guitarist|pianist" in pattern for pattern, _ in vocabulary.PHRASES)
    assert patterns.join("loves rocket league") == "loves  rocket-league "
