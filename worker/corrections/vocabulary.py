"""The correction detector's vocabulary, read once at import from `worker/corrections/data/`.

Each data file is a TSV table: `#` lines are comments (the why of an entry), the first other
line names the columns, and every further line is one fact, its domain (what the fact is
about, from `domains.tsv`) in the last column. Fields are taken as written, spaces included,
so a phrase replacement keeps its padding and a regex needs no escaping beyond its own. This
module only parses the files into the structures below; `lexicon`, `patterns`, `numbers` and
the rules give them their meaning. The files are package data, read through
`importlib.resources`, so an installed wheel finds them too.
"""

from __future__ import annotations

import re
from importlib import resources

# File -> its columns, in order.
FILES: dict[str, tuple[str, ...]] = {
    "domains.tsv": ("domain", "description"),
    "synonyms.tsv": ("word", "canonical", "domain"),
    "value_classes.tsv": ("class", "word", "domain"),
    "classes.tsv": ("class", "kind", "domain"),
    "words.tsv": ("set", "word", "domain"),
    "prepositions.tsv": ("word", "slot", "domain"),
    "inflections.tsv": ("form", "base", "domain"),
    "antonyms.tsv": ("word", "antonym", "domain"),
    "numbers.tsv": ("word", "value", "kind", "domain"),
    "verb_pairs.tsv": ("first", "second", "relation", "domain"),
    "categories.tsv": ("category", "member", "domain"),
    "phrases.tsv": ("pattern", "replacement", "domain"),
    "early_phrases.tsv": ("pattern", "replacement", "domain"),
}

Row = tuple[str, ...]


def rows(name: str) -> tuple[Row, ...]:
    """The facts of one data file in file order (comments and blank lines skipped). A header
    other than the expected one, or a row of another width, is an error: a shifted column
    would otherwise load silently as another fact."""
    columns = FILES[name]
    text = (resources.files("worker.corrections") / "data" / name).read_text(encoding="utf-8")
    out: list[Row] = []
    header: Row | None = None
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = tuple(line.split("\t"))
        if header is None:
            header = fields
            if header != columns:
                raise ValueError(f"{name}:{number}: header {header}, expected {columns}")
        elif len(fields) != len(columns):
            raise ValueError(f"{name}:{number}: {len(fields)} fields, expected {len(columns)}")
        else:
            out.append(fields)
    return tuple(out)


def _grouped(table: tuple[Row, ...]) -> dict[str, tuple[str, ...]]:
    """First column -> the second column of its rows, in file order."""
    groups: dict[str, list[str]] = {}
    for key, value, *_ in table:
        groups.setdefault(key, []).append(value)
    return {key: tuple(values) for key, values in groups.items()}


DOMAINS: dict[str, str] = {domain: description for domain, description in rows("domains.tsv")}

_SYNONYM_ROWS = rows("synonyms.tsv")
# One word -> its canonical word.
SYNONYMS: dict[str, str] = {word: canonical for word, canonical, _ in _SYNONYM_ROWS}
# Value class -> its member words; class -> "closed", "attribute" or "open".
VALUE_CLASSES: dict[str, tuple[str, ...]] = _grouped(rows("value_classes.tsv"))
CLASS_KINDS: dict[str, str] = {name: kind for name, kind, _ in rows("classes.tsv")}
# Word list name ("stopword", "person", "environment", ...) -> its words.
WORD_SETS: dict[str, tuple[str, ...]] = _grouped(rows("words.tsv"))
PREPOSITIONS: dict[str, str] = {word: slot for word, slot, _ in rows("prepositions.tsv")}
INFLECTIONS: dict[str, str] = {form: base for form, base, _ in rows("inflections.tsv")}
ANTONYMS: dict[str, str] = {word: antonym for word, antonym, _ in rows("antonyms.tsv")}
_NUMBER_ROWS = rows("numbers.tsv")
# Kind ("cardinal", "tens", "scale", "ordinal") -> number word -> its value as written.
NUMBERS: dict[str, dict[str, str]] = {
    kind: {word: value for word, value, k, _ in _NUMBER_ROWS if k == kind}
    for kind in dict.fromkeys(row[2] for row in _NUMBER_ROWS)}
_PAIR_ROWS = rows("verb_pairs.tsv")
# Relation ("equivalent", "rival", "optional-particle") -> verb pairs.
VERB_PAIRS: dict[str, tuple[tuple[str, str], ...]] = {
    relation: tuple((first, second) for first, second, r, _ in _PAIR_ROWS if r == relation)
    for relation in dict.fromkeys(row[2] for row in _PAIR_ROWS)}


_DERIVED = re.compile(r"^\{(first|members|spellings):([\w-]+)\}$")


def _categories(table: tuple[Row, ...]) -> tuple[tuple[tuple[str, ...], str], ...]:
    """(names, member) per fact, a derived member ("{first:place}") expanded in place into
    the words it stands for."""
    out: list[tuple[tuple[str, ...], str]] = []
    for category, member, _ in table:
        names = tuple(category.split())
        derived = _DERIVED.match(member)
        if not derived:
            out.append((names, member))
            continue
        how, domain = derived.groups()
        source = [(c.split(), m) for c, m, d in table if d == domain]
        if any(_DERIVED.match(m) for _, m in source):
            raise ValueError(f"categories.tsv: {member} reads a domain with derived members")
        if how == "first":
            words = [c[0] for c, _ in source if c]
        elif how == "members":
            words = [m for _, m in source if not m.startswith("class:")]
        else:
            words = [name for c, _ in source for name in c]
        out += [(names, word) for word in dict.fromkeys(words)]
    return tuple(out)


# Category knowledge, one (category names, member) a fact; a member "class:NAME" stands for
# every word of that value class.
CATEGORIES = _categories(rows("categories.tsv"))
# Every name and member word of the categories (the tokenizer keeps the hyphenated ones
# whole).
CATEGORY_WORDS: frozenset[str] = frozenset(
    word for names, member in CATEGORIES
    for word in (*names, *(() if member.startswith("class:") else (member,))))

_PLACEHOLDER = re.compile(r"\{synonyms:([\w-]+)\}")


def _alternation(match: re.Match[str]) -> str:
    words = [word for word, _, domain in _SYNONYM_ROWS if domain == match[1]]
    if not words:  # an empty alternation would match everywhere
        raise ValueError(f"phrases.tsv: no synonyms in domain {match[1]!r}")
    return "|".join(words)


def _expand(pattern: str) -> str:
    """A phrase pattern with `{synonyms:DOMAIN}` spelled out as the alternation of that
    domain's words ("guitarist|pianist|...")."""
    return _PLACEHOLDER.sub(_alternation, pattern)


# Ordered regex rewrites (pattern, replacement): before the correction markers are read, and
# after.
EARLY_PHRASES: tuple[tuple[str, str], ...] = tuple(
    (pattern, replacement) for pattern, replacement, _ in rows("early_phrases.tsv"))
PHRASES: tuple[tuple[str, str], ...] = tuple(
    (_expand(pattern), replacement) for pattern, replacement, _ in rows("phrases.tsv"))
