"""Who writes node exporter textfiles on a Kubernetes node, and who reads them: a walk over rendered DaemonSets.

A file is *written* by a DaemonSet container when its path shows in what the container runs: its command, args and
``preStop`` hook (``/textfile/fm_efa.prom``), or a ConfigMap script mounted into it that names node exporter's
textfile directory (``NODE_CHECKS_TEXTFILE_DIR="<dir>"`` in the node checks, with the file names it writes there).
A directory is *read* by a container started with ``--collector.textfile.directory=<dir>`` (node exporter).

Paths are placed where they really are on the node: a container that enters the host's mount namespace
(``nsenter --target 1 --mount``) sees host paths; any other container's path goes through its ``volumeMounts`` to a
volume: a ``hostPath`` (``host:<host path>``), an ``emptyDir`` (``emptyDir:<namespace>/<pod>/<volume>``: shared only
inside that pod) or nothing (``container:...``: the container's own file system, read by no one else).
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fmconstructs.health import metric_names as names

TEXTFILE_FLAG = "--collector.textfile.directory="
#: A ``.prom`` path in a command line.
PROM_PATH = re.compile(r"(/[A-Za-z0-9._/-]+\.prom)\b")
#: The node checks' textfile directory in their script, and the files they write there.
CHECKS_DIR = re.compile(r'^NODE_CHECKS_TEXTFILE_DIR="(/[^"]*)"', re.M)
CHECKS_FILE = re.compile(r"/(" + re.escape(names.NODE_CHECK_TEXTFILE).replace(r"\{mode\}", r"[a-z]+") + ")")
KUBERNETES_RESOURCE = "Custom::AWSCDK-EKS-KubernetesResource"


@dataclass(frozen=True)
class Written:
    """A textfile a container writes: where it is on the node (``host:/dir`` ...) and who writes it."""

    where: str
    file: str
    writer: str


@dataclass(frozen=True)
class Reader:
    """A textfile directory a node exporter container reads, and its DaemonSet's pod spec (where it runs)."""

    where: str
    reader: str
    pod: Mapping[str, Any]


def _resolve(value: Any) -> Any:
    """CloudFormation ``Fn::Join`` as text (references become ``TOKEN``), so a manifest with tokens still parses."""
    if isinstance(value, dict) and set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(part if isinstance(part, str) else "TOKEN" for part in parts)
    return value


