"""The NCCL check on EKS on a schedule and published to the workspace (issue 20 section 2): a CronJob creates the
MPIJob from a ConfigMap with a kubectl image and exactly the RBAC it needs; a metrics Service serves the report's
``fm_nccl.prom`` to the managed scraper; TrainingPlatform wires it with ``nccl_image`` and adds the NCCL rules."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from fmconstructs.eks.versions import DEFAULT_KUBERNETES_VERSION
from fmconstructs.errors import FmValidationError
from fmconstructs.health import NcclCheckSpec, render_mpijob_manifests, render_scheduled_nccl_manifests
from fmconstructs.health.nccl_eks_schedule import (
    KUBECTL_IMAGE,
    METRICS_SERVER_IMAGE,
    NCCL_METRICS_PORT,
    NCCL_METRICS_SERVICE,
)
from fmconstructs.observability.eks import PYTHON_IMAGE, eks_scrape_config
from fmconstructs.platform import Backend, PlatformHealth

from tests.conftest import require_tool
from tests.support.health_nccl import EKS_TAGGED
from tests.support.platform_health import _build

K8S_VERSION = DEFAULT_KUBERNETES_VERSION.version
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/nccl-tests:cuda13.1.2-efa1.50.0-testsv2.20.0"
SPEC = NcclCheckSpec(nodes=2, schedule="30 2 * * 0")


def _render(spec: NcclCheckSpec = SPEC, **kwargs: Any) -> list[dict[str, Any]]:
    args = {"image": IMAGE, "instance_type": "p5.48xlarge", "results_claim": "fsx-claim", "namespace": "ml", **kwargs}
    return render_scheduled_nccl_manifests(spec, **args)


def _kind(manifests: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    (found,) = [m for m in manifests if m["kind"] == kind and (name is None or m["metadata"]["name"] == name)]
    return found


def _pod(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    return dict(_kind(manifests, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"])


# --- manifests ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("index", range(11))
def test_manifests_validate_against_kubernetes_schemas(index: int) -> None:
    manifest = _render()[index]
    assert kubernetes_validate.validate(manifest, K8S_VERSION, strict=True) == K8S_VERSION


def test_every_object_is_in_the_platform_namespace() -> None:
    assert {m["metadata"]["namespace"] for m in _render()} == {"ml"}
    assert [m["kind"] for m in _render()] == [
        "ConfigMap",
        "ConfigMap",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "CronJob",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
    ]


def test_rbac_is_create_get_delete_on_mpijobs_only() -> None:
    manifests = _render()
    role = _kind(manifests, "Role", "fm-nccl-allreduce-launcher")
    assert role["rules"] == [
        {"apiGroups": ["kubeflow.org"], "resources": ["mpijobs"], "verbs": ["create"]},
        {
            "apiGroups": ["kubeflow.org"],
            "resources": ["mpijobs"],
            "resourceNames": ["fm-nccl-allreduce"],
            "verbs": ["get", "delete"],
        },
    ]
    binding = _kind(manifests, "RoleBinding", "fm-nccl-allreduce-launcher")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "fm-nccl-allreduce-launcher", "namespace": "ml"}]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert _pod(manifests)["serviceAccountName"] == "fm-nccl-allreduce-launcher"
    assert not [m for m in manifests if m["kind"] in ("ClusterRole", "ClusterRoleBinding")]


@pytest.mark.parametrize("schedule", ["30 2 * * 0", "0 */6 * * *"])
def test_cron_job_runs_on_the_spec_schedule_one_at_a_time(schedule: str) -> None:
    cron = _kind(_render(NcclCheckSpec(nodes=2, schedule=schedule)), "CronJob")
    assert cron["spec"]["schedule"] == schedule
    assert cron["spec"]["timeZone"] == "Etc/UTC"
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"


def test_the_launch_config_map_holds_the_mpijob_of_render_mpijob_manifests() -> None:
    launch = _kind(_render(), "ConfigMap", "fm-nccl-allreduce-launch")
    expected = render_mpijob_manifests(
        SPEC, image=IMAGE, instance_type="p5.48xlarge", results_claim="fsx-claim", namespace="ml"
    )[1]
    assert json.loads(launch["data"]["mpijob.json"]) == expected


def test_images_are_pinned_with_their_source() -> None:
    pod = _pod(_render())
    images = {c["image"] for c in pod["initContainers"] + pod["containers"]}
    assert images == {KUBECTL_IMAGE}
    assert KUBECTL_IMAGE.startswith("registry.k8s.io/kubectl:v1.")
    assert METRICS_SERVER_IMAGE == PYTHON_IMAGE  # the image the EKS collectors already run
    deployment = _kind(_render(), "Deployment")
    assert [c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]] == [METRICS_SERVER_IMAGE]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"image": "nccl-tests"}, "image must be a container image pinned"),
        ({"image": "public.ecr.aws/hpc-cloud/nccl-tests:latest"}, "a tag other than 'latest'"),
        ({"results_claim": "FSx_Claim"}, "results_claim must be a Kubernetes DNS-1123 subdomain name"),
        ({"namespace": "ML"}, "namespace must be a Kubernetes DNS-1123 label"),
        ({"efa_per_node": 0}, "efa_per_node must be at least 1"),
    ],
)
def test_bad_input_is_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(FmValidationError, match=message):
        _render(**kwargs)


def test_pairwise_is_refused_on_eks() -> None:
    with pytest.raises(FmValidationError, match=r"spec\.pairwise"):
        _render(NcclCheckSpec(nodes=4, pairwise=True))


# --- the CronJob's pod against a fake kubectl --------------------------------------------------------------------------

# A fake kubectl: the MPIJobs of the namespace as files under $FAKE_STORE; refuses what the Role does not allow and
# behaves as kubectl does on a missing object (delete fails without --ignore-not-found) or an existing one (create
# fails with AlreadyExists).
FAKE_KUBECTL = r"""#!/usr/bin/env python3
import json, os, sys
store = os.environ["FAKE_STORE"]
args = sys.argv[1:]
with open(os.path.join(store, "calls"), "a") as log:
    log.write(" ".join(args) + "\n")
