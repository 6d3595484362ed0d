"""Go's own text/template, built once per session from tests/support/gotemplate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support import gotemplate_go

GoRender = Callable[[list[dict[str, Any]]], list[dict[str, str]]]


@pytest.fixture(scope="session")
def go_render(tmp_path_factory: pytest.TempPathFactory) -> GoRender:
    try:
        binary = gotemplate_go.build(tmp_path_factory.mktemp("gotemplate"))
    except gotemplate_go.GoMissing as e:
        pytest.fail(str(e))

    def render(cases: list[dict[str, Any]]) -> list[dict[str, str]]:
        return gotemplate_go.run(binary, cases)

    return render
