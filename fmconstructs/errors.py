"""The library's one exception type and its warning ids.

Misuse raises :class:`FmValidationError` at construction time; environment-dependent or soft problems become
``Annotations`` warnings with stable ids (``fmconstructs:<id>``) so that users can acknowledge them and tests can
assert them.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from constructs import IConstruct

# No aws_cdk/constructs import at module level: the ``fmc`` command imports this module (through catalog, sizing and
# the interface planner) and must run where Node.js, which importing aws_cdk starts, is absent.


def _is_unresolved(value: object) -> bool:
    """``Token.is_unresolved(value)``, or False while ``aws_cdk`` is not imported (then no value can be a CDK token:
    tokens are made by aws_cdk), so that asking never starts the jsii runtime."""
    if "aws_cdk" not in sys.modules:
        return False
    from aws_cdk import Token

    return Token.is_unresolved(value)


def is_token(value: object) -> bool:
    """Whether ``value`` is an unresolved CDK token (string, list or number), without handing NaN/inf to jsii.

    Number tokens are finite floats near -1.9e289 (aws-cdk-lib ``TokenMap``), so only such floats are asked about.
    """
    if isinstance(value, bool):
        return False
    if isinstance(value, str):
        # "#{Token[...]}" is one element of an encoded list token (e.g. Fn.get_azs()[0]); Token.is_unresolved does
        # not recognise it on its own, yet it is unknown until deploy time.
        return "#{Token[" in value or ("{Token[" in value and _is_unresolved(value))
    if isinstance(value, float):
        return math.isfinite(value) and value < -1e280 and _is_unresolved(value)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return any("{Token[" in v for v in value) and _is_unresolved(value)
    return False


def describe_value(value: Any) -> str:
    """How a received value appears in an error: tokens as what they are, never as ``${Token[TOKEN.41]}``."""
    if is_token(value):
        return "a deploy-time value (an unresolved CDK token: CfnParameter, import or SSM parameter)"
    if isinstance(value, str) and "${Token[" in value:
        return f"{value!r} (contains a deploy-time value)"
    return repr(value)


class FmValidationError(ValueError):
    """Bad input to an fmconstructs API: names the parameter, the value received and what is allowed."""

    def __init__(self, parameter: str, value: Any, allowed: str) -> None:
        self.parameter = parameter
        self.value = value
        self.allowed = allowed
        self.path: str | None = None
        """The construct path the error was raised under (``Stack/Cluster/P5``), set by the innermost public
        constructor it passed through; None when raised outside a constructor."""
        super().__init__(f"{parameter} must be {allowed}, got {describe_value(value)}")

    def at(self, path: str) -> FmValidationError:
        """Locate the error at construct ``path``: the message gains `` (at <path>)`` at its end, so it still starts
        with the parameter's name. Once: the innermost constructor names the construct; outer ones leave it. Returns
        the same error, to be re-raised."""
        if self.path is None and path:
            self.path = path
            self.args = (f"{self.args[0]} (at {path})", *self.args[1:]) if self.args else (f"at {path}",)
        return self


class FmTypeError(FmValidationError, TypeError):
    """A value of the wrong Python type: a ``TypeError`` (and an :class:`FmValidationError`) naming the parameter."""


def one_of(values: Iterable[Any]) -> str:
    """Render a closed set of allowed values for an error message: ``one of 'a', 'b'``."""
    return "one of " + ", ".join(repr(v.value if isinstance(v, Enum) else v) for v in values)


class WarningId(str, Enum):
    """Stable ids of the warnings fmconstructs adds (acknowledge with ``Annotations.acknowledge_warning``)."""

    PLACEMENT_GROUP_WITH_CAPACITY_BLOCK = "placement-group-with-capacity-block"
    NO_INSTANCE_STORE = "no-instance-store"
    LUSTRE_OVERLAPPING_DATA_REPOSITORY_PATHS = "lustre-overlapping-data-repository-paths"
    GRAFANA_SERVICE_MANAGED_PERMISSIONS = "grafana-service-managed-permissions"
    #: A Grafana workspace whose network access allows only private addresses and lists no VPC endpoint: nothing
    #: can reach it (the provisioner gets HTTP 403 at deploy).
    GRAFANA_PRIVATE_NETWORKS_WITHOUT_ENDPOINT = "grafana-private-networks-without-endpoint"
    #: A bucket a lower-level construct creates without S3 server access logs (cdk-nag S1 acknowledged with this).
    BUCKET_WITHOUT_ACCESS_LOGS = "bucket-without-access-logs"
    LUSTRE_EFA_CONNECTIONS_UNKNOWN = "lustre-efa-connections-unknown"
    PCS_DEPRECATED_SLURM_SETTING = "pcs-deprecated-slurm-setting"
    EKS_NO_GRACEFUL_NODE_SHUTDOWN = "eks-no-graceful-node-shutdown"
    PLACEMENT_GROUP_WITH_CAPACITY_RESERVATION = "placement-group-with-capacity-reservation"
    HYPERPOD_KUBERNETES_VERSION = "hyperpod-kubernetes-version"
    #: FmHyperPodEks-style apps that skip HyperPod's dependencies Helm chart (HyperPod requires it before the cluster).
    HYPERPOD_DEPENDENCIES_NOT_INSTALLED = "hyperpod-dependencies-not-installed"
    #: A HyperPod GPU group mounts an EFA-enabled file system over TCP (its type is not in the catalog).
    HYPERPOD_LUSTRE_OVER_TCP = "hyperpod-lustre-over-tcp"
    #: HyperPod EKS add-ons that need a HyperPod cluster requested without one to order them after.
    HYPERPOD_ADDONS_WITHOUT_HYPERPOD_CLUSTER = "hyperpod-addons-without-hyperpod-cluster"
    PARALLELCLUSTER_RETAIN_DEPENDENCIES = "parallelcluster-retain-dependencies"
    #: An EFA-enabled Lustre file system that some ParallelCluster compute nodes mount over TCP (no LNet over EFA).
    PARALLELCLUSTER_LUSTRE_OVER_TCP = "parallelcluster-lustre-over-tcp"
    #: A CapacityBlockEvents handler that cannot be known to reach its EKS cluster's API server endpoint.
    CAPACITY_EVENTS_EKS_ENDPOINT_UNREACHABLE = "capacity-events-eks-endpoint-unreachable"
    #: A CapacityBlockEvents handler in isolated subnets with no known interface endpoint for an AWS API it calls.
    CAPACITY_EVENTS_NO_API_ROUTE = "capacity-events-no-api-route"
    #: A PCS cluster with a node group whose node count is a deploy-time value: its controller size is not checked.
    PCS_SIZE_UNKNOWN_NODE_COUNT = "pcs-size-unknown-node-count"
    #: An FSx for Lustre file system larger than the default (adjustable) storage capacity quota of its deployment type.
    LUSTRE_CAPACITY_ABOVE_DEFAULT_QUOTA = "lustre-capacity-above-default-quota"
    #: A PCS platform on a Capacity Block without login nodes: the expiry drain has nowhere to run.
    CAPACITY_EVENTS_PCS_DRAIN_NO_LOGIN_NODES = "capacity-events-pcs-drain-no-login-nodes"
    #: The platform's subnet is in a Local Zone or Wavelength Zone: the warning lists what the library puts there.
    LOCAL_ZONE_SUBNET = "local-zone-subnet"
    #: A retained log group of the app with a fixed name given to an FSx for Lustre file system: it blocks a redeploy.
    LUSTRE_LOG_GROUP_RETAINED_FIXED_NAME = "lustre-log-group-retained-fixed-name"
    #: A fixed name on a resource with create-only properties: a change that needs a replacement fails ("already
    #: exists") instead of replacing it.
    FIXED_NAME_BLOCKS_REPLACEMENT = "fixed-name-blocks-replacement"
    #: ParallelCluster settings that are create-time choices: on a running cluster ParallelCluster refuses to change
    #: them (its update policies); the construct cannot see the deployed values, so it lists them.
    PARALLELCLUSTER_CREATE_TIME_SETTINGS = "parallelcluster-create-time-settings"
    #: A HyperPod cluster with a fixed ClusterName: a change to a create-only property (ClusterName, VpcConfig,
    #: Orchestrator.Eks) needs a replacement, which fails on the name ("already exists") and rolls back.
    HYPERPOD_FIXED_CLUSTER_NAME = "hyperpod-fixed-cluster-name"
    #: A ParallelCluster queue with both its GPU health check (DCGM in the prolog) and node health's DCGM at boot.
    PARALLELCLUSTER_DCGM_TWICE = "parallelcluster-dcgm-twice"
    #: TrainingPlatform(services_subnet=...) in another zone than the GPU nodes: the file system, controller and login
    #: or head node reach the nodes across zones (TCP for the file system, traffic between zones billed).
    SERVICES_SUBNET_OTHER_ZONE = "services-subnet-other-zone"
    #: TrainingPlatform health: the scheduled NCCL check or node remediation was skipped (a PCS platform without a login
    #: node group: both run Slurm commands there).
    PLATFORM_HEALTH_SKIPPED = "platform-health-skipped"
    #: TrainingPlatform health on EKS: the NCCL MPIJob (created on a schedule by a CronJob) needs the Kubeflow MPI
    #: operator (kubeflow.org/v2beta1), which the platform does not install.
    PLATFORM_HEALTH_EKS_NCCL = "platform-health-eks-nccl"
    #: EKS topology scheduling: a GPU node group's ``max_nodes`` is a deploy-time value, so its GPUs are not in the
    #: Kueue ClusterQueue quota (the quota is a number written at synthesis).
    EKS_SCHEDULING_QUOTA = "eks-scheduling-quota"
    #: FSx for Lustre automatic export: no alarm on export failures (FSx logs them only to CloudWatch Logs, and the
    #: file system has no log group of its own, or its log level does not log errors).
    LUSTRE_EXPORT_FAILURES_NOT_WATCHED = "lustre-export-failures-not-watched"
    #: monitor_pcs_cluster: the cluster's own ``slurm_settings[Prolog]``/``[Epilog]`` leave no place for the
    #: dcgm-exporter job mapping's pieces, or the stack publishes no file assets (inline user data has no room for
    #: them), so GPU series carry no ``hpc_job`` (pass job_mapping=False to silence).
    JOB_MAPPING_SKIPPED = "job-mapping-skipped"
    #: monitor_pcs_cluster: the stack publishes no file assets (inline user data, e.g. a StackSet), so the login nodes
    #: run no Slurm exporter (about 1.2 KB over EC2's 16 KB); the per-job textfile (fm_slurm_job_info) still runs.
    SLURM_EXPORTER_SKIPPED = "slurm-exporter-skipped"
    #: ModelServerEndpoint: the model server's load balancer is internet-facing (``allow_internet_facing=True``).
    SERVING_INTERNET_FACING_ENDPOINT = "serving-internet-facing-endpoint"
    #: ModelServerAutoscaler: scale to zero on vLLM's own metrics without a ``wake_query``: with no pod there is no
    #: series, so nothing scales the server back up.
    SERVING_SCALE_TO_ZERO_WITHOUT_WAKE = "serving-scale-to-zero-without-wake"
    #: ModelServer: the cluster has no GPU node group of the server's instance type at synthesis, so its pods stay
    #: pending until nodes of that type join (a node group added later, or Karpenter).
    SERVING_NO_NODE_GROUP = "serving-no-node-group"
    #: TrainingPlatform on EKS with an elastic GPU pool (EksGpuCapacity.KARPENTER / AUTO_MODE): what the managed node
    #: group would have (node checks, host Lustre mount and LNet-over-EFA set-up) is not on the pool's nodes.
    EKS_ELASTIC_POOL_LIMITS = "eks-elastic-pool-limits"
    #: GpuEksCluster: the public API endpoint admits the whole internet (a ``/0`` among ``public_endpoint_cidrs``).
    #: The id of ``EksWarning.PUBLIC_ENDPOINT_OPEN`` before 0.3.1, unchanged.
    EKS_PUBLIC_ENDPOINT_OPEN = "eks-public-endpoint-open-to-internet"
    #: NodeRemediation on EKS whose cluster has no managed scraper (AmpEksScraper): no node metrics reach the
    #: workspace, so no alert asks it to act (only AWS Health scheduled events do).
    EKS_REMEDIATION_WITHOUT_SCRAPER = "eks-remediation-without-scraper"
    #: NodeRemediation on HyperPod Slurm: SSM Run Command does not reach HyperPod nodes, so the handler sets no Slurm
    #: state (a drain only notifies, it cannot see an operator's drain, nodes beyond the hourly limit are left as they
    #: are); it reboots and replaces through the SageMaker API only, never a Slurm controller node.
    HYPERPOD_REMEDIATION_LIMITS = "hyperpod-remediation-limits"
    #: ModelServerAutoscaler whose cluster has no managed scraper collecting serving metrics (``serving=True``): the
    #: vLLM series KEDA queries never reach the workspace, so the server never scales.
    SERVING_AUTOSCALER_WITHOUT_SCRAPER = "serving-autoscaler-without-scraper"
    #: A stack's template is above 80% of one of CloudFormation's template limits (template body size, resources,
    #: outputs, parameters, mappings): :mod:`fmconstructs.budgets`. Above the limit it is an error, not a warning.
    TEMPLATE_BUDGET = "template-budget"
    #: A PCS GPU node group with ``instance_health_checks``: changing them replaces all the group's instances after
    #: their running jobs finish (PCS User Guide "Configuring instance health checks"); removing the option leaves
    #: PCS's checks as they are.
    PCS_INSTANCE_HEALTH_CHECKS_REPLACE_INSTANCES = "pcs-instance-health-checks-replace-instances"

    @property
    def qualified(self) -> str:
        """The id as it appears in the cloud assembly: ``fmconstructs:<id>``."""
        return f"fmconstructs:{self.value}"


def add_warning(scope: IConstruct, warning: WarningId, message: str) -> None:
    """Attach an acknowledgeable warning to ``scope``."""
    from aws_cdk import Annotations

    Annotations.of(scope).add_warning_v2(warning.qualified, message)
