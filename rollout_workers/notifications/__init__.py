"""Argo Rollouts notifications (issue #19). See :mod:`.gotemplate` for the template engine."""
