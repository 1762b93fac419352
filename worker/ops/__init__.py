"""What operators watch: liveness and readiness (`health`, also `python -m worker.ops.health`
for probes; the readiness checks themselves in `readiness`), Prometheus metrics (`metrics`),
structured logs (`logs`). Celery's signals feed them through worker/app/telemetry.py."""
