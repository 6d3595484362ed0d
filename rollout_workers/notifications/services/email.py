"""Email over SMTP, as the engine's ``email`` service sends it (gomodules.xyz/notify's smtp
client over gomail v2).

Options (``service.email[.<name>]``): ``host``, ``port``, ``from``, ``username``, ``password``,
``insecure_skip_verify`` (snake case, as the engine spells it) and ``html`` (send the body as
``text/html`` instead of ``text/plain``). The recipient is one address or a comma-separated
list, each trimmed. The subject is the template's ``email.subject`` (empty without one); the
body is ``email.body``, else the message.

The conversation, as gomail's dialer holds it: implicit TLS only on port 465 and only when
both username and password are set (gomail's ``NewDialer``; without credentials the engine
dials plain even on 465); otherwise plain, upgraded with STARTTLS whenever the server offers it;
then AUTH when a username and password are set and the server offers AUTH (CRAM-MD5 first,
else PLAIN, else LOGIN). Like Go's ``net/smtp``, credentials are never sent in clear over an
unencrypted connection except to localhost. ``insecure_skip_verify`` turns off certificate and
host name checks.

Outcomes: a 4xx reply or no connection is retried; a 5xx reply (rejected sender, recipient or
message, failed authentication) and bad options are final.
"""

from __future__ import annotations

import smtplib
import ssl
from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import formatdate
from typing import Any

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.options import Options, config_error, label

IMPLICIT_TLS_PORT = 465
LOCALHOST = frozenset({"localhost", "127.0.0.1", "::1"})


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    where = label("email", ctx.service)
    opts = Options(where, options)
    host, port, sender = opts.text("host"), opts.integer("port"), opts.text("from")
    username, password = opts.text("username"), opts.text("password")
    if not host:
        raise config_error(where, "option 'host' is not set")
    if not sender:
        raise config_error(where, "option 'from' is not set")
    to = parse_to(recipient)
    if not to:
        raise config_error(where, "no recipient address")
    message = calculate_message(
        sender=sender, to=to, notification=notification, html=opts.flag("html")
    )
    tls = _tls_context(opts.flag("insecure_skip_verify"))
    credentials = (username, password) if username and password else None
    try:
        _deliver(
            host=host,
            port=port,
            tls=tls,
            implicit_tls=port == IMPLICIT_TLS_PORT and credentials is not None,
            credentials=credentials,
            message=message,
            timeout=ctx.timeout,
        )
    except smtplib.SMTPAuthenticationError as e:
        raise SendError(f"{where}: authentication failed ({e.smtp_code})", final=True) from None
    except smtplib.SMTPRecipientsRefused as e:
        codes = [code for code, _ in e.recipients.values()]
        final = all(code >= 500 for code in codes)
        raise SendError(
            f"{where}: recipients refused: {', '.join(sorted(e.recipients))}", final=final
        ) from None
    except smtplib.SMTPResponseException as e:
        raise SendError(
            f"{where}: server answered {e.smtp_code}: {_text(e.smtp_error)}",
            final=e.smtp_code >= 500,
        ) from None
    except smtplib.SMTPNotSupportedError as e:
        raise SendError(f"{where}: {e}", final=True) from None
    except ssl.SSLError:
        raise SendError(f"{where}: TLS handshake with {host} failed", final=True) from None
    except TimeoutError:
        raise SendError(f"{where}: no answer from {host} in time", final=False) from None
    except (OSError, smtplib.SMTPException):
        raise SendError(f"{where}: could not talk to {host}:{port}", final=False) from None


def parse_to(recipient: str) -> list[str]:
    """The engine's ``parseTo``: comma-separated addresses, each trimmed of spaces (empty
    entries dropped here: the engine would fail on them)."""
    return [address.strip(" ") for address in recipient.split(",") if address.strip(" ")]


def calculate_message(
    *, sender: str, to: list[str], notification: Notification, html: bool
) -> EmailMessage:
    block = notification.blocks.get("email") or {}
    message = EmailMessage()
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Subject"] = str(block.get("subject") or "")
    message["Date"] = formatdate(localtime=False)
    body = str(block.get("body") or "") or notification.message
    message.set_content(body, subtype="html" if html else "plain", charset="utf-8")
    return message


def _tls_context(insecure: bool) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _deliver(
    *,
    host: str,
    port: int,
    tls: ssl.SSLContext,
    implicit_tls: bool,
    credentials: tuple[str, str] | None,
    message: EmailMessage,
    timeout: float,
) -> None:
    client: smtplib.SMTP
    if implicit_tls:
        client = smtplib.SMTP_SSL(host, port, timeout=timeout, context=tls)
    else:
        client = smtplib.SMTP(host, port, timeout=timeout)
    with client:
        client.ehlo_or_helo_if_needed()
        encrypted = implicit_tls
        if not implicit_tls and client.has_extn("starttls"):
            client.starttls(context=tls)
            client.ehlo()
            encrypted = True
        if credentials is not None and client.has_extn("auth"):
            mechanisms = client.esmtp_features.get("auth", "").upper().split()
            if not encrypted and host not in LOCALHOST and "CRAM-MD5" not in mechanisms:
                # net/smtp's PlainAuth refuses this ("unencrypted connection").
                raise smtplib.SMTPNotSupportedError(
                    "refusing to send credentials over an unencrypted connection"
                )
            client.login(*credentials)
        client.send_message(message)


def _text(value: bytes | str) -> str:
    text = value.decode(errors="replace") if isinstance(value, bytes) else value
    return " ".join(text.split())
