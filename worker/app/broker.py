"""Kombu's Redis transport, made to survive losing Redis while messages are unacknowledged.

When the connection drops, kombu closes the channel and tries to put the unacknowledged
messages back — through a client built from connection details it has already cleared, so
it raises `AttributeError` and the worker's main process dies ("Unrecoverable error ...
'NoneType' object has no attribute 'hostname'"). A lost broker is exactly when a worker must
stay up and reconnect. The messages are not lost by skipping the restore: they stay in
Redis's unacked index and come back through the visibility timeout (or were lost with
Redis's data, which no restore could help), and a write delivered again is replayed.
"""

from __future__ import annotations

import logging
from typing import Any

from kombu.transport import redis as kombu_redis

log = logging.getLogger(__name__)


class QoS(kombu_redis.QoS):  # type: ignore[misc]
    def restore_unacked(self, client: Any = None) -> Any:
        try:
            return super().restore_unacked(client)
        except AttributeError:
            log.warning("broker connection gone: %d unacknowledged message(s) come back "
                        "through the visibility timeout", len(self._delivered))
            self._delivered.clear()
            return []


    # Acknowledging a message on a channel that died with its connection fails the same way.
    def ack(self, delivery_tag: Any) -> None:
        try:
            super().ack(delivery_tag)
        except AttributeError:
            log.warning("broker connection gone: an acknowledgement is lost; the message "
                        "comes back through the visibility timeout and is replayed")

    def reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        try:
            super().reject(delivery_tag, requeue=requeue)
        except AttributeError:
            log.warning("broker connection gone: a rejection is lost")


class Channel(kombu_redis.Channel):  # type: ignore[misc]
    QoS = QoS


class Transport(kombu_redis.Transport):  # type: ignore[misc]
    Channel = Channel
