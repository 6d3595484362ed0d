"""The worker pool's plumbing: the Celery app and its hardened Redis transport, the thin tasks,
the sync runner that claims a key and maps a reconcile's outcome onto the workqueue, the
handler registry, the per-process runtime handed to reconcile handlers, and the worker host
(the main process of `rollouts worker`: its health endpoints and graceful shutdown)."""
