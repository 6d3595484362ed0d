"""The `experiments` task kind: Argo Rollouts' Experiment controller.

An Experiment runs one ReplicaSet per template (optionally with a Service) for a while, with
AnalysisRuns beside them, and ends Successful, Failed, Error or Inconclusive. `reconcile` holds
the logic (templates, analyses, the experiment's phase and conditions, when to look again);
`controller` is the handler: it reads the cache, refuses a stale one, validates the spec, and
writes the status in one fenced patch.
"""
