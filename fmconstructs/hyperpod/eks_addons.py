"""HyperPodEksAddons: SageMaker HyperPod's optional capabilities that AWS ships as Amazon EKS add-ons
(``AWS::EKS::Addon``), with the prerequisites the SageMaker Developer Guide names for each.

Add-ons (:class:`HyperPodEksAddon`) and what each needs, as the AWS pages say:

- ``amazon-sagemaker-hyperpod-training-operator`` (SageMaker Developer Guide "Installing the training operator",
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator-install.html): before it, a HyperPod cluster
  with EKS orchestration, cert-manager and the EKS Pod Identity Agent add-on (``eks-pod-identity-agent``); an IAM role
  trusted by ``pods.eks.amazonaws.com`` (``sts:AssumeRole``, ``sts:TagSession``) with the AWS managed policy
  ``AmazonSageMakerHyperPodTrainingOperatorAccess``, associated (EKS Pod Identity) with the service account
  ``hp-training-operator-controller-manager`` of namespace ``aws-hyperpod``; ``create-addon ... --resolve-conflicts
  OVERWRITE``; ``--addon-version`` optional (default: the latest). With task governance it needs task governance
  ``v1.3.0-eksbuild.1`` or later (same page, "Task governance (optional)").
- ``amazon-sagemaker-hyperpod-taskgovernance`` (EKS User Guide "AWS add-ons", ``addons-hyperpod``,
  https://docs.aws.amazon.com/eks/latest/userguide/workloads-add-ons-available-eks.html): "This add-on doesn't
  require any permissions". Upgrade page (sagemaker-hyperpod-eks-operate-console-ui-governance-upgrade): version
  ``v1.6.0-eksbuild.1`` packages Kueue v0.19.2, installed with ``--resolve-conflicts OVERWRITE``.
- ``amazon-sagemaker-hyperpod-observability`` (SageMaker Developer Guide "Setting up the SageMaker HyperPod
  observability add-on", hyperpod-observability-addon-setup, and "Troubleshooting the ... observability add-on",
  hyperpod-observability-addon-troubleshooting): needs the EKS Pod Identity Agent add-on and at least one node in
  the HyperPod cluster; its Pod Identity association (namespace ``hyperpod-observability``, service account
  ``hyperpod-observability-operator-otel-collector``, add-on ``amazon-sagemaker-hyperpod-observability``) uses a role
  trusted by ``pods.eks.amazonaws.com`` with ``aws:SourceArn`` (the EKS cluster) and ``aws:SourceAccount``
  conditions, allowed ``aps:RemoteWrite`` on the Prometheus workspace and CloudWatch Logs actions on
  ``/aws/sagemaker/Clusters/*``. The add-on's configuration schema (which workspace, which metrics) was not seen on an
  AWS page: pass it yourself as ``observability_configuration`` (UNCONFIRMED; see ``aws eks
  describe-addon-configuration --addon-name amazon-sagemaker-hyperpod-observability --addon-version <v>``).

Prerequisite add-ons created here (turn off when the cluster already has them):
``eks-pod-identity-agent`` (EKS User Guide "AWS add-ons", ``add-ons-pod-id``: "The Amazon EKS add-on name is
``eks-pod-identity-agent``", it uses the node IAM role) and the community add-on ``cert-manager`` (EKS User Guide
"Community add-ons", community-addons.html#addon-cert-manager: add-on name ``cert-manager``, namespace
``cert-manager``, no service account or IAM policy). HyperPod's dependencies chart keeps its own cert-manager off by
default (:mod:`fmconstructs.hyperpod.eks_dependencies`); do not turn both on.

Left out: ``amazon-sagemaker-hyperpod-inference``. Its prerequisites (an execution role whose trust, per the
inference troubleshooting page, is the cluster's OIDC provider, a TLS bucket, the S3 and FSx CSI drivers and more)
were not all seen on AWS pages.

Ordering: every add-on waits for the cluster's system node group (as the GPU add-ons do), for HyperPod's dependencies
chart when ``dependencies`` is given, and for the HyperPod cluster when ``hyperpod_cluster`` is given (the training
operator needs the HyperPod cluster; observability needs a HyperPod node). The training operator also waits for
cert-manager, the Pod Identity agent, its Pod Identity association and task governance; observability for the agent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any, cast

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, IDependable

from .._validate import check_bool, check_enum, check_scope_id, check_str, located
from ..eks import GpuEksCluster
from ..errors import FmTypeError, FmValidationError, WarningId, add_warning, is_token
from . import _nag
from .cluster import HyperPodCluster
from .eks_dependencies import HyperPodEksDependencies


class HyperPodEksAddon(str, Enum):
    """The HyperPod EKS add-ons this module installs (the value is the EKS add-on name)."""

    #: SageMaker Developer Guide sagemaker-eks-operator-install (``aws eks create-addon --addon-name``).
    TRAINING_OPERATOR = "amazon-sagemaker-hyperpod-training-operator"
    #: EKS User Guide workloads-add-ons-available-eks#addons-hyperpod.
    TASK_GOVERNANCE = "amazon-sagemaker-hyperpod-taskgovernance"
    #: SageMaker Developer Guide hyperpod-observability-addon-troubleshooting (Pod Identity association "Add-on").
    OBSERVABILITY = "amazon-sagemaker-hyperpod-observability"


class HyperPodAddonsWarning:
    """Deprecated: the warning ids of :class:`HyperPodEksAddons` are :class:`~fmconstructs.errors.WarningId` members;
    this name keeps ``HyperPodAddonsWarning.WITHOUT_HYPERPOD_CLUSTER`` working (it *is* the ``WarningId`` member)."""

    WITHOUT_HYPERPOD_CLUSTER = WarningId.HYPERPOD_ADDONS_WITHOUT_HYPERPOD_CLUSTER


#: EKS User Guide workloads-add-ons-available-eks#add-ons-pod-id.
POD_IDENTITY_AGENT_ADDON = "eks-pod-identity-agent"
#: EKS User Guide community-addons#addon-cert-manager.
CERT_MANAGER_ADDON = "cert-manager"
#: The principal of EKS Pod Identity roles and the actions the trust allows (training operator page's CLI step 1;
#: observability troubleshooting page's trust policy). The training operator page also lists
#: ``eks-auth:AssumeRoleForPodIdentity`` in the trust policy; the observability page and the EKS Pod Identity trust
#: do not, and it is not an action a role trust grants, so it is left out.
POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
#: sagemaker-eks-operator-install, CLI steps 2-3.
TRAINING_OPERATOR_MANAGED_POLICY = "AmazonSageMakerHyperPodTrainingOperatorAccess"
TRAINING_OPERATOR_NAMESPACE = "aws-hyperpod"
TRAINING_OPERATOR_SERVICE_ACCOUNT = "hp-training-operator-controller-manager"
#: hyperpod-observability-addon-troubleshooting, "Verify Pod Identity association".
OBSERVABILITY_NAMESPACE = "hyperpod-observability"
OBSERVABILITY_SERVICE_ACCOUNT = "hyperpod-observability-operator-otel-collector"
#: The CloudWatch Logs actions of that page's role policy, on ``/aws/sagemaker/Clusters/*``.
OBSERVABILITY_LOGS_ACTIONS = (
    "logs:CreateLogGroup",
    "logs:CreateLogStream",
    "logs:DescribeLogGroups",
    "logs:DescribeLogStreams",
    "logs:PutLogEvents",
    "logs:GetLogEvents",
    "logs:FilterLogEvents",
    "logs:GetLogRecord",
    "logs:StartQuery",
    "logs:StopQuery",
    "logs:GetQueryResults",
)
OBSERVABILITY_LOG_GROUP_PREFIX = "/aws/sagemaker/Clusters/"
#: sagemaker-eks-operator-install "Task governance (optional)": "you must use version v1.3.0-eksbuild.1 or higher".
TASK_GOVERNANCE_MIN_VERSION_FOR_TRAINING_OPERATOR = (1, 3, 0)
#: The ``create-addon ... --resolve-conflicts OVERWRITE`` of the training operator and task governance pages.
RESOLVE_CONFLICTS = "OVERWRITE"

#: EKS add-on versions look like ``v1.6.0-eksbuild.1`` (every version on the pages above).
_ADDON_VERSION = re.compile(r"v(\d+)\.(\d+)\.(\d+)-eksbuild\.\d+")
_WORKSPACE_ARN = re.compile(r"arn:aws[a-z-]*:aps:[a-z0-9-]+:\d{12}:workspace/ws-[A-Za-z0-9-]+")
_IDS = {
    HyperPodEksAddon.TRAINING_OPERATOR: "TrainingOperator",
    HyperPodEksAddon.TASK_GOVERNANCE: "TaskGovernance",
    HyperPodEksAddon.OBSERVABILITY: "Observability",
}


def _check_addons(addons: object) -> tuple[HyperPodEksAddon, ...]:
    if isinstance(addons, str | bytes | Mapping) or not isinstance(addons, Sequence | set | frozenset):
        raise FmTypeError("addons", addons, f"a list of HyperPodEksAddon (got a {type(addons).__name__})")
    checked = tuple(check_enum(f"addons[{i}]", a, HyperPodEksAddon) for i, a in enumerate(addons))
    if not checked:
        raise FmValidationError("addons", list(addons), "at least one HyperPodEksAddon")
    duplicates = sorted({a.name for a in checked if checked.count(a) > 1})
    if duplicates:
        raise FmValidationError("addons", [a.name for a in checked], f"each add-on once (repeated: {duplicates})")
    return checked


def _version_tuple(version: str) -> tuple[int, int, int] | None:
    match = _ADDON_VERSION.fullmatch(version)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def _check_versions(versions: object, addons: tuple[HyperPodEksAddon, ...]) -> dict[HyperPodEksAddon, str]:
    if versions is None:
        return {}
    if not isinstance(versions, Mapping):
        raise FmTypeError("versions", versions, f"a dict of HyperPodEksAddon to str (got a {type(versions).__name__})")
    checked: dict[HyperPodEksAddon, str] = {}
    for key, version in versions.items():
        addon = check_enum("versions key", key, HyperPodEksAddon)
        if addon not in addons:
            raise FmValidationError(
                f"versions[{addon.name}]", version, f"a version of an add-on in addons ({[a.name for a in addons]})"
            )
        parameter = f"versions[{addon.name}]"
        text = check_str(parameter, version, allowed="an EKS add-on version such as 'v1.6.0-eksbuild.1'")
        if not is_token(text) and _version_tuple(text) is None:
            raise FmValidationError(parameter, text, "an EKS add-on version such as 'v1.6.0-eksbuild.1'")
        checked[addon] = text
    governance = checked.get(HyperPodEksAddon.TASK_GOVERNANCE)
    if HyperPodEksAddon.TRAINING_OPERATOR in addons and governance is not None and not is_token(governance):
        parsed = _version_tuple(governance)
        if parsed is not None and parsed < TASK_GOVERNANCE_MIN_VERSION_FOR_TRAINING_OPERATOR:
            raise FmValidationError(
                "versions[TASK_GOVERNANCE]",
                governance,
                "v1.3.0-eksbuild.1 or later with the training operator (SageMaker Developer Guide "
                "sagemaker-eks-operator-install, 'Task governance (optional)')",
            )
    return checked


def _check_workspace_arn(arn: object) -> str:
    text: str = check_str(
        "prometheus_workspace_arn",
        arn,
        pattern=_WORKSPACE_ARN,
        allowed="a Prometheus workspace ARN (arn:aws:aps:<region>:<account>:workspace/ws-...)",
    )
    return text


def _check_dependencies(dependencies: object, cluster: GpuEksCluster) -> None:
    """HyperPod's dependencies chart (or None) on ``cluster``."""
    if dependencies is None:
        return
    if not isinstance(dependencies, HyperPodEksDependencies):
        raise FmTypeError(
            "dependencies", dependencies, f"a HyperPodEksDependencies (got a {type(dependencies).__name__})"
        )
    if dependencies.cluster is not cluster:
        raise FmValidationError(
            "dependencies", dependencies.node.path, f"HyperPod's dependencies chart on {cluster.node.path}"
        )


