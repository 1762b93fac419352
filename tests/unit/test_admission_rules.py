"""Admission decisions without a database: what a hook's return value means, which notes may be
injected at a given moment, how an agent's policy overrides are checked and resolved, and what
a hook's reason may say. The same rules run inside the write and read paths (tested there
against Postgres); here they are plain functions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from db.enums import INJECTABLE_STATUSES, AuthorType, NoteStatus
from worker.settings import Settings
from worker.writes.admission.decisions import (
    InvalidAdmissionDecision,
    MemoryAdmissionDecision,
    interpret_promotion_decision,
    interpret_write_decision,
)
from worker.writes.admission.injection import (
    FilterReason,
    filter_for_injection,
    injection_filter_reason,
)
from worker.writes.admission.policy import (
    MemoryPolicy,
    PolicyError,
    resolve_policy,
    validate_policy_overrides,
)
from worker.writes.admission.reasons import ReasonCode
from worker.writes.admission.screening import sanitize_reason

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


# --- A write hook's answer ---------------------------------------------------------------------

@pytest.mark.parametrize("value, required, kind, code", [
    (True, False, "allow", None),
    (True, True, "allow", None),
    (None, False, "allow", None),
    (None, True, "block", ReasonCode.HOOK_NONE),  # fail-closed: no decision is no approval
    (False, False, "block", ReasonCode.HOOK_REJECTED),
    ("contains a password", False, "block", ReasonCode.HOOK_REJECTED),
    ({"allowed": False, "reason": "r"}, False, "block", ReasonCode.HOOK_REJECTED),
    ({"allowed": True}, True, "allow", None),
    ({"allowed": True, "value": "User likes tea."}, True, "rewrite", None),
    (42, False, "rewrite", None),  # any other value rewrites the text
    (42, True, "block", ReasonCode.HOOK_UNAPPROVED),  # a bare rewrite is not an approval
])
def test_a_write_hooks_return_value_means_one_thing(value, required, kind, code):
    verdict = interpret_write_decision(value, required=required)
    assert (verdict.kind, verdict.code) == (kind, code)


def test_a_write_hooks_rewrite_and_reason_are_carried():
    verdict = interpret_write_decision(
        MemoryAdmissionDecision(allowed=True, reason="trimmed", value=b"User likes tea."),
        required=True)
    assert (verdict.kind, verdict.text, verdict.reason) == ("rewrite", "User likes tea.",
                                                            "trimmed")


@pytest.mark.parametrize("value", [{"reason": "no allowed key"}, {"allowed": "yes"},
                                   SimpleNamespace(allowed=1)])
def test_a_malformed_write_decision_is_refused(value):
    with pytest.raises(InvalidAdmissionDecision):
        interpret_write_decision(value, required=False)


def test_an_async_hooks_coroutine_is_closed_and_refused():
    async def decide() -> bool:
        return True

    pending = decide()
    with pytest.raises(InvalidAdmissionDecision):
        interpret_write_decision(pending, required=False)
    assert pending.cr_frame is None, "closed, so no 'never awaited' warning and no leak"


# --- A promotion hook's answer -----------------------------------------------------------------

@pytest.mark.parametrize("value, action, text", [
    (True, "approve", None),
    (False, "reject", None),
    (None, "keep", None),
    ("needs a human", "keep", None),
    ({"action": "rewrite", "value": "User likes tea."}, "rewrite", "User likes tea."),
    ({"allowed": False}, "reject", None),
    ({"allowed": True, "value": "User likes tea."}, "rewrite", "User likes tea."),
    (7, "rewrite", "7"),  # any other value approves and rewrites
])
def test_a_promotion_hooks_return_value_means_one_thing(value, action, text):
    verdict = interpret_promotion_decision(value)
    assert (verdict.action, verdict.text) == (action, text)


@pytest.mark.parametrize("value", [{"action": "publish"}, {"action": "rewrite"}])
def test_a_malformed_promotion_decision_is_refused(value):
    with pytest.raises(InvalidAdmissionDecision):
        interpret_promotion_decision(value)


# --- What may be injected, at a moment the test chooses --------------------------------------

def note(**fields):
    return {"status": NoteStatus.ACTIVE, "expires_at": None, "source_agent_run_id": "run-1",
            "author_type": AuthorType.AGENT, **fields}


@pytest.mark.parametrize("status", list(NoteStatus))
def test_only_the_injectable_statuses_are_ever_injected(status):
    reason = injection_filter_reason(note(status=status), MemoryPolicy(), NOW)
    assert (reason is None) == (status in INJECTABLE_STATUSES)


def test_a_note_expires_at_its_instant_whatever_the_policy():
    expiring = note(expires_at=NOW + timedelta(hours=1))
    for policy in (MemoryPolicy(), MemoryPolicy(enforce_expires_at=True)):
        assert injection_filter_reason(expiring, policy, NOW) is None
        later = NOW + timedelta(hours=1)
        assert injection_filter_reason(expiring, policy, later) is FilterReason.EXPIRED


def test_an_enforced_expiry_needs_a_real_date():
    strict = MemoryPolicy(enforce_expires_at=True)
    assert injection_filter_reason(note(), strict, NOW) is FilterReason.EXPIRY_MISSING
    assert injection_filter_reason(note(expires_at="infinity"), strict, NOW) is (
        FilterReason.EXPIRY_MALFORMED)
    assert injection_filter_reason(note(expires_at="infinity"), MemoryPolicy(), NOW) is None


def test_unattributed_notes_are_held_back_only_when_the_policy_says_so():
    orphan = note(source_agent_run_id=None)
    strict = MemoryPolicy(allow_unattributed_results=False)
    assert injection_filter_reason(orphan, MemoryPolicy(), NOW) is None
    assert injection_filter_reason(orphan, strict, NOW) is FilterReason.UNATTRIBUTED
    for provenance in ({"source_conversation_id": "c-1"}, {"derived_from_note_ids": ["n"]},
                       {"author_type": AuthorType.USER}):
        assert injection_filter_reason({**orphan, **provenance}, strict, NOW) is None


def test_filtering_keeps_order_and_counts_what_it_dropped():
    notes = [note(id=1), note(id=2, status=NoteStatus.REVOKED),
             note(id=3, expires_at=NOW - timedelta(seconds=1)), note(id=4)]
    kept, counts = filter_for_injection(notes, MemoryPolicy(), NOW)
    assert [n["id"] for n in kept] == [1, 4]
    assert counts == {"not_injectable": 1, "expired": 1}


# --- An agent's policy overrides -------------------------------------------------------------

def test_every_problem_of_an_override_is_named_at_once():
    with pytest.raises(PolicyError) as raised:
        validate_policy_overrides({"colour": "red", "min_write_length": -1,
                                   "reject_write_patterns": ["(unclosed"],
                                   "enforce_expires_at": "yes"})
    message = str(raised.value)
    for part in ("colour", "min_write_length", "(unclosed", "enforce_expires_at"):
        assert part in message


def test_an_agents_fields_win_and_a_hook_outside_the_allowed_modules_is_untrusted(monkeypatch):
    for name in ("DATABASE_URL", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(_env_file=None, min_write_length=3,
                        admission_hook_modules=("company.hooks",))
    policy = resolve_policy(settings, {"min_write_length": 10, "trusted_sources": ["user", "crm"],
                                       "memory_write_admission": "elsewhere.mod:check"})
    assert policy.min_write_length == 10
    assert policy.trusted_sources == ("user", "crm") and not policy.is_internal("crm")
    assert policy.untrusted_hooks == frozenset({"elsewhere.mod:check"})
    allowed = resolve_policy(settings, {"memory_write_admission": "company.hooks.v2:check"})
    assert allowed.untrusted_hooks == frozenset()
    assert resolve_policy(settings).min_write_length == 3


def test_an_invented_source_name_cannot_skip_promotion():
    policy = MemoryPolicy()
    assert policy.needs_promotion("reflection") and policy.needs_promotion("User")
    assert not policy.needs_promotion("user")


# --- What a hook's reason may say -----------------------------------------------------------

def test_a_reason_that_quotes_the_note_is_withheld():
    text = "The user's card number is 4111 1111 1111 1111."
    assert "withheld" in sanitize_reason(f"blocked: {text}", text)
    assert sanitize_reason("contains\n  a card   number", text) == "contains a card number"
    assert sanitize_reason("x" * 500, text) == "x" * 200
    assert sanitize_reason("   ", text) is None and sanitize_reason(None, text) is None
