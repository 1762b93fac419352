"""The Celery application: `worker.celery_app:app`.

Configuration comes from `worker.settings` when the app is first used (not at import), so
the environment can be prepared first. Tasks live in `worker.app.tasks`; they only translate
between messages and the plain modules that do the work.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

from celery import Celery, Task, signals
from celery.exceptions import CPendingDeprecationWarning
from kombu import Exchange, Queue

from worker.app import task_names
from worker.settings import Settings, get_settings


def celery_config(settings: Settings) -> dict[str, Any]:
    if settings.write_time_limit_s >= settings.visibility_timeout_s:
        raise ValueError(
            "MEMORY_WRITE_TIME_LIMIT_S must stay below MEMORY_VISIBILITY_TIMEOUT_S, or Redis "
            "would redeliver a write that is still running"
        )
    redis_url = settings.require_redis_url()
    redis_transport = {
        "visibility_timeout": settings.visibility_timeout_s,
        "unacked_restore_interval": settings.broker_restore_interval_s,
        "unacked_restore_throttle": 1,
        # A Redis that is down or never answers fails a connection attempt in seconds.
        "socket_connect_timeout": settings.redis_connect_timeout_s,
    }
    from beat_schedule import beat_schedule

    config = {
        "broker_url": settings.require_broker_url(),
        # Kombu's Redis transport, surviving a lost connection (worker/app/broker.py).
        "broker_transport": "worker.app.broker:Transport",
        "result_backend": redis_url,
        # Envelopes of task messages are read before kombu reads them (worker/app/envelope.py).
        "broker_transport_options": {
            **redis_transport,
            "screened_queues": [settings.write_queue, settings.manager_queue]},
        "result_backend_transport_options": redis_transport,
        "broker_connection_retry_on_startup": True,
        "redis_socket_connect_timeout": settings.redis_connect_timeout_s,
        # Shutdown: a warm shutdown (SIGTERM) lets running writes finish (they are bounded by
        # the write time limit); a cold one (SIGQUIT) first waits `soft_shutdown_timeout_s`,
        # then puts what the worker holds back on the queue at once (also when idle) rather
        # than after the visibility timeout.
        "worker_soft_shutdown_timeout": settings.soft_shutdown_timeout_s,
        "worker_enable_soft_shutdown_on_idle": True,
        # A lost broker connection does NOT cancel running writes (decided, not defaulted:
        # Celery 6 flips the default). A write's outcome lives in Postgres: it finishes
        # through a Redis outage, saves its chain's continuation there (worker/app/
        # continuations.py), and a redelivery is answered from the write log. Cancelling would
        # abort work at every broker blip and push it behind the visibility timeout.
        "worker_cancel_long_running_tasks_on_connection_loss": False,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "timezone": "UTC",
        "enable_utc": True,
        # Redelivery instead of loss: ack after the task ran, requeue if its process died.
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        # Undecodable messages go to `dead_letters` instead of only a log line.
        "worker_consumer": "worker.app.poison:MemoryConsumer",
        # The model is loaded before fork, so a pool process starts in well under a second;
        # the margin covers a loaded machine and a backend that loads per process.
        "worker_proc_alive_timeout": settings.worker_process_start_timeout_s,
        "task_track_started": False,
        "task_send_sent_event": True,
        "worker_send_task_events": True,
        "result_expires": settings.result_expires_s,
        "task_publish_retry": True,
        "task_publish_retry_policy": {
            "max_retries": 5, "interval_start": 0.1, "interval_step": 0.5, "interval_max": 3,
        },
        "task_default_queue": settings.write_queue,
        "task_queues": (
            Queue(settings.write_queue, Exchange(settings.write_queue), settings.write_queue),
            Queue(settings.manager_queue, Exchange(settings.manager_queue),
                  settings.manager_queue),
        ),
        "task_routes": {
            **{name: {"queue": settings.manager_queue, "routing_key": settings.manager_queue}
               for name in task_names.MANAGER_QUEUE_TASKS},
            **{name: {"queue": settings.write_queue, "routing_key": settings.write_queue}
               for name in task_names.WRITE_QUEUE_TASKS},
        },
        "task_annotations": {
            task_names.WRITE: {
                "soft_time_limit": settings.write_soft_time_limit_s,
                "time_limit": settings.write_time_limit_s,
            },
            # A hung cycle must not hold the single-flight lock forever: past its limit the
            # process is killed, its connection (and the lock) goes, the next tick runs.
            task_names.MANAGER_CYCLE: {
                "soft_time_limit": max(1, settings.cycle_time_limit_s - 60),
                "time_limit": settings.cycle_time_limit_s,
            },
        },
        "beat_schedule": beat_schedule(settings),
        # Beat touches its liveness heartbeat on every tick (worker/ops/health.py).
        "beat_scheduler": "worker.ops.health:HeartbeatScheduler",
    }
    if settings.broker_kind == "rabbitmq":
        from worker.app.rabbitmq import rabbitmq_config

        del config["broker_transport"]
        config.update(rabbitmq_config(settings))
    return config


class MemoryTask(Task):
    # Flower and `celery inspect` see argument summaries, never memory text.
    Request = "worker.app.masking:MaskedRequest"


# Celery warns on every connection loss that it does not cancel running tasks; that is our
# choice (above), so the warning would only bury the real connection-loss log line.
warnings.filterwarnings("ignore", message=r"\s*In Celery 5\.1 we introduced an optional breaking",
                        category=CPendingDeprecationWarning)

app = Celery("memory", task_cls=MemoryTask, amqp="worker.app.masking:MaskingAMQP",
             include=["worker.app.tasks", "worker.app.operator_tasks"])
# A promise, evaluated when the configuration is first read (whatever reads it first: a
# client's send_task, a worker's start-up), so the environment can be prepared after import.
# Updating `app.conf` from an on_configure hook instead re-enters the pending load.
app.add_defaults(lambda: celery_config(get_settings()))
# Liveness: every worker touches a heartbeat file while its event loop turns, so a probe can
# tell a hung worker without the broker (worker/ops/health.py).
app.steps["worker"].add("worker.ops.health:WorkerHeartbeat")
# On RabbitMQ, the dead-letter exchange and queue exist before the first message is consumed
# (the broker drops what it dead-letters into an exchange that does not exist).
app.steps["consumer"].add("worker.app.rabbitmq:DeclareDeadLetters")
# The embedder is checked before the worker takes anything (a configuration that cannot
# embed stops it with one line), loaded before a prefork pool forks, and watched while it
# fails (worker/app/embedder_start.py). Connected first: nothing else starts before it.
app.steps["worker"].add("worker.app.embedder_start:EmbedderWatch")
import worker.app.embedder_start  # noqa: E402


@signals.worker_init.connect
def _compile_admission_rules(**_: Any) -> None:
    """The effect rules compiled before a prefork pool forks: not on some process's first
    write (about 0.1 s)."""
    from worker.writes.admission.effects import warm

    warm()


@signals.worker_process_init.connect
def _prepare_worker_process(**_: Any) -> None:
    from db.connector import dispose_all
    from worker.runtime import get_runtime

    dispose_all()  # never reuse the parent's sockets (inherited pools are only forgotten)
    try:
        from worker.embeddings import warm_local_model

        warm_local_model(get_runtime().embedder)  # now, not on the first writes
    except Exception as exc:
        from worker.ops.embedder_state import report_embedding

        report_embedding(False, f"the embedder failed to load: {type(exc).__name__}")
        logging.getLogger(__name__).exception("embedder failed to load; writes will fail open")


# Context results (memory text) expire within minutes, not with every other result; a result
# stored after an erasure swept the backend is dropped; metrics, structured task logs and the
# metrics endpoint. All through Celery signals.
import worker.app.erased_results  # noqa: E402
import worker.app.results  # noqa: E402
import worker.app.telemetry  # noqa: E402,F401