def _check_observability(
    observability: bool, prometheus_workspace_arn: object, observability_configuration: object
) -> str | None:
    """The workspace ARN (required with OBSERVABILITY, refused without) and the add-on's configuration (a mapping,
    OBSERVABILITY only); returns the checked ARN."""
    workspace_arn: str | None = None
    if observability:
        if prometheus_workspace_arn is None:
            raise FmValidationError(
                "prometheus_workspace_arn", None, "a Prometheus workspace ARN with HyperPodEksAddon.OBSERVABILITY"
            )
        workspace_arn = _check_workspace_arn(prometheus_workspace_arn)
    elif prometheus_workspace_arn is not None:
        raise FmValidationError(
            "prometheus_workspace_arn", prometheus_workspace_arn, "None without HyperPodEksAddon.OBSERVABILITY"
        )
    if observability_configuration is not None:
        if not observability:
            raise FmValidationError(
                "observability_configuration", observability_configuration, "None without OBSERVABILITY"
            )
        if not isinstance(observability_configuration, Mapping):
            raise FmTypeError(
                "observability_configuration",
                observability_configuration,
                f"a dict (the add-on's JSON configuration) (got a {type(observability_configuration).__name__})",
            )
    return workspace_arn


class HyperPodEksAddons(Construct):
    """HyperPod's optional EKS add-ons on ``cluster``, with their Pod Identity roles and prerequisite add-ons.

    :param cluster: the fmconstructs GpuEksCluster that orchestrates the HyperPod cluster.
    :param addons: the :class:`HyperPodEksAddon` members to install (each once).
    :param versions: an EKS add-on version per add-on (``v1.6.0-eksbuild.1``). Default: none, EKS installs the latest
        (``--addon-version`` is optional, sagemaker-eks-operator-install). Pin for repeatable deployments.
    :param hyperpod_cluster: the :class:`HyperPodCluster` on ``cluster``; every add-on waits for it. Default: none (a
        warning when the training operator or observability is asked for: both need an existing HyperPod cluster).
    :param dependencies: HyperPod's dependencies chart on ``cluster``; every add-on waits for it. Default: none.
    :param install_pod_identity_agent: make the training operator and observability add-ons wait for the
        ``eks-pod-identity-agent`` add-on. Default: True. GpuEksCluster installs that add-on itself (the VPC CNI's role
        uses EKS Pod Identity, :mod:`fmconstructs.eks.vpc_cni`), so this construct reuses the cluster's
        (:attr:`pod_identity_agent`) and never creates a second one (EKS takes one add-on of a name per cluster);
        False: the add-ons do not wait for it.
    :param install_cert_manager: create the ``cert-manager`` community add-on with the training operator.
        Default: True (False when cert-manager is installed another way).
    :param prometheus_workspace_arn: the workspace observability writes to (its role's ``aps:RemoteWrite``);
        required with OBSERVABILITY.
    :param observability_configuration: the observability add-on's ``ConfigurationValues`` (JSON object), passed
        as given. Default: none. Its schema is UNCONFIRMED (no AWS page seen).
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: GpuEksCluster,
        addons: Sequence[HyperPodEksAddon],
        versions: Mapping[HyperPodEksAddon, str] | None = None,
        hyperpod_cluster: HyperPodCluster | None = None,
        dependencies: HyperPodEksDependencies | None = None,
        install_pod_identity_agent: bool = True,
        install_cert_manager: bool = True,
        prometheus_workspace_arn: str | None = None,
        observability_configuration: Mapping[str, Any] | None = None,
    ) -> None:
        check_scope_id(scope, id)
        if not isinstance(cluster, GpuEksCluster):
            raise FmTypeError("cluster", cluster, f"an fmconstructs GpuEksCluster (got a {type(cluster).__name__})")
        selected = _check_addons(addons)
        pinned = _check_versions(versions, selected)
        self._check_hyperpod_cluster(hyperpod_cluster, cluster)
        _check_dependencies(dependencies, cluster)
        install_agent = check_bool("install_pod_identity_agent", install_pod_identity_agent)
        install_cm = check_bool("install_cert_manager", install_cert_manager)
        observability = HyperPodEksAddon.OBSERVABILITY in selected
        workspace_arn = _check_observability(observability, prometheus_workspace_arn, observability_configuration)
        super().__init__(scope, id)
        self.cluster = cluster
        self.selected = selected
        self.hyperpod_cluster = hyperpod_cluster
        waits_for = self._waits_for(dependencies)
        self._build_prerequisites(waits_for, install_agent=install_agent, install_cert_manager=install_cm)
        self.addons: dict[HyperPodEksAddon, eks.CfnAddon] = {}
        self.roles: dict[HyperPodEksAddon, iam.Role] = {}
        self.pod_identity_associations: dict[HyperPodEksAddon, eks.CfnPodIdentityAssociation] = {}
        if HyperPodEksAddon.TASK_GOVERNANCE in selected:
            self.addons[HyperPodEksAddon.TASK_GOVERNANCE] = self._addon(
                _IDS[HyperPodEksAddon.TASK_GOVERNANCE],
                HyperPodEksAddon.TASK_GOVERNANCE.value,
                pinned.get(HyperPodEksAddon.TASK_GOVERNANCE),
                waits_for,
                resolve_conflicts=RESOLVE_CONFLICTS,
            )
        if HyperPodEksAddon.TRAINING_OPERATOR in selected:
            self._build_training_operator(pinned, waits_for)
        if observability and workspace_arn is not None:
            self._build_observability(pinned, waits_for, workspace_arn, observability_configuration)
        _nag.acknowledge_addons(self)

    def _waits_for(self, dependencies: HyperPodEksDependencies | None) -> list[IDependable]:
        """What every add-on waits for: the cluster's system node group, the dependencies chart, the HyperPod
        cluster."""
        waits_for: list[IDependable] = []
        if self.cluster.system_node_group is not None:
            waits_for.append(self.cluster.system_node_group)
        if dependencies is not None:
            waits_for.append(dependencies.chart)
        if self.hyperpod_cluster is not None:
            waits_for.append(self.hyperpod_cluster.resource)
        return waits_for

    def _build_prerequisites(
        self, waits_for: Sequence[IDependable], *, install_agent: bool, install_cert_manager: bool
    ) -> None:
        """The cluster's Pod Identity agent (reused), cert-manager with the training operator, and the warning when
        the add-ons that need a HyperPod cluster do not wait for one."""
        selected = self.selected
        needs_pod_identity = (
            HyperPodEksAddon.TRAINING_OPERATOR in selected or HyperPodEksAddon.OBSERVABILITY in selected
        )
        self.pod_identity_agent: eks.CfnAddon | None = None
        if needs_pod_identity and install_agent:
            # The cluster's own add-on (aws_eks_v2 Cluster.eks_pod_identity_agent, created by GpuEksCluster).
            agent = self.cluster.cluster.eks_pod_identity_agent
            self.pod_identity_agent = cast(eks.CfnAddon, agent.node.default_child) if agent is not None else None
        self.cert_manager: eks.CfnAddon | None = None
        if HyperPodEksAddon.TRAINING_OPERATOR in selected and install_cert_manager:
            self.cert_manager = self._addon("CertManager", CERT_MANAGER_ADDON, None, waits_for)
        if needs_pod_identity and self.hyperpod_cluster is None:
            add_warning(
                self,
                WarningId.HYPERPOD_ADDONS_WITHOUT_HYPERPOD_CLUSTER,
                "the HyperPod training operator needs an existing HyperPod cluster and the observability add-on at "
                "least one HyperPod node (SageMaker Developer Guide sagemaker-eks-operator-install, hyperpod-"
                "observability-addon-setup): pass hyperpod_cluster so that the add-ons wait for it",
            )

    def _pod_identity_principal(self) -> iam.IPrincipal:
        """EKS Pod Identity, limited to this cluster and account (``aws:SourceArn``, ``aws:SourceAccount``)."""
        trust_conditions = {
            "StringEquals": {"aws:SourceArn": self.cluster.cluster_arn, "aws:SourceAccount": Stack.of(self).account}
        }
        return iam.ServicePrincipal(POD_IDENTITY_PRINCIPAL, conditions=trust_conditions).with_session_tags()

    def _build_training_operator(
        self, pinned: Mapping[HyperPodEksAddon, str], waits_for: Sequence[IDependable]
    ) -> None:
        """The training operator's Pod Identity role and association, then its add-on (after cert-manager, the agent
        and task governance)."""
        role = iam.Role(
            self,
            "TrainingOperatorRole",
            assumed_by=self._pod_identity_principal(),
            description="HyperPod training operator (EKS Pod Identity, aws-hyperpod namespace)",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(TRAINING_OPERATOR_MANAGED_POLICY)],
        )
        association = eks.CfnPodIdentityAssociation(
            self,
            "TrainingOperatorPodIdentity",
            cluster_name=self.cluster.cluster_name,
            namespace=TRAINING_OPERATOR_NAMESPACE,
            service_account=TRAINING_OPERATOR_SERVICE_ACCOUNT,
            role_arn=role.role_arn,
        )
        before = [*waits_for, association]
        before += [a for a in (self.pod_identity_agent, self.cert_manager) if a is not None]
        if HyperPodEksAddon.TASK_GOVERNANCE in self.addons:
            before.append(self.addons[HyperPodEksAddon.TASK_GOVERNANCE])
        self.roles[HyperPodEksAddon.TRAINING_OPERATOR] = role
        self.pod_identity_associations[HyperPodEksAddon.TRAINING_OPERATOR] = association
        self.addons[HyperPodEksAddon.TRAINING_OPERATOR] = self._addon(
            _IDS[HyperPodEksAddon.TRAINING_OPERATOR],
            HyperPodEksAddon.TRAINING_OPERATOR.value,
            pinned.get(HyperPodEksAddon.TRAINING_OPERATOR),
            before,
            resolve_conflicts=RESOLVE_CONFLICTS,
        )

    def _build_observability(
        self,
        pinned: Mapping[HyperPodEksAddon, str],
        waits_for: Sequence[IDependable],
        workspace_arn: str,
        observability_configuration: Mapping[str, Any] | None,
    ) -> None:
        """The observability add-on's role (remote write to the workspace, its log groups) and the add-on, which
        carries its Pod Identity association."""
        stack = Stack.of(self)
        role = iam.Role(
            self,
            "ObservabilityRole",
            assumed_by=self._pod_identity_principal(),
            description="HyperPod observability add-on (EKS Pod Identity, hyperpod-observability otel collector)",
        )
        role.add_to_policy(
            iam.PolicyStatement(sid="PrometheusAccess", actions=["aps:RemoteWrite"], resources=[workspace_arn])
        )
        log_group = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=f"{OBSERVABILITY_LOG_GROUP_PREFIX}*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="CloudwatchLogsAccess",
                actions=list(OBSERVABILITY_LOGS_ACTIONS),
                resources=[log_group, f"{log_group}:log-stream:*"],
            )
        )
        configuration = (
            stack.to_json_string(dict(observability_configuration)) if observability_configuration is not None else None
        )
        before = [*waits_for, *(a for a in (self.pod_identity_agent,) if a is not None)]
        addon = self._addon(
            _IDS[HyperPodEksAddon.OBSERVABILITY],
            HyperPodEksAddon.OBSERVABILITY.value,
            pinned.get(HyperPodEksAddon.OBSERVABILITY),
            before,
            resolve_conflicts=RESOLVE_CONFLICTS,
            configuration_values=configuration,
            pod_identity_associations=[
                eks.CfnAddon.PodIdentityAssociationProperty(
                    role_arn=role.role_arn, service_account=OBSERVABILITY_SERVICE_ACCOUNT
                )
            ],
        )
        # The role's policy must exist before EKS hands the collector its credentials.
        addon.node.add_dependency(role)
        self.roles[HyperPodEksAddon.OBSERVABILITY] = role
        self.addons[HyperPodEksAddon.OBSERVABILITY] = addon

    @staticmethod
    def _check_hyperpod_cluster(hyperpod_cluster: object, cluster: GpuEksCluster) -> None:
        if hyperpod_cluster is None:
            return
        if not isinstance(hyperpod_cluster, HyperPodCluster):
            raise FmTypeError(
                "hyperpod_cluster", hyperpod_cluster, f"a HyperPodCluster (got a {type(hyperpod_cluster).__name__})"
            )
        if getattr(hyperpod_cluster.orchestrator, "eks_cluster", None) is not cluster:
            raise FmValidationError(
                "hyperpod_cluster",
                hyperpod_cluster.node.path,
                f"a HyperPodCluster orchestrated by {cluster.node.path} (HyperPodOrchestrator.eks(cluster))",
            )

    def _addon(
        self,
        id: str,
        name: str,
        version: str | None,
        after: Sequence[IDependable],
        **props: Any,
    ) -> eks.CfnAddon:
        addon = eks.CfnAddon(
            self, id, cluster_name=self.cluster.cluster_name, addon_name=name, addon_version=version, **props
        )
        for dependency in after:
            addon.node.add_dependency(dependency)
        return addon

    def role(self, addon: HyperPodEksAddon) -> iam.IRole | None:
        """The Pod Identity role created for ``addon`` (None for task governance, which needs none)."""
        return self.roles.get(check_enum("addon", addon, HyperPodEksAddon))
