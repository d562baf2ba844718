"""Job-level warning before a Capacity Block ends: one renderer per behaviour, shared by the backends.

Standard library only (it runs in the handler's Lambda next to index.py). Two behaviours:

- **Slurm** (:func:`slurm_signal_lines`): shell lines, appended to the drain script that runs on the PCS login node
  (or a ParallelCluster head node) through SSM Run Command as root, that send a signal to every running job on the
  block's Slurm nodes (``$nodes``, the comma-separated node names the drain script found). ``squeue -h -t RUNNING -w
  <nodes> -o %A`` lists the jobs (squeue(1): ``-h, --noheader``; ``-t, --states``; ``-w, --nodelist`` "Report only on
  jobs allocated to the specified node or list of nodes"; ``%A`` the job id), then ``scancel --signal=<SIG> <job>``
  signals each (scancel(1): "scancel is used to signal or cancel jobs"; "A job or job step can only be signaled by
  the owner of that job or user root": SSM runs the script as root). Which processes get it is
  :data:`SLURM_SCOPES`: by default scancel's own (job steps, e.g. ``srun torchrun ...``; scancel(1) ``--batch``: "By
  default, signals other than SIGKILL are not sent to the batch step (the shell script)"), ``batch`` (``--batch``:
  "signals only the batch step, but not any other steps"; "useful when the shell script has to trap the signal") or
  ``full`` (``--full``: also the batch step and its children). Slurm 23.11 scancel(1) man page text.
- **Kubernetes** (:func:`pod_warning_patch`, :func:`pod_warning_event`, :func:`warn_pods`): every running pod on the
  block's nodes (``GET /api/v1/pods?fieldSelector=spec.nodeName=<node>,status.phase=Running``; Kubernetes docs
  "Field Selectors" list ``spec.nodeName`` and ``status.phase`` for Pods) that no DaemonSet owns gets an annotation
  (default ``fmconstructs.io/capacity-ending-at: <RFC 3339 end>``) by a JSON merge patch, and a ``Warning`` Event
  ``CapacityBlockEnding`` (core/v1 Event: ``involvedObject``, ``reason``, ``message``, ``type``, ``source``,
  ``firstTimestamp``, ``lastTimestamp``, ``count``; Kubernetes API reference "Event v1 core"). A container that mounts
  a downwardAPI volume with ``metadata.annotations`` sees the annotation appear in that file while it runs (Kubernetes
  docs, Volumes, downwardAPI: only "A container using the downward API as a subPath volume mount does not receive
  updates when field values change"). A pod that already carries the annotation with the same value is left alone (a
  duplicate delivery sends no second Event).
"""

from __future__ import annotations

import datetime as dt
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Protocol

#: Signals the Slurm job warning may send (names as scancel --signal takes them). SIGUSR1/SIGUSR2 by default end a
#: process that does not handle them (signal(7): default action "Term"), so the job must install a handler.
SLURM_SIGNALS = frozenset({"USR1", "USR2", "TERM", "INT", "HUP", "CONT", "URG"})
#: Which processes of a job get the signal: scancel's default (job steps), ``--batch`` or ``--full`` (see above).
SLURM_SCOPES: dict[str, str] = {"steps": "", "batch": " --batch", "full": " --full"}
#: Default pod annotation: when the Capacity Block ends (RFC 3339, UTC).
DEFAULT_POD_ANNOTATION = "fmconstructs.io/capacity-ending-at"
EVENT_REASON = "CapacityBlockEnding"
EVENT_SOURCE = "fmconstructs-capacity-events"
# JSON merge patch (RFC 7386), accepted by the API server for PATCH (Kubernetes docs, "Update API Objects in Place
# Using kubectl patch": --type merge sends application/merge-patch+json).
MERGE_PATCH = "application/merge-patch+json"
_POD_PAGE = 500
_JOB_ID = re.compile(r"[0-9]+")


def slurm_signal_name(value: object) -> str | None:
    """The name in :data:`SLURM_SIGNALS` that ``value`` spells, or None. Slurm reads signal names case-insensitively
    with an optional ``SIG`` prefix (src/common/proc_args.c ``sig_name2num``: ``xstrncasecmp(ptr, "SIG", 3)``), so
    ``SIGUSR1`` and ``usr1`` are ``USR1``."""
    if not isinstance(value, str):
        return None
    name = value.strip().upper()
    name = name[3:] if name.startswith("SIG") else name
    return name if name in SLURM_SIGNALS else None


