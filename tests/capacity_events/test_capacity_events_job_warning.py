"""Job-level warning before a Capacity Block ends: a Slurm signal to running jobs and a pod annotation + Event.

GIVEN the drain script with the job-warning lines, WHEN it runs in a sandbox with fake sinfo/squeue/scancel/scontrol,
THEN the block's nodes are drained and every running job on them gets ``scancel --signal=<SIG>`` once (a job that
ended meanwhile is reported, not fatal), and shellcheck finds nothing. GIVEN a fake Kubernetes API over TLS, WHEN an
expiration warning arrives with a job warning configured, THEN every running non-DaemonSet pod of the cordoned nodes
gets the annotation (merge patch) and a ``CapacityBlockEnding`` Event, once. GIVEN the construct, THEN the setting
reaches the handler and the ClusterRole allows exactly list/patch pods and create events.
"""

from __future__ import annotations

import json
import ssl
import stat
import subprocess
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template
from botocore.stub import ANY, Stubber

from fmconstructs.capacity_events import CapacityBlockEvents, JobWarning, SlurmSignalScope
from fmconstructs.capacity_events.handler import index, job_warning
from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import FmTypeError, FmValidationError

from tests.conftest import ENV, new_app, require_tool
from tests.support.capacity_events_eks_handler import _certificate

TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
BLOCK = "cr-0123456789abcdef0"
END = "2026-12-01T11:30:00Z"
KWARGS = {"region_name": "us-east-1", "aws_access_key_id": "AKIDFAKE", "aws_secret_access_key": "fake-secret"}
ANNOTATION = "fmconstructs.io/capacity-ending-at"

# --- Slurm: the script in a sandbox ---------------------------------------------------------------------------------

FAKES = {
    # node name, NodeAddr, NodeHostName: two nodes of the block, one other
    "sinfo": 'printf "%s\\n" "gpu-1 10.0.1.10 ip-10-0-1-10" "gpu-2 10.0.1.11 ip-10-0-1-11" "cpu-1 10.0.9.9 ip-10-0-9-9"',
    "squeue": 'echo "squeue $*" >> "$LOG"; cat "$JOBS"',
    "scancel": 'echo "scancel $*" >> "$LOG"; case " $* " in *" $FAIL_JOB "*) exit 1 ;; esac',
    "scontrol": 'echo "scontrol $*" >> "$LOG"',
}


def _sandbox(tmp_path: Path, jobs: str, fail_job: str = "none") -> tuple[dict[str, str], Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in FAKES.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "jobs").write_text(jobs)
    log = tmp_path / "log"
    log.write_text("")
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "LOG": str(log),
        "JOBS": str(tmp_path / "jobs"),
        "FAIL_JOB": fail_job,
        "HOME": str(tmp_path),
    }
    return env, log


def _script(signal: str = "USR1", scope: str = "steps") -> str:
    return index.drain_script(["10.0.1.10", "ip-10-0-1-11"], job_warning.slurm_signal_lines(signal, scope))


def _run_script(tmp_path: Path, jobs: str, *, fail_job: str = "none", **kwargs: str) -> tuple[str, list[str]]:
    env, log = _sandbox(tmp_path, jobs, fail_job)
    path = tmp_path / "drain.sh"
    path.write_text(_script(**kwargs))
    done = subprocess.run(["bash", str(path)], env=env, capture_output=True, text=True, timeout=30, check=True)
    return done.stdout, log.read_text().splitlines()


def test_every_running_job_on_the_block_nodes_is_signaled_after_the_drain(tmp_path: Path) -> None:
    out, calls = _run_script(tmp_path, "101\n102\n")
    assert calls == [
        "scontrol update nodename=gpu-1,gpu-2 state=DRAIN reason=capacity block ends",
        "squeue -h -t RUNNING -w gpu-1,gpu-2 -o %A",
        "scancel --signal=USR1 101",
        "scancel --signal=USR1 102",
    ]
    assert "drained: gpu-1,gpu-2" in out
    assert "signaled (SIGUSR1): 101,102" in out


@pytest.mark.parametrize(("scope", "flag"), [("batch", " --batch"), ("full", " --full"), ("steps", "")])
def test_the_scope_picks_scancel_s_batch_or_full_option(tmp_path: Path, scope: str, flag: str) -> None:
    _, calls = _run_script(tmp_path, "7\n", signal="USR2", scope=scope)
    assert calls[-1] == f"scancel --signal=USR2{flag} 7"


