"""Analysis: AnalysisRuns measured on the worker pool, metric providers, sandboxed conditions."""
