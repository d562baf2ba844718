"""Node health on EKS: GPU nodes join tainted and a DaemonSet lifts the taint when their checks pass; the EKS node
monitoring agent add-on that node auto repair acts on.

Node-join checks (``GpuNodeGroup(node_checks=True)``, the default):

- The managed node group adds the taint ``fmconstructs.io/node-checks=pending:NoSchedule`` (EKS API ``Taint``; EKS
  User Guide "node-taints-managed-node-groups"), so a new node takes no pod that does not tolerate it. The GPU add-ons
  tolerate it (:func:`fmconstructs.eks.addons.gpu_tolerations`: device plugins, DCGM exporter, DRA kubelet plugin);
  the FSx CSI node and the node monitoring agent tolerate every taint (their chart defaults).
- One DaemonSet per node group (``kube-system/fmconstructs-node-checks-<group>``), on that group's nodes only (node
  label ``fmconstructs.io/node-checks-group``), tolerating every taint, runs the gate of
  :func:`fmconstructs.health.render_kubernetes_node_gate` on the host: the BOOT checks of the group's
  :class:`~fmconstructs.health.NodeCheckSpec` (instance type, EFA interfaces of its launch template, its first Lustre
  mount, DCGM diagnostics; see below), then removes the taint from its own node on pass, or keeps it and writes
  ``FAIL <check>: <reason>`` to the node annotation ``fmconstructs.io/node-checks`` (``PASS ...`` on pass). The
  gate itself (about 16 KB) is in a ConfigMap shared by every group whose gate is the same (same instance type, EFA
  interfaces, Lustre mount and options): ``kube-system/fmconstructs-node-checks-<type>-script-<8 hex of the gate>``
  (:func:`node_checks_script_name`), so N groups of one type add one gate to the template, not N (issue 30).
- How it reaches the host, and why each setting: the container (``busybox``) runs ``nsenter --target 1 --mount --uts
  --ipc --net --pid -- /bin/bash -s`` with the script on stdin, so the checks run with the host's own ``nvidia-smi``,
  ``fi_info``, ``dmesg``, ``systemctl`` and mounts, exactly as on PCS and ParallelCluster. One host path is mounted:
  node exporter's textfile directory (:data:`fmconstructs.health.metric_names.NODE_EXPORTER_TEXTFILE_DIR`,
  ``hostPath`` ``DirectoryOrCreate`` at the same path), so the kubelet creates it before the gate runs; the checks
  write ``fm_node_checks_boot.prom`` there and the node-exporter DaemonSet of
  :func:`fmconstructs.observability.eks.node_exporter_manifests` reads the same host directory, so
  ``FmNodeCheckFailed``, remediation and ``fmc health`` see a node that failed (it also keeps its taint). ``hostPID:
  true`` makes the host's PID 1 visible to ``nsenter --target 1``; ``privileged: true`` gives the capabilities
  ``setns`` into the host's mount namespace needs (CAP_SYS_ADMIN) and the host's GPU and EFA devices; the network
  namespace is entered too so that a DCGM host engine listening on the host's localhost is reachable. ``nsenter -t 1
  -m -u -i -n -p`` from a privileged busybox pod is how NVIDIA's NVSentinel janitor runs host commands
  (NVIDIA/NVSentinel ``janitor-provider``: ``defaultRebootImage = "public.ecr.aws/docker/library/busybox:1.37.0"``);
  the image is Docker's official busybox on its ECR Public mirror.
- The checks are the BOOT checks a Slurm gate runs for the same :class:`~fmconstructs.health.NodeHealthOptions`
  (``GpuNodeGroup(node_checks=NodeHealthOptions(...))``; True: the defaults), from the same spec
  (:meth:`~fmconstructs.health.NodeHealthOptions.spec_for`): DCGM diagnostics at ``dcgm_level`` (2 by default),
  the group's first Lustre mount when it mounts one on the hosts (:meth:`GpuNodeGroup.add_lustre_client`; a file
  system reached only through the FSx CSI driver has no host mount to check). What differs on EKS is data: the EKS
  AL2023 NVIDIA AMI has no DCGM (awslabs/amazon-eks-ami ``install-nvidia-driver.sh`` installs the driver, Fabric
  Manager, IMEX and the container toolkit), so with a DCGM level the gate first installs it on the host when
  ``dcgmi`` is missing (``host_setup`` of the gate: :func:`fmconstructs.health.install.dcgm_host_commands`, DCGM
  from NVIDIA's CUDA repository, host engine ``nvidia-dcgm``; once per node, the root volume keeps it across
  reboots); where it cannot be installed the ``dcgm-diag`` check fails and the node keeps its taint. The
  node monitoring agent (auto repair) runs its own DCGM host engine besides (its chart's ``dcgm-server``
  DaemonSet) and reports ``DCGMDiagnosticFailure`` (EKS User Guide "node-health-nma"); ``dcgm_level=None`` leaves
  DCGM to it.

RBAC and the own-node restriction: the gate's ServiceAccount has a ClusterRole with ``get`` and ``patch`` on
``nodes`` and nothing else. RBAC alone cannot limit that to the node the pod runs on: ``resourceNames`` would have to
list every node name in advance, and the NodeRestriction admission plugin limits only kubelets (users
``system:node:<name>`` in ``system:nodes``; Kubernetes "Admission Control", NodeRestriction: from memory, page not
read here, UNCONFIRMED), not service accounts. A ValidatingAdmissionPolicy (``admissionregistration.k8s.io/v1``, GA
in Kubernetes 1.30 per Kubernetes "Validating Admission Policy": UNCONFIRMED from the text seen; the v1 schema
validates in kubernetes-validate's 1.35 schemas) can: pod-bound service account tokens carry the node's name in
the user's extra field ``authentication.kubernetes.io/node-name`` (k8s.io/apiserver ``serviceaccount.NodeNameKey``;
feature ``ServiceAccountTokenPodNodeInfo``, on by default from 1.30: UNCONFIRMED), so the policy denies
any update by that ServiceAccount to another node, any change to taints other than removing this one, any change to
labels, any cordon, any uncordon of a node whose cordon does not carry ``fmconstructs.io/cordoned-by: remediation``,
and any change to annotations other than ``fmconstructs.io/node-checks`` besides removing remediation's mark and
reason. It is added on clusters at Kubernetes 1.30 or later.

Node auto repair (``GpuNodeGroup(enable_node_auto_repair=True)``, the default): EKS "node-health": "By itself, node
auto repair can react to the ``Ready`` condition of the ``kubelet`` and any node objects that are manually deleted.
When paired with the node monitoring agent, node auto repair can react to more conditions" (``AcceleratedHardware
Ready`` among them: GPU Xid, NVLink, double-bit errors; "node-health-nma"). A group with auto repair therefore
installs the ``eks-node-monitoring-agent`` add-on ("For other cluster types, you can add the monitoring agent as an
Amazon EKS add-on") and depends on it, so its nodes join with the agent present.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import Aspects, IAspect, IStableStringProducer, Lazy, Stack
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct, IConstruct

from .._validate import located
from ..errors import FmTypeError, FmValidationError
from ..health import NodeHealthOptions
from ..health.install import dcgm_host_commands
from ..health.kubernetes_gate import render_kubernetes_node_gate
from ..health.metric_names import (
    CORDONED_BY_ANNOTATION,
    CORDONED_BY_REMEDIATION,
    NODE_EXPORTER_TEXTFILE_DIR,
    REMEDIATION_REASON_ANNOTATION,
)
from .addons import NODE_CHECKS_TAINT_KEY, check_version, gpu_tolerations
from .versions import version_tuple

if TYPE_CHECKING:
    from .cluster import GpuEksCluster
    from .node_group import GpuNodeGroup

__all__ = [
    "MIN_VALIDATING_ADMISSION_POLICY_VERSION",
    "NODE_CHECKS_ANNOTATION",
    "NODE_CHECKS_GROUP_LABEL",
    "NODE_CHECKS_IMAGE",
    "NODE_CHECKS_NAMESPACE",
    "NODE_CHECKS_SERVICE_ACCOUNT",
    "NODE_CHECKS_TAINT_KEY",
    "NODE_CHECKS_TAINT_VALUE",
    "NODE_MONITORING_AGENT_ADDON_NAME",
    "NODE_MONITORING_AGENT_ADDON_VERSION",
    "EksNodeChecks",
    "add_node_monitoring_agent",
    "node_checks_config_map",
    "node_checks_daemon_set",
    "node_checks_daemonset_manifests",
    "node_checks_policy_manifests",
    "node_checks_rbac_manifests",
    "node_checks_script_name",
    "node_checks_taint",
    "node_monitoring_agent_configuration",
]

#: The taint's value while the checks have not passed (``fmconstructs.io/node-checks=pending:NoSchedule``).
NODE_CHECKS_TAINT_VALUE = "pending"
#: The node annotation with the gate's result: ``PASS <n> checks in <s>s`` or ``FAIL <check>: <reason>``.
NODE_CHECKS_ANNOTATION = "fmconstructs.io/node-checks"
#: The node label that selects a group's nodes for its gate DaemonSet.
NODE_CHECKS_GROUP_LABEL = "fmconstructs.io/node-checks-group"
#: Where the gate's ServiceAccount, ConfigMaps and DaemonSets live (``system-node-critical`` pods, like the other
#: node agents).
NODE_CHECKS_NAMESPACE = "kube-system"
NODE_CHECKS_SERVICE_ACCOUNT = "fmconstructs-node-checks"
#: The gate's image: only ``sh``, ``cat``, ``nsenter`` and ``sleep`` are used (the checks run on the host). Docker's
#: official busybox image on its ECR Public mirror (amd64 and arm64), the tag NVIDIA/NVSentinel's janitor-provider
#: pins for its nsenter pods (``defaultRebootImage``).
NODE_CHECKS_IMAGE = "public.ecr.aws/docker/library/busybox:1.37.0"
#: ValidatingAdmissionPolicy is GA (``admissionregistration.k8s.io/v1``) from Kubernetes 1.30.
MIN_VALIDATING_ADMISSION_POLICY_VERSION: tuple[int, int] = (1, 30)
#: The EKS add-on name of the node monitoring agent (EKS User Guide "node-health"; aws/eks-node-monitoring-agent).
NODE_MONITORING_AGENT_ADDON_NAME = "eks-node-monitoring-agent"
#: The add-on version installed by default. Source: aws/eks-node-monitoring-agent tag v1.7.0 (CHANGELOG "[v1.7.0] -
#: 2026-08-04"), ``charts/eks-node-monitoring-agent/values.yaml`` ``nodeAgent.image.tag: v1.7.0-eksbuild.1``, the
#: build of the agent image the add-on runs (every release tag v1.6.0 ... v1.7.0 has ``<tag>-eksbuild.1`` there).
#: That EKS lists the add-on under the same ``addonVersion`` string, and for every Kubernetes version and Region, is
#: UNCONFIRMED (``aws eks describe-addon-versions --addon-name eks-node-monitoring-agent`` not seen): if a deploy
#: reports the version unknown, pass ``addon_version=`` with one that command lists.
NODE_MONITORING_AGENT_ADDON_VERSION = "v1.7.0-eksbuild.1"  # agent repo values.yaml; add-on id UNCONFIRMED

_NAME = "fmconstructs-node-checks"
_SCRIPT_DIR = "/etc/fmconstructs"
_SCRIPT_FILE = "node-gate.sh"
_SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
# The pod's command: token and CA into the environment, the gate on the host, then idle (a DaemonSet pod that exits
# is restarted, which would run the checks again).
_WRAPPER = (
    f'KUBE_TOKEN="$(cat {_SA_DIR}/token)"; KUBE_CA_PEM="$(cat {_SA_DIR}/ca.crt)"; export KUBE_TOKEN KUBE_CA_PEM; '
    f"nsenter --target 1 --mount --uts --ipc --net --pid -- /bin/bash -s < {_SCRIPT_DIR}/{_SCRIPT_FILE}; "
    'echo "fmconstructs node gate exited $?"; while true; do sleep 3600; done'
)
_GROUP_SLUG = re.compile(r"[^a-z0-9-]+")


def node_checks_taint() -> eks.TaintSpec:
    """``fmconstructs.io/node-checks=pending:NoSchedule``: the taint GPU nodes join with while their checks run."""
    return eks.TaintSpec(key=NODE_CHECKS_TAINT_KEY, value=NODE_CHECKS_TAINT_VALUE, effect=eks.TaintEffect.NO_SCHEDULE)


def node_checks_group_name(instance_type: str, construct_path: str) -> str:
    """A DNS label naming a node group's gate: ``<instance type>-<8 hex of its construct path>``
    (``p5en-48xlarge-1a2b3c4d``), stable across synths, unique per group."""
    digest = hashlib.sha256(construct_path.encode()).hexdigest()[:8]
    slug = _GROUP_SLUG.sub("-", instance_type.lower()).strip("-")[:40]
    return f"{slug}-{digest}"


def node_checks_rbac_manifests() -> list[dict[str, Any]]:
    """The gate's ServiceAccount, and a ClusterRole with ``get`` and ``patch`` on ``nodes`` only, bound to it."""
    role_ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": _NAME}
    subject = {"kind": "ServiceAccount", "name": NODE_CHECKS_SERVICE_ACCOUNT, "namespace": NODE_CHECKS_NAMESPACE}
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": NODE_CHECKS_SERVICE_ACCOUNT, "namespace": NODE_CHECKS_NAMESPACE},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": _NAME},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": _NAME},
            "roleRef": role_ref,
            "subjects": [subject],
        },
    ]


