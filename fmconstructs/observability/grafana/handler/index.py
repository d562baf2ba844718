"""Custom resource handler: provisions an Amazon Managed Grafana workspace through the Grafana HTTP API.

Runs in the AWS Lambda Python runtime (standard library + boto3 only) behind ``aws_cdk.custom_resources.Provider``,
which calls :func:`on_event` and turns its return value (or exception) into the CloudFormation response.

Create / Update
    1. find or create the workspace service account ``ServiceAccountName`` (Grafana role ADMIN: creating data
       sources needs it) with ``grafana:ListWorkspaceServiceAccounts`` / ``CreateWorkspaceServiceAccount``;
    2. create a token valid for :data:`TOKEN_SECONDS_TO_LIVE` seconds (``CreateWorkspaceServiceAccountToken``);
    3. with it, create or update the Prometheus data source (SigV4 with the workspace IAM role, region of the Amazon
       Managed Prometheus workspace), create the dashboard folder, upload every dashboard
       (``POST /api/dashboards/db`` with ``overwrite``), and on Update delete the dashboards and data source that the
       previous properties named but the new ones do not;
    4. in a ``finally``: delete the token (``DeleteWorkspaceServiceAccountToken``).
Delete
    Best effort: delete the dashboards, the data source, the folder if it is then empty, the token and the service
    account. Any failure (Grafana unreachable, AccessDenied, the deadline) is logged with its reason and the deletion
    succeeds, so that a stack deletion never gets stuck in DELETE_FAILED on Grafana: the dashboards live in the
    workspace, which is usually being deleted too, and nothing else depends on them.

Time: every call is bounded. A deadline (:class:`Deadline`) is taken from the Lambda context's remaining time less
:data:`DEADLINE_RESERVE_SECONDS`; each Grafana HTTP call gets ``min(HTTP_TIMEOUT_SECONDS, time left)`` and no retry or
backoff sleep goes past the deadline; the boto3 ``grafana`` client has connect/read timeouts (:data:`CLIENT_CONFIG`).
So Create/Update fail with a message, and Delete succeeds, before the Lambda times out: the provider framework then
answers CloudFormation instead of reporting a timed-out function.

The token lives only in a local variable and in the ``Authorization`` header: it is never logged, never part of an
exception message (Grafana error bodies are scrubbed of it) and never returned (``PhysicalResourceId``/``Data``).
Grafana 5xx and 429 answers and connection errors are retried with exponential backoff; other 4xx fail at once with
the method, path, status and (scrubbed, truncated) body.
"""

from __future__ import annotations

import functools
import http.client
import json
import logging
import os
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

LOG = logging.getLogger("fmconstructs.grafana.provisioner")
LOG.setLevel(logging.INFO)
# botocore logs whole response bodies (the token among them) at DEBUG: keep it quiet whatever the root level is.
for _noisy in ("botocore", "boto3", "urllib3"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)

TOKEN_SECONDS_TO_LIVE = 600
"""Lifetime of the provisioning token: long enough for one run (Lambda timeout is 5 minutes), revoked anyway."""
SERVICE_ACCOUNT_ROLE = "ADMIN"  # Grafana: data source create/update needs the Admin org role.
MAX_ATTEMPTS = 5
BACKOFF_BASE_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 20.0
HTTP_TIMEOUT_SECONDS = 20.0
# Kept back from the Lambda's remaining time (context.get_remaining_time_in_millis(), Lambda Developer Guide "Using
# the Lambda context object to retrieve Python function information") for revoking the token and returning.
DEADLINE_RESERVE_SECONDS = 20.0
# Without a Lambda context (tests, local runs).
DEFAULT_DEADLINE_SECONDS = 240.0
# boto3 grafana client: botocore "standard" retries (throttling and transient errors, exponential backoff) and
# connect/read timeouts far below botocore's 60 s defaults (botocore Config connect_timeout / read_timeout).
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=15)
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_SECRET_PLACEHOLDER = "<redacted>"

# Dashboards ship next to this package in the Lambda asset (/var/task/dashboards) and in the source tree
# (fmconstructs/observability/dashboards): both are two levels above grafana/handler/.
DASHBOARD_DIR = Path(os.environ.get("FM_DASHBOARD_DIR", Path(__file__).resolve().parents[2] / "dashboards"))

_sleep: Callable[[float], None] = time.sleep  # replaced by tests


class ProvisioningError(RuntimeError):
    """A Grafana or AWS call failed for good; the message never contains the token."""


