"""Delivery you can prove: a write accepted by its client is applied, whatever the broker
drops. `records` (the clients' write records in Redis and their scripts), `redelivery` (the
pass that publishes again the records whose writes the broker lost)."""