def _or_empty(path: str, empty: str) -> str:
    """CEL: ``path`` when set, else ``empty`` (``object.spec.taints`` is absent on a node without taints)."""
    parent, _, field = path.rpartition(".")
    return f"(has({parent}.{field}) ? {path} : {empty})"


def node_checks_policy_manifests() -> list[dict[str, Any]]:
    """A ValidatingAdmissionPolicy and its binding: the gate's ServiceAccount may update only its own node, and only
    to remove the node-checks taint, set the node-checks annotation and lift a cordon that remediation marked (with
    its mark and reason annotations; see the module notes)."""
    taints, old_taints = _or_empty("object.spec.taints", "[]"), _or_empty("oldObject.spec.taints", "[]")
    labels, old_labels = _or_empty("object.metadata.labels", "{}"), _or_empty("oldObject.metadata.labels", "{}")
    notes, old_notes = (
        _or_empty("object.metadata.annotations", "{}"),
        _or_empty("oldObject.metadata.annotations", "{}"),
    )
    key, note, mark = NODE_CHECKS_TAINT_KEY, NODE_CHECKS_ANNOTATION, CORDONED_BY_ANNOTATION
    removable = f"'{CORDONED_BY_ANNOTATION}', '{REMEDIATION_REASON_ANNOTATION}'"
    cordoned = "(has(object.spec.unschedulable) && object.spec.unschedulable)"
    was_cordoned = "(has(oldObject.spec.unschedulable) && oldObject.spec.unschedulable)"
    validations = [
        (
            f"'{_NODE_NAME_EXTRA}' in request.userInfo.extra && "
            f"request.userInfo.extra['{_NODE_NAME_EXTRA}'].exists(n, n == object.metadata.name)",
            "the node-checks service account may update only the node its pod runs on",
        ),
        (
            f"{taints} == {old_taints} || {taints} == {old_taints}.filter(t, t.key != '{key}')",
            f"the node-checks service account may only remove the {key} taint",
        ),
        (f"{labels} == {old_labels}", "the node-checks service account may not change node labels"),
        (
            f"{cordoned} == {was_cordoned} || (!{cordoned} && {old_notes}.exists(k, k == '{mark}' && "
            f"{old_notes}[k] == '{CORDONED_BY_REMEDIATION}'))",
            f"the node-checks service account may not cordon nodes, and may uncordon only a node whose cordon "
            f"carries {mark}: {CORDONED_BY_REMEDIATION}",
        ),
        (
            f"{old_notes}.all(k, k == '{note}' || (k in [{removable}] && !(k in {notes})) || "
            f"(k in {notes} && {notes}[k] == {old_notes}[k])) && "
            f"{notes}.all(k, k == '{note}' || k in {old_notes})",
            f"the node-checks service account may change only the {note} annotation (and remove {mark})",
        ),
    ]
    username = f"system:serviceaccount:{NODE_CHECKS_NAMESPACE}:{NODE_CHECKS_SERVICE_ACCOUNT}"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": _NAME},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["nodes"]}
                ]
            },
            "matchConditions": [
                {"name": "node-checks-service-account", "expression": f"request.userInfo.username == '{username}'"}
            ],
            "validations": [{"expression": expression, "message": message} for expression, message in validations],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": _NAME},
        "spec": {"policyName": _NAME, "validationActions": ["Deny"]},
    }
    return [policy, binding]


