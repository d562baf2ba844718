"""The remediation bridge: the real handler code (``fmconstructs/remediation/handler/index.py`` ``process``) behind the
twin's SNS receiver, with the AWS side in moto and the twin's hooks where AWS would touch the cluster.

:class:`RemediationBridge` runs each SNS event through ``index.process(event, clients=..., policy=POLICY,
target=TARGET, topic_arn=TOPIC_ARN, table=TABLE_NAME, clock=...)``, with ``POLICY``/``TARGET``/``TOPIC_ARN``/
``TABLE_NAME`` read from the synthesized handler function's environment (:func:`~.artifacts.remediation_artifacts`),
only the public ``process`` keywords and plain boto3 client calls (so it works whichever handler revision is checked
out). The clients:

- ``dynamodb``: moto, with the state table created from the template's ``KeySchema``/``AttributeDefinitions``;
- ``sns``: moto (the topic named as the template's), recording every ``publish`` (the handler's notices) in
  :attr:`RemediationBridge.notices`;
- ``ec2``: :class:`TwinEc2`, moto underneath, with the instances :meth:`RemediationBridge.launch` created with the
  tags the handler's backend reads (PCS ``aws:pcs:compute-node-group-id``; ParallelCluster
  ``parallelcluster:cluster-name`` and ``parallelcluster:node-type`` ``Compute``/``HeadNode``:
  ``handler/backends.py``). ``describe_instances`` reports each instance's twin address (``PrivateIpAddress``, e.g.
  the node's ``NodeAddr`` 127.0.0.N, and ``PrivateDnsName`` ``ip-127-0-0-N.ec2.internal`` unless given), which is how
  the handler's Slurm script finds the node; ``terminate_instances`` terminates in moto, then calls
  ``replace(instance_id)``; ``reboot_instances`` calls ``reboot(instance_id)`` when given;
- ``ssm``: :class:`TwinSsm`: ``send_command`` (document ``AWS-RunShellScript``, one Slurm host) runs the script
  through ``run_slurm_script(script) -> (exit_code, stdout, stderr)`` at once; ``get_command_invocation`` answers
  ``Status`` (``Success`` on exit 0, else ``Failed``), ``ResponseCode``, ``StatusDetails``,
  ``StandardOutputContent`` (first 24,000 characters, as SSM: API reference GetCommandInvocation) and
  ``StandardErrorContent`` (first 8,000);
- ``sagemaker`` (HyperPod targets only): :class:`TwinSageMaker`, the nodes :meth:`RemediationBridge.launch` made;
  ``batch_replace_cluster_nodes`` of a node calls ``replace(instance_id)`` as ``terminate_instances`` does.

The callbacks run on the SNS receiver's delivery thread, inside the handler's call, under the bridge's lock: keep
them short (hand a slurmd restart to another thread if it takes long). The handler's clock is a
:class:`~.timescale.LibraryClock`: its hourly windows (rate limit, idempotency) last one twin minute.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import ClientError

from fmconstructs.remediation.handler import backends as handler_backends
from fmconstructs.remediation.handler import index as handler_index

from .artifacts import RemediationArtifacts
from .procs import TwinError
from .timescale import LibraryClock

__all__ = ["RemediationBridge", "SsmCommand", "TwinEc2", "TwinSageMaker", "TwinSsm"]

SlurmRunner = Callable[[str], tuple[int, str, str]]
#: GetCommandInvocation returns the first 24,000 characters of stdout and 8,000 of stderr (SSM API reference,
#: GetCommandInvocation StandardOutputContent / StandardErrorContent).
STDOUT_MAX, STDERR_MAX = 24_000, 8_000
_AMI = "ami-12c6146b"  # any id: moto accepts unknown AMIs with a warning (UNCONFIRMED which ids it lists)
ROLES = ("compute", "login", "head")


def _client_error(code: str, message: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


@dataclass
class SsmCommand:
    """One ``send_command`` the handler made, and what the Slurm script printed."""

    command_id: str
    instance_id: str
    script: str
    comment: str
    exit_code: int
    stdout: str
    stderr: str


class TwinSsm:
    """The SSM client the handler gets (module docstring); ``hosts()`` says which instances may run scripts."""

    def __init__(self, run_slurm_script: SlurmRunner, hosts: Callable[[], set[str]]) -> None:
        self.run_slurm_script = run_slurm_script
        self.hosts = hosts
        self.commands: list[SsmCommand] = []

    def send_command(self, **kwargs: Any) -> dict[str, Any]:
        instance_ids = list(kwargs.get("InstanceIds") or [])
        if kwargs.get("DocumentName") != handler_backends.RUN_SHELL_DOCUMENT or len(instance_ids) != 1:
            raise _client_error(
                "InvalidDocument",
                f"the twin runs one {handler_backends.RUN_SHELL_DOCUMENT} command on one instance, got {kwargs}",
                "SendCommand",
            )
        if instance_ids[0] not in self.hosts():
            raise _client_error(
                "InvalidInstanceId", f"{instance_ids[0]} is not a Slurm host of the twin", "SendCommand"
            )
        script = "\n".join(kwargs["Parameters"]["commands"])
        code, stdout, stderr = self.run_slurm_script(script)
        command = SsmCommand(
            str(uuid.uuid4()), instance_ids[0], script, str(kwargs.get("Comment", "")), int(code), stdout, stderr
        )
        self.commands.append(command)
        return {
            "Command": {
                "CommandId": command.command_id,
                "InstanceIds": instance_ids,
                "Status": "Pending",
                "DocumentName": handler_backends.RUN_SHELL_DOCUMENT,
            }
        }

    def get_command_invocation(self, *, CommandId: str, InstanceId: str, **_: Any) -> dict[str, Any]:
        for command in self.commands:
            if command.command_id == CommandId and command.instance_id == InstanceId:
                status = "Success" if command.exit_code == 0 else "Failed"
                return {
                    "CommandId": CommandId,
                    "InstanceId": InstanceId,
                    "DocumentName": handler_backends.RUN_SHELL_DOCUMENT,
                    "Status": status,
                    "StatusDetails": status,
                    "ResponseCode": command.exit_code,
                    "StandardOutputContent": command.stdout[:STDOUT_MAX],
                    "StandardErrorContent": command.stderr[:STDERR_MAX],
                }
        raise _client_error(
            "InvocationDoesNotExist", f"no invocation {CommandId} on {InstanceId}", "GetCommandInvocation"
        )


class TwinEc2:
    """moto's EC2 client with the twin's addresses and hooks (module docstring); other calls go to moto."""

    def __init__(
        self,
        moto: Any,
        *,
        replace: Callable[[str], object],
        reboot: Callable[[str], object] | None = None,
    ) -> None:
        self._moto = moto
        self.replace, self.reboot = replace, reboot
        self.addresses: dict[str, tuple[str, str]] = {}
        self.terminated: list[str] = []
        self.rebooted: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._moto, name)

    def describe_instances(self, **kwargs: Any) -> dict[str, Any]:
        response: dict[str, Any] = self._moto.describe_instances(**kwargs)
        for reservation in response.get("Reservations", []):
            for instance in reservation.get("Instances", []):
                ip, dns = self.addresses.get(instance["InstanceId"], (None, None))
                if ip:
                    instance["PrivateIpAddress"], instance["PrivateDnsName"] = ip, dns
        return response

    def terminate_instances(self, **kwargs: Any) -> dict[str, Any]:
        response: dict[str, Any] = self._moto.terminate_instances(**kwargs)
        for instance_id in kwargs.get("InstanceIds") or []:
            self.terminated.append(instance_id)
            self.replace(instance_id)
        return response

    def reboot_instances(self, **kwargs: Any) -> dict[str, Any]:
        response: dict[str, Any] = self._moto.reboot_instances(**kwargs)
        for instance_id in kwargs.get("InstanceIds") or []:
            self.rebooted.append(instance_id)
            if self.reboot is not None:
                self.reboot(instance_id)
        return response


class TwinSageMaker:
    """The SageMaker client of a HyperPod target (moto has no HyperPod): ``list_cluster_nodes`` lists the nodes the
    bridge launched (``ClusterNodeSummary`` with ``InstanceId``, ``InstanceGroupName``, ``InstanceStatus`` and
    ``PrivateDnsHostname``); ``batch_replace_cluster_nodes`` / ``batch_reboot_cluster_nodes`` answer ``Successful``
    for a listed node (then call ``replace`` / ``reboot`` with its id) and a ``Failed`` entry
    ``InstanceIdNotFound`` otherwise. Every call's parameters are validated against botocore's sagemaker model, and
    recorded in :attr:`calls`."""

    def __init__(
        self, cluster: str, *, replace: Callable[[str], object], reboot: Callable[[str], object] | None = None
    ) -> None:
        self.cluster, self.replace, self.reboot = cluster, replace, reboot
        self.nodes: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _call(self, operation: str, params: dict[str, Any]) -> None:
        from botocore.session import get_session
        from botocore.validate import validate_parameters

        model = get_session().get_service_model("sagemaker").operation_model(operation)
        validate_parameters(params, model.input_shape)
        self.calls.append((operation, dict(params)))
        if params.get("ClusterName") != self.cluster:
            raise _client_error("ResourceNotFound", f"no cluster {params.get('ClusterName')}", operation)

    def add(self, instance_id: str, *, group: str, hostname: str) -> None:
        self.nodes[instance_id] = {
            "InstanceGroupName": group,
            "InstanceId": instance_id,
            "InstanceType": "ml.p5.48xlarge",
            "LaunchTime": time.time(),
            "InstanceStatus": {"Status": "Running"},
            "PrivateDnsHostname": f"{hostname}.ec2.internal",
        }

    def list_cluster_nodes(self, **params: Any) -> dict[str, Any]:
        self._call("ListClusterNodes", params)
        return {"ClusterNodeSummaries": [dict(n) for n in self.nodes.values()]}

    def _batch(self, operation: str, params: dict[str, Any], action: Callable[[str], object] | None) -> dict[str, Any]:
        self._call(operation, params)
        done, failed = [], []
        for node_id in params.get("NodeIds") or []:
            if node_id in self.nodes and self.nodes[node_id]["InstanceStatus"]["Status"] == "Running":
                done.append(node_id)
            else:
                failed.append({"NodeId": node_id, "ErrorCode": "InstanceIdNotFound", "Message": "not in the cluster"})
        for node_id in done:
            if operation == "BatchReplaceClusterNodes":
                self.nodes[node_id]["InstanceStatus"] = {"Status": "ShuttingDown"}
            if action is not None:
                action(node_id)
        return {**({"Successful": done} if done else {}), **({"Failed": failed} if failed else {})}

    def batch_replace_cluster_nodes(self, **params: Any) -> dict[str, Any]:
        return self._batch("BatchReplaceClusterNodes", params, self.replace)

    def batch_reboot_cluster_nodes(self, **params: Any) -> dict[str, Any]:
        return self._batch("BatchRebootClusterNodes", params, self.reboot)


class _RecordingSns:
    def __init__(self, moto: Any, notices: list[dict[str, Any]]) -> None:
        self._moto, self._notices = moto, notices

    def __getattr__(self, name: str) -> Any:
        return getattr(self._moto, name)

    def publish(self, **kwargs: Any) -> dict[str, Any]:
        self._notices.append(dict(kwargs))
        response: dict[str, Any] = self._moto.publish(**kwargs)
        return response


class RemediationBridge:
    """The handler behind the SNS receiver (module docstring). Use as a context manager (moto runs while it is open);
    pass the bridge itself as the receiver's ``deliver`` callback.

    :param replace: called with the instance id the handler terminated (the twin replaces that node).
    :param run_slurm_script: runs the handler's Slurm script on the twin's login/head node; returns (exit code,
        stdout, stderr).
    :param reboot: called with the instance id the handler rebooted (EKS, Auto Scaling), if given.
    :param clock: the handler's clock (default: a :class:`~.timescale.LibraryClock`).
    """

    def __init__(
        self,
        artifacts: RemediationArtifacts,
        *,
        replace: Callable[[str], object],
        run_slurm_script: SlurmRunner,
        reboot: Callable[[str], object] | None = None,
        clock: Callable[[], float] | None = None,
        region: str = "us-east-1",
        kube_factory: Callable[[Any], Any] | None = None,
    ) -> None:
        self.artifacts, self.region = artifacts, region
        self.kube_factory = kube_factory  # EKS: builds the handler's Kubernetes client (process(kube_factory=...))
        self.clock = clock or LibraryClock()
        self._callbacks = {"replace": replace, "reboot": reboot, "run_slurm_script": run_slurm_script}
        self._lock = threading.RLock()
        self._mock: Any = None
        self.roles: dict[str, str] = {}
        self.results: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.notices: list[dict[str, Any]] = []
        self.errors: list[BaseException] = []
        self.ec2: TwinEc2 | None = None
        self.ssm: TwinSsm | None = None
        self.sagemaker: TwinSageMaker | None = None
        self.clients: dict[str, Any] = {}

    def __enter__(self) -> RemediationBridge:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> RemediationBridge:
        from moto import mock_aws

        self._mock = mock_aws()
        self._mock.start()
        client = boto3.session.Session(region_name=self.region).client
        dynamodb, sns, ec2 = client("dynamodb"), client("sns"), client("ec2")
        dynamodb.create_table(
            TableName=self.artifacts.table_name,
            KeySchema=self.artifacts.key_schema,
            AttributeDefinitions=self.artifacts.attribute_definitions,
            BillingMode="PAY_PER_REQUEST",
        )
        topic = sns.create_topic(Name=self.artifacts.topic_arn.rsplit(":", 1)[-1])["TopicArn"]
        if topic != self.artifacts.topic_arn:
            raise TwinError(f"moto made topic {topic}, the handler publishes to {self.artifacts.topic_arn}")
        replace, reboot = self._callbacks["replace"], self._callbacks["reboot"]
        self.ec2 = TwinEc2(ec2, replace=replace, reboot=reboot)  # type: ignore[arg-type]
        self.ssm = TwinSsm(self._callbacks["run_slurm_script"], self.slurm_hosts)  # type: ignore[arg-type]
        self.clients = {"ec2": self.ec2, "ssm": self.ssm, "sns": _RecordingSns(sns, self.notices), "dynamodb": dynamodb}
        if self.artifacts.target["backend"] == "hyperpod":
            self.sagemaker = TwinSageMaker(self.artifacts.target["cluster"], replace=replace, reboot=reboot)
            self.clients["sagemaker"] = self.sagemaker
        return self

    def close(self) -> None:
        if self._mock is not None:
            self._mock.stop()
            self._mock = None

    def _tags(self, role: str, group_id: str | None) -> dict[str, str]:
        target = self.artifacts.target
        if target["backend"] == "pcs":
            group = group_id or (
                target["login_node_group_id"] if role == "login" else target["compute_node_group_ids"][0]
            )
            return {handler_backends.PCS_NODE_GROUP_TAG: group}
        if target["backend"] == "parallelcluster":
            node_type = handler_backends.PC_HEAD_NODE if role == "head" else handler_backends.PC_COMPUTE
            return {handler_backends.PC_CLUSTER_TAG: target["cluster"], handler_backends.PC_NODE_TYPE_TAG: node_type}
        if target["backend"] == "eks":  # the handler finds EKS nodes through Kubernetes (spec.providerID), not tags
            return {"eks:cluster-name": target["cluster"]}
        if target["backend"] == "hyperpod":  # the handler finds HyperPod nodes with ListClusterNodes, not tags
            return {"twin:hyperpod-cluster": target["cluster"]}
        raise TwinError(f"the bridge launches Slurm nodes only (backend {target['backend']})")

    def launch(
        self,
        role: str = "compute",
        *,
        private_ip: str,
        private_dns_name: str | None = None,
        group_id: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> str:
        """A running moto instance with the tags the backend gives a ``role`` node (``compute``; ``login`` on PCS,
        ``head`` on ParallelCluster; on EKS only ``eks:cluster-name``) and the twin address ``private_ip``; returns its instance id."""
        if role not in ROLES or self.ec2 is None:
            raise TwinError(f"role must be one of {ROLES} (and the bridge started), got {role!r}")
        all_tags = {**self._tags(role, group_id), **dict(tags or {})}
        with self._lock:
            response = self.ec2._moto.run_instances(
                ImageId=_AMI,
                MinCount=1,
                MaxCount=1,
                InstanceType="p5.48xlarge",
                TagSpecifications=[
                    {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in all_tags.items()]}
                ],
            )
        instance_id = str(response["Instances"][0]["InstanceId"])
        dns = private_dns_name or f"ip-{private_ip.replace('.', '-')}.ec2.internal"
        self.ec2.addresses[instance_id] = (private_ip, dns)
        self.roles[instance_id] = role
        if self.sagemaker is not None:
            group = "gpu" if role == "compute" else "controller"
            self.sagemaker.add(instance_id, group=group, hostname=dns.split(".", 1)[0])
        return instance_id

    def slurm_hosts(self) -> set[str]:
        return {i for i, role in self.roles.items() if role in ("login", "head")}

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        """Run one SNS event through the handler (the receiver's ``deliver``); the result is kept in
        :attr:`results`, an exception in :attr:`errors` (and raised, so the receiver counts a dead letter)."""
        with self._lock:
            self.events.append(event)
            try:
                result: dict[str, Any] = handler_index.process(
                    event,
                    clients=self.clients,
                    policy=dict(self.artifacts.policy),
                    target=dict(self.artifacts.target),
                    topic_arn=self.artifacts.topic_arn,
                    table=self.artifacts.table_name,
                    clock=self.clock,
                    **({"kube_factory": self.kube_factory} if self.kube_factory else {}),
                )
            except BaseException as error:
                self.errors.append(error)
                raise
            self.results.append(result)
            return result

    def records(self) -> list[dict[str, Any]]:
        """Every per-fault record the handler returned so far (``instance``, ``trigger``, ``action``, ``outcome``)."""
        with self._lock:
            return [record for result in self.results for record in result.get("records", [])]

    def wait_for_record(
        self, *, instance: str, trigger: str | None = None, outcome: str | None = None, timeout_s: float = 30
    ) -> dict[str, Any]:
        """The first handler record for ``instance`` (and ``trigger`` / ``outcome`` when given)."""

        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                errors = list(self.errors)
            for record in self.records():
                if record.get("instance") != instance:
                    continue
                if trigger in (None, record.get("trigger")) and outcome in (None, record.get("outcome")):
                    return record
            if errors:
                raise TwinError(f"the handler raised: {errors[-1]!r}")
            if time.monotonic() >= deadline:
                raise TwinError(
                    f"no handler record for {instance} ({trigger}, {outcome}) after {timeout_s:.0f}s: {self.records()}"
                )
            time.sleep(0.1)

    def instance_state(self, instance_id: str) -> str:
        if self.ec2 is None:
            raise TwinError("the bridge is not started")
        with self._lock:
            reservations = self.ec2._moto.describe_instances(InstanceIds=[instance_id])["Reservations"]
        return str(reservations[0]["Instances"][0]["State"]["Name"])


def deliver_logged(bridge: Callable[[dict[str, Any]], object], event: dict[str, Any], log: list[Any]) -> object:
    """One Lambda invocation through ``bridge``: the handler's stdout (its JSON log lines) appended to ``log``."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            return bridge(event)
    finally:
        for line in out.getvalue().splitlines():
            with contextlib.suppress(ValueError):
                log.append(json.loads(line))
