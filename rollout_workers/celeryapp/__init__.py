"""Everything Celery: the app, the thin tasks, the hardened Redis transport, the batch sender
of sync messages, and the worker host (the main process of `rollouts worker`: its health
endpoints, heartbeat and graceful shutdown).

Named for what it holds, so that whoever looks for the Celery side finds it here and nothing
else: the contract between a task and the reconcile code it runs (handlers, the sync runner,
the per-process runtime) is `reconcile/`, below the reconcilers, which never import Celery.
The watcher and beat import the app and tasks from here to send their messages.
"""
