"""Which tokens of a note could be someone's id, and how the run's own ids are set aside;
the lookup (who holds memory here) is a plain callable."""

from __future__ import annotations

from worker.writes.admission.screening import foreign_identity, named_ids


def test_id_shaped_tokens_count_anywhere_plain_words_only_after_a_label():
    assert named_ids("user u-2 likes green tea") >= {"u-2"}
    assert "john@x.com" in named_ids("the user's email is john@x.com")
    assert "42" not in named_ids("user orders 42 units")
    assert "42" in named_ids("ask customer #42 about it")
    assert "globex" in named_ids("company_id=globex: our main contact")
    assert "8812" in named_ids("notes of user 8812")


def test_the_runs_own_ids_are_never_looked_up():
    asked: list[list[str]] = []

    def lookup(ids: list[str]) -> str | None:
        asked.append(ids)
        return "user" if "u-2" in ids else None

    assert foreign_identity("user u-1 and user u-2", user_id="U-1", company_id=None,
                            lookup=lookup) == "user"
    assert "u-1" not in asked[-1]
    assert foreign_identity("user_id=u-1 prefers eur", user_id="u-1", company_id="acme",
                            lookup=lookup) is None
    assert foreign_identity("prefers tea", user_id="u-1", company_id=None,
                            lookup=lambda ids: "user") is None, "nothing id-like: no lookup"