def node_checks_config_map(name: str, script: str) -> dict[str, Any]:
    """The ConfigMap ``kube-system/<name>`` holding ``script`` (the gate) as ``node-gate.sh``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NODE_CHECKS_NAMESPACE, "labels": {"app.kubernetes.io/name": _NAME}},
        "data": {_SCRIPT_FILE: script},
    }


def node_checks_daemon_set(
    group: str,
    config_map: str,
    *,
    image: str = NODE_CHECKS_IMAGE,
    textfile_dir: str | None = NODE_EXPORTER_TEXTFILE_DIR,
) -> dict[str, Any]:
    """The DaemonSet that runs the gate of ConfigMap ``config_map`` on the host of each node labelled
    ``fmconstructs.io/node-checks-group=<group>`` (see the module notes for the pod's settings)."""
    name = f"{_NAME}-{group}"
    labels = {"app.kubernetes.io/name": _NAME, NODE_CHECKS_GROUP_LABEL: group}
    container = {
        "name": "gate",
        "image": image,
        "command": ["sh", "-c", _WRAPPER],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "securityContext": {"privileged": True},
        # 1 GiB: the host commands run in the pod's cgroup, and dnf reading NVIDIA's CUDA repository metadata (the DCGM
        # install) needs more than the checks (the library's margin; dnf's peak is not documented: UNCONFIRMED).
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "1Gi"}},
        "volumeMounts": [
            {"name": "gate", "mountPath": _SCRIPT_DIR, "readOnly": True},
            *([{"name": "textfile", "mountPath": textfile_dir}] if textfile_dir else []),
        ],
    }
    volumes: list[dict[str, Any]] = [{"name": "gate", "configMap": {"name": config_map, "defaultMode": 0o555}}]
    if textfile_dir:
        volumes.append({"name": "textfile", "hostPath": {"path": textfile_dir, "type": "DirectoryOrCreate"}})
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NODE_CHECKS_NAMESPACE, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": NODE_CHECKS_SERVICE_ACCOUNT,
                    "hostPID": True,
                    "priorityClassName": "system-node-critical",
                    "nodeSelector": {NODE_CHECKS_GROUP_LABEL: group},
                    "tolerations": [{"operator": "Exists"}],
                    "terminationGracePeriodSeconds": 5,
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def node_checks_daemonset_manifests(
    group: str, script: str, *, image: str = NODE_CHECKS_IMAGE, textfile_dir: str | None = NODE_EXPORTER_TEXTFILE_DIR
) -> list[dict[str, Any]]:
    """A ConfigMap ``fmconstructs-node-checks-<group>`` with ``script`` and the group's DaemonSet that runs it
    (:func:`node_checks_config_map`, :func:`node_checks_daemon_set`). :class:`EksNodeChecks` shares one ConfigMap
    between the groups whose gates are the same instead (:func:`node_checks_script_name`).

    :param textfile_dir: the host directory the checks write their metrics to (the spec's ``textfile_dir``): a
        ``hostPath`` volume ``DirectoryOrCreate`` at the same path, so the kubelet creates it before the gate runs
        (the checks skip their metrics when it is missing) and node exporter reads it
        (:func:`fmconstructs.observability.eks.node_exporter_manifests`). None: no metrics, no volume."""
    name = f"{_NAME}-{group}"
    config_map = node_checks_config_map(name, script)
    config_map["metadata"]["labels"][NODE_CHECKS_GROUP_LABEL] = group
    return [config_map, node_checks_daemon_set(group, name, image=image, textfile_dir=textfile_dir)]


