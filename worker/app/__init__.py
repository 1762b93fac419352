"""The Celery side of the product, around `worker.celery_app` (the app and its configuration,
kept at its documented import path): `tasks` (thin task functions: arguments in, domain call,
result out), `task_names` (every task name, queue and route in one table), `masking` (note
text kept out of Celery's logs and events), `telemetry` (Celery signals -> metrics and logs),
`poison` (messages no worker can decode, moved aside), `continuations` (a run's chain of writes
outliving a lost broker), `broker` (kombu's Redis transport, surviving a lost connection)."""
