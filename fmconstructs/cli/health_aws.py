"""``fmc health``'s read-only AWS calls: what the deployed stacks created and whether it is up.

Physical ids come from CloudFormation (``ListStackResources``: ``LogicalResourceId``, ``PhysicalResourceId``,
``ResourceStatus``, ``ResourceStatusReason``; ``DescribeStacks``: ``StackStatus``, ``Outputs``). A physical id is what
``Ref`` returns, as aws-cdk-lib 2.275's generated ``*Ref()`` methods name it: the ARN for ``AWS::PCS::Cluster``,
``AWS::PCS::ComputeNodeGroup``, ``AWS::SageMaker::Cluster`` and ``AWS::APS::Workspace``; the name for
``AWS::EKS::Cluster``; the node group id ``<cluster>/<nodegroup>`` for ``AWS::EKS::Nodegroup`` (aws/aws-cdk#22442).
A PCS cluster ARN ends in ``cluster/<id>`` (PCS User Guide working-with_cng_get-details); that a compute node group
ARN ends in its id is UNCONFIRMED (no example seen): the last ``/`` segment is used for both, and a bare id works too.
Then, per resource type, the service's own read API (status enums as botocore 1.44's service models spell them):

- ``AWS::PCS::Cluster`` / ``AWS::PCS::ComputeNodeGroup``: pcs ``GetCluster`` / ``GetComputeNodeGroup`` ``status``
  (ACTIVE; CREATING, UPDATING, RESUMING are transitions; anything else, e.g. CREATE_FAILED, is unhealthy) and the
  group's running instances: EC2 ``DescribeInstances`` on the tag ``aws:pcs:compute-node-group-id`` that PCS puts on
  every instance (PCS User Guide "Finding compute node group instances", working-with_cng_find-instances; the tag
  fmconstructs.pcs.node_group.NODE_GROUP_ID_TAG uses) against ``scalingConfiguration.minInstanceCount``;
- ``AWS::EKS::Cluster`` / ``AWS::EKS::Nodegroup``: eks ``DescribeCluster`` / ``DescribeNodegroup`` ``status`` and
  ``health.issues`` (code, message, resourceIds); a node group's nodes are its Auto Scaling groups
  (``resources.autoScalingGroups``) read with autoscaling ``DescribeAutoScalingGroups`` (InService and Healthy
  instances against ``DesiredCapacity``);
- ``AWS::AutoScaling::AutoScalingGroup`` (self-managed fleets): its physical id is the group name;
- ``AWS::SageMaker::Cluster`` (HyperPod): sagemaker ``DescribeCluster`` ``ClusterStatus`` (InService),
  ``InstanceGroups[]`` ``CurrentCount``/``TargetCount``, and ``ListClusterNodes`` ``InstanceStatus.Status`` per node;
- ``Custom::PclusterCluster`` (ParallelCluster): the cluster's own CloudFormation stack, named after the cluster
  (ParallelCluster User Guide "View tags": ``aws:cloudformation:stack-name`` = the cluster name on the head node),
  ``DescribeStacks`` ``StackStatus``; its running nodes by the tags ParallelCluster sets (same page:
  ``parallelcluster:cluster-name``, ``parallelcluster:node-type`` ``Compute``/``HeadNode``,
  ``parallelcluster:queue-name``, ``parallelcluster:compute-resource-name``) against each compute resource's
  ``MinCount`` (static nodes).

IAM (all read-only): ``cloudformation:DescribeStacks``, ``cloudformation:ListStackResources``, ``pcs:GetCluster``,
``pcs:GetComputeNodeGroup``, ``eks:DescribeCluster``, ``eks:DescribeNodegroup``, ``sagemaker:DescribeCluster``,
``sagemaker:ListClusterNodes``, ``autoscaling:DescribeAutoScalingGroups``, ``ec2:DescribeInstances``,
``aps:DescribeWorkspace``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from .assembly import NodeGroup, Stack
from .errors import FmcError
from .health_model import Health, HealthReport
from .preflight import AwsProblem, _call

Clients = Callable[[str], Any]
"""service name (``cloudformation``, ``pcs``...) -> a boto3 client of the run's region."""

