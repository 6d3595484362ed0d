"""One log line per broker outage in a worker host, instead of Celery's line per attempt.

On a lost connection Celery's consumer logs a warning (and a deprecation warning), then an
error with "Trying again in N seconds" for every failed attempt (kombu backs off 2, 4, ... 30 s
and retries forever: `broker_connection_max_retries=None`), then "Connected to ..." when it is
back. A filter on the consumer's loggers turns that into "redis unavailable: ..." once and
"redis back after N s" once; the reconnect itself is Celery's.
"""

from __future__ import annotations

import logging

from rollout_workers.logs import OutageLog

log = logging.getLogger("rollout_workers.celeryapp.host")

#: Celery's loggers for the consumer's connection (consumer.py and connection.py).
LOGGERS = ("celery.worker.consumer.consumer", "celery.worker.consumer.connection")


class BrokerOutageFilter(logging.Filter):
    def __init__(self, outage: OutageLog) -> None:
        super().__init__()
        self.outage = outage

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "Connection to broker lost" in message or "Cannot connect to" in message:
            reason = message.splitlines()[0]
            if "Cannot connect to" in reason:
                reason = reason.split(": ", 2)[-1].rstrip(".")
            self.outage.failed(reason)
            return False
        if message.startswith("Connected to") and self.outage.down:
            self.outage.ok()
            return False
        return True


def install() -> BrokerOutageFilter:
    """Filter this process's Celery consumer logs (call once in the worker's main process)."""
    flt = BrokerOutageFilter(OutageLog("redis", log))
    for name in LOGGERS:
        logging.getLogger(name).addFilter(flt)
    return flt