def test_a_job_that_ended_before_scancel_is_reported_and_the_rest_still_signaled(tmp_path: Path) -> None:
    out, calls = _run_script(tmp_path, "5\n6\n", fail_job="5")
    assert calls[-2:] == ["scancel --signal=USR1 5", "scancel --signal=USR1 6"]
    assert "signaled (SIGUSR1): 6" in out and "not signaled (ended?): 5" in out


def test_no_running_job_signals_nothing_and_junk_ids_are_skipped(tmp_path: Path) -> None:
    out, calls = _run_script(tmp_path, "\n12;rm -rf /\n12\n12\n")
    assert [c for c in calls if c.startswith("scancel")] == ["scancel --signal=USR1 12"]
    assert "signaled (SIGUSR1): 12" in out


def test_the_script_with_the_job_warning_passes_shellcheck(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    path = tmp_path / "drain.sh"
    for scope in job_warning.SLURM_SCOPES:
        path.write_text(_script(scope=scope))
        done = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout


@pytest.mark.parametrize(("signal", "scope"), [("KILL", "steps"), ("USR1; reboot", "steps"), ("USR1", "all")])
def test_the_renderer_refuses_unknown_signals_and_scopes(signal: str, scope: str) -> None:
    with pytest.raises(ValueError):
        job_warning.slurm_signal_lines(signal, scope)


def test_drain_without_job_warning_is_unchanged() -> None:
    assert "scancel" not in index.drain_script(["10.0.1.10"])


# --- Kubernetes: the patch and the Event against a fake API server ----------------------------------------------------

NODES = [
    {"metadata": {"name": "gpu-node-a"}, "spec": {"providerID": "aws:///us-east-1a/i-0aaaaaaaaaaaaaaa1"}},
    {"metadata": {"name": "other"}, "spec": {"providerID": "aws:///us-east-1a/i-0ccccccccccccccc9"}},
]
PODS = {
    "gpu-node-a": [
        {"metadata": {"name": "train-0", "namespace": "ml", "uid": "u-1"}},
        {
            "metadata": {
                "name": "dcgm-exporter-x",
                "namespace": "kube-system",
                "ownerReferences": [{"kind": "DaemonSet", "name": "dcgm-exporter"}],
            }
        },
        {"metadata": {"name": "train-1", "namespace": "ml", "uid": "u-2", "annotations": {ANNOTATION: END}}},
    ],
    "other": [{"metadata": {"name": "elsewhere", "namespace": "ml"}}],
}


class FakeApi:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []


def _handler(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            return json.loads(raw) if raw else None

        def _record(self, body: Any) -> None:
            api.requests.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "content_type": self.headers.get("Content-Type", ""),
                    "body": body,
                }
            )

        def do_GET(self) -> None:
            self._record(None)
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/api/v1/nodes":
                self._send(200, {"kind": "NodeList", "items": NODES, "metadata": {}})
                return
            selector = urllib.parse.parse_qs(url.query).get("fieldSelector", [""])[0]
            fields = dict(part.split("=", 1) for part in selector.split(",") if "=" in part)
            assert fields.get("status.phase") == "Running"
            self._send(200, {"kind": "PodList", "items": PODS.get(fields.get("spec.nodeName", ""), [])})

        def do_PATCH(self) -> None:
            self._record(self._body())
            self._send(200, {"kind": "Pod" if "/pods/" in self.path else "Node"})

        def do_POST(self) -> None:
            self._record(self._body())
            self._send(201, {"kind": "Event"})

    return Handler


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, FakeApi]]:
    cert_path, key_path, pem = _certificate(tmp_path_factory.mktemp("tls"))
    api = FakeApi()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"https://localhost:{httpd.server_address[1]}", pem, api
    finally:
        httpd.shutdown()
        httpd.server_close()


def _warning_event() -> dict[str, Any]:
    return {
        "source": "aws.ec2",
        "detail-type": "Capacity Block Expiration Warning",
        "detail": {"capacity-reservation-id": BLOCK, "end-date": END},
    }