#: Statuses per service: (healthy, transitional). Any other status is unhealthy (botocore service models: pcs
#: ClusterStatus / ComputeNodeGroupStatus, eks ClusterStatus / NodegroupStatus, sagemaker ClusterStatus).
PCS_STATUS = ({"ACTIVE"}, {"CREATING", "UPDATING", "RESUMING"})
EKS_CLUSTER_STATUS = ({"ACTIVE"}, {"CREATING", "UPDATING", "PENDING"})
EKS_NODEGROUP_STATUS = ({"ACTIVE"}, {"CREATING", "UPDATING"})
HYPERPOD_STATUS = ({"InService"}, {"Creating", "Updating", "SystemUpdating"})
#: CloudFormation StackStatus: complete, or in progress / rolled back to the previous template (still running).
STACK_STATUS = (
    {"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE"},
    {
        "CREATE_IN_PROGRESS",
        "UPDATE_IN_PROGRESS",
        "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS",
        "UPDATE_ROLLBACK_IN_PROGRESS",
        "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS",
        "UPDATE_ROLLBACK_COMPLETE",
        "REVIEW_IN_PROGRESS",
        "IMPORT_IN_PROGRESS",
    },
)

#: The tag PCS sets on a compute node group's instances (see the module docstring).
PCS_NODE_GROUP_TAG = "aws:pcs:compute-node-group-id"
#: ParallelCluster's instance tags (ParallelCluster User Guide "View tags").
PCLUSTER_TAGS = {
    "cluster": "parallelcluster:cluster-name",
    "node_type": "parallelcluster:node-type",
    "queue": "parallelcluster:queue-name",
    "resource": "parallelcluster:compute-resource-name",
}
_AMP_URL = re.compile(r"https://aps-workspaces\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/workspaces/[A-Za-z0-9_-]+/")


def judge(status: object, statuses: tuple[set[str], set[str]]) -> Health:
    healthy, transitional = statuses
    if status in healthy:
        return Health.HEALTHY
    return Health.DEGRADED if status in transitional else Health.UNHEALTHY


def last_segment(physical_id: str) -> str:
    """An id from a physical id that may be an ARN (``arn:...:cluster/pcs_abc`` -> ``pcs_abc``) or the id itself."""
    return physical_id.rstrip("/").rsplit("/", 1)[-1]


@dataclass
class Deployed:
    """One deployed stack as CloudFormation describes it."""

    name: str
    status: str
    reason: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    """logical id -> the ListStackResources summary."""

    def physical(self, logical_id: str) -> str | None:
        value = self.resources.get(logical_id, {}).get("PhysicalResourceId")
        return value if isinstance(value, str) and value else None


def read_stack(cfn: Any, name: str) -> Deployed | None:
    """The deployed stack ``name``; None when CloudFormation does not know it (never deployed, or deleted)."""
    try:
        described = cfn.describe_stacks(StackName=name)
    except ClientError as error:
        if "does not exist" in str(error.response.get("Error", {}).get("Message", "")):
            return None
        raise
    stack = described["Stacks"][0]
    deployed = Deployed(
        name=name,
        status=str(stack.get("StackStatus")),
        reason=str(stack.get("StackStatusReason") or ""),
        outputs={str(o.get("OutputKey")): str(o.get("OutputValue")) for o in stack.get("Outputs", [])},
    )
    for page in cfn.get_paginator("list_stack_resources").paginate(StackName=name):
        for summary in page.get("StackResourceSummaries", []):
            deployed.resources[str(summary["LogicalResourceId"])] = summary
    return deployed


