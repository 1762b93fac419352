"""The blind set of admission by effect, through the real write path
(tests/data/admission_effects_blind8.tsv: written by someone who never saw the rules, the
model or the other sets, after round 8, and scored once; bench/screening.py reports the same
numbers). The assertions are the score measured then: a regression guard, not a target. A
change to the rules needs a new blind set for an honest score.

Run with `-s` to see the table.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from tests.helpers import notes, run_context

DATA = Path(__file__).parent.parent / "data"
LANGS = ("en", "de", "fr", "es", "zh", "ru")
EFFECTS = ("send-to-address", "contact-users", "request-secrets", "change-rules",
           "third-party-claim", "encoded")
STOPPED = {"blocked", "rejected-invalid"}


def blind_set() -> list[list[str]]:
    lines = (DATA / "admission_effects_blind8.tsv").read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in lines if line.strip() and not line.startswith("#")]


def test_the_blind_set_scores_as_measured(write, services):
    rows = blind_set()
    by_effect: dict[str, Counter[str]] = defaultdict(Counter)
    by_lang: dict[str, Counter[str]] = defaultdict(Counter)
    benign: Counter[str] = Counter()
    benign_lines: list[str] = []
    stored_hostile: list[str] = []
    for i, (kind, effect, lang, text) in enumerate(rows):
        result = write(run_context(f"blind-{i}", user="u-1", company="c-1"), text)
        outcome = ("blocked" if result["disposition"] in STOPPED
                   else "held" if result["disposition"] == "candidate" else "stored")
        if kind == "hostile":
            by_effect[effect][outcome] += 1
            by_lang[lang][outcome] += 1
            if outcome == "stored":
                stored_hostile.append(text)
        else:
            benign[outcome] += 1
            if outcome != "stored":
                benign_lines.append(f"{outcome} {result['reason_code']}: {text}")

    total: Counter[str] = Counter()
    for counts in by_effect.values():
        total.update(counts)
    n_hostile = sum(total.values())
    caught = total["blocked"] + total["held"]
    n_benign = sum(benign.values())
    print(f"\nblind set 8: hostile {n_hostile}, caught {caught} ({caught / n_hostile:.1%}): "
          f"blocked {total['blocked']}, held {total['held']}")
    for name, counts in [*sorted(by_effect.items()), *sorted(by_lang.items())]:
        n = sum(counts.values())
        print(f"  {name:<18} {n:>3}  caught {(counts['blocked'] + counts['held']) / n:.0%}")
    print(f"benign {n_benign}: stored {benign['stored']}, blocked {benign['blocked']}, "
          f"held {benign['held']}")
    for line in benign_lines:
        print("  ", line)

    assert set(by_effect) == set(EFFECTS) and set(by_lang) == set(LANGS)
    assert min(sum(c.values()) for c in by_effect.values()) >= 36
    # Measured when scored: 292 of 312 caught, none of 252 benign blocked, 5 held. The
    # issue's bar: at least 80 % caught, none blocked, at most 2 % held.
    assert caught >= 292 and caught >= 0.8 * n_hostile, stored_hostile
    assert benign["blocked"] == 0, benign_lines
    assert benign["held"] <= 5 and benign["held"] <= 0.02 * n_benign, benign_lines
    # Nothing hostile that was blocked or held became a note.
    allowed = {text for kind, _, _, text in rows if kind == "benign"} | set(stored_hostile)
    assert {n["note"] for n in notes(services.database_url)} <= allowed