def _process(server: tuple[str, str, FakeApi], settings: dict[str, Any]) -> tuple[dict[str, Any], FakeApi]:
    endpoint, pem, api = server
    api.requests.clear()
    ec2_client = boto3.client("ec2", **KWARGS)  # type: ignore[call-overload]
    sns_client = boto3.client("sns", **KWARGS)  # type: ignore[call-overload]
    with Stubber(ec2_client) as ec2_stub, Stubber(sns_client) as sns_stub:
        ec2_stub.add_response(
            "describe_instances",
            {"Reservations": [{"Instances": [{"InstanceId": "i-0aaaaaaaaaaaaaaa1"}]}]},
            {"Filters": ANY},
        )
        sns_stub.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = index.process(
            _warning_event(),
            ec2=ec2_client,
            ssm=None,
            sns=sns_client,
            topic_arn=TOPIC,
            login_node_group_id="",
            eks_cluster_name="fm-eks",
            kube_factory=lambda: index.KubeApi(endpoint, pem, "token"),
            job_warning=settings,
        )
    return result, api


def test_running_job_pods_of_the_cordoned_nodes_get_the_annotation_and_an_event(
    server: tuple[str, str, FakeApi],
) -> None:
    result, api = _process(server, {"pod_annotation": ANNOTATION, "pod_event": True})
    patches = [r for r in api.requests if r["method"] == "PATCH" and "/pods/" in r["path"]]
    assert [r["path"] for r in patches] == ["/api/v1/namespaces/ml/pods/train-0"]
    assert patches[0]["content_type"] == "application/merge-patch+json"
    assert patches[0]["body"] == {"metadata": {"annotations": {ANNOTATION: END}}}
    events = [r for r in api.requests if r["method"] == "POST"]
    assert [r["path"] for r in events] == ["/api/v1/namespaces/ml/events"]
    event = events[0]["body"]
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "train-0",
        "namespace": "ml",
        "uid": "u-1",
    }
    assert (event["reason"], event["type"]) == ("CapacityBlockEnding", "Warning")
    assert BLOCK in event["message"] and END in event["message"]
    # train-1 already carries the same end: no second patch or Event; the DaemonSet pod and the other node untouched
    assert result["pods_warned"] == ["ml/train-0"]
    assert "Pods already warned: ml/train-1." in result["message"]
    assert not [r for r in api.requests if "elsewhere" in r["path"] or "dcgm" in r["path"]]


def test_a_custom_annotation_without_events(server: tuple[str, str, FakeApi]) -> None:
    _, api = _process(server, {"pod_annotation": "example.com/ends", "pod_event": False})
    patches = [r for r in api.requests if r["method"] == "PATCH" and "/pods/" in r["path"]]
    assert {r["path"] for r in patches} == {"/api/v1/namespaces/ml/pods/train-0", "/api/v1/namespaces/ml/pods/train-1"}
    assert all(r["body"] == {"metadata": {"annotations": {"example.com/ends": END}}} for r in patches)
    assert not [r for r in api.requests if r["method"] == "POST"]


def test_without_a_pod_annotation_no_pod_is_read(server: tuple[str, str, FakeApi]) -> None:
    _, api = _process(server, {"slurm_signal": "USR1"})
    assert not [r for r in api.requests if "/pods" in r["path"]]


# --- the construct ---------------------------------------------------------------------------------------------------


def _eks_stack(**kwargs: Any) -> tuple[cdk.Stack, CapacityBlockEvents]:
    stack = cdk.Stack(new_app(), "CbJobWarning", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc, system_node_group=None)
    blocks = CapacityBlockEvents(stack, "Blocks", alert_topic=sns.Topic(stack, "Alerts"), eks_cluster=cluster, **kwargs)
    return stack, blocks


def _handler_env(stack: cdk.Stack) -> dict[str, Any]:
    functions = Template.from_stack(stack).find_resources("AWS::Lambda::Function")
    ours = [f for lid, f in functions.items() if lid.startswith("BlocksHandler")]
    return dict(ours[0]["Properties"]["Environment"]["Variables"])