def slurm_signal_lines(signal: str, scope: str = "steps") -> list[str]:
    """Bash lines that signal every running job on ``$nodes`` with ``signal``; a job that ended between squeue and
    scancel is reported, not fatal. Prints ``signaled (SIG<signal>): <ids>``."""
    signal = slurm_signal_name(signal) or signal
    if signal not in SLURM_SIGNALS:
        raise ValueError(f"signal must be one of {sorted(SLURM_SIGNALS)}, got {signal!r}")
    if scope not in SLURM_SCOPES:
        raise ValueError(f"scope must be one of {sorted(SLURM_SCOPES)}, got {scope!r}")
    flags = SLURM_SCOPES[scope]
    return [
        # The job warning: every running job on the block's nodes gets the signal (squeue -o %A: one id per job).
        'jobs="$(squeue -h -t RUNNING -w "$nodes" -o \'%A\')"',
        'signaled=""',
        'missed=""',
        "for job in $jobs; do",
        '  case "$job" in ""|*[!0-9]*) continue ;; esac',
        '  case ",$signaled,$missed," in *",$job,"*) continue ;; esac',
        f'  if scancel --signal={signal}{flags} "$job"; then',
        '    signaled="${signaled:+$signaled,}$job"',
        "  else",
        '    missed="${missed:+$missed,}$job"',
        "  fi",
        "done",
        f'echo "signaled (SIG{signal}): ${{signaled:-none}}"',
        'if [ -n "$missed" ]; then echo "not signaled (ended?): $missed"; fi',
    ]


def rfc3339(text: str) -> str:
    """``text`` (an ISO 8601 date-time, e.g. EC2's ``end-date``) as RFC 3339 UTC ``YYYY-MM-DDTHH:MM:SSZ``; unchanged
    when it does not parse."""
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_warning_patch(annotation: str, ends_at: str) -> dict[str, Any]:
    """The merge patch that marks a pod: ``metadata.annotations[annotation] = ends_at``."""
    return {"metadata": {"annotations": {annotation: ends_at}}}


def pod_warning_event(pod: dict[str, Any], *, message: str, now: dt.datetime) -> dict[str, Any]:
    """A core/v1 ``Warning`` Event about ``pod`` (reason :data:`EVENT_REASON`)."""
    meta = pod.get("metadata") or {}
    stamp = now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta.get('name', 'pod')}.", "namespace": meta.get("namespace", "default")},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", "default"),
            "uid": meta.get("uid", ""),
        },
        "reason": EVENT_REASON,
        "message": message[:1000],
        "type": "Warning",
        "source": {"component": EVENT_SOURCE},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


class Kube(Protocol):
    def request(self, method: str, path: str, body: object = None, content_type: str = "application/json") -> Any:
        """One Kubernetes API call (index.KubeApi.request)."""


@dataclass
class PodWarningReport:
    """``warned`` ("namespace/name"), ``already`` (carried the annotation), ``failed`` ("namespace/name: error")."""

    warned: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def pods_on_node(kube: Kube, node: str) -> list[dict[str, Any]]:
    """Running pods on ``node`` (field selector, following ``metadata.continue``)."""
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        query = {"fieldSelector": f"spec.nodeName={node},status.phase=Running", "limit": str(_POD_PAGE)}
        if token:
            query["continue"] = token
        page = kube.request("GET", "/api/v1/pods?" + urllib.parse.urlencode(query))
        items.extend(page.get("items") or [])
        token = str((page.get("metadata") or {}).get("continue") or "")
        if not token:
            return items


def _daemon_pod(pod: dict[str, Any]) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(str(owner.get("kind")) == "DaemonSet" for owner in owners)


def warn_pods(
    kube: Kube,
    nodes: list[str],
    *,
    annotation: str,
    ends_at: str,
    reservation_id: str,
    event: bool = True,
    now: dt.datetime | None = None,
) -> PodWarningReport:
    """Annotate (and, with ``event``, post an Event for) every running non-DaemonSet pod on ``nodes``."""
    now = now or dt.datetime.now(dt.UTC)
    report = PodWarningReport()
    patch = pod_warning_patch(annotation, ends_at)
    message = f"Capacity Block {reservation_id} ends at {ends_at}: checkpoint now; this node is cordoned."
    for node in nodes:
        try:
            pods = pods_on_node(kube, node)
        except Exception as error:  # one node's failure must not stop the others
            report.failed.append(f"node {node}: {error}")
            continue
        for pod in pods:
            if _daemon_pod(pod):
                continue
            meta = pod.get("metadata") or {}
            namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
            label = f"{namespace}/{name}"
            if (meta.get("annotations") or {}).get(annotation) == ends_at:
                report.already.append(label)
                continue
            base = f"/api/v1/namespaces/{urllib.parse.quote(namespace, safe='')}"
            try:
                kube.request("PATCH", f"{base}/pods/{urllib.parse.quote(name, safe='')}", patch, MERGE_PATCH)
                if event:
                    kube.request("POST", f"{base}/events", pod_warning_event(pod, message=message, now=now))
            except Exception as error:
                report.failed.append(f"{label}: {error}")
                continue
            report.warned.append(label)
    return report


def report_lines(report: PodWarningReport, annotation: str) -> list[str]:
    """The notice lines of a pod warning."""
    lines: list[str] = []
    if report.warned:
        lines.append(f"Warned pods ({annotation}, Event {EVENT_REASON}): {', '.join(report.warned)}."[:1000])
    if report.already:
        lines.append(f"Pods already warned: {', '.join(report.already)}."[:1000])
    if report.failed:
        lines.append("Pod warning FAILED for: " + "; ".join(report.failed)[:1000])
    return lines
