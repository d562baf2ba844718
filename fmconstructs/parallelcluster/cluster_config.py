"""The configuration rendering of :class:`~fmconstructs.parallelcluster.cluster.ParallelCluster`: the
``ClusterConfiguration`` built from the typed props, the bootstraps and the overrides, as a dict, YAML or a review file
written at synthesis."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsii
import yaml
from aws_cdk import (
    IAspect,
    IStableAnyProducer,
    Stack,
    Stage,
)
from aws_cdk import aws_ec2 as ec2
from constructs import Construct, IConstruct

from .._validate import (
    check_str,
)
from ..bootstrap import ScriptAction
from ..errors import FmTypeError, FmValidationError
from .accounting import (
    SlurmAccounting,
    apply_slurm_accounting,
)
from .cluster_bootstrap import _HEAD, _LOGIN, _QUEUE
from .config import (
    SEQUENCE_MIN_VERSION,
    CustomActionEvent,
    HeadNode,
    LoginNodePool,
    Monitoring,
    OperatingSystem,
    QueueUpdateStrategy,
    SharedLustre,
    SlurmQueue,
    version_tuple,
)
from .head_entry import ENTRY_EVENTS, HeadNodeEntryPoint
from .review import review_header
from .slurm_scripts import merge_prolog_flag_settings

if TYPE_CHECKING:
    _Construct = Construct  # mypy sees the mixin as a construct; at run time it is a plain class
else:
    _Construct = object


@jsii.implements(IAspect)
class _WriteYaml:
    """Writes ``<outdir>/<stack artifact id>.<construct id>.pcluster.yaml`` at synthesis (``pcluster`` CLI users)."""

    def __init__(self, cluster: _ClusterConfig) -> None:
        self._cluster = cluster

    def visit(self, node: IConstruct) -> None:
        if node is not self._cluster:
            return
        stage = Stage.of(node)
        if stage is not None and stage.outdir:
            self._cluster.write_yaml(Path(stage.outdir) / self._cluster.yaml_file_name)


@jsii.implements(IStableAnyProducer)
class _ConfigProducer:
    def __init__(self, cluster: _ClusterConfig) -> None:
        self._cluster = cluster

    def produce(self) -> Any:
        return self._cluster._raw_config()


def _set_path(config: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    node: Any = config
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise FmValidationError("path", path, f"an existing list index at {'.'.join(parts[: index + 1])}")
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
            continue
        if last:
            node[part] = value
        else:
            node = node.setdefault(part, {})
            if not isinstance(node, dict | list):
                raise FmValidationError("path", path, f"a path through mappings, {part} holds a value")


class _ClusterConfig(_Construct):
    """The configuration side of :class:`~fmconstructs.parallelcluster.cluster.ParallelCluster` (a mixin)."""

    version: str
    os: OperatingSystem
    custom_ami: str | None
    head_node: HeadNode
    queues: tuple[SlurmQueue, ...]
    login_nodes: tuple[LoginNodePool, ...]
    shared_storage: tuple[SharedLustre, ...]
    monitoring: Monitoring
    tags: tuple[tuple[str, str], ...]
    queue_update_strategy: QueueUpdateStrategy
    slurm_accounting: SlurmAccounting | None
    node_security_group: ec2.ISecurityGroup | None
    _overrides: list[tuple[str, Any]]
    _bootstraps: dict[tuple[str, str, CustomActionEvent], list[tuple[ScriptAction, str]]]
    _custom_slurm_settings: list[dict[str, Any]]
    _lustre_efa: dict[str, tuple[ScriptAction, str]]
    _head_entry: HeadNodeEntryPoint | None

    @property
    def yaml_file_name(self) -> str:
        """The configuration file written next to the templates at synthesis: ``<stack>.<id>.pcluster.yaml``, a
        review artifact (:meth:`write_yaml`: its header lists the CloudFormation references, as YAML mappings, to
        replace with values before ``pcluster create-cluster``)."""
        return f"{Stack.of(self).artifact_id}.{self.node.id}.pcluster.yaml"

    # --- configuration --------------------------------------------------------------------------------------------
    def add_override(self, path: str, value: Any) -> None:
        """Set any configuration key the typed props lack: ``path`` is dot-separated keys of the
        ``ClusterConfiguration`` (list items by index, e.g. ``"Scheduling.SlurmQueues.0.JobExclusiveAllocation"``).
        Applied in order, after the typed configuration is built."""
        check_str("path", path, pattern=re.compile(r"[A-Za-z0-9]+(\.[A-Za-z0-9]+)*"), allowed="dot-separated keys")
        self._overrides.append((path, value))

    def _apply_bootstraps(self, config: dict[str, Any]) -> None:
        sections: dict[tuple[str, str], dict[str, Any]] = {(_HEAD, _HEAD): config["HeadNode"]}
        for queue in config["Scheduling"]["SlurmQueues"]:
            sections[(_QUEUE, queue["Name"])] = queue
        for pool in config.get("LoginNodes", {}).get("Pools", []):
            sections[(_LOGIN, pool["Name"])] = pool
        for (kind, name, event), entries in self._bootstraps.items():
            section = sections[(kind, name)]
            actions = section.setdefault("CustomActions", {})
            entry = self._head_entry if kind == _HEAD and event in ENTRY_EVENTS else None
            if entry is not None:  # one frozen entry point reads the pieces from SSM (.head_entry)
                scripts = [entry.action(event)]
                entry.grant(section, self._grant_policy)
            else:
                scripts = [{"Script": action.script_url, "Args": list(action.args)} for action, _ in entries]
            own = actions.get(event.value)  # the head node's own on_node_start / on_node_configured runs first
            if own is not None:
                scripts = [*own.get("Sequence", [own]), *scripts]
            # One script keeps the {Script, Args} form (the template of a single-piece event is unchanged); several
            # run as a Sequence, in order (checked for 3.6.0+ when the piece was added).
            actions[event.value] = scripts[0] if len(scripts) == 1 else {"Sequence": scripts}
            for action, policy_arn in entries:
                self._grant(section, kind, action, policy_arn)
        for name, (action, policy_arn) in self._lustre_efa.items():
            # First in the queue's OnNodeStart, before its own action or bootstrap (a Sequence runs in order, before
            # ParallelCluster's own bootstrap: User Guide custom-bootstrap-actions-config-v3).
            section = sections[(_QUEUE, name)]
            actions = section.setdefault("CustomActions", {})
            lnet = {"Script": action.script_url, "Args": list(action.args)}
            start = actions.get(CustomActionEvent.ON_NODE_START.value)
            if start is None:
                actions[CustomActionEvent.ON_NODE_START.value] = lnet
            else:
                self._check_sequence_version(name)
                rest = start.get("Sequence", [start])
                actions[CustomActionEvent.ON_NODE_START.value] = {"Sequence": [lnet, *rest]}
            self._grant(section, _QUEUE, action, policy_arn)

    def _check_sequence_version(self, queue: str) -> None:
        if version_tuple(self.version) < SEQUENCE_MIN_VERSION:
            raise FmValidationError(
                "version",
                self.version,
                f"3.6.0 or later: queue {queue} runs the Lustre-over-EFA step and another OnNodeStart action as a "
                "CustomActions Sequence (User Guide custom-bootstrap-actions-config-v3)",
            )

    @staticmethod
    def _grant(section: dict[str, Any], kind: str, action: ScriptAction, policy_arn: str) -> None:
        """``Iam.S3Access`` on the action's objects (not on login pools) and its policy in AdditionalIamPolicies."""
        iam_config = section.setdefault("Iam", {})
        if kind != _LOGIN:
            access = iam_config.setdefault("S3Access", [])
            for key in action.object_keys:
                entry = {"BucketName": action.bucket.bucket_name, "KeyName": key}
                if entry not in access:
                    access.append(entry)
        _ClusterConfig._grant_policy(section, policy_arn)

    @staticmethod
    def _grant_policy(section: dict[str, Any], policy_arn: str) -> None:
        policies = section.setdefault("Iam", {}).setdefault("AdditionalIamPolicies", [])
        if {"Policy": policy_arn} not in policies:
            policies.append({"Policy": policy_arn})

    def _raw_config(self) -> dict[str, Any]:
        image: dict[str, Any] = {"Os": self.os.value}
        if self.custom_ami is not None:
            image["CustomAmi"] = self.custom_ami
        config: dict[str, Any] = {
            "Image": image,
            "HeadNode": self.head_node.to_config(),
            "Scheduling": {"Scheduler": "slurm", "SlurmQueues": [q.to_config() for q in self.queues]},
            "Monitoring": self.monitoring.to_config(),
        }
        if self.login_nodes:
            config["LoginNodes"] = {"Pools": [p.to_config() for p in self.login_nodes]}
        if self.shared_storage:
            config["SharedStorage"] = [s.to_config() for s in self.shared_storage]
        slurm_settings: dict[str, Any] = {"QueueUpdateStrategy": self.queue_update_strategy.value}
        if self._custom_slurm_settings:
            slurm_settings["CustomSlurmSettings"] = merge_prolog_flag_settings(self._custom_slurm_settings)
        config["Scheduling"]["SlurmSettings"] = slurm_settings
        if self.slurm_accounting is not None:
            apply_slurm_accounting(self.slurm_accounting, config)
        self._apply_bootstraps(config)
        if self.node_security_group is not None:
            group_id = self.node_security_group.security_group_id
            sections = [config["HeadNode"], *config["Scheduling"]["SlurmQueues"]]
            sections += config.get("LoginNodes", {}).get("Pools", [])
            for section in sections:
                section["Networking"].setdefault("AdditionalSecurityGroups", []).append(group_id)
        if self.tags:
            config["Tags"] = [{"Key": k, "Value": v} for k, v in self.tags]
        for path, value in self._overrides:
            _set_path(config, path, value)
        return config

    def to_dict(self) -> dict[str, Any]:
        """The ``ClusterConfiguration`` as deployed (deploy-time values as CloudFormation intrinsics)."""
        resolved: dict[str, Any] = Stack.of(self).resolve(self._raw_config())
        return resolved

    def to_yaml(self) -> str:
        """:meth:`to_dict` as YAML (for the ``pcluster`` CLI, after replacing intrinsics with values)."""
        return str(yaml.safe_dump(self.to_dict(), sort_keys=False))

    def write_yaml(self, path: str | Path) -> Path:
        """Write :meth:`to_yaml` to ``path`` under a header of comments that labels it a review artifact and lists
        the CloudFormation references it holds (:func:`fmconstructs.parallelcluster.review.review_header`); returns
        the path."""
        if not isinstance(path, str | Path):
            raise FmTypeError("path", path, "a str or pathlib.Path")
        target = Path(path)
        config = self.to_dict()
        target.write_text(review_header(self.node.path, config) + str(yaml.safe_dump(config, sort_keys=False)))
        return target