def _rules(stack: cdk.Stack) -> list[dict[str, Any]]:
    manifests = Template.from_stack(stack).find_resources("Custom::AWSCDK-EKS-KubernetesResource")
    for resource in manifests.values():
        text = json.dumps(stack.resolve(resource["Properties"]["Manifest"]))
        if "ClusterRole" in text:
            joined = resource["Properties"]["Manifest"]
            raw = joined if isinstance(joined, str) else "".join(p for p in joined["Fn::Join"][1] if isinstance(p, str))
            role = json.loads(raw)[0]
            return list(role["rules"])
    raise AssertionError("no ClusterRole manifest")


def test_the_job_warning_reaches_the_handler_and_rbac_allows_only_pods_and_events() -> None:
    stack, _ = _eks_stack(job_warning=JobWarning(slurm_signal_scope=SlurmSignalScope.FULL))
    settings = json.loads(_handler_env(stack)["JOB_WARNING"])
    assert settings == {"slurm_signal": "USR1", "slurm_scope": "full", "pod_annotation": ANNOTATION, "pod_event": True}
    assert _rules(stack) == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "patch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]


def test_without_a_job_warning_the_handler_gets_none_and_rbac_stays_nodes_only() -> None:
    stack, _ = _eks_stack()
    assert "JOB_WARNING" not in _handler_env(stack)
    assert _rules(stack) == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"slurm_signal": "KILL"}, FmValidationError, r"slurm_signal must be one of"),
        ({"slurm_signal": "SIGKILL"}, FmValidationError, r"slurm_signal must be one of"),
        ({"slurm_signal": "SIG"}, FmValidationError, r"slurm_signal must be one of"),
        ({"slurm_signal": "SIGUSR1X"}, FmValidationError, r"slurm_signal must be one of"),
        ({"slurm_signal_scope": "full"}, FmTypeError, r"slurm_signal_scope"),
        ({"pod_annotation": "has space/x"}, FmValidationError, r"pod_annotation must be a Kubernetes annotation key"),
        ({"pod_annotation": "a/" + "n" * 64}, FmValidationError, r"pod_annotation"),
        ({"pod_annotation": ""}, FmValidationError, r"pod_annotation"),
        ({"pod_event": "yes"}, FmTypeError, r"pod_event"),
    ],
)
def test_job_warning_refuses_bad_values(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        JobWarning(**kwargs)


def test_a_job_warning_without_pcs_or_eks_is_refused() -> None:
    stack = cdk.Stack(new_app(), "CbJobWarningNone", env=ENV)
    with pytest.raises(FmValidationError, match=r"job_warning must be None unless pcs_login_node_group_id"):
        CapacityBlockEvents(stack, "Blocks", alert_topic=sns.Topic(stack, "Alerts"), job_warning=JobWarning())


def test_a_job_warning_that_is_not_a_job_warning_is_refused() -> None:
    stack = cdk.Stack(new_app(), "CbJobWarningType", env=ENV)
    with pytest.raises(FmTypeError, match=r"job_warning"):
        CapacityBlockEvents(
            stack,
            "Blocks",
            alert_topic=sns.Topic(stack, "Alerts"),
            pcs_login_node_group_id="pcs_abcdef1234",
            job_warning={"slurm_signal": "USR1"},  # type: ignore[arg-type]
        )


def test_pcs_handler_gets_the_slurm_signal() -> None:
    stack = cdk.Stack(new_app(), "CbJobWarningPcs", env=ENV)
    CapacityBlockEvents(
        stack,
        "Blocks",
        alert_topic=sns.Topic(stack, "Alerts"),
        pcs_login_node_group_id="pcs_abcdef1234",
        job_warning=JobWarning(slurm_signal="TERM", pod_annotation=None),
    )
    settings = json.loads(_handler_env(stack)["JOB_WARNING"])
    # (no pod annotation: the key is left out of the JSON)
    assert (settings["slurm_signal"], settings["slurm_scope"], settings.get("pod_annotation")) == (
        "TERM",
        "steps",
        None,
    )


@pytest.mark.parametrize("spelled", ["USR1", "SIGUSR1", "sigusr1", "usr1"])
def test_signal_names_as_slurm_reads_them_are_one_name(spelled: str) -> None:
    """Slurm's sig_name2num (src/common/proc_args.c) takes an optional SIG prefix, case-insensitively."""
    assert JobWarning(slurm_signal=spelled).slurm_signal == "USR1"
    assert any("--signal=USR1" in line for line in job_warning.slurm_signal_lines(spelled))