def node_checks_script_name(instance_type: str, script: str) -> str:
    """The shared gate ConfigMap of every group of ``instance_type`` whose gate is ``script``:
    ``fmconstructs-node-checks-<instance type>-script-<8 hex of the script>`` (content-addressed: a changed gate is a
    new ConfigMap, and the groups' DaemonSets roll to it)."""
    slug = _GROUP_SLUG.sub("-", instance_type.lower()).strip("-")[:40]
    return f"{_NAME}-{slug}-script-{hashlib.sha256(script.encode()).hexdigest()[:8]}"


def node_monitoring_agent_configuration() -> dict[str, Any]:
    """The add-on's configuration values: the agent's DCGM host engine (``dcgmAgent``, chart default ``tolerations:
    []``) also runs on tainted GPU nodes. The agent itself tolerates every taint (chart default ``nodeAgent.
    tolerations: [{operator: Exists}]``). Keys: aws/eks-node-monitoring-agent ``charts/configuration.schema.json``
    (``dcgmAgent.tolerations``) and ``charts/eks-node-monitoring-agent/values.yaml``; that every add-on version's
    schema accepts ``dcgmAgent.tolerations`` is UNCONFIRMED (``aws eks describe-addon-configuration``)."""
    return {"dcgmAgent": {"tolerations": gpu_tolerations()}}


