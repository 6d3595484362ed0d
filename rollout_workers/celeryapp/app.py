"""The Celery app, built from settings (never from a module global).

JSON only; prefetch one message per process (a key is a wake-up, and holding many in a dead
process's memory delays them); task events once Flower asks for them; one queue per kind of
work so that a burst of rollout reconciles never delays the timer tick.
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from rollout_workers import redisclient
from rollout_workers.celeryapp.tasks import ProcessState, register_tasks, sync_task_name
from rollout_workers.celeryapp.transport import SENTINELS_OPTION
from rollout_workers.settings import KINDS, RedisSettings, Settings


def celery_config(settings: Settings, redis_url: str) -> dict[str, Any]:
    q = settings.queue
    prefix = settings.redis.key_prefix
    routes: dict[str, dict[str, str]] = {
        sync_task_name(kind): {"queue": q.for_kind(kind)} for kind in KINDS
    }
    routes["timers.tick"] = {"queue": q.system}
    routes["resync.all"] = {"queue": q.system}
    return {
        **redis_config(settings.redis, redis_url),
        "broker_connection_retry_on_startup": True,
        "broker_connection_max_retries": None,
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
        # Task events cost three publishes a task; a worker sends them once a monitor asks
        # (Flower's `enable_events`, every 5 s). A sent event per message would double the
        # producer's publishes (bench/queue_overhead.py).
        "worker_send_task_events": settings.worker.task_events,
        "task_send_sent_event": False,
        "worker_hijack_root_logger": False,
        "worker_redirect_stdouts": False,
        "task_default_queue": q.rollouts,
        "task_create_missing_queues": True,
        "task_routes": routes,
        "beat_scheduler": "redbeat.RedBeatScheduler",
        "beat_max_loop_interval": settings.beat.max_loop_interval,
        "redbeat_key_prefix": f"{prefix}:beat:",
        "redbeat_lock_key": f"{prefix}:beat::lock",
        "redbeat_lock_timeout": settings.beat.lock_timeout,
    }


def redis_config(redis: RedisSettings, redis_url: str) -> dict[str, Any]:
    """The broker's and redbeat's Redis: the URL as given, or under Sentinel kombu's Sentinel
    transport (hardened, celeryapp/transport.py) and redbeat's `redis-sentinel` mode, both asking
    the Sentinels for the master on every new connection."""
    # Unacked messages of a dead worker come back after this; the workqueue's stale-message
    # resend recovers sooner, and a late duplicate is dropped by claim().
    # No message carries a priority, so one list a queue: kombu's default steps would make
    # four, each an empty list for a pop to try (BRPOP names them all; a pop's script RPOPs
    # each in turn).
    options: dict[str, Any] = {"visibility_timeout": 3600, "priority_steps": [0]}
    if not redisclient.is_sentinel(redis_url):
        url = redisclient.with_password(redis_url, redis)
        return {
            "broker_url": url,
            "broker_transport": "rollout_workers.celeryapp.transport:Transport",
            "broker_transport_options": options,
            "redbeat_redis_url": url,
        }
    target = redisclient.sentinel_target(redis_url, redis)
    timeout = redis.socket_timeout
    sentinels = [[host, port] for host, port in target.sentinels]
    options.update(
        {
            "master_name": target.master,
            "sentinel_kwargs": target.sentinel_kwargs(timeout),
            SENTINELS_OPTION: sentinels,
        }
    )
    return {
        "broker_url": target.kombu_url(),
        "broker_transport": "rollout_workers.celeryapp.transport:SentinelTransport",
        "broker_transport_options": options,
        "redbeat_redis_url": "redis-sentinel://",
        "redbeat_redis_options": {
            "sentinels": [tuple(a) for a in target.sentinels],
            "service_name": target.master,
            "socket_timeout": timeout,
            "sentinel_kwargs": {**target.sentinel_kwargs(timeout), "retry": redisclient.no_retry()},
            **target.master_kwargs(),
        },
    }


def create_app(settings: Settings, redis_url: str) -> Celery:
    app = Celery("rollout_workers", set_as_current=False)
    app.conf.update(celery_config(settings, redis_url))
    register_tasks(app, ProcessState(app, settings, redis_url))
    return app
