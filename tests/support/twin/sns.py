"""A local SNS endpoint for the twin's Alertmanager: it accepts ``Publish``, checks the SigV4 signature, applies the
subscription's filter policy and hands the remediation handler the event Lambda would get.

Alertmanager's SNS notifier (0.25: notify/sns/sns.go, aws-sdk-go v1 ``sns.Publish`` with ``Endpoint`` = the
receiver's ``api_url``) sends the SNS Query API: a form-encoded POST with ``Action=Publish``, ``TopicArn``,
``Message``, ``Subject`` and ``MessageAttributes.entry.N.Name`` / ``.Value.DataType`` / ``.Value.StringValue`` (SNS API
reference, Publish; the query protocol's map serialization), signed with SigV4 for service ``sns``. The receiver
answers the documented ``PublishResponse`` XML.

Each accepted message becomes one SNS event for Lambda (Lambda Developer Guide, "Using Lambda with Amazon SNS",
example event: ``{"Records": [{"EventSource": "aws:sns", "EventVersion": "1.0", "EventSubscriptionArn", "Sns":
{"Type": "Notification", "MessageId", "TopicArn", "Subject", "Message", "Timestamp", "MessageAttributes": {name:
{"Type": "String", "Value": ...}}, ...}}]}``) delivered to ``deliver(event)`` on one delivery thread, after the reply,
as SNS invokes Lambda asynchronously. The subscription's ``FilterPolicy`` (from the template) decides what is
delivered: attribute names -> a list of exact strings, ``{"exists": bool}`` or ``{"prefix": str}`` (SNS Developer
Guide, message filtering; ``"exists": false`` matches only a message with at least one attribute); any other operator
raises, so a policy the twin cannot judge fails loudly.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import queue
import re
import threading
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .procs import TwinError

__all__ = ["Publish", "SnsReceiver", "lambda_event", "matches_filter_policy", "parse_publish", "verify_sigv4"]

_ENTRY = re.compile(r"MessageAttributes\.entry\.(\d+)\.(Name|Value\.DataType|Value\.StringValue)")
_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<headers>[^,]+),\s*Signature=(?P<signature>[0-9a-f]{64})"
)


@dataclass(frozen=True)
class Publish:
    """One accepted ``Publish`` call."""

    topic_arn: str
    message: str
    subject: str
    attributes: Mapping[str, str]
    message_id: str
    timestamp: str
    access_key_id: str
    region: str


def parse_publish(body: str) -> dict[str, Any]:
    """The fields of a form-encoded SNS query request (``MessageAttributes`` as name -> string value)."""
    form = dict(urllib.parse.parse_qsl(body, keep_blank_values=True))
    entries: dict[str, dict[str, str]] = {}
    for key, value in form.items():
        match = _ENTRY.fullmatch(key)
        if match:
            entries.setdefault(match.group(1), {})[match.group(2)] = value
    attributes = {e["Name"]: e.get("Value.StringValue", "") for e in entries.values() if "Name" in e}
    out: dict[str, Any] = {k: v for k, v in form.items() if not k.startswith("MessageAttributes.")}
    out["MessageAttributes"] = attributes
    return out


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def verify_sigv4(method: str, path: str, headers: Mapping[str, str], body: bytes, *, secret_key: str) -> dict[str, str]:
    """Check the request's SigV4 signature (AWS General Reference, "Create a signed AWS API request": canonical
    request, string to sign, derived key); returns the credential scope parts. Raises TwinError when it does not
    verify."""
    lower = {k.lower(): v for k, v in headers.items()}
    match = _AUTH.fullmatch(lower.get("authorization", "").strip())
    if match is None:
        raise TwinError(f"no SigV4 Authorization header: {lower.get('authorization')!r}")
    signed = match.group("headers").split(";")
    amz_date = lower.get("x-amz-date", "")
    parsed = urllib.parse.urlsplit(path)
    query = "&".join(sorted(parsed.query.split("&"))) if parsed.query else ""
    canonical_headers = "".join(f"{name}:{' '.join(lower.get(name, '').split())}\n" for name in signed)
    payload_hash = lower.get("x-amz-content-sha256") or hashlib.sha256(body).hexdigest()
    canonical = "\n".join([method, parsed.path or "/", query, canonical_headers, ";".join(signed), payload_hash])
    scope = f"{match.group('date')}/{match.group('region')}/{match.group('service')}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret_key).encode()
    for part in (match.group("date"), match.group("region"), match.group("service"), "aws4_request"):
        key = _hmac(key, part)
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, match.group("signature")):
        raise TwinError("the SigV4 signature does not verify")
    return {k: match.group(k) for k in ("key", "region", "service")}


def _condition_matches(condition: Any, present: bool, value: str | None) -> bool:
    if isinstance(condition, str):
        return present and value == condition
    if isinstance(condition, dict) and set(condition) == {"exists"}:
        return present is bool(condition["exists"])
    if isinstance(condition, dict) and set(condition) == {"prefix"}:
        return present and str(value).startswith(str(condition["prefix"]))
    raise TwinError(f"the twin's SNS filter cannot judge the condition {condition!r} (add it to sns.py)")


def matches_filter_policy(policy: Mapping[str, Any] | None, attributes: Mapping[str, str]) -> bool:
    """Whether a message with ``attributes`` passes a subscription ``FilterPolicy`` (MessageAttributes scope): every
    key matches one of its conditions; ``"exists": false`` never matches a message without attributes."""
    if not policy:
        return True
    for name, conditions in policy.items():
        if not isinstance(conditions, list):
            raise TwinError(f"filter policy {name!r}: a list of conditions, got {conditions!r}")
        if not attributes and any(isinstance(c, dict) and c.get("exists") is False for c in conditions):
            return False
        if not any(_condition_matches(c, name in attributes, attributes.get(name)) for c in conditions):
            return False
    return True


def lambda_event(publish: Publish, subscription_arn: str) -> dict[str, Any]:
    """The event Lambda receives for ``publish`` through an SNS subscription (module docstring)."""
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": subscription_arn,
                "Sns": {
                    "Type": "Notification",
                    "MessageId": publish.message_id,
                    "TopicArn": publish.topic_arn,
                    "Subject": publish.subject or None,
                    "Message": publish.message,
                    "Timestamp": publish.timestamp,
                    "SignatureVersion": "1",
                    "Signature": "EXAMPLE",
                    "SigningCertUrl": "EXAMPLE",
                    "UnsubscribeUrl": "EXAMPLE",
                    "MessageAttributes": {
                        name: {"Type": "String", "Value": value} for name, value in publish.attributes.items()
                    },
                },
            }
        ]
    }


_RESPONSE = (
    '<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>{id}</MessageId>'
    "</PublishResult><ResponseMetadata><RequestId>{request}</RequestId></ResponseMetadata></PublishResponse>"
)
_ERROR = (
    '<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type><Code>{code}</Code>'
    "<Message>{message}</Message></Error><RequestId>{request}</RequestId></ErrorResponse>"
)


@dataclass
class SnsReceiver:
    """The twin's SNS endpoint for one topic (module docstring).

    :param topic_arn: the only topic it accepts (the workspace's alert topic).
    :param deliver: called with each Lambda event that passes ``filter_policy`` (on the delivery thread); an exception
        is kept in :attr:`delivery_errors`, as a failed asynchronous invocation would go to the dead-letter queue.
    :param filter_policy: the subscription's ``FilterPolicy`` (None: every message).
    :param secret_key: the secret key SigV4 signatures are checked with (the sender's dummy credentials).
    """

    topic_arn: str
    deliver: Callable[[dict[str, Any]], object]
    filter_policy: Mapping[str, Any] | None = None
    secret_key: str = ""
    published: list[Publish] = field(default_factory=list)
    filtered: list[Publish] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    delivered: list[dict[str, Any]] = field(default_factory=list)
    delivery_errors: list[BaseException] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._idle = threading.Event()
        self._idle.set()
        self.subscription_arn = f"{self.topic_arn}:{uuid.uuid5(uuid.NAMESPACE_URL, self.topic_arn)}"

    def _accept(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> tuple[int, str]:
        request_id = str(uuid.uuid4())
        try:
            scope = verify_sigv4(method, path, headers, body, secret_key=self.secret_key)
            fields = parse_publish(body.decode())
            if fields.get("Action") != "Publish" or scope["service"] != "sns":
                raise TwinError(f"only sns Publish is served, got {fields.get('Action')} for {scope['service']}")
            if fields.get("TopicArn") != self.topic_arn:
                raise TwinError(f"unknown topic {fields.get('TopicArn')!r} (serving {self.topic_arn})")
        except TwinError as error:
            self.rejected.append(str(error))
            return 400, _ERROR.format(code="InvalidParameter", message=error, request=request_id)
        publish = Publish(
            topic_arn=self.topic_arn,
            message=str(fields.get("Message", "")),
            subject=str(fields.get("Subject", "")),
            attributes=dict(fields["MessageAttributes"]),
            message_id=str(uuid.uuid4()),
            timestamp=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            access_key_id=scope["key"],
            region=scope["region"],
        )
        self.published.append(publish)
        if matches_filter_policy(self.filter_policy, publish.attributes):
            self._idle.clear()
            self._queue.put(lambda_event(publish, self.subscription_arn))
        else:
            self.filtered.append(publish)
        return 200, _RESPONSE.format(id=publish.message_id, request=request_id)

    def _deliveries(self) -> None:
        while True:
            event = self._queue.get()
            if event is None:
                return
            try:
                self.deliver(event)
                self.delivered.append(event)
            except BaseException as error:
                self.delivery_errors.append(error)
            finally:
                if self._queue.empty():
                    self._idle.set()

    def start(self) -> str:
        """Serve on a free loopback port; returns the URL for Alertmanager's ``api_url``."""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, reply = receiver._accept("POST", self.path, dict(self.headers.items()), body)
                payload = reply.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/xml")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        for target, name in ((self._server.serve_forever, "sns-http"), (self._deliveries, "sns-delivery")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self.url

    @property
    def url(self) -> str:
        if self._server is None:
            raise TwinError("the SNS receiver is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def wait_idle(self, timeout_s: float = 30) -> None:
        """Wait until every accepted message has been delivered."""
        if not self._idle.wait(timeout_s):
            raise TwinError(f"SNS deliveries still running after {timeout_s:.0f}s")

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self._queue.put(None)
        for thread in self._threads:
            thread.join(timeout=10)
        self._server = None
        self._threads.clear()

    def __enter__(self) -> SnsReceiver:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
