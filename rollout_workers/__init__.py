"""rollout-workers: an Argo Rollouts-compatible controller on a Celery worker pool."""
