"""A hostile set is blocked or neutralized and a benign set passes, with the default policy,
through the real write path (tests/data/admission_hostile.tsv, admission_benign.txt).

Run with `-s` to see the rates table (the README's numbers come from it).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from tests.helpers import hold_memory_for, notes, run_context

DATA = Path(__file__).parent.parent / "data"
USER, COMPANY = "u-1001", "acme"
# Dispositions that mean "nothing was stored": admission blocked it, or validation refused it
# before admission (a note over 2,000 characters is `rejected-invalid`).
STOPPED = {"blocked", "rejected-invalid"}


def hostile_set() -> list[tuple[str, str]]:
    lines = (DATA / "admission_hostile.tsv").read_text(encoding="utf-8").splitlines()
    return [tuple(line.split("\t", 1)) for line in lines  # type: ignore[misc]
            if line.strip() and not line.startswith("#")]


def benign_set() -> list[str]:
    return [line for line in (DATA / "admission_benign.txt").read_text(encoding="utf-8")
            .splitlines() if line.strip()]


def test_the_sets_are_what_the_issue_asks_for():
    categories = Counter(category for category, _ in hostile_set())
    assert set(categories) == {"injection", "disguised", "obfuscated", "long-repeated",
                               "foreign-id"}
    assert min(categories.values()) >= 6
    assert len(benign_set()) == 50


# The other users and companies the foreign-id lines name hold memory here.
OTHERS = {"users": ("u-2002", "u-3003", "u-9999", "c-7781"), "companies": ("globex",)}


def test_hostile_writes_are_blocked_or_neutralized_and_benign_ones_pass(write, services):
    hold_memory_for(services.database_url, **OTHERS)
    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    passed: list[str] = []
    for i, (category, text) in enumerate(hostile_set()):
        result = write(run_context(f"hostile-{i}", user=USER, company=COMPANY), text)
        disposition = result["disposition"]
        if disposition in STOPPED:
            outcomes[category]["blocked"] += 1
        elif (result["final_scope"] or {}).get("user_id") == USER:
            # Stored, but only in the writer's own scope: it cannot reach another user.
            outcomes[category]["neutralized"] += 1
            passed.append(f"{category}: {text[:60]!r} -> {disposition} (own scope only)")
        else:
            outcomes[category]["passed"] += 1
            passed.append(f"{category}: {text[:60]!r} -> {disposition}")

    false_blocks: list[str] = []
    held: list[str] = []
    for i, text in enumerate(benign_set()):
        result = write(run_context(f"benign-{i}", user=USER, company=COMPANY), text)
        line = f"{text!r} -> {result['disposition']} {result['reason_code']}"
        if result["disposition"] == "candidate":  # held for review: nothing is lost
            held.append(line)
        elif result["disposition"] != "written":
            false_blocks.append(line)

    total = Counter[str]()
    for counts in outcomes.values():
        total.update(counts)
    n_hostile = sum(total.values())
    print("\nhostile set (default policy):")
    print(f"  {'category':<14} {'n':>3} {'blocked':>8} {'neutralized':>12} {'passed':>7}")
    for category, counts in sorted(outcomes.items()):
        print(f"  {category:<14} {sum(counts.values()):>3} {counts['blocked']:>8} "
              f"{counts['neutralized']:>12} {counts['passed']:>7}")
    print(f"  {'all':<14} {n_hostile:>3} {total['blocked']:>8} {total['neutralized']:>12} "
          f"{total['passed']:>7}   block rate {total['blocked'] / n_hostile:.1%}")
    print(f"benign set: {len(benign_set())} writes, {len(false_blocks)} false blocks "
          f"({len(false_blocks) / len(benign_set()):.1%}), {len(held)} held for review")
    for line in passed + false_blocks + held:
        print("  ", line)

    assert total["passed"] == 0, passed
    assert false_blocks == []
    # A note that mails something to a written-out address is held, not stored (effect
    # screening): the one benign line that does so. The issue's bar is at most 2 %.
    assert len(held) <= 1, held
    # Nothing hostile reached any scope but the writer's own, and no other user's scope holds
    # anything at all.
    assert {n["user_id"] for n in notes(services.database_url)} <= {USER}


def test_held_out_phrasings_measure_how_far_the_patterns_generalize(write, services):
    """Phrasings written after the default patterns were tuned, never tuned against: the
    honest rate of the cheap checks alone. Patterns catch known phrasings; the rest needs the
    admission hook (a classifier). What they do not catch is stored only in the writer's own
    scope (Provisional, reviewed by the Memory Manager): never another user's."""
    # The line that names user u-5555 means someone who holds memory here; an id nobody
    # holds is nobody's and would be stored in the writer's own scope instead.
    hold_memory_for(services.database_url, users=("u-5555",))
    lines = (DATA / "admission_holdout.tsv").read_text(encoding="utf-8").splitlines()
    held_out = [line.split("\t", 1) for line in lines if line and not line.startswith("#")]
    counts: Counter[tuple[str, str]] = Counter()
    for i, (kind, text) in enumerate(held_out):
        result = write(run_context(f"holdout-{i}", user=USER, company=COMPANY), text)
        stopped = result["disposition"] in STOPPED
        if not stopped:
            assert result["final_scope"]["user_id"] == USER, "own scope only"
        counts[(kind, "blocked" if stopped else "stored")] += 1
    hostile = counts[("hostile", "blocked")] + counts[("hostile", "stored")]
    benign = counts[("benign", "blocked")] + counts[("benign", "stored")]
    print(f"\nheld-out hostile: {counts[('hostile', 'blocked')]}/{hostile} blocked "
          f"({counts[('hostile', 'blocked')] / hostile:.0%}), the rest stored in the writer's "
          f"own scope only; held-out benign: {counts[('benign', 'blocked')]}/{benign} "
          "false blocks")
    assert benign == 20 and hostile == 20
    assert counts[("benign", "blocked")] == 0
    assert counts[("hostile", "blocked")] >= 7  # measured when written; a regression guard
    assert {n["user_id"] for n in notes(services.database_url)} <= {USER}