class Deadline:
    """The time by which the handler must have answered (monotonic clock)."""

    def __init__(self, seconds: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._end = clock() + seconds

    @classmethod
    def from_context(cls, context: Any) -> Deadline:
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        if not callable(remaining):
            return cls(DEFAULT_DEADLINE_SECONDS)
        return cls(max(0.0, float(remaining()) / 1000.0 - DEADLINE_RESERVE_SECONDS))

    def left(self) -> float:
        return max(0.0, self._end - self._clock())


class GrafanaApiError(ProvisioningError):
    """Grafana answered with an error status (after retries for 5xx/429)."""

    def __init__(self, method: str, path: str, status: int, detail: str) -> None:
        self.status = status
        super().__init__(f"Grafana {method} {path} failed with HTTP {status}: {detail}")


# ---------------------------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------------------------


def _as_bool(value: Any) -> bool:
    # CloudFormation passes every custom resource property as a string.
    return value is True or str(value).lower() == "true"


@dataclass(frozen=True)
class Properties:
    """The custom resource properties the construct sets (see ``GrafanaProvisioner``)."""

    workspace_id: str
    grafana_endpoint: str
    prometheus_url: str
    prometheus_region: str
    data_source_uid: str
    data_source_name: str
    data_source_is_default: bool
    folder_uid: str
    folder_title: str
    dashboard_uids: tuple[str, ...]
    service_account_name: str

    @classmethod
    def from_event(cls, props: Mapping[str, Any]) -> Properties:
        if not isinstance(props, Mapping):
            raise ProvisioningError(f"custom resource properties are not an object: {type(props).__name__}")
        try:
            arn = str(props["PrometheusWorkspaceArn"])
            region = arn.split(":")[3] if arn.count(":") >= 5 else ""
            if not region:
                raise ProvisioningError(f"PrometheusWorkspaceArn is not an ARN: {arn!r}")
            return cls(
                workspace_id=str(props["WorkspaceId"]),
                grafana_endpoint=str(props["GrafanaEndpoint"]),
                prometheus_url=str(props["PrometheusUrl"]).rstrip("/"),
                prometheus_region=region,
                data_source_uid=str(props["DataSourceUid"]),
                data_source_name=str(props["DataSourceName"]),
                data_source_is_default=_as_bool(props.get("DataSourceIsDefault", "false")),
                folder_uid=str(props["FolderUid"]),
                folder_title=str(props["FolderTitle"]),
                dashboard_uids=tuple(str(u) for u in props.get("DashboardUids", [])),
                service_account_name=str(props["ServiceAccountName"]),
            )
        except KeyError as missing:
            raise ProvisioningError(f"missing custom resource property {missing}") from None


def base_url(endpoint: str) -> str:
    """``https://<workspace endpoint>``; a full URL is accepted, but plain http only for a loopback test server."""
    if "://" not in endpoint:
        return f"https://{endpoint.rstrip('/')}"
    parsed = urllib.parse.urlsplit(endpoint)
    if parsed.scheme == "https" or (parsed.scheme == "http" and parsed.hostname in _LOOPBACK_HOSTS):
        return endpoint.rstrip("/")
    raise ProvisioningError(f"GrafanaEndpoint must be a host name or an https URL, got {endpoint!r}")


# ---------------------------------------------------------------------------------------------------------------
# Grafana HTTP API
# ---------------------------------------------------------------------------------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follow a redirect: it could carry the bearer token to another host."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


class GrafanaApi:
    """Minimal Grafana HTTP API client with a bearer token, retries and token scrubbing."""

    def __init__(self, url: str, token: str, *, deadline: Deadline | None = None) -> None:
        self._url = url
        self._token = token
        self._deadline = deadline or Deadline(DEFAULT_DEADLINE_SECONDS)

    def __repr__(self) -> str:  # never show the token
        return f"GrafanaApi({self._url!r})"

    def scrub(self, text: str) -> str:
        """``text`` with the token replaced, truncated for a log line or an error message."""
        if self._token:
            text = text.replace(self._token, _SECRET_PLACEHOLDER)
        return text[:300]

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after and retry_after.strip().isdigit():
            return min(float(retry_after.strip()), BACKOFF_MAX_SECONDS)
        backoff: float = min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2.0 ** (attempt - 1))
        return backoff * (0.5 + random.random() / 2)

    def request(self, method: str, path: str, body: Any = None, *, allow: Sequence[int] = ()) -> tuple[int, Any]:
        """Send one API call; returns ``(status, parsed JSON or None)``.

        ``allow`` lists error statuses that are answers rather than failures (e.g. 404 on a lookup).
        """
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(1, MAX_ATTEMPTS + 1):
            timeout = min(HTTP_TIMEOUT_SECONDS, self._deadline.left())
            if timeout <= 0:
                raise ProvisioningError(f"Grafana {method} {path}: not sent, the handler's deadline has passed")
            req = urllib.request.Request(self._url + path, data=data, method=method)
            req.add_header("Accept", "application/json")
            if data is not None:
                req.add_header("Content-Type", "application/json")
            req.add_unredirected_header("Authorization", f"Bearer {self._token}")
            retry_after: str | None = None
            try:
                with _OPENER.open(req, timeout=timeout) as resp:
                    status, payload = resp.status, resp.read()
                LOG.info("Grafana %s %s -> %s", method, path, status)
                return status, _parse(payload)
            except urllib.error.HTTPError as err:
                status, payload = err.code, err.read()
                retry_after = err.headers.get("Retry-After") if err.headers else None
                if status in allow:
                    LOG.info("Grafana %s %s -> %s", method, path, status)
                    return status, _parse(payload)
                detail = self.scrub(payload.decode("utf-8", "replace"))
                if status != 429 and status < 500:
                    raise GrafanaApiError(method, path, status, detail) from None
                if attempt == MAX_ATTEMPTS:
                    raise GrafanaApiError(method, path, status, f"{detail} (after {attempt} attempts)") from None
                LOG.warning(
                    "Grafana %s %s -> %s, retrying (attempt %d of %d)", method, path, status, attempt, MAX_ATTEMPTS
                )
            except (urllib.error.URLError, OSError, http.client.HTTPException) as err:  # timeouts, resets, TLS
                reason = self.scrub(str(getattr(err, "reason", err)))
                if attempt == MAX_ATTEMPTS:
                    raise ProvisioningError(f"Grafana {method} {path} unreachable: {reason}") from None
                LOG.warning(
                    "Grafana %s %s unreachable (%s), retrying (attempt %d of %d)",
                    method,
                    path,
                    reason,
                    attempt,
                    MAX_ATTEMPTS,
                )
            delay = self._delay(attempt, retry_after)
            if delay >= self._deadline.left():
                raise ProvisioningError(
                    f"Grafana {method} {path}: gave up after attempt {attempt}, the handler's deadline is near"
                )
            _sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover


def _parse(payload: bytes) -> Any:
    if not payload:
        return None
    try:
        return json.loads(payload)
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------------------------
# Service account and token (Amazon Managed Grafana API)
# ---------------------------------------------------------------------------------------------------------------


def _find_service_account(client: Any, workspace_id: str, name: str) -> str | None:
    kwargs: dict[str, Any] = {"workspaceId": workspace_id}
    while True:
        page = client.list_workspace_service_accounts(**kwargs)
        for account in page.get("serviceAccounts", []):
            if account.get("name") == name:
                return str(account["id"])
        if not page.get("nextToken"):
            return None
        kwargs["nextToken"] = page["nextToken"]


def ensure_service_account(client: Any, workspace_id: str, name: str) -> str:
    """Id of the provisioning service account, created (Grafana role ADMIN) if it does not exist yet."""
    existing = _find_service_account(client, workspace_id, name)
    if existing:
        return existing
    try:
        created = client.create_workspace_service_account(
            workspaceId=workspace_id, name=name, grafanaRole=SERVICE_ACCOUNT_ROLE
        )
        LOG.info("created Grafana service account %s", created["id"])
        return str(created["id"])
    except ClientError as err:
        if err.response.get("Error", {}).get("Code") != "ConflictException":
            raise
        found = _find_service_account(client, workspace_id, name)  # created concurrently
        if not found:
            raise
        return found


