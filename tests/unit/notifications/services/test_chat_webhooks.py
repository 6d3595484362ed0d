"""Teams, Teams Workflows, Google Chat and Mattermost against a recording server; cases from
the engine's teams_test.go, teams-workflows_test.go, googlechat_test.go, mattermost_test.go."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rollout_workers.notifications.config import Service
from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.registry import send
from rollout_workers.notifications.services.teams_workflows import go_value, url_problem
from tests.support.receiver import Answer, Receiver

ONE = Answer(200, b"1", (("Content-Type", "text/plain"),))


def teams(url: str) -> Service:
    return Service("teams", "teams", {"recipientUrls": {"test": url}})


def test_teams_default_message(receiver: Receiver, ctx: SendContext) -> None:
    # TestTeams_DefaultMessage
    receiver.respond = lambda _: ONE
    send(teams(receiver.url("/webhookb2/x")), Notification(message="simple message"), "test", ctx)
    (request,) = receiver.received()
    assert (request.method, request.path) == ("POST", "/webhookb2/x")
    assert request.headers["Content-Type"] == "application/json"
    assert request.body == (
        b'{"@type":"MessageCard","context":"https://schema.org/extensions",'
        b'"title":"","summary":"","text":"simple message"}'
    )


def test_teams_template_message(receiver: Receiver, ctx: SendContext) -> None:
    # TestTeams_TemplateMessage
    receiver.respond = lambda _: ONE
    notification = Notification(blocks={"teams": {"template": "template body"}})
    send(teams(receiver.url()), notification, "test", ctx)
    assert receiver.received()[0].body == b"template body"


def test_teams_message_fields(receiver: Receiver, ctx: SendContext) -> None:
    # TestTeams_MessageFields
    receiver.respond = lambda _: ONE
    block = {
        "text": "Text",
        "facts": '[{"facts": true}]',
        "sections": '[{"sections": true}]',
        "potentialAction": '[{"actions": true}]',
        "title": "Title",
        "summary": "Summary",
        "themeColor": "#000080",
    }
    send(
        teams(receiver.url()), Notification(message="welcome", blocks={"teams": block}), "test", ctx
    )
    body = receiver.received()[0].json()
    assert list(body) == [
        "@type", "context", "title", "summary", "text", "themeColor", "potentialAction", "sections"
    ]  # fmt: skip
    assert body["text"] == "Text"
    assert (body["title"], body["summary"], body["themeColor"]) == ("Title", "Summary", "#000080")
    assert body["potentialAction"] == [{"actions": True}]
    assert body["sections"] == [{"sections": True}, {"facts": [{"facts": True}]}]


@pytest.mark.parametrize(
    ("answer", "final", "text"),
    [
        (Answer(200, b"Webhook message delivery failed"), True, "did not accept"),
        (Answer(400, b"bad card"), True, "answered HTTP 400"),
        (Answer(503, b"busy"), False, "answered HTTP 503"),
        (Answer(429, b"", (("Retry-After", "3"),)), False, "answered HTTP 429"),
    ],
)
def test_teams_failures(
    receiver: Receiver, ctx: SendContext, answer: Answer, final: bool, text: str
) -> None:
    receiver.respond = lambda _: answer
    with pytest.raises(SendError) as caught:
        send(teams(receiver.url("/secret")), Notification(message="m"), "test", ctx)
    assert caught.value.final is final
    assert text in str(caught.value) and "secret" not in str(caught.value)


def test_teams_unknown_recipient_and_bad_json_are_final(ctx: SendContext) -> None:
    with pytest.raises(SendError, match="webhook URL configured for recipient 'other'") as caught:
        send(teams("http://127.0.0.1:9/"), Notification(message="m"), "other", ctx)
    assert caught.value.final
    bad = Notification(blocks={"teams": {"sections": "[{"}})
    with pytest.raises(SendError, match=r"teams\.sections is not valid JSON") as caught:
        send(teams("http://127.0.0.1:9/"), bad, "test", ctx)
    assert caught.value.final


def test_teams_connection_refused_is_not_final(closed_port: int, ctx: SendContext) -> None:
    with pytest.raises(SendError) as caught:
        send(teams(f"http://127.0.0.1:{closed_port}/"), Notification(message="m"), "test", ctx)
    assert caught.value.final is False


# Teams Workflows (engine after v0.5.0).


def workflows(url: str) -> Service:
    return Service("teams-workflows", "teams-workflows", {"recipientUrls": {"test": url}})


def card_of(body: bytes) -> Any:
    message = json.loads(body)
    assert message["type"] == "message"
    (attachment,) = message["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    return attachment["content"]


def test_workflows_built_card(receiver: Receiver, ctx: SendContext) -> None:
    block = {
        "title": "Rollout healthy",
        "themeColor": "Good",
        "facts": '[{"name": "Revision", "value": 3}, {"value": "no name"}]',
        "sections": '[{"facts": [{"name": "Strategy", "value": "canary"}]}, {"text": "x"}]',
        "potentialAction": '[{"@type": "OpenUri", "name": "Open", "targets": [{"uri": "https://a"}]},'
        ' {"@type": "HttpPOST", "name": "No"}]',
    }
    url = receiver.url("/powerautomate/automations/direct/workflows/1")
    send(
        workflows(url), Notification(message="msg", blocks={"teams-workflows": block}), "test", ctx
    )
    (request,) = receiver.received()
    assert request.headers["Content-Type"] == "application/json"
    assert card_of(request.body) == {
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": [
            {"type": "TextBlock", "text": "Rollout healthy", "size": "Large", "weight": "Bolder",
             "color": "Good", "wrap": True},
            {"type": "TextBlock", "text": "msg", "wrap": True},
            {"type": "FactSet", "facts": [{"title": "Revision", "value": "3"}]},
            {"type": "FactSet", "facts": [{"title": "Strategy", "value": "canary"}]},
        ],
        "actions": [{"type": "Action.OpenUrl", "title": "Open", "url": "https://a"}],
    }  # fmt: skip


def test_workflows_custom_adaptive_card_kept_as_written(
    receiver: Receiver, ctx: SendContext
) -> None:
    card = '{"type":"AdaptiveCard","version":"1.5","body":[{"type":"ColumnSet","columns":[]}]}'
    notification = Notification(blocks={"teams-workflows": {"adaptiveCard": f"  {card}\n"}})
    send(workflows(receiver.url("/powerautomate/x")), notification, "test", ctx)
    body = receiver.received()[0].body
    assert body.endswith(b'"content":' + card.encode() + b"}]}")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://prod-1.westus.logic.azure.com:443/powerautomate/a", ""),
        ("https://x.webhook.office.com/workflows/abc", ""),
        ("https://api.powerplatform.com/a", ""),
        ("http://127.0.0.1:8080/powerautomate/a", ""),
        ("http://example.com/powerautomate/a", "must use HTTPS"),
        ("https://example.com/hook", "does not appear"),
        ("", "cannot be empty"),
    ],
)
def test_workflows_url_validation(url: str, problem: str) -> None:
    assert (problem in url_problem(url)) if problem else url_problem(url) == ""


def test_workflows_rejects_a_non_workflows_url(ctx: SendContext) -> None:
    with pytest.raises(SendError, match="does not appear") as caught:
        send(workflows("https://example.com/hook"), Notification(message="m"), "test", ctx)
    assert caught.value.final


@pytest.mark.parametrize(
    ("value", "expected"),  # Go's fmt %v of JSON-decoded values
    [(3, "3"), (1.5, "1.5"), (1000000, "1e+06"), (123456, "123456"), (1234567, "1.234567e+06"),
     (0.0001, "0.0001"), (0.00001, "1e-05"), (True, "true"), (None, "<nil>"),
     ([1, "x"], "[1 x]"), ({"b": 1, "a": 2}, "map[a:2 b:1]")],
)  # fmt: skip
def test_go_value(value: Any, expected: str) -> None:
    assert go_value(value) == expected


# Google Chat.


def chat(url: str) -> Service:
    return Service("googlechat", "googlechat", {"webhooks": {"test": url}})


def test_googlechat_text_message(receiver: Receiver, ctx: SendContext) -> None:
    # TestTextMessage_GoogleChat, TestSendMessage_NoError
    send(chat(receiver.url("/v1/spaces/S/messages?key=K&token=T")), Notification(message="hi"),
         "test", ctx)  # fmt: skip
    (request,) = receiver.received()
    assert (request.method, request.path) == ("POST", "/v1/spaces/S/messages")
    assert request.query == {"key": ["K"], "token": ["T"]}
    assert request.headers["Content-Type"] == "application/json"
    assert request.body == b'{"text":"hi"}'


def test_googlechat_thread_key(receiver: Receiver, ctx: SendContext) -> None:
    # TestTextMessageWithThreadKey_GoogleChat, TestSendMessageWithThreadKey_NoError
    notification = Notification(message="hi", blocks={"googlechat": {"threadKey": "rollout a"}})
    send(chat(receiver.url("/m?token=T&key=K")), notification, "test", ctx)
    (request,) = receiver.received()
    assert request.json() == {"text": "hi"}
    assert request.query == {
        "key": ["K"],
        "messageReplyOption": ["REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD"],
        "threadKey": ["rollout a"],
        "token": ["T"],
    }


def test_googlechat_cards(receiver: Receiver, ctx: SendContext) -> None:
    # TestCardMessage_GoogleChat
    cards = """- sections:
  - widgets:
    - textParagraph:
        text: text
    - keyValue:
        topLabel: 2024-01-01
    - buttons:
      - textButton:
          text: button"""
    send(chat(receiver.url()), Notification(message="m", blocks={"googlechat": {"cards": cards}}),
         "test", ctx)  # fmt: skip
    assert receiver.received()[0].json() == {
        "text": "",
        "cards": [{"sections": [{"widgets": [
            {"textParagraph": {"text": "text"}},
            {"keyValue": {"topLabel": "2024-01-01"}},
            {"buttons": [{"textButton": {"text": "button"}}]},
        ]}]}],
    }  # fmt: skip


def test_googlechat_cards_v2(receiver: Receiver, ctx: SendContext) -> None:
    # TestCardV2Message_GoogleChat
    cards_v2 = """
