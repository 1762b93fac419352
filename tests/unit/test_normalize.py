"""Normalization behind within-run idempotency and exact-restatement dedupe."""

from __future__ import annotations

import pytest

from worker.normalize import content_hash, normalize_text


@pytest.mark.parametrize("variant", [
    "Dark mode.", "dark mode", "DARK   MODE!!", "  dark\tmode…  ", "Ｄａｒｋ mode?", "dark mode ."
])
def test_equivalent_texts_normalize_alike(variant):
    assert normalize_text(variant) == "dark mode"
    assert content_hash(variant) == content_hash("dark mode")


@pytest.mark.parametrize("a, b", [
    ("User's timezone is UTC+1.", "User's timezone is UTC+2."),
    ("Prefers C++", "Prefers C"),
    ("likes pie charts", "dislikes pie charts"),
    ("(draft) notes", "draft notes"),
])
def test_different_facts_stay_different(a, b):
    assert content_hash(a) != content_hash(b)


def test_only_trailing_punctuation_is_stripped():
    assert normalize_text("¡Hola, mundo!") == "¡hola, mundo"
    assert normalize_text("...") == ""