def _ref_target(value: object) -> str | None:
    """The logical id a ``Ref`` or ``Fn::GetAtt`` points at."""
    if isinstance(value, dict) and len(value) == 1:
        (fn, arg), *_ = value.items()
        if fn == "Ref" and isinstance(arg, str):
            return arg
        if fn == "Fn::GetAtt" and isinstance(arg, list) and arg and isinstance(arg[0], str):
            return arg[0]
        if fn == "Fn::GetAtt" and isinstance(arg, str):
            return arg.split(".", 1)[0]
    return None


class HealthAws:
    """The AWS half of ``fmc health``: rows into ``report``; workspace URLs found on the way in :attr:`workspaces`."""

    def __init__(self, clients: Clients, report: HealthReport) -> None:
        self.client = clients
        self.report = report
        self.workspaces: list[str] = []

    def run(self, stacks: list[Stack]) -> None:
        for stack in stacks:
            if stack.stackset:
                self.report.add("stack", stack.name, Health.SKIP, "a StackSet template: its instances are not read")
                continue
            try:
                deployed = _call(
                    "cloudformation:DescribeStacks", read_stack, cfn=self.client("cloudformation"), name=stack.name
                )
            except AwsProblem as problem:
                self.report.add("stack", stack.name, Health.UNKNOWN, str(problem))
                continue
            if deployed is None:
                self.report.add("stack", stack.name, Health.UNHEALTHY, "not deployed in this region (no such stack)")
                continue
            detail = deployed.status + (f": {deployed.reason}" if deployed.reason else "")
            self.report.add("stack", stack.name, judge(deployed.status, STACK_STATUS), detail)
            self._stack(stack, deployed)

    def _stack(self, stack: Stack, deployed: Deployed) -> None:
        self._guarded(f"{stack.name} workspace", self._find_workspaces, stack, deployed)
        checks: dict[str, Callable[[Stack, Deployed, str, dict[str, Any]], None]] = {
            "AWS::PCS::Cluster": self._pcs_cluster,
            "AWS::EKS::Cluster": self._eks_cluster,
            "AWS::SageMaker::Cluster": self._hyperpod,
            "Custom::PclusterCluster": self._parallelcluster,
        }
        resources = stack.template.get("Resources", {})
        for lid, resource in resources.items():
            check = checks.get(resource.get("Type"))
            if check is not None:
                self._guarded(f"{stack.name}/{lid}", check, stack, deployed, lid, resource)
        groups: dict[str, Callable[[Stack, NodeGroup, Deployed], None]] = {
            "pcs": self._pcs_group,
            "eks": self._eks_group,
            "asg": self._asg_group,
        }
        for group in stack.node_groups:
            group_check = groups.get(group.kind)
            if group_check is not None:
                self._guarded(f"{stack.name}/{group.name}", group_check, stack, group, deployed)

    def _guarded(self, target: str, step: Callable[..., None], *args: Any) -> None:
        """``step(*args)``: one resource's checks; an AWS error or a malformed answer is an UNKNOWN row (missing
        credentials end the run)."""
        try:
            step(*args)
        except FmcError:
            raise
        except AwsProblem as problem:
            self.report.add("aws", target, Health.UNKNOWN, str(problem))
        except Exception as error:  # a response of an unexpected shape: a row, never a traceback
            self.report.add("aws", target, Health.UNKNOWN, f"could not be read ({type(error).__name__}: {error})")

    def _created(self, deployed: Deployed, lid: str, check: str, target: str) -> str | None:
        """The physical id of ``lid``, or None after an UNHEALTHY row when CloudFormation did not create it."""
        summary = deployed.resources.get(lid)
        physical = deployed.physical(lid)
        status = str((summary or {}).get("ResourceStatus", ""))
        if summary is None or physical is None or status.endswith("_FAILED") or status.startswith("DELETE"):
            reason = str((summary or {}).get("ResourceStatusReason") or "")
            what = f"CloudFormation {status or 'has no such resource'}" + (f": {reason}" if reason else "")
            self.report.add(check, target, Health.UNHEALTHY, what)
            return None
        return physical

    # --- workspace ---------------------------------------------------------------------------------------------------
    def _find_workspaces(self, stack: Stack, deployed: Deployed) -> None:
        for value in deployed.outputs.values():
            match = _AMP_URL.match(value)
            if match and match.group(0) not in self.workspaces:
                self.workspaces.append(match.group(0))
        for lid, resource in stack.template.get("Resources", {}).items():
            physical = deployed.physical(lid) if resource.get("Type") == "AWS::APS::Workspace" else None
            if physical is None:
                continue
            described = _call(
                "aps:DescribeWorkspace", self.client("amp").describe_workspace, workspaceId=last_segment(physical)
            )
            endpoint = str(described["workspace"]["prometheusEndpoint"])
            if endpoint not in self.workspaces:
                self.workspaces.append(endpoint)

    # --- PCS ---------------------------------------------------------------------------------------------------------
    def _pcs_cluster(self, stack: Stack, deployed: Deployed, lid: str, resource: dict[str, Any]) -> None:
        target = f"{stack.name}/{lid}"
        physical = self._created(deployed, lid, "pcs cluster", target)
        if physical is None:
            return
        cluster = _call("pcs:GetCluster", self.client("pcs").get_cluster, clusterIdentifier=last_segment(physical))
        cluster = cluster["cluster"]
        self.report.add("pcs cluster", target, judge(cluster.get("status"), PCS_STATUS), _pcs_detail(cluster))

    def _pcs_group(self, stack: Stack, group: NodeGroup, deployed: Deployed) -> None:
        target = f"{group.stack}/{group.name}"
        physical = self._created(deployed, group.logical_id, "pcs node group", target)
        props = stack.template["Resources"][group.logical_id].get("Properties", {})
        cluster_lid = _ref_target(props.get("ClusterId"))
        cluster = deployed.physical(cluster_lid) if cluster_lid else props.get("ClusterId")
        if physical is None:
            return
        if not isinstance(cluster, str):
            self.report.add("pcs node group", target, Health.UNKNOWN, "its cluster's id is not in the stack")
            return
        answer = _call(
            "pcs:GetComputeNodeGroup",
            self.client("pcs").get_compute_node_group,
            clusterIdentifier=last_segment(cluster),
            computeNodeGroupIdentifier=last_segment(physical),
        )["computeNodeGroup"]
        health = judge(answer.get("status"), PCS_STATUS)
        self.report.add("pcs node group", target, health, _pcs_detail(answer))
        if health is Health.UNHEALTHY:
            return
        running = self._running({f"tag:{PCS_NODE_GROUP_TAG}": str(answer["id"])})
        minimum = int(answer.get("scalingConfiguration", {}).get("minInstanceCount", 0))
        maximum = answer.get("scalingConfiguration", {}).get("maxInstanceCount")
        self._count_row(target, len(running), minimum, f"min {minimum}, max {maximum}")

    # --- EKS ---------------------------------------------------------------------------------------------------------
    def _eks_cluster(self, stack: Stack, deployed: Deployed, lid: str, resource: dict[str, Any]) -> None:
        target = f"{stack.name}/{lid}"
        physical = self._created(deployed, lid, "eks cluster", target)
        if physical is None:
            return
        cluster = _call("eks:DescribeCluster", self.client("eks").describe_cluster, name=physical)["cluster"]
        health = judge(cluster.get("status"), EKS_CLUSTER_STATUS)
        issues = _issues(cluster.get("health"))
        if issues and health is Health.HEALTHY:
            health = Health.DEGRADED
        self.report.add("eks cluster", target, health, str(cluster.get("status")) + issues)

    def _eks_group(self, stack: Stack, group: NodeGroup, deployed: Deployed) -> None:
        target = f"{group.stack}/{group.name}"
        physical = self._created(deployed, group.logical_id, "eks node group", target)
        if physical is None:
            return
        cluster, name = _eks_names(physical)
        answer = _call(
            "eks:DescribeNodegroup", self.client("eks").describe_nodegroup, clusterName=cluster, nodegroupName=name
        )["nodegroup"]
        health = judge(answer.get("status"), EKS_NODEGROUP_STATUS)
        issues = _issues(answer.get("health"))
        if issues and health is Health.HEALTHY:
            health = Health.DEGRADED
        self.report.add("eks node group", target, health, str(answer.get("status")) + issues)
        if health is Health.UNHEALTHY:
            return
        names = [str(g["name"]) for g in answer.get("resources", {}).get("autoScalingGroups", [])]
        self._asg_rows(target, names)

    # --- Auto Scaling ------------------------------------------------------------------------------------------------
    def _asg_group(self, stack: Stack, group: NodeGroup, deployed: Deployed) -> None:
        target = f"{group.stack}/{group.name}"
        physical = self._created(deployed, group.logical_id, "auto scaling group", target)
        if physical is not None:
            self._asg_rows(target, [physical])

    def _asg_rows(self, target: str, names: list[str]) -> None:
        if not names:
            self.report.add("nodes", target, Health.UNKNOWN, "no Auto Scaling group behind it yet")
            return
        found = _call(
            "autoscaling:DescribeAutoScalingGroups",
            self.client("autoscaling").describe_auto_scaling_groups,
            AutoScalingGroupNames=names,
        )["AutoScalingGroups"]
        if not found:
            self.report.add("nodes", target, Health.UNHEALTHY, f"Auto Scaling group {', '.join(names)} not found")
            return
        desired = sum(int(g.get("DesiredCapacity", 0)) for g in found)
        instances = [i for g in found for i in g.get("Instances", [])]
        good = [i for i in instances if i.get("LifecycleState") == "InService" and i.get("HealthStatus") == "Healthy"]
        bad = [
            f"{i.get('InstanceId')} {i.get('LifecycleState')}/{i.get('HealthStatus')}"
            for i in instances
            if i not in good
        ]
        self._count_row(target, len(good), desired, f"desired {desired}", bad)

    # --- HyperPod ----------------------------------------------------------------------------------------------------
    def _hyperpod(self, stack: Stack, deployed: Deployed, lid: str, resource: dict[str, Any]) -> None:
        target = f"{stack.name}/{lid}"
        physical = self._created(deployed, lid, "hyperpod cluster", target)
        if physical is None:
            return
        sagemaker = self.client("sagemaker")
        cluster = _call("sagemaker:DescribeCluster", sagemaker.describe_cluster, ClusterName=physical)
        status = cluster.get("ClusterStatus")
        failure = f": {cluster['FailureMessage']}" if cluster.get("FailureMessage") else ""
        self.report.add("hyperpod cluster", target, judge(status, HYPERPOD_STATUS), f"{status}{failure}")
        for group in cluster.get("InstanceGroups", []):
            current, wanted = int(group.get("CurrentCount", 0)), int(group.get("TargetCount", 0))
            where = f"{target}/{group.get('InstanceGroupName')}"
            self._count_row(where, current, wanted, f"target {wanted}, group {group.get('Status')}")
        nodes = _call("sagemaker:ListClusterNodes", _list_nodes, sagemaker=sagemaker, cluster=physical)
        for node in nodes:
            state = node.get("InstanceStatus", {})
            if state.get("Status") != "Running":
                message = f": {state['Message']}" if state.get("Message") else ""
                where = f"{target}/{node.get('InstanceGroupName')}/{node.get('InstanceId')}"
                self.report.add("hyperpod node", where, Health.DEGRADED, f"{state.get('Status')}{message}")

    # --- ParallelCluster ---------------------------------------------------------------------------------------------
    def _parallelcluster(self, stack: Stack, deployed: Deployed, lid: str, resource: dict[str, Any]) -> None:
        target = f"{stack.name}/{lid}"
        physical = self._created(deployed, lid, "parallelcluster", target)
        name = resource.get("Properties", {}).get("ClusterName")
        name = name if isinstance(name, str) else physical
        if physical is None or name is None:
            return
        cluster_stack = _call("cloudformation:DescribeStacks", read_stack, cfn=self.client("cloudformation"), name=name)
        if cluster_stack is None:
            self.report.add("parallelcluster", target, Health.UNHEALTHY, f"its cluster stack {name} does not exist")
            return
        reason = f": {cluster_stack.reason}" if cluster_stack.reason else ""
        health = judge(cluster_stack.status, STACK_STATUS)
        self.report.add("parallelcluster", target, health, f"cluster stack {name} {cluster_stack.status}{reason}")
        if health is not Health.UNHEALTHY:
            self._pcluster_nodes(stack, lid, name)

    def _pcluster_nodes(self, stack: Stack, lid: str, name: str) -> None:
        running = self._running({f"tag:{PCLUSTER_TAGS['cluster']}": name})
        counts: dict[str, int] = {}
        for instance in running:
            tags = {str(t.get("Key")): str(t.get("Value")) for t in instance.get("Tags", [])}
            if tags.get(PCLUSTER_TAGS["node_type"]) == "HeadNode":
                key = "head"
            else:
                key = f"{tags.get(PCLUSTER_TAGS['queue'])}/{tags.get(PCLUSTER_TAGS['resource'])}"
            counts[key] = counts.get(key, 0) + 1
        for group in stack.node_groups:
            if group.kind != "parallelcluster" or not group.logical_id.startswith(f"{lid}/"):
                continue
            key = group.logical_id[len(lid) + 1 :]
            if key.startswith("login/"):
                continue
            minimum = group.min_nodes if isinstance(group.min_nodes, int) else 0
            what = "head node" if key == "head" else f"MinCount {minimum}"
            self._count_row(f"{stack.name}/{group.name}", counts.get(key, 0), minimum, what)

    # --- shared ------------------------------------------------------------------------------------------------------
    def _running(self, tags: dict[str, str]) -> list[dict[str, Any]]:
        filters = [{"Name": k, "Values": [v]} for k, v in tags.items()]
        filters.append({"Name": "instance-state-name", "Values": ["pending", "running"]})
        return _call("ec2:DescribeInstances", _instances, ec2=self.client("ec2"), filters=filters)

    def _count_row(self, target: str, count: int, expected: int, what: str, bad: list[str] | None = None) -> None:
        detail = f"{count} running ({what})" + (f"; not in service: {', '.join(bad)}" if bad else "")
        self.report.add("nodes", target, Health.HEALTHY if count >= expected and not bad else Health.DEGRADED, detail)