def add_node_monitoring_agent(cluster: GpuEksCluster, *, addon_version: str | None = None) -> eks.Addon:
    """The ``eks-node-monitoring-agent`` EKS add-on of ``cluster`` (added once; child ``NodeMonitoringAgent``).

    ``addon_version`` default: :data:`NODE_MONITORING_AGENT_ADDON_VERSION` (pinned, with its source there; list the
    others with ``aws eks describe-addon-versions --addon-name eks-node-monitoring-agent``)."""
    check_version("addon_version", addon_version)
    existing = cluster.node.try_find_child("NodeMonitoringAgent")
    if isinstance(existing, eks.Addon):
        return existing
    addon = eks.Addon(
        cluster,
        "NodeMonitoringAgent",
        cluster=cluster.icluster,
        addon_name=NODE_MONITORING_AGENT_ADDON_NAME,
        addon_version=NODE_MONITORING_AGENT_ADDON_VERSION if addon_version is None else addon_version,
        configuration_values=node_monitoring_agent_configuration(),
        preserve_on_delete=False,
    )
    if cluster.system_node_group is not None:
        addon.node.add_dependency(cluster.system_node_group)
    return addon


@jsii.implements(IStableStringProducer)
class _ScriptName:
    """The shared gate ConfigMap a group's DaemonSet mounts: set when the gates are shared out at synthesis."""

    def __init__(self) -> None:
        self.value: str | None = None

    def produce(self) -> str | None:
        return self.value


