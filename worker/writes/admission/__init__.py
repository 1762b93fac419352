"""Write admission, promotion of internal memory and trust controls (SPEC 5, seeds/002).

A planted or low-quality memory steers every later run of an agent, so a write has to be
*admitted* before the pipeline stores it. This package is the policy and its decisions, as
plain functions; the guards (`worker/writes/admission/guards.py`: `admit`, `hold_internal_memory`)
apply them to a write, with the run's state in Postgres under the run's advisory lock, so the
limits hold across every worker process.

Order inside admission (the seed's: cheap checks first, then the hook):

1. `screen_text` — `min_write_length`, `reject_write_patterns` (matched on folded text, see
   `worker.normalize.matching_forms`), another user's id named in the text, repetition;
2. `reject_duplicate_writes` — the scope-aware fingerprint of an earlier admitted write of
   the run (checked in Postgres);
3. `max_writes_per_run` — writes the run got admitted so far (`runs.admitted_count`);
4. the `memory_write_admission` hook, bounded by a timeout.

Then, once the scope is known, writes from an internal source become candidates unless the
`memory_promotion_admission` hook approves or rewrites them.

No note text leaves through here: trace events carry reason codes, counts and exception type
names; a reason a hook supplies is withheld if it quotes the note.

Modules: `policy` (MemoryPolicy, overrides, resolution) · `reasons` (reason codes, sentences)
· `screening` (the cheap checks, fingerprint, reason sanitizing) · `patterns` (the default
injection patterns) · `decisions` (what hooks return) · `hooks` (running them, timeouts) ·
`trace` (trace events) · `injection` (read-side rules). Import from the package.
"""

from worker.writes.admission.decisions import (
    AdmissionHookTimeout,
    HookNotAllowed,
    HookVerdict,
    InvalidAdmissionDecision,
    MemoryAdmissionDecision,
    MemoryCandidate,
    MemoryPromotionDecision,
    PromotionAction,
    PromotionVerdict,
    interpret_promotion_decision,
    interpret_write_decision,
)
from worker.writes.admission.hooks import (
    HOOK_THREADS,
    HookFailure,
    call_hook,
    load_hook,
    run_promotion_hook,
    run_write_hook,
)
from worker.writes.admission.injection import (
    ATTRIBUTED_SQL,
    EXPIRY_ENFORCED_SQL,
    FilterReason,
    filter_for_injection,
    injection_filter_reason,
)
from worker.writes.admission.patterns import DEFAULT_REJECT_WRITE_PATTERNS
from worker.writes.admission.policy import (
    HOOK_FIELDS,
    POLICY_FIELDS,
    MemoryPolicy,
    PolicyError,
    resolve_policy,
    validate_policy_overrides,
)
from worker.writes.admission.reasons import NOT_SAVED, TELL_NOTHING, Block, ReasonCode, block
from worker.writes.admission.screening import (
    PrincipalLookup,
    foreign_identity,
    is_repetitive,
    named_ids,
    principal_probes,
    quotes_text,
    sanitize_reason,
    screening_block,
    write_fingerprint,
)
from worker.writes.admission.trace import TraceEvent, TraceEventName, log_trace

__all__ = [
    "ATTRIBUTED_SQL",
    "DEFAULT_REJECT_WRITE_PATTERNS",
    "EXPIRY_ENFORCED_SQL",
    "HOOK_FIELDS",
    "HOOK_THREADS",
    "NOT_SAVED",
    "POLICY_FIELDS",
    "TELL_NOTHING",
    "AdmissionHookTimeout",
    "Block",
    "FilterReason",
    "HookFailure",
    "HookNotAllowed",
    "HookVerdict",
    "InvalidAdmissionDecision",
    "MemoryAdmissionDecision",
    "MemoryCandidate",
    "MemoryPolicy",
    "MemoryPromotionDecision",
    "PolicyError",
    "PrincipalLookup",
    "PromotionAction",
    "PromotionVerdict",
    "ReasonCode",
    "TraceEvent",
    "TraceEventName",
    "block",
    "call_hook",
    "filter_for_injection",
    "foreign_identity",
    "injection_filter_reason",
    "interpret_promotion_decision",
    "interpret_write_decision",
    "is_repetitive",
    "load_hook",
    "log_trace",
    "named_ids",
    "principal_probes",
    "quotes_text",
    "resolve_policy",
    "run_promotion_hook",
    "run_write_hook",
    "sanitize_reason",
    "screening_block",
    "validate_policy_overrides",
    "write_fingerprint",
]