def template_manifests(template: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every Kubernetes object of a synthesized template's ``KubernetesManifest`` resources."""
    out: list[dict[str, Any]] = []
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") != KUBERNETES_RESOURCE:
            continue
        manifest = _resolve(resource["Properties"]["Manifest"])
        if isinstance(manifest, str):
            out.extend(json.loads(manifest))
    return out


def daemon_sets(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in manifests if m.get("kind") == "DaemonSet"]


def _config_maps(manifests: list[dict[str, Any]]) -> dict[tuple[str, str], Mapping[str, str]]:
    return {
        (m["metadata"].get("namespace", "default"), m["metadata"]["name"]): m.get("data") or {}
        for m in manifests
        if m.get("kind") == "ConfigMap"
    }


def _containers(pod: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield from pod.get("initContainers") or []
    yield from pod.get("containers") or []


def _command_line(container: Mapping[str, Any]) -> list[str]:
    hook = ((container.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}
    return [*(container.get("command") or []), *(container.get("args") or []), *(hook.get("command") or [])]


def in_host_mount_namespace(container: Mapping[str, Any]) -> bool:
    """Whether the container runs its work in the host's mount namespace (``nsenter --target 1 --mount``)."""
    line = " ".join(_command_line(container))
    return "nsenter" in line and re.search(r"(--target|-t) 1\b", line) is not None and "--mount" in line


def place(path: str, container: Mapping[str, Any], pod: Mapping[str, Any], pod_name: str) -> str:
    """Where ``path`` (as the container sees it) is on the node (see the module notes)."""
    path = posixpath.normpath(path)
    if in_host_mount_namespace(container):
        return f"host:{path}"
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    best: Mapping[str, Any] | None = None
    for mount in container.get("volumeMounts") or []:
        root = posixpath.normpath(mount["mountPath"])
        if (path == root or path.startswith(root.rstrip("/") + "/")) and (
            best is None or len(root) > len(best["mountPath"])
        ):
            best = mount
    if best is None:
        return f"container:{pod_name}/{container['name']}:{path}"
    rest = posixpath.relpath(path, posixpath.normpath(best["mountPath"]))
    volume = volumes[best["name"]]
    if "hostPath" in volume:
        return "host:" + posixpath.normpath(posixpath.join(volume["hostPath"]["path"], rest))
    return f"{next(k for k in volume if k != 'name')}:{pod_name}/{volume['name']}" + ("" if rest == "." else "/" + rest)


def _scripts(
    container: Mapping[str, Any], pod: Mapping[str, Any], namespace: str, config_maps: Mapping[Any, Any]
) -> Iterator[str]:
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        source = volumes.get(mount["name"], {}).get("configMap")
        if source is not None:
            yield from (config_maps.get((namespace, source["name"])) or {}).values()


def written_textfiles(manifests: list[dict[str, Any]]) -> list[Written]:
    """Every textfile the DaemonSets' containers write, placed on the node."""
    config_maps = _config_maps(manifests)
    out: list[Written] = []
    for daemon_set in daemon_sets(manifests):
        namespace = daemon_set["metadata"].get("namespace", "default")
        pod_name = f"{namespace}/{daemon_set['metadata']['name']}"
        pod = daemon_set["spec"]["template"]["spec"]
        for container in _containers(pod):
            writer = f"{pod_name}:{container['name']}"
            paths = {p for text in _command_line(container) for p in PROM_PATH.findall(text)}
            for script in _scripts(container, pod, namespace, config_maps):
                for directory in CHECKS_DIR.findall(script):
                    paths.update(f"{directory}/{name}" for name in CHECKS_FILE.findall(script))
            for path in sorted(paths):
                where = place(posixpath.dirname(path), container, pod, pod_name)
                out.append(Written(where=where, file=posixpath.basename(path), writer=writer))
    return out


def textfile_readers(manifests: list[dict[str, Any]]) -> list[Reader]:
    """Every textfile directory a node exporter container of a DaemonSet reads, placed on the node."""
    out: list[Reader] = []
    for daemon_set in daemon_sets(manifests):
        namespace = daemon_set["metadata"].get("namespace", "default")
        pod_name = f"{namespace}/{daemon_set['metadata']['name']}"
        pod = daemon_set["spec"]["template"]["spec"]
        for container in _containers(pod):
            for arg in _command_line(container):
                if arg.startswith(TEXTFILE_FLAG):
                    where = place(arg[len(TEXTFILE_FLAG) :], container, pod, pod_name)
                    out.append(Reader(where=where, reader=f"{pod_name}:{container['name']}", pod=pod))
    return out


def runs_wherever(reader_pod: Mapping[str, Any]) -> bool:
    """Whether a reader's pods land on every node: no node selector or affinity, every taint tolerated."""
    return (
        not reader_pod.get("nodeSelector")
        and not reader_pod.get("affinity")
        and {"operator": "Exists"} in (reader_pod.get("tolerations") or [])
    )


def unread_textfiles(manifests: list[dict[str, Any]]) -> list[str]:
    """The written textfiles no reader collects: one line each (writer, file, where it is, where readers read)."""
    readers = textfile_readers(manifests)
    problems = []
    for written in written_textfiles(manifests):
        found = [r for r in readers if r.where == written.where and runs_wherever(r.pod)]
        if not found:
            problems.append(
                f"{written.writer} writes {written.file} in {written.where}; node exporter reads "
                f"{sorted({r.where for r in readers}) or 'nothing'}"
            )
    return problems