@jsii.implements(IAspect)
class _ShareGates:
    """Renders every group's gate once the tree is complete (Lustre clients may be added after the group) and gives
    the groups with the same gate one ConfigMap (:meth:`EksNodeChecks.share_gates`)."""

    def __init__(self, checks: EksNodeChecks) -> None:
        self._checks = checks

    def visit(self, node: IConstruct) -> None:
        if node is self._checks:
            self._checks.share_gates()


class EksNodeChecks(Construct):
    """The node-join checks of a :class:`~fmconstructs.eks.GpuEksCluster`: RBAC, the own-node admission policy (1.30+),
    one gate DaemonSet per GPU node group and one gate ConfigMap per distinct gate (the groups of one instance type
    with the same checks share it: the gate is about 16 KB, issue 30). Created once per cluster (child
    ``NodeChecks``) by :meth:`for_cluster`; node groups with ``node_checks=True`` add themselves."""

    @located
    def __init__(self, scope: Construct, id: str, *, cluster: GpuEksCluster) -> None:
        from .cluster import GpuEksCluster

        if not isinstance(cluster, GpuEksCluster):
            raise FmTypeError("cluster", cluster, f"a GpuEksCluster (got a {type(cluster).__name__})")
        super().__init__(scope, id)
        self.cluster: GpuEksCluster = cluster
        self.rbac: eks.KubernetesManifest = cluster.cluster.add_manifest(
            "FmNodeChecksRbac", *node_checks_rbac_manifests()
        )
        self.policy: eks.KubernetesManifest | None = None
        if version_tuple(cluster.version) >= MIN_VALIDATING_ADMISSION_POLICY_VERSION:
            self.policy = cluster.cluster.add_manifest("FmNodeChecksPolicy", *node_checks_policy_manifests())
        #: Each group's gate DaemonSet manifest, by the group's ``node_checks_group`` name.
        self.gates: dict[str, eks.KubernetesManifest] = {}
        #: Each shared gate ConfigMap manifest, by ConfigMap name (filled at synthesis).
        self.scripts: dict[str, eks.KubernetesManifest] = {}
        self._pending: list[tuple[GpuNodeGroup, eks.KubernetesManifest, _ScriptName]] = []
        Aspects.of(self).add(_ShareGates(self))

    @classmethod
    def for_cluster(cls, cluster: GpuEksCluster) -> EksNodeChecks:
        existing = cluster.node.try_find_child("NodeChecks")
        if isinstance(existing, EksNodeChecks):
            return existing
        return cls(cluster, "NodeChecks", cluster=cluster)

    def add_node_group(self, group: GpuNodeGroup) -> eks.KubernetesManifest:
        """The gate DaemonSet of ``group`` (its nodes carry ``fmconstructs.io/node-checks-group=<name>``); the node
        group waits for it, so no node joins before its gate exists. Its ConfigMap is shared at synthesis."""
        name = group.node_checks_group
        if name is None:
            raise FmValidationError("group.node_checks", False, "True to add the group's node-checks gate")
        if name in self.gates:
            return self.gates[name]
        script_name = _ScriptName()
        daemon_set = node_checks_daemon_set(name, Lazy.string(script_name))
        manifest: eks.KubernetesManifest
        if Stack.of(group) is Stack.of(self.cluster):
            manifest = self.cluster.cluster.add_manifest(f"FmNodeChecks-{name}", daemon_set)
        else:  # a group in a nested stack (fmconstructs.budgets.node_group_scope): its DaemonSet goes with it
            manifest = eks.KubernetesManifest(
                group, "NodeChecksGate", cluster=self.cluster.icluster, manifest=[daemon_set]
            )
        manifest.node.add_dependency(self.rbac)
        if self.policy is not None:
            manifest.node.add_dependency(self.policy)
        group.nodegroup.node.add_dependency(manifest)
        self.gates[name] = manifest
        self._pending.append((group, manifest, script_name))
        return manifest

    def share_gates(self) -> None:
        """Render each pending group's gate and point its DaemonSet at the ConfigMap of that gate, creating the
        ConfigMap the first time (construct ``FmNodeChecksScript-<8 hex>`` of the cluster); run at synthesis."""
        pending, self._pending = self._pending, []
        for group, manifest, script_name in pending:
            script = _render_gate(group)
            name = node_checks_script_name(group.instance_spec.instance_type, script)
            config_map = self.scripts.get(name)
            if config_map is None:
                config_map = self.cluster.cluster.add_manifest(
                    f"FmNodeChecksScript-{name.rsplit('-', 1)[-1]}", node_checks_config_map(name, script)
                )
                self.scripts[name] = config_map
            script_name.value = name
            manifest.node.add_dependency(config_map)


def _render_gate(group: GpuNodeGroup) -> str:
    """The group's gate: the Slurm backends' BOOT checks for the same options (NodeHealthOptions.spec_for)."""
    options = group.node_health or NodeHealthOptions()
    mounts = group.lustre_clients
    spec = options.spec_for(
        group.instance_spec.instance_type,
        efa_interfaces=group.efa_interface_count,
        lustre_mount_point=mounts[0].mount_point if mounts else None,
    )
    return render_kubernetes_node_gate(
        spec,
        taint_key=NODE_CHECKS_TAINT_KEY,
        annotation_key=NODE_CHECKS_ANNOTATION,
        # the EKS AMI has no DCGM: the gate installs it on the host before the checks (see the module notes)
        host_setup=dcgm_host_commands() if spec.dcgm_level is not None else (),
    )
