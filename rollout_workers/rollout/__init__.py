"""Rollout reconcile: one concern per module, as argo-rollouts' rollout/ package."""
