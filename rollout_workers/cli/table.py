"""Columns as the plugin prints its tables (Go's tabwriter), measured without ANSI colours.

`get`, `list` and `notifications` print their tables through `align`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def visible_len(text: str) -> int:
    return len(ANSI.sub("", text))


def align(rows: Sequence[Sequence[str]], *, padding: int = 2) -> list[str]:
    """Columns padded to their widest cell plus `padding`; the last cell of a row is not
    padded (Go's tabwriter, which the plugin prints its tables with)."""
    columns = max((len(r) for r in rows), default=0)
    widths = [0] * columns
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], visible_len(cell) + padding)
    lines = []
    for row in rows:
        cells = [cell + " " * (widths[i] - visible_len(cell)) for i, cell in enumerate(row[:-1])]
        lines.append(("".join(cells) + (row[-1] if row else "")).rstrip())
    return lines
