"""render: Argo's v1.9.1 catalog rendered whole against Go, and per-service tables of what each
engine templater renders, copies and keeps when several templates merge."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rollout_workers.notifications.config import Config, parse_config
from rollout_workers.notifications.render import (
    Notification,
    RenderError,
    go_rfc3339_nano,
    notification_vars,
    render,
)
from tests.unit.notifications.conftest import GoRender

TESTDATA = Path(__file__).parent / "testdata"
API_TESTDATA = Path(__file__).parents[1] / "api" / "testdata"

CANARY: dict[str, Any] = json.loads(
    json.dumps(yaml.safe_load((API_TESTDATA / "rollout-canary.yaml").read_text()), default=str)
)
CATALOG_CM = yaml.safe_load((TESTDATA / "notifications-install-v1.9.1.yaml").read_text())
CATALOG = parse_config(CATALOG_CM["data"], {})
CATALOG_NAMES = sorted(CATALOG.templates)


def _config(templates: dict[str, Any]) -> Config:
    cfg = parse_config({f"template.{k}": yaml.safe_dump(v) for k, v in templates.items()}, {})
    assert cfg.errors == []
    return cfg


def _vars(service: str = "slack", recipient: str = "team-a") -> dict[str, Any]:
    return notification_vars(CANARY, service, recipient)


# -- Argo's catalog, against Go --------------------------------------------------------------


def _fields(n: Notification) -> dict[str, str]:
    out = {"message": n.message}
    for block, values in n.blocks.items():
        for k, v in values.items():
            if isinstance(v, str):
                out[f"{block}.{k}"] = v
    return out


@pytest.fixture(scope="module")
def go_catalog(go_render: GoRender) -> dict[tuple[str, str], dict[str, str]]:
    data = {k: v for k, v in _vars().items() if k != "time"}
    cases = []
    for name in CATALOG_NAMES:
        tmpl = CATALOG.templates[name]
        for path, parsed in tmpl.parsed.items():
            cases.append(((name, ".".join(path)), parsed.text))
    results = go_render(
        [{"name": n, "template": t, "data": data, "argoTime": True} for (n, _), t in cases]
    )
    return {key: r for (key, _), r in zip(cases, results, strict=True)}


def test_catalog_loads_with_its_blocks() -> None:
    assert CATALOG.errors == []
    assert len(CATALOG_NAMES) == 9
    assert {b for t in CATALOG.templates.values() for b in t.blocks} == {"email", "slack"}


@pytest.mark.parametrize("name", CATALOG_NAMES)
def test_catalog_renders_as_go(
    name: str, go_catalog: dict[tuple[str, str], dict[str, str]]
) -> None:
    n = render(CATALOG, [name], _vars())
    assert n.unsupported == ()
    fields = _fields(n)
    # Every field the template has, and only those (email.body absent: kept empty, not set).
    assert set(fields) == {"message", "email.subject", "slack.attachments"} | {
        "slack.username",
        "slack.icon",
        "slack.blocks",
        "slack.groupingKey",
    }
    for field, value in fields.items():
        go = go_catalog.get((name, field), {"output": ""})
        assert go == {"output": value}, field
    assert n.blocks["slack"]["notifyBroadcast"] is False
    json.loads(n.blocks["slack"]["attachments"])  # Argo's attachments are JSON


def test_catalog_step_completed_message() -> None:
    n = render(CATALOG, ["rollout-step-completed"], _vars())
    assert n.message == "Rollout checkout step number 7/12 has been completed."
    assert n.blocks["email"] == {"subject": "Rollout checkout step number 7/12 has been completed."}


def test_catalog_on_a_bluegreen_rollout_is_a_clear_error() -> None:
    bluegreen = json.loads(
        json.dumps(
            yaml.safe_load((API_TESTDATA / "rollout-bluegreen.yaml").read_text()), default=str
        )
    )
    with pytest.raises(RenderError) as e:
        render(CATALOG, ["rollout-step-completed"], notification_vars(bluegreen, "slack", "x"))
    assert (e.value.template, e.value.field) == ("rollout-step-completed", "message")
    assert str(e.value).startswith("template 'rollout-step-completed', message: template: ")
    assert "error calling len" in str(e.value)


# -- vars ------------------------------------------------------------------------------------


def test_vars_as_api_send_builds_them() -> None:
    cfg = _config(
        {
            "t": {
                "message": "{{.serviceType}} {{.recipient}} {{.rollout.metadata.name}} "
                '{{.analysisRuns}} {{(call .time.Parse "2024-01-02T03:04:05Z").Year}} '
                "{{.secrets}} {{.context}}"
            }
        }
    )
    n = render(cfg, ["t"], _vars("github", "argoproj/argo"))
    assert n.message == "github argoproj/argo checkout <no value> 2024 <no value> <no value>"
    v = notification_vars(CANARY, "s", "r", analysis_runs=[{"metadata": {"name": "ar"}}])
    assert (
        render(
            _config({"t": {"message": "{{(index .analysisRuns 0).metadata.name}}"}}), ["t"], v
        ).message
        == "ar"
    )


# -- per service block -----------------------------------------------------------------------

# (id, templates, names to send, expected message, expected blocks)
BLOCK_CASES: list[tuple[str, dict[str, Any], list[str], str, dict[str, Any]]] = [
    (
        "email",
        {"t": {"email": {"subject": "s {{.recipient}}", "body": "b"}}},
        ["t"],
        "",
        {"email": {"subject": "s team-a", "body": "b"}},
    ),
    (
        "email-empty-field-is-absent",
        {"t": {"email": {"subject": "{{if false}}x{{end}}"}}},
        ["t"],
        "",
        {"email": {}},
    ),
    (
        "slack-all-fields",
        {
            "t": {
                "slack": {
                    "username": "u",
                    "icon": ":i:",
                    "attachments": '[{"title":"{{.rollout.metadata.name}}"}]',
                    "blocks": "[]",
                    "groupingKey": "{{.rollout.metadata.uid}}",
                    "notifyBroadcast": True,
                    "deliveryPolicy": "PostAndUpdate",
                    "unknown": "ignored",
                }
            }
        },
        ["t"],
        "",
        {
            "slack": {
                "username": "u",
                "icon": ":i:",
                "attachments": '[{"title":"checkout"}]',
                "blocks": "[]",
                "groupingKey": "6c1d2a34-1111-4a4a-9c9c-0123456789ab",
                "notifyBroadcast": True,
                "deliveryPolicy": "PostAndUpdate",
            }
        },
    ),
    (
        "mattermost-rocketchat",
        {"t": {"mattermost": {"attachments": "m"}, "rocketchat": {"attachments": "r"}}},
        ["t"],
        "",
        {"mattermost": {"attachments": "m"}, "rocketchat": {"attachments": "r"}},
    ),
    (
        "teams",
        {
            "t": {
                "teams": {
                    "title": "{{.rollout.metadata.name}}",
                    "themeColor": "#000080",
                    "facts": "[]",
                    "sections": "",
                    "potentialAction": "[]",
                    "template": "{}",
                    "summary": "s",
                    "text": "t",
                }
            }
        },
        ["t"],
        "",
        {
            "teams": {
                "template": "{}",
                "title": "checkout",
                "summary": "s",
                "text": "t",
                "themeColor": "#000080",
                "facts": "[]",
                "potentialAction": "[]",
            }
        },
    ),
    (
        "googlechat",
        {"t": {"googlechat": {"cardsV2": "[{{.recipient | quote}}]", "threadKey": "k"}}},
        ["t"],
        "",
        {"googlechat": {"cardsV2": '["team-a"]', "threadKey": "k"}},
    ),
    (
        "webhook",
        {
            "t": {
                "webhook": {
                    "github": {
                        "method": "POST",
                        "path": "/repos/{{.rollout.metadata.namespace}}/statuses",
                        "body": '{"state": "{{.serviceType}}"}',
                    },
                    "other": {"method": "{{.recipient}}"},
                }
            }
        },
        ["t"],
        "",
        {
            "webhook": {
                "github": {
                    "method": "POST",
                    "path": "/repos/shop/statuses",
                    "body": '{"state": "slack"}',
                },
                "other": {"method": "{{.recipient}}", "body": "", "path": ""},
            }
        },
    ),
    (
        "opsgenie",
        {
            "t": {
                "opsgenie": {
                    "description": "d {{.recipient}}",
                    "priority": "P1",
                    "details": {"ns": "{{.rollout.metadata.namespace}}"},
                    "actions": ["a{{1}}"],
                    "tags": ["t"],
                    "visibleTo": [{"type": "team", "name": "{{.recipient}}"}],
                }
            }
        },
        ["t"],
        "",
        {
            "opsgenie": {
                "description": "d team-a",
                "alias": "",
                "note": "",
                "entity": "",
                "user": "",
                "priority": "P1",
                "details": {"ns": "shop"},
                "visibleTo": [{"id": "", "type": "team", "name": "team-a", "username": ""}],
                "actions": ["a1"],
                "tags": ["t"],
            }
        },
    ),
    # Merging several templates, as each templater assigns.
    (
        "merge-message-kept-when-later-is-empty",
        {"a": {"message": "A"}, "b": {"message": ""}, "c": {"email": {"subject": "C"}}},
        ["a", "b", "c"],
        "A",
        {"email": {"subject": "C"}},
    ),
    (
        "merge-message-later-wins",
        {"a": {"message": "A"}, "b": {"message": "B"}},
        ["a", "b"],
        "B",
        {},
    ),
    (
        "merge-email-keeps-nonempty",
        {"a": {"email": {"subject": "A", "body": "a"}}, "b": {"email": {"body": "b"}}},
        ["a", "b"],
        "",
        {"email": {"subject": "A", "body": "b"}},
    ),
    (
        "merge-slack-overwrites-with-empty",
        {"a": {"slack": {"attachments": "A", "notifyBroadcast": True}}, "b": {"slack": {}}},
        ["a", "b"],
        "",
        {
            "slack": {
                "username": "",
                "icon": "",
                "attachments": "",
                "blocks": "",
                "groupingKey": "",
                "notifyBroadcast": False,
                "deliveryPolicy": None,
            }
        },
    ),
    (
        "merge-slack-untouched-by-template-without-block",
        {"a": {"slack": {"attachments": "A"}}, "b": {"message": "m"}},
        ["a", "b"],
        "m",
        {
            "slack": {
                "username": "",
                "icon": "",
                "attachments": "A",
                "blocks": "",
                "groupingKey": "",
                "notifyBroadcast": False,
                "deliveryPolicy": None,
            }
        },
    ),
    (
        "merge-webhooks-by-name",
        {
            "a": {"webhook": {"x": {"method": "GET", "path": "a"}, "y": {"body": "y"}}},
            "b": {"webhook": {"x": {"body": "b"}}},
        },
        ["a", "b"],
        "",
        {
            "webhook": {
                "x": {"method": "", "body": "b", "path": ""},
                "y": {"method": "", "body": "y", "path": ""},
            }
        },
    ),
    (
        "merge-teams-keeps-nonempty",
        {"a": {"teams": {"title": "A", "text": "a"}}, "b": {"teams": {"text": "b"}}},
        ["a", "b"],
        "",
        {"teams": {"title": "A", "text": "b"}},
    ),
    (
        "unknown-block-ignored",
        {"t": {"message": "m", "telegram": {"x": "y"}}},
        ["t"],
        "m",
        {},
    ),
]


@pytest.mark.parametrize(
    ("templates", "names", "message", "blocks"),
    [c[1:] for c in BLOCK_CASES],
    ids=[c[0] for c in BLOCK_CASES],
)
def test_blocks(
    templates: dict[str, Any], names: list[str], message: str, blocks: dict[str, Any]
) -> None:
    n = render(_config(templates), names, _vars())
    assert (n.message, n.blocks, n.unsupported) == (message, blocks, ())


def test_unsupported_blocks_are_named_not_rendered() -> None:
    cfg = _config(
        {"t": {"message": "m", "github": {"status": {"state": "x"}}, "newrelic": {"revision": "r"}}}
    )
    n = render(cfg, ["t", "t"], _vars())
    assert (n.message, n.blocks, n.unsupported) == ("m", {}, ("github", "newrelic"))


# -- errors ----------------------------------------------------------------------------------

# (id, templates, names, field, message fragment)
ERROR_CASES: list[tuple[str, dict[str, Any], list[str], str, str]] = [
    (
        "unknown-template",
        {"t": {"message": "m"}},
        ["t", "nope"],
        "template",
        "'nope' is not supported",
    ),
    (
        "message-exec",
        {"t": {"message": "{{len .rollout.nope}}"}},
        ["t"],
        "message",
        "error calling len",
    ),
    (
        "slack-exec",
        {"t": {"slack": {"attachments": "{{index .rollout 1}}"}}},
        ["t"],
        "slack.attachments",
        "executing",
    ),
    (
        "webhook-go-name",
        {"t": {"webhook": {"gh": {"body": '{{fail "boom"}}'}}}},
        ["t"],
        "webhook.gh.body",
        'template: tgh:1:2: executing "tgh" at <fail "boom">',
    ),
    (
        "opsgenie-detail-go-name",
        {"t": {"opsgenie": {"details": {"k": '{{fail "boom"}}'}}}},
        ["t"],
        "opsgenie.details.k",
        "template: t_detail_k:1:2:",
    ),
    (
        "non-string-field",
        {"t": {"email": {"subject": 3}}},
        ["t"],
        "email.subject",
        "expected a string",
    ),
    ("webhook-not-a-map", {"t": {"webhook": {"gh": "x"}}}, ["t"], "webhook.gh", "expected a map"),
]


@pytest.mark.parametrize(
    ("templates", "names", "field", "fragment"),
    [c[1:] for c in ERROR_CASES],
    ids=[c[0] for c in ERROR_CASES],
)
def test_errors(templates: dict[str, Any], names: list[str], field: str, fragment: str) -> None:
    with pytest.raises(RenderError) as e:
        render(_config(templates), names, _vars())
    assert e.value.field == field
    assert fragment in str(e.value)


# -- pagerdutyv2 and alertmanager (engine: pagerdutyv2_test.go, alertmanager_test.go) -------

PD_FIELDS = ("summary", "severity", "source", "component", "group", "class", "url")
NOW = dt.datetime(2025, 3, 4, 5, 6, 7, 120000, tzinfo=dt.UTC)
APP_VARS = {
    "app": {
        "metadata": {"name": "argocd-notifications"},
        "spec": {
            "source": {"repoURL": "https://github.com/argoproj-labs/argocd-notifications.git"}
        },
    }
}


def test_pagerdutyv2_all_parameters_specified() -> None:
    cfg = _config({"t": {"pagerdutyv2": {f: "{{." + f + "}}" for f in PD_FIELDS}}})
    values = {f: f"v-{f}" for f in PD_FIELDS}
    n = render(cfg, ["t"], values)
    assert n.blocks == {"pagerdutyv2": values}


def test_pagerdutyv2_only_required_parameters_specified() -> None:
    cfg = _config({"t": {"pagerdutyv2": {f: "{{." + f + "}}" for f in PD_FIELDS[:3]}}})
    n = render(cfg, ["t"], {"summary": "hello", "severity": "critical", "source": "my-app"})
    assert n.blocks["pagerdutyv2"] == {
        "summary": "hello",
        "severity": "critical",
        "source": "my-app",
        "component": "",
        "group": "",
        "class": "",
        "url": "",
    }


@pytest.mark.parametrize("field", PD_FIELDS)
def test_pagerdutyv2_parse_error_fails_the_config(field: str) -> None:
    cfg = parse_config({"template.t": yaml.safe_dump({"pagerdutyv2": {field: "{{.x}"}})}, {})
    assert [(e.key, e.message.split(":")[0]) for e in cfg.errors] == [
        ("template.t", f"pagerdutyv2.{field}")
    ]


def test_pagerdutyv2_later_template_overwrites_with_empty() -> None:
    cfg = _config({"a": {"pagerdutyv2": {"summary": "A", "url": "u"}}, "b": {"pagerdutyv2": {}}})
    assert set(render(cfg, ["a", "b"], {}).blocks["pagerdutyv2"].values()) == {""}


def _am(templates: dict[str, Any], names: list[str], vars: dict[str, Any]) -> dict[str, Any]:
    return render(_config(templates), names, vars, clock=lambda: NOW).blocks["alertmanager"]


# (id, alertmanager block, vars, expected block)
AM_CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    (
        "test_Labels_Annotations",
        {
            "labels": {"alertname": "App_Deployed"},
            "annotations": {"appname": "{{.app.metadata.name}}"},
        },
        APP_VARS,
        {
            "labels": {"alertname": "App_Deployed"},
            "annotations": {"appname": "argocd-notifications"},
            "generatorURL": "https://github.com/argoproj-labs/argocd-notifications.git",
            "startsAt": "2025-03-04T05:06:07.12Z",
        },
    ),
    (
        "test_custom_GeneratorURL",
        {"labels": {"alertname": "x"}, "generatorURL": "{{.app.metadata.name}}"},
        APP_VARS,
        {
            "labels": {"alertname": "x"},
            "annotations": None,
            "generatorURL": "argocd-notifications",
            "startsAt": "2025-03-04T05:06:07.12Z",
        },
    ),
    (
        "test_git_format_GeneratorURL",
        {"labels": {"alertname": "x"}, "generatorURL": "{{.url}}"},
        {"url": "git@github.com:argoproj-labs/argocd-notifications.git"},
        {
            "labels": {"alertname": "x"},
            "annotations": None,
            "generatorURL": "https://github.com/argoproj-labs/argocd-notifications.git",
            "startsAt": "2025-03-04T05:06:07.12Z",
        },
    ),
    (
        "alertname-defaults-to-template-name-and-empty-keeps-text",
        {"labels": {"a": "{{.a}}", "b": '{{.missing | default ""}}'}, "annotations": {"c": ""}},
        {"a": "A"},
        {
            "labels": {"a": "A", "b": '{{.missing | default ""}}', "alertname": "t"},
            "annotations": {"c": ""},
            "generatorURL": "<no value>",
            "startsAt": "2025-03-04T05:06:07.12Z",
        },
    ),
]


@pytest.mark.parametrize(
    ("block", "vars", "expected"), [c[1:] for c in AM_CASES], ids=[c[0] for c in AM_CASES]
)
def test_alertmanager(block: dict[str, Any], vars: dict[str, Any], expected: Any) -> None:
    assert _am({"t": {"alertmanager": block}}, ["t"], vars) == expected


def test_alertmanager_default_generator_url_renders_as_go(go_render: GoRender) -> None:
    # Under Argo Rollouts there is no .app: Go prints "<no value>", which parses as a URL.
    data = {k: v for k, v in _vars().items() if k != "time"}
    [go] = go_render([{"name": "t", "template": "{{.app.spec.source.repoURL}}", "data": data}])
    block = _am({"t": {"alertmanager": {"labels": {"alertname": "x"}}}}, ["t"], _vars())
    assert block["generatorURL"] == go["output"] == "<no value>"


def test_alertmanager_merge_keeps_url_and_annotations_replaces_labels() -> None:
    block = _am(
        {
            "a": {
                "alertmanager": {
                    "labels": {"x": "1"},
                    "annotations": {"n": "A"},
                    "generatorURL": "http://a",
                }
            },
            "b": {"alertmanager": {"labels": {"y": "2"}, "generatorURL": "{{.none}}"}},
        },
        ["a", "b"],
        {},
    )
    assert block["labels"] == {"y": "2", "alertname": "b"}
    assert block["annotations"] == {"n": "A"}
    assert block["generatorURL"] == "<no value>"


def test_alertmanager_empty_generator_url_keeps_the_previous_one() -> None:
    block = _am(
        {
            "a": {"alertmanager": {"labels": {"x": "1"}, "generatorURL": "http://a"}},
            "b": {"alertmanager": {"labels": {"x": "1"}, "generatorURL": '{{""}}'}},
        },
        ["a", "b"],
        {},
    )
    assert block["generatorURL"] == "http://a"


AM_ERRORS: list[tuple[str, dict[str, Any], str, str]] = [
    ("no-labels", {"annotations": {"a": "b"}}, "alertmanager.labels", "at least one label"),
    (
        "bad-url-escape",
        {"labels": {"a": "b"}, "generatorURL": "http://x/%zz"},
        "alertmanager.generatorURL",
        'invalid URL escape "%zz"',
    ),
    (
        "bad-url-colon",
        {"labels": {"a": "b"}, "generatorURL": "1a:b/c"},
        "alertmanager.generatorURL",
        "first path segment in URL cannot contain colon",
    ),
    (
        "bad-url-port",
        {"labels": {"a": "b"}, "generatorURL": "http://h:x/"},
        "alertmanager.generatorURL",
        "invalid port",
    ),
    (
        "bad-url-leading-colon",
        {"labels": {"a": "b"}, "generatorURL": ":x"},
        "alertmanager.generatorURL",
        "missing protocol scheme",
    ),
    ("label-exec", {"labels": {"a": '{{fail "boom"}}'}}, "alertmanager.labels.a", "boom"),
    ("label-parse", {"labels": {"a": "{{.a"}}, "alertmanager.labels.a", "unclosed action"),
    ("label-not-string", {"labels": {"a": ["b"]}}, "alertmanager.labels.a", "expected a string"),
]


@pytest.mark.parametrize(
    ("block", "field", "fragment"), [c[1:] for c in AM_ERRORS], ids=[c[0] for c in AM_ERRORS]
)
def test_alertmanager_errors(block: dict[str, Any], field: str, fragment: str) -> None:
    # A bad alertmanager template does not fail the config: the engine parses it when it renders.
    cfg = _config({"t": {"alertmanager": block}})
    with pytest.raises(RenderError) as e:
        render(cfg, ["t"], {}, clock=lambda: NOW)
    assert e.value.field == field
    assert fragment in str(e.value)


def test_rfc3339_nano_as_go_writes_it() -> None:
    assert go_rfc3339_nano(dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC)) == (
        "2025-01-02T03:04:05Z"
    )
    plus_two = dt.timezone(dt.timedelta(hours=2))
    assert go_rfc3339_nano(dt.datetime(2025, 1, 2, 3, 4, 5, 500, tzinfo=plus_two)) == (
        "2025-01-02T03:04:05.0005+02:00"
    )
