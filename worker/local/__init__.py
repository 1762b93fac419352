"""Running the whole system on one machine: the embedded services (`embedded`: PostgreSQL with
pgvector, Redis), the supervised stack of `memory-worker up` (`stack`), and the demo session."""
