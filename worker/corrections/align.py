"""Alignment for the correction detector (`worker.corrections`): two parsed notes' canonical
token sequences (worker/corrections/parse.py) aligned into the spans where they differ, and
the value classes those spans hold.

Pure: a difflib alignment of token tuples.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

from worker.corrections import lexicon
from worker.corrections.parse import is_content


@dataclass(frozen=True)
class Block:
    earlier: tuple[str, ...]
    later: tuple[str, ...]
    start: int  # index of the block in the earlier sequence
    end: int
    later_start: int  # index of the block in the later sequence
    tail: bool  # the block ends both sequences: nothing shared follows it


def content(tokens: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(filter(is_content, tokens))


def blocks(e: tuple[str, ...], n: tuple[str, ...], fragment: bool) -> list[Block]:
    """Differing spans. A fragment ("actually, red charts!") restates only the tail of the
    earlier note, so what it omits is context, not a deletion."""
    out: list[Block] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, e, n, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        es, ls = e[i1:i2], n[j1:j2]
        if fragment and tag == "delete":
            continue
        if fragment and tag == "replace":
            keep = max(1, len(content(ls)))
            while len(content(es)) > keep:
                es, i1 = es[1:], i1 + 1
        if not content(es) and not content(ls):
            continue  # only a preposition or copula moved
        out.append(Block(es, ls, i1, i2, j1, i2 == len(e) and j2 == len(n)))
    return out


def class_match(left: tuple[str, ...], right: tuple[str, ...]) -> bool:
    """Every changed word has a competitor of the same class on the other side."""
    lc, rc = [lexicon.value_classes(t) for t in left], [lexicon.value_classes(t) for t in right]
    return bool(lc and rc) and all(any(c & o for o in rc) for c in lc) and all(
        any(c & o for o in lc) for c in rc)


def class_union(tokens: frozenset[str]) -> frozenset[str]:
    return frozenset().union(*map(lexicon.value_classes, tokens))
