"""The Celery app, built from settings (never from a module global).

JSON only; prefetch one message per process (a key is a wake-up, and holding many in a dead
process's memory delays them); task events on for Flower; one queue per kind of work so that a
burst of rollout reconciles never delays the timer tick.
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from rollout_workers.pool.tasks import ProcessState, register_tasks, sync_task_name
from rollout_workers.settings import KINDS, Settings


def celery_config(settings: Settings, redis_url: str) -> dict[str, Any]:
    q = settings.queue
    prefix = settings.redis.key_prefix
    routes: dict[str, dict[str, str]] = {
        sync_task_name(kind): {"queue": q.for_kind(kind)} for kind in KINDS
    }
    routes["timers.tick"] = {"queue": q.system}
    routes["resync.all"] = {"queue": q.system}
    return {
        "broker_url": redis_url,
        "broker_transport": "rollout_workers.pool.transport:Transport",
        "broker_connection_retry_on_startup": True,
        "broker_connection_max_retries": None,
        # Unacked messages of a dead worker come back after this; the workqueue's stale-message
        # resend recovers sooner, and a late duplicate is dropped by claim().
        "broker_transport_options": {"visibility_timeout": 3600},
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "event_serializer": "json",
        "task_ignore_result": True,
        "result_backend": None,
        "task_acks_late": False,
        "worker_prefetch_multiplier": 1,
        # Cancels only acks_late tasks (none here) when the broker connection is lost; set so
        # that Celery 5's deprecation warning is not logged on every outage.
        "worker_cancel_long_running_tasks_on_connection_loss": True,
        "worker_send_task_events": True,
        # Workers' events give Flower every state it shows; a sent event per message would
        # double the producer's publishes (bench/queue_overhead.py).
        "task_send_sent_event": False,
        "worker_hijack_root_logger": False,
        "worker_redirect_stdouts": False,
        "task_default_queue": q.rollouts,
        "task_create_missing_queues": True,
        "task_routes": routes,
        "beat_scheduler": "redbeat.RedBeatScheduler",
        "beat_max_loop_interval": settings.beat.max_loop_interval,
        "redbeat_redis_url": redis_url,
        "redbeat_key_prefix": f"{prefix}:beat:",
        "redbeat_lock_key": f"{prefix}:beat::lock",
        "redbeat_lock_timeout": settings.beat.lock_timeout,
    }


def create_app(settings: Settings, redis_url: str) -> Celery:
    app = Celery("rollout_workers", set_as_current=False)
    app.conf.update(celery_config(settings, redis_url))
    register_tasks(app, ProcessState(app, settings, redis_url))
    return app
