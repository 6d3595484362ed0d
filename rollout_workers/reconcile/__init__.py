"""The reconcile contract: what a handler is (`handlers`: a SyncRequest in, a Result out), the
runner that claims a key and runs its handler under a lease (`runner`), and what one process
hands its handlers (`runtime`: settings, Redis, the work queues, counts, the event sink).

A package of its own, below the reconcilers (rollout/, analysis/, experiment/,
notifications/) and above the workqueue, cache and API client: the reconcilers implement the
contract without importing Celery, and `celeryapp/` runs them through it without importing
them (the handlers are named in settings, `reconcile.handlers`).
"""