@contextmanager
def grafana_session(
    client: Any, props: Properties, service_account_id: str, deadline: Deadline | None = None
) -> Iterator[GrafanaApi]:
    """A :class:`GrafanaApi` with a fresh short-lived token, revoked when the block exits (also on failure)."""
    created = client.create_workspace_service_account_token(
        workspaceId=props.workspace_id,
        serviceAccountId=service_account_id,
        name=f"fmconstructs-{int(time.time())}-{random.randrange(1 << 30):08x}",
        secondsToLive=TOKEN_SECONDS_TO_LIVE,
    )
    token = created["serviceAccountToken"]
    token_id = str(token["id"])
    LOG.info("created Grafana token %s (valid %d s)", token_id, TOKEN_SECONDS_TO_LIVE)
    try:
        yield GrafanaApi(base_url(props.grafana_endpoint), str(token["key"]), deadline=deadline)
    finally:
        try:
            client.delete_workspace_service_account_token(
                workspaceId=props.workspace_id, serviceAccountId=service_account_id, tokenId=token_id
            )
            LOG.info("revoked Grafana token %s", token_id)
        except (ClientError, BotoCoreError) as err:
            # Not fatal: the token expires TOKEN_SECONDS_TO_LIVE seconds after creation anyway.
            LOG.warning("could not revoke Grafana token %s: %s", token_id, type(err).__name__)


# ---------------------------------------------------------------------------------------------------------------
# What gets provisioned
# ---------------------------------------------------------------------------------------------------------------


def load_dashboards(directory: Path = DASHBOARD_DIR) -> list[dict[str, Any]]:
    """Every dashboard model shipped with the function (``*.json``, by file name)."""
    dashboards = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.json"))]
    if not dashboards:
        raise ProvisioningError(f"no dashboards found in {directory}")
    return dashboards


def data_source_body(props: Properties) -> dict[str, Any]:
    """The Prometheus data source: Amazon Managed Prometheus query URL, SigV4 signed with the workspace IAM role.

    ``sigV4AuthType: ec2_iam_role`` is Grafana's "Workspace IAM role" provider in Amazon Managed Grafana
    (Grafana docs, "AWS authentication"); Grafana appends ``/api/v1/query`` to the URL.
    """
    return {
        "uid": props.data_source_uid,
        "name": props.data_source_name,
        "type": "prometheus",
        "access": "proxy",
        "url": props.prometheus_url,
        "isDefault": props.data_source_is_default,
        "jsonData": {
            "httpMethod": "POST",
            "sigV4Auth": True,
            "sigV4AuthType": "ec2_iam_role",
            "sigV4Region": props.prometheus_region,
            "timeInterval": "30s",
        },
    }


def _with_data_source(model: Mapping[str, Any], props: Properties) -> dict[str, Any]:
    """Copy of a dashboard with ``id`` cleared and the ``$datasource`` variable preset to our data source."""
    out: dict[str, Any] = json.loads(json.dumps(model))
    out["id"] = None
    for variable in out.get("templating", {}).get("list", []):
        if variable.get("type") == "datasource" and variable.get("name") == "datasource":
            variable["current"] = {"selected": True, "text": props.data_source_name, "value": props.data_source_uid}
    return out


def upsert_data_source(api: GrafanaApi, props: Properties) -> None:
    path = f"/api/datasources/uid/{urllib.parse.quote(props.data_source_uid, safe='')}"
    status, _ = api.request("GET", path, allow=(404,))
    if status == 404:
        api.request("POST", "/api/datasources", data_source_body(props))
    else:
        api.request("PUT", path, data_source_body(props))


def ensure_folder(api: GrafanaApi, props: Properties) -> None:
    path = f"/api/folders/{urllib.parse.quote(props.folder_uid, safe='')}"
    status, _ = api.request("GET", path, allow=(404,))
    if status == 404:
        api.request("POST", "/api/folders", {"uid": props.folder_uid, "title": props.folder_title})


def upload_dashboards(api: GrafanaApi, props: Properties, dashboards: Sequence[Mapping[str, Any]]) -> list[str]:
    uids = []
    for model in dashboards:
        api.request(
            "POST",
            "/api/dashboards/db",
            {
                "dashboard": _with_data_source(model, props),
                "folderUid": props.folder_uid,
                "overwrite": True,
                "message": f"fmconstructs {model['uid']} v{model.get('version')}",
            },
        )
        uids.append(str(model["uid"]))
    return uids


def _delete_dashboard(api: GrafanaApi, uid: str) -> None:
    api.request("DELETE", f"/api/dashboards/uid/{urllib.parse.quote(uid, safe='')}", allow=(404,))


def _delete_data_source(api: GrafanaApi, uid: str) -> None:
    api.request("DELETE", f"/api/datasources/uid/{urllib.parse.quote(uid, safe='')}", allow=(404,))


def _delete_folder_if_empty(api: GrafanaApi, uid: str) -> None:
    query = urllib.parse.urlencode({"folderUIDs": uid, "limit": 1})
    _, found = api.request("GET", f"/api/search?{query}")
    if found:
        LOG.info("folder %s still holds dashboards: kept", uid)
        return
    api.request("DELETE", f"/api/folders/{urllib.parse.quote(uid, safe='')}", allow=(404,))


