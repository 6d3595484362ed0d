"""parse_config: notifications-engine's pkg/api/config_test.go cases, collected errors, and
Argo Rollouts' real catalog ConfigMap (manifests/notifications-install.yaml, v1.9.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rollout_workers.notifications.config import (
    Condition,
    DefaultSubscription,
    parse_config,
    replace_secret_references,
)
from rollout_workers.notifications.selectors import parse_selector

TESTDATA = Path(__file__).parent / "testdata"


def test_parse_config_services() -> None:  # TestParseConfig_Services
    cfg = parse_config({"service.slack": "token: my-token\n"}, {})
    assert cfg.errors == []
    svc = cfg.services["slack"]
    assert (svc.type, svc.options) == ("slack", {"token": "my-token"})


def test_parse_config_named_service() -> None:
    cfg = parse_config({"service.webhook.github": "url: https://api.github.com\n"}, {})
    svc = cfg.services["github"]
    assert (svc.name, svc.type, svc.options) == (
        "github",
        "webhook",
        {"url": "https://api.github.com"},
    )


def test_parse_config_templates() -> None:  # TestParseConfig_Templates
    cfg = parse_config({"template.my-template": "message: hello world\n"}, {})
    tmpl = cfg.templates["my-template"]
    assert (tmpl.message, tmpl.blocks) == ("hello world", {})
    assert tmpl.parsed[("message",)].render({}) == "hello world"


def test_parse_config_default_service_triggers() -> None:  # TestParseConfig_DefaultServiceTriggers
    cfg = parse_config({"defaultTriggers.slack": "- trigger-a\n- trigger-b\n"}, {})
    assert cfg.service_default_triggers == {"slack": ("trigger-a", "trigger-b")}


def test_parse_config_default_triggers() -> None:  # TestParseConfig_DefaultTriggers
    cfg = parse_config({"defaultTriggers": "[trigger1, trigger2]"}, {})
    assert cfg.default_triggers == ("trigger1", "trigger2")


def test_parse_config_subscriptions() -> None:  # TestParseConfig_Subscriptions
    cfg = parse_config({"subscriptions": "- selector: test=true\n  triggers:\n  - my-trigger2"}, {})
    assert cfg.subscriptions == [
        DefaultSubscription(triggers=("my-trigger2",), selector=parse_selector("test=true"))
    ]


def test_parse_config_trigger_conditions() -> None:
    cfg = parse_config(
        {
            "trigger.on-sync": (
                "- when: app.status.phase == 'Running'\n"
                "  send: [a, b]\n"
                "  oncePer: app.status.sync.revision\n"
                "  description: Sync started\n"
                "- send: [c]\n"
            )
        },
        {},
    )
    assert cfg.triggers["on-sync"] == (
        Condition(
            when="app.status.phase == 'Running'",
            send=("a", "b"),
            once_per="app.status.sync.revision",
            description="Sync started",
        ),
        Condition(send=("c",)),
    )


def test_parse_config_context() -> None:
    cfg = parse_config({"context": "argocdUrl: https://example.com\nport: 8080\n"}, {})
    assert cfg.context == {"argocdUrl": "https://example.com", "port": "8080"}


def test_names_keep_dots() -> None:  # strings.Join(parts[1:], ".")
    cfg = parse_config({"template.a.b": "message: x", "trigger.on.x": "- send: [a.b]"}, {})
    assert set(cfg.templates) == {"a.b"} and set(cfg.triggers) == {"on.x"}


# TestReplaceStringSecret_* and TestReplaceServiceConfigSecrets_*
SECRET_CASES = [
    (
        "TestReplaceStringSecret_KeyPresent",
        "hello $secret-value",
        {"secret-value": "world"},
        "hello world",
    ),
    (
        "TestReplaceStringSecret_KeyMissing",
        "hello $secret-value",
        {"another-secret-value": "world"},
        "hello $secret-value",
    ),
    ("two references", "$a:$b", {"a": "1", "b": "2"}, "1:2"),
    ("word characters are ASCII", "$aé", {"a": "x"}, "xé"),
    ("a lone dollar", "cost $ 5", {}, "cost $ 5"),
]


@pytest.mark.parametrize(
    ("text", "secret", "want"), [c[1:] for c in SECRET_CASES], ids=[c[0] for c in SECRET_CASES]
)
def test_replace_secret_references(text: str, secret: dict[str, str], want: str) -> None:
    assert replace_secret_references(text, secret) == want


SERVICE_SECRET_CASES: list[tuple[str, str, dict[str, str], dict[str, Any]]] = [
    (
        "TestReplaceServiceConfigSecrets_WithBasicWebhook_ReplacesSecrets",
        "url: $endpoint\nheaders:\n  - name: Authorization\n    value: Bearer $secret-value\n",
        {"endpoint": "https://example.com", "secret-value": "token"},
        {
            "url": "https://example.com",
            "headers": [{"name": "Authorization", "value": "Bearer token"}],
        },
    ),
    (
        "TestReplaceServiceConfigSecrets_WithMapOfSecrets_ReplacesSecrets",
        "apiUrl: $api-url\napiKeys:\n  first-team: $first-team-secret\n"
        "  second-team: $second-team-secret\n",
        {"first-team-secret": "first-token", "second-team-secret": "second-token"},
        {
            "apiUrl": "$api-url",
            "apiKeys": {"first-team": "first-token", "second-team": "second-token"},
        },
    ),
    (
        "TestReplaceServiceConfigSecrets_WithMultilineSecret_ReplacesSecrets",
        "appID: 12345\nprivateKey: $github-privateKey\ninstallationID: 67890\n",
        {"github-privateKey": "A\nValue\nOn\nMultiple\nLines"},
        {"appID": 12345, "privateKey": "A\nValue\nOn\nMultiple\nLines", "installationID": 67890},
    ),
    ("mapping keys are replaced too", "$k: v\n", {"k": "key"}, {"key": "v"}),
    (
        "a secret that looks like a number stays a string",
        "port: $p\n",
        {"p": "8080"},
        {"port": "8080"},
    ),
]


@pytest.mark.parametrize(
    ("text", "secret", "want"),
    [c[1:] for c in SERVICE_SECRET_CASES],
    ids=[c[0] for c in SERVICE_SECRET_CASES],
)
def test_service_secrets(text: str, secret: dict[str, str], want: dict[str, Any]) -> None:
    cfg = parse_config({"service.webhook": text}, secret)
    assert cfg.errors == []
    assert cfg.services["webhook"].options == want


ERROR_CASES = [
    (
        "service key with too many parts",
        "service.a.b.c",
        "x: y",
        "invalid service key; expected 'service.<type>(.<name>)' but got 'service.a.b.c'",
    ),
    ("service options not a map", "service.slack", "- a", "options: expected a map, got a list"),
    ("bad YAML", "trigger.on-x", "- send: [a", "invalid YAML"),
    ("trigger not a list", "trigger.on-x", "send: [a]", "expected a list of conditions"),
    ("send not a list", "trigger.on-x", "- send: a", "[0].send: expected a list of strings"),
    (
        "bad Go template, named with its field",
        "template.t",
        "message: ok\nslack:\n  attachments: '{{.a'\n",
        "slack.attachments: template: t:1: unclosed action",
    ),
    (
        "bad message template",
        "template.t",
        "message: '{{end}}'",
        "message: template: t:1: unexpected {{end}}",
    ),
    ("service block not a map", "template.t", "message: x\nemail: hi", "email: expected a map"),
    ("default triggers not a list", "defaultTriggers", "a: b", "expected a list of strings"),
    ("context not a map", "context", "[a]", "context: expected a map, got a list"),
    (
        "bad selector",
        "subscriptions",
        "- selector: 'a in x'\n  recipients: [slack:c]",
        "[0].selector: expected '(' after 'in'",
    ),
]


@pytest.mark.parametrize(
    ("key", "value", "message"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES]
)
def test_bad_key_is_reported_and_the_rest_loads(key: str, value: str, message: str) -> None:
    cfg = parse_config(
        {key: value, "template.good": "message: hi", "trigger.on-good": "- send: [good]"}, {}
    )
    assert [e.key for e in cfg.errors] == [key]
    assert message in cfg.errors[0].message, cfg.errors[0].message
    assert str(cfg.errors[0]).startswith(f"{key}: ")
    assert "good" in cfg.templates and "on-good" in cfg.triggers


def test_one_bad_subscription_keeps_the_others() -> None:
    cfg = parse_config(
        {"subscriptions": "- selector: '!!!'\n- recipients: [slack:a]\n  selector: env=prod"}, {}
    )
    assert len(cfg.errors) == 1 and cfg.errors[0].message.startswith("[0].selector")
    assert [s.recipients for s in cfg.subscriptions] == [("slack:a",)]


def test_duplicate_service_name_is_reported() -> None:
    cfg = parse_config({"service.slack": "token: a", "service.webhook.slack": "url: b"}, {})
    assert cfg.services["slack"].type == "slack"
    assert [e.key for e in cfg.errors] == ["service.webhook.slack"]


def test_webhook_block_templates_are_parsed() -> None:
    cfg = parse_config(
        {
            "template.t": (
                "webhook:\n  github:\n    method: POST\n"
                "    path: /repos/{{.rollout.metadata.name}}\n"
                '    body: \'{"state": "ok"}\'\n'
            )
        },
        {},
    )
    tmpl = cfg.templates["t"]
    assert tmpl.message is None
    path = tmpl.parsed[("webhook", "github", "path")]
    assert path.render({"rollout": {"metadata": {"name": "r"}}}) == "/repos/r"


# -- Argo Rollouts' catalog ------------------------------------------------------------------


def _catalog() -> dict[str, str]:
    manifest = yaml.safe_load((TESTDATA / "notifications-install-v1.9.1.yaml").read_text())
    data: dict[str, str] = manifest["data"]
    return data


def test_argo_catalog_loads() -> None:
    data = _catalog()
    cfg = parse_config(data, {})
    assert cfg.errors == []
    assert set(cfg.templates) == {k[len("template.") :] for k in data if k.startswith("template.")}
    assert set(cfg.triggers) == {k[len("trigger.") :] for k in data if k.startswith("trigger.")}
    assert len(cfg.templates) == 9 and len(cfg.triggers) == 9
    for name, conditions in cfg.triggers.items():
        for cond in conditions:
            assert all(t in cfg.templates for t in cond.send), name
    assert cfg.triggers["on-scaling-replica-set"] == (Condition(send=("scaling-replicaset",)),)
    completed = cfg.templates["rollout-completed"]
    assert set(completed.blocks) == {"email", "slack"}
    assert {("message",), ("email", "subject"), ("slack", "attachments")} <= set(completed.parsed)
    rollout = {
        "metadata": {"name": "guestbook"},
        "spec": {
            "strategy": {"canary": {}},
            "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    }
    assert completed.parsed[("email", "subject")].render({"rollout": rollout}) == (
        "Rollout guestbook has been completed."
    )


# -- only the fields the engine templates are parsed -----------------------------------------

COPIED_FIELD_CASES = [
    ("webhook-method", "webhook:\n  gh:\n    method: '{{.a'\n    body: ok\n"),
    ("slack-delivery-policy", "slack:\n  deliveryPolicy: '{{.a'\n  notifyBroadcast: true\n"),
    ("unknown-slack-key", "slack:\n  nope: '{{.a'\n"),
    ("alertmanager-parsed-when-rendered", "alertmanager:\n  labels:\n    a: '{{.a'\n"),
    ("unsupported-block", "github:\n  status:\n    label: '{{.a'\n"),
]


@pytest.mark.parametrize(
    "text", [c[1] for c in COPIED_FIELD_CASES], ids=[c[0] for c in COPIED_FIELD_CASES]
)
def test_a_field_the_engine_does_not_template_may_hold_braces(text: str) -> None:
    cfg = parse_config({"template.t": "message: m\n" + text}, {})
    assert cfg.errors == []
    assert all(parsed.text != "{{.a" for parsed in cfg.templates["t"].parsed.values())


def test_templated_fields_are_parsed_with_the_engines_names() -> None:
    cfg = parse_config(
        {
            "template.t": (
                "webhook:\n  gh:\n    path: p\n"
                "opsgenie:\n  details:\n    k: v\n  tags: [x]\n  visibleTo: [{id: i}]\n"
            )
        },
        {},
    )
    names = {path: parsed.name for path, parsed in cfg.templates["t"].parsed.items()}
    assert names[("webhook", "gh", "path")] == "tgh"
    assert names[("opsgenie", "details", "k")] == "t_detail_k"
    assert names[("opsgenie", "tags", "0")] == "t_tag_0"
    assert names[("opsgenie", "visibleTo", "0", "id")] == "t_responder_0_id"
    assert names[("opsgenie", "description")] == "t"


def test_a_templated_field_with_a_bad_template_still_fails_the_config() -> None:
    cfg = parse_config({"template.t": "webhook:\n  gh:\n    method: GET\n    body: '{{.a'\n"}, {})
    assert [str(e) for e in cfg.errors] == [
        "template.t: webhook.gh.body: template: tgh:1: unclosed action"
    ]