- header:
    title: "Action test as been completed"
    imageType: CIRCLE
  sections:
    - header: Metadata
      collapsible: false
      uncollapsibleWidgetsCount: 1
      widgets:
        - decoratedText:
            text: "text"
"""
    notification = Notification(blocks={"googlechat": {"cardsV2": cards_v2}})
    send(chat(receiver.url()), notification, "test", ctx)
    body = receiver.received()[0].json()
    assert body["text"] == ""
    (entry,) = body["cardsV2"]
    assert list(entry) == ["card", "cardId"] and len(entry["cardId"]) == 36
    assert entry["card"] == {
        "header": {"title": "Action test as been completed", "imageType": "CIRCLE"},
        "sections": [{"header": "Metadata", "collapsible": False, "uncollapsibleWidgetsCount": 1,
                      "widgets": [{"decoratedText": {"text": "text"}}]}],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "final"),
    [
        (Answer.json(400, {"error": {"code": 400, "message": "bad", "status": "INVALID"}}), True),
        (Answer.json(200, {"error": {"code": 403, "message": "no", "status": "DENIED"}}), True),
        (Answer.json(429, {"error": {"code": 429, "message": "slow", "status": "RESOURCE"}},
                     ("Retry-After", "2")), False),
        (Answer(502, b"<html>bad gateway</html>"), False),
    ],
)  # fmt: skip
def test_googlechat_failures(
    receiver: Receiver, ctx: SendContext, answer: Answer, final: bool
) -> None:
    receiver.respond = lambda _: answer
    with pytest.raises(SendError) as caught:
        send(chat(receiver.url("/m?key=SECRET")), Notification(message="m"), "test", ctx)
    assert caught.value.final is final
    assert "SECRET" not in str(caught.value)


def test_googlechat_unknown_recipient_and_bad_yaml_are_final(ctx: SendContext) -> None:
    # TestCreateClient_Error
    with pytest.raises(SendError, match="no webhook URL configured for recipient 'another'"):
        send(chat("http://127.0.0.1:9/"), Notification(message="m"), "another", ctx)
    bad = Notification(blocks={"googlechat": {"cards": "- a: [b"}})
    with pytest.raises(SendError, match=r"googlechat\.cards is not valid YAML") as caught:
        send(chat("http://127.0.0.1:9/"), bad, "test", ctx)
    assert caught.value.final


# Mattermost.


def mattermost(url: str) -> Service:
    return Service(
        "mattermost", "mattermost", {"apiURL": url, "token": "tok", "insecureSkipVerify": True}
    )


def test_mattermost_post(receiver: Receiver, ctx: SendContext) -> None:
    # TestSend_Mattermost
    attachments = """[{
        "title": "title",
        "title_link": "https://argocd.example.com/applications/argocd-notifications",
        "color": "#18be52",
        "fields": [{"title": "Sync Status", "value": "Synced", "short": true}]
    }]"""
    notification = Notification(
        message="message", blocks={"mattermost": {"attachments": attachments}}
    )
    send(mattermost(receiver.url()), notification, "channel", ctx)
    (request,) = receiver.received()
    assert (request.method, request.path) == ("POST", "/api/v4/posts")
    assert request.headers["Authorization"] == "Bearer tok"
    assert request.headers["Content-Type"] == "application/json"
    assert request.json() == {
        "channel_id": "channel",
        "message": "message",
        "props": {"attachments": json.loads(attachments)},
    }
    assert request.body.startswith(b'{"channel_id":"channel","message":"message","props":')


def test_mattermost_without_attachments(receiver: Receiver, ctx: SendContext) -> None:
    send(mattermost(receiver.url()), Notification(message="m"), "c", ctx)
    assert (
        receiver.received()[0].body
        == b'{"channel_id":"c","message":"m","props":{"attachments":[]}}'
    )


@pytest.mark.parametrize(
    ("status", "final"), [(401, True), (403, True), (500, False), (429, False)]
)
def test_mattermost_failures(
    receiver: Receiver, ctx: SendContext, status: int, final: bool
) -> None:
    receiver.respond = lambda _: Answer.json(status, {"id": "api.context.session_expired"})
    with pytest.raises(SendError) as caught:
        send(mattermost(receiver.url()), Notification(message="m"), "c", ctx)
    assert (caught.value.final, caught.value.status) == (final, status)
    assert "tok" not in str(caught.value)


def test_mattermost_bad_options_and_attachments_are_final(ctx: SendContext) -> None:
    with pytest.raises(SendError, match="option 'apiURL' is not set"):
        send(Service("mattermost", "mattermost", {}), Notification(message="m"), "c", ctx)
    bad = Notification(blocks={"mattermost": {"attachments": "{"}})
    with pytest.raises(SendError, match=r"mattermost\.attachments is not valid JSON") as caught:
        send(mattermost("http://127.0.0.1:9"), bad, "c", ctx)
    assert caught.value.final