def _best_effort(what: str, action: Callable[[], None]) -> None:
    try:
        action()
    except (ProvisioningError, ClientError, BotoCoreError) as err:
        LOG.warning("delete: %s failed, continuing: %s", what, err)


# ---------------------------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------------------------


def physical_id(props: Properties) -> str:
    """Stable per workspace and data source: a new workspace means a new resource (and a Delete of the old one)."""
    return f"fmconstructs-grafana-{props.workspace_id}-{props.data_source_uid}"


def _provision(client: Any, props: Properties, old: Properties | None, deadline: Deadline) -> dict[str, str]:
    dashboards = load_dashboards()
    account = ensure_service_account(client, props.workspace_id, props.service_account_name)
    with grafana_session(client, props, account, deadline) as api:
        upsert_data_source(api, props)
        ensure_folder(api, props)
        uids = upload_dashboards(api, props, dashboards)
        if old is not None and old.workspace_id == props.workspace_id:
            for stale in sorted(set(old.dashboard_uids) - set(uids)):
                _delete_dashboard(api, stale)
            if old.data_source_uid != props.data_source_uid:
                _delete_data_source(api, old.data_source_uid)
    return {
        "DataSourceUid": props.data_source_uid,
        "FolderUid": props.folder_uid,
        "DashboardUids": ",".join(uids),
        "DashboardCount": str(len(uids)),
    }


def _remove(client: Any, props: Properties, deadline: Deadline) -> None:
    account = _find_service_account(client, props.workspace_id, props.service_account_name)
    if account is None:
        account = ensure_service_account(client, props.workspace_id, props.service_account_name)
    with grafana_session(client, props, account, deadline) as api:
        for uid in props.dashboard_uids:
            _best_effort(f"dashboard {uid}", functools.partial(_delete_dashboard, api, uid))
        _best_effort(f"data source {props.data_source_uid}", lambda: _delete_data_source(api, props.data_source_uid))
        _best_effort(f"folder {props.folder_uid}", lambda: _delete_folder_if_empty(api, props.folder_uid))
    client.delete_workspace_service_account(workspaceId=props.workspace_id, serviceAccountId=account)
    LOG.info("deleted Grafana service account %s", account)


def _delete(event: Mapping[str, Any], context: Any, client: Any) -> dict[str, Any]:
    """Delete never fails (module docstring), not even when its properties cannot be read (a resource whose Create
    failed half-way, a property renamed between versions): then there is nothing it can clean up, and it says so."""
    physical = str(event.get("PhysicalResourceId") or "")
    try:
        props = Properties.from_event(event.get("ResourceProperties") or {})
    except ProvisioningError as err:
        LOG.warning("Delete: properties unreadable (%s); nothing to clean up in Grafana, the deletion succeeds", err)
        return {"PhysicalResourceId": physical or "fmconstructs-grafana-unreadable"}
    LOG.info("Delete: Grafana workspace %s", props.workspace_id)
    try:
        _remove(client or boto3.client("grafana", config=CLIENT_CONFIG), props, Deadline.from_context(context))
    except Exception as err:  # never DELETE_FAILED on Grafana: see the module docstring
        LOG.warning("Delete: Grafana cleanup incomplete, the deletion succeeds anyway: %s: %s", type(err).__name__, err)
    return {"PhysicalResourceId": physical or physical_id(props)}


def on_event(event: Mapping[str, Any], context: Any = None, *, client: Any = None) -> dict[str, Any]:
    """``custom_resources.Provider`` onEvent handler. ``client`` (a boto3 ``grafana`` client) is for tests."""
    request_type = event["RequestType"]
    if request_type == "Delete":
        return _delete(event, context, client)
    props = Properties.from_event(event["ResourceProperties"])
    LOG.info("%s: Grafana workspace %s", request_type, props.workspace_id)
    deadline = Deadline.from_context(context)
    grafana = client or boto3.client("grafana", config=CLIENT_CONFIG)
    old = None
    if request_type == "Update" and event.get("OldResourceProperties"):
        try:
            old = Properties.from_event(event["OldResourceProperties"])
        except ProvisioningError:
            old = None
    data = _provision(grafana, props, old, deadline)
    LOG.info("%s: %s dashboards provisioned", request_type, data["DashboardCount"])
    return {"PhysicalResourceId": physical_id(props), "Data": data}
