"""The one exception the engine raises."""

from __future__ import annotations


class TemplateError(Exception):
    """A parse or execution error, worded as Go's text/template words it."""
