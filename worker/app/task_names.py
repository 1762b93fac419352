"""Every task's name, and which queue serves it: the one table clients, routing, beat and
telemetry read. The names are the wire contract (README); the queues are settings."""

from __future__ import annotations

WRITE = "memory.write"
CONTEXT = "memory.context"
AGENT_CONFIGURE = "memory.agent.configure"
CONVERSATION_RECORD = "memory.conversation.record"
CANDIDATE_PROMOTE = "memory.candidate.promote"
CANDIDATE_REJECT = "memory.candidate.reject"
CANDIDATE_LIST = "memory.candidate.list"
CONTINUATIONS_FLUSH = "memory.continuations.flush"
MANAGER_CYCLE = "memory.manager.cycle"
FORGET = "memory.forget"
FORGET_FACT = "memory.forget.fact"
EXPORT = "memory.export"

# Served by the write workers (reads too: they hold the model and the pools).
# A run's forget request too: it is ordered with the run's writes.
WRITE_QUEUE_TASKS = (WRITE, CONTEXT, AGENT_CONFIGURE, CONVERSATION_RECORD, CANDIDATE_PROMOTE,
                     CANDIDATE_REJECT, CANDIDATE_LIST, CONTINUATIONS_FLUSH, FORGET_FACT)
# Served by the manager worker. An erasure and an export too: long, bounded-batch work like
# a cycle's, which must not hold up the write workers' queue.
MANAGER_QUEUE_TASKS = (MANAGER_CYCLE, FORGET, EXPORT)
