"""What operators watch: liveness and readiness (`health`, also `python -m worker.ops.health`
for probes), Prometheus metrics (`metrics`), structured logs (`logs`). Celery's signals feed
them through worker/app/telemetry.py."""