def _pcs_detail(answer: dict[str, Any]) -> str:
    errors = [f"{e.get('code')}: {e.get('message')}" for e in answer.get("errorInfo", []) if isinstance(e, dict)]
    return str(answer.get("status")) + (f" ({'; '.join(errors)})" if errors else "")


def _issues(health: object) -> str:
    issues = health.get("issues", []) if isinstance(health, dict) else []
    shown = [f"{i.get('code')}: {i.get('message')}" for i in issues if isinstance(i, dict)]
    return f"; health issues: {'; '.join(shown)}" if shown else ""


def _eks_names(physical: str) -> tuple[str, str]:
    """(cluster, node group) from ``cluster/nodegroup`` or a node group ARN ``...:nodegroup/cluster/name/uuid``."""
    if physical.startswith("arn:") and ":nodegroup/" in physical:
        parts = physical.split(":nodegroup/", 1)[1].split("/")
        return parts[0], parts[1]
    cluster, _, name = physical.partition("/")
    return cluster, name


def _instances(ec2: Any, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for page in ec2.get_paginator("describe_instances").paginate(Filters=filters):
        for reservation in page.get("Reservations", []):
            found.extend(reservation.get("Instances", []))
    return found


def _list_nodes(sagemaker: Any, cluster: str) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    for page in sagemaker.get_paginator("list_cluster_nodes").paginate(ClusterName=cluster):
        nodes.extend(page.get("ClusterNodeSummaries", []))
    return nodes