def opt(name):
    return args[args.index(name) + 1]
verb, ns = args[0], opt("--namespace")
assert ns == "ml", ns
if verb == "delete":
    resource, name = args[1], args[2]
    assert resource == "mpijobs.v2beta1.kubeflow.org" and name == "fm-nccl-allreduce", args
    path = os.path.join(store, name + ".json")
    if not os.path.exists(path):
        if "--ignore-not-found" in args:
            sys.exit(0)
        print('Error from server (NotFound): mpijobs.kubeflow.org "%s" not found' % name, file=sys.stderr)
        sys.exit(1)
    os.remove(path)
elif verb == "create":
    with open(opt("-f")) as f:
        obj = json.load(f)
    assert obj["kind"] == "MPIJob" and obj["apiVersion"] == "kubeflow.org/v2beta1", obj
    path = os.path.join(store, obj["metadata"]["name"] + ".json")
    if os.path.exists(path):
        print("Error from server (AlreadyExists): already exists", file=sys.stderr)
        sys.exit(1)
    with open(path, "w") as f:
        json.dump(obj, f)
else:
    print("forbidden verb " + verb, file=sys.stderr)
    sys.exit(1)
"""


class Cluster:
    """The ConfigMaps mounted at their paths under ``root``; the fake kubectl first on PATH."""

    def __init__(self, root: Path, manifests: list[dict[str, Any]]) -> None:
        self.root, self.store = root, root / "store"
        self.store.mkdir()
        (root / "bin").mkdir()
        kubectl = root / "bin" / "kubectl"
        kubectl.write_text(FAKE_KUBECTL.replace("#!/usr/bin/env python3", f"#!{sys.executable}"))
        kubectl.chmod(0o755)
        pod = _pod(manifests)
        config_maps = {m["metadata"]["name"]: m["data"] for m in manifests if m["kind"] == "ConfigMap"}
        volumes = {v["name"]: v for v in pod["volumes"]}
        for container in pod["initContainers"] + pod["containers"]:
            for mount in container["volumeMounts"]:
                volume = volumes[mount["name"]]
                target = root / mount["mountPath"].lstrip("/")
                target.mkdir(parents=True, exist_ok=True)
                for key, text in config_maps.get(volume.get("configMap", {}).get("name", ""), {}).items():
                    (target / key).write_text(text)
        self.init = [self._local(c["command"]) for c in pod["initContainers"]]
        self.main = [self._local(c["command"]) for c in pod["containers"]]

    def _local(self, command: list[str]) -> list[str]:
        return [w.replace("=/", f"={self.root}/") if w.startswith("--") else self._path(w) for w in command]

    def _path(self, word: str) -> str:
        return str(self.root / word.lstrip("/")) if word.startswith("/") else word

    def kubectl(self, command: list[str]) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PATH": f"{self.root / 'bin'}:{os.environ['PATH']}", "FAKE_STORE": str(self.store)}
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=30)

    def run_pod(self) -> int:
        """Init containers in order, then the container, as the kubelet runs a pod (stop at the first failure)."""
        for command in [*self.init, *self.main]:
            proc = self.kubectl(command)
            if proc.returncode != 0:
                return proc.returncode
        return 0

    @property
    def mpijobs(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted(self.store.glob("*.json"))]


def test_each_scheduled_run_replaces_the_previous_mpijob(tmp_path: Path) -> None:
    manifests = _render()
    cluster = Cluster(tmp_path, manifests)
    expected = json.loads(_kind(manifests, "ConfigMap", "fm-nccl-allreduce-launch")["data"]["mpijob.json"])
    # first run: nothing to delete (--ignore-not-found), the MPIJob is created
    assert cluster.run_pod() == 0
    assert cluster.mpijobs == [expected]
    # next run: the finished MPIJob is deleted, a new one created
    assert cluster.run_pod() == 0
    assert cluster.mpijobs == [expected]
    calls = (cluster.store / "calls").read_text().splitlines()
    assert [c.split()[0] for c in calls] == ["delete", "create", "delete", "create"]


def test_without_the_delete_the_next_create_would_fail(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, _render())
    assert cluster.run_pod() == 0
    (create,) = cluster.main
    proc = cluster.kubectl(create)
    assert proc.returncode == 1 and "AlreadyExists" in proc.stderr


def test_the_pod_uses_only_verbs_the_role_allows() -> None:
    manifests = _render()
    allowed = {
        verb for rule in _kind(manifests, "Role", "fm-nccl-allreduce-launcher")["rules"] for verb in rule["verbs"]
    }
    pod = _pod(manifests)
    used = {c["command"][1] for c in pod["initContainers"] + pod["containers"]}
    assert [c["command"][0] for c in pod["initContainers"] + pod["containers"]] == ["kubectl", "kubectl"]
    assert used <= allowed and used == {"delete", "create"}
    assert "--wait=false" in pod["initContainers"][0]["command"]  # waiting would need watch


# --- metrics: the MPIJob's launcher writes the report, the metrics pod serves it -------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, str, str]:
    for _ in range(100):
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.status, response.headers["Content-Type"], response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, "", ""
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"no answer from {url}")


def _launcher_script(root: Path, manifests: list[dict[str, Any]]) -> str:
    mpijob = json.loads(_kind(manifests, "ConfigMap", "fm-nccl-allreduce-launch")["data"]["mpijob.json"])
    script = mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"][2]
    script = script.replace("/opt/amazon/openmpi/bin/mpirun", f"{root}/bin/mpirun")
    return str(script.replace("/results", f"{root}/results").replace("/fm-nccl/", f"{root}/fm-nccl/"))


def test_launcher_report_is_served_on_metrics_and_passes_promtool(tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    manifests = _render()
    report = _kind(manifests, "ConfigMap", "fm-nccl-allreduce-report")["data"]
    (tmp_path / "fm-nccl").mkdir()
    for key, text in report.items():
        (tmp_path / "fm-nccl" / key).write_text(text)
    (tmp_path / "results").mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "out.txt").write_text(EKS_TAGGED)
    (bin_dir / "mpirun").write_text(f"#!/bin/bash\ncat {tmp_path}/out.txt\n")
    (bin_dir / "mpirun").chmod(0o755)
    (bin_dir / "python3").symlink_to(sys.executable)
    # GIVEN the metrics pod's command (server script and file from the manifests) on a local port
    container = _kind(manifests, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    port = _free_port()
    command = [sys.executable, "-I", str(tmp_path / container["command"][2].lstrip("/"))]
    server = subprocess.Popen([*command, str(tmp_path / container["args"][0].lstrip("/")), str(port)])
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        # WHEN no run yet THEN an empty exposition, not an error
        assert _get(url) == (200, "text/plain; version=0.0.4; charset=utf-8", "")
        assert _get(f"http://127.0.0.1:{port}/")[0] == 404
        # WHEN the MPIJob's launcher runs (fake mpirun printing the EKS sample) THEN the report is served
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        launcher = subprocess.run(
            ["bash", "-c", _launcher_script(tmp_path, manifests)], env=env, capture_output=True, text=True
        )
        assert launcher.returncode == 0, launcher.stderr
        status, content_type, body = _get(url)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
    assert "fm_nccl_allreduce_avg_busbw_gbytes_per_second 52.9753" in body
    assert "fm_nccl_last_run_success 1" in body
    check = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_metrics_service_is_what_the_scraper_keeps() -> None:
    manifests = _render()
    service = _kind(manifests, "Service")
    assert service["metadata"]["name"] == NCCL_METRICS_SERVICE
    assert service["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(NCCL_METRICS_PORT),
    }
    deployment = _kind(manifests, "Deployment")
    assert service["spec"]["selector"] == deployment["spec"]["template"]["metadata"]["labels"]
    pod = deployment["spec"]["template"]["spec"]
    assert {"name": "results", "persistentVolumeClaim": {"claimName": "fsx-claim", "readOnly": True}} in pod["volumes"]
    (job,) = [j for j in eks_scrape_config(cluster_label="c")["scrape_configs"] if j["job_name"] == "nccl"]
    keep = [r for r in job["relabel_configs"] if r.get("action") == "keep"]
    assert {
        "source_labels": ["__meta_kubernetes_service_name"],
        "action": "keep",
        "regex": NCCL_METRICS_SERVICE,
    } in keep


def test_metrics_server_refuses_bad_arguments(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text(_render()[0]["data"]["nccl_metrics_server.py"])
    proc = subprocess.run([sys.executable, "-I", str(script), "only-a-file"], capture_output=True, text=True)
    assert proc.returncode == 2 and "usage" in proc.stderr


# --- TrainingPlatform on EKS -------------------------------------------------------------------------------------------


@cache
def _eks(image: str | None) -> Any:
    return _build(Backend.EKS, health=PlatformHealth(nccl_image=image))


def _manifest_kinds(built: Any) -> list[str]:
    kinds: list[str] = []
    for resource in built.template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").values():
        manifest = resource["Properties"]["Manifest"]
        if isinstance(manifest, str):
            kinds += [m["kind"] for m in json.loads(manifest)]
    return kinds


def test_platform_with_an_image_schedules_the_check_and_publishes_it() -> None:
    built = _eks(IMAGE)
    kinds = _manifest_kinds(built)
    for kind in ("CronJob", "Role", "RoleBinding", "ServiceAccount", "Deployment", "Service"):
        assert kind in kinds
    assert "MPIJob" not in kinds  # created by the CronJob, not at deploy time
    from aws_cdk.assertions import Annotations, Match

    warnings = Annotations.from_stack(built.stack).find_warning("*", Match.string_like_regexp("NCCL check on EKS"))
    (text,) = {str(w.entry.data) for w in warnings}
    assert "v0.5.0 or later" in text and "kubectl create job --from=cronjob/fm-nccl-allreduce -n " in text
    assert "NcclBusBandwidthBelowBaseline" in json.dumps(
        [r["Properties"]["Data"] for r in built.template.find_resources("AWS::APS::RuleGroupsNamespace").values()]
    )


def test_platform_without_an_image_has_no_check_and_no_nccl_rules() -> None:
    built = _eks(None)
    assert "CronJob" not in _manifest_kinds(built)
    assert "NcclBusBandwidthBelowBaseline" not in built.text
