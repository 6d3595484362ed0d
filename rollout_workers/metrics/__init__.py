"""Prometheus metrics under Argo Rollouts' names, for a pool of many processes.

Counters and histogram buckets live in Redis hashes, incremented by whichever process observes
an event (`rollout_workers/counters.py`): a scrape of any one endpoint then sees the whole pool,
and a restarted worker cannot move a counter backwards. State gauges (`*_info`, phases,
replicas, queue depth) are derived at scrape time from the Redis cache and the workqueue's
structures (`collector`). The leader watcher serves them (`endpoint`); `rollouts metrics`
prints them once.
"""
