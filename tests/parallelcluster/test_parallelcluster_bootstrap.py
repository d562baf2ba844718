"""ParallelCluster.add_node_bootstrap: fmconstructs' node bootstrap as the queues' OnNodeConfigured custom action
(Script + Args), S3Access to exactly the loader and archive objects, and a managed policy in AdditionalIamPolicies;
the P5en example wires NVMe scratch and the observability collectors this way."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template

from fmconstructs import FmValidationError
from fmconstructs.bootstrap import NodeBootstrap, read_tar_gz
from fmconstructs.errors import FmTypeError
from fmconstructs.parallelcluster import ComputeResource, CustomAction, CustomActionEvent, ParallelCluster, SlurmQueue

from tests.conftest import Scene, new_app, new_scene
from tests.support.parallelcluster import BLOCK, make_cluster


def _queue(scene: Scene, name: str, **kwargs: Any) -> SlurmQueue:
    return SlurmQueue(
        name=name,
        subnets=[scene.subnet_a],
        compute_resources=[ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK)],
        **kwargs,
    )


def _bootstrap(scene: Scene, id: str = "Boot") -> NodeBootstrap:
    boot = NodeBootstrap(scene.stack, id, name=f"pc-{id.lower()}")
    boot.add_commands(f"echo hello from {id}")  # a distinct archive per bootstrap
    return boot


@pytest.fixture(scope="module")
def attached() -> dict[str, Any]:
    scene = new_scene()
    cluster = make_cluster(scene, queues=[_queue(scene, "gpu"), _queue(scene, "other")])
    boot = _bootstrap(scene)
    extra = iam.PolicyStatement(
        actions=["aps:RemoteWrite"], resources=["arn:aws:aps:us-east-1:123456789012:workspace/ws-1"]
    )
    policy = cluster.add_node_bootstrap(boot, queues=["gpu"], statements=[extra])
    return {"scene": scene, "cluster": cluster, "boot": boot, "policy": policy, "config": cluster.to_dict()}


def test_queue_runs_the_static_loader_with_its_arguments(attached: dict[str, Any]) -> None:
    stack, boot, config = attached["scene"].stack, attached["boot"], attached["config"]
    action = boot.script_action()
    gpu, other = config["Scheduling"]["SlurmQueues"]
    assert gpu["CustomActions"] == {
        "OnNodeConfigured": {"Script": stack.resolve(action.script_url), "Args": stack.resolve(list(action.args))}
    }
    assert gpu["CustomActions"]["OnNodeConfigured"]["Args"][0] == "pc-boot"
    assert "CustomActions" not in other and "Iam" not in other  # only the queue it was attached to


def test_queue_reads_exactly_the_two_objects(attached: dict[str, Any]) -> None:
    stack, boot, config = attached["scene"].stack, attached["boot"], attached["config"]
    action = boot.script_action()
    access = config["Scheduling"]["SlurmQueues"][0]["Iam"]["S3Access"]
    bucket = stack.resolve(action.bucket.bucket_name)
    assert access == [{"BucketName": bucket, "KeyName": stack.resolve(k)} for k in action.object_keys]
    assert {a["KeyName"].rsplit(".", 1)[1] for a in access} == {"sh", "tgz"}
    assert all("EnableWriteAccess" not in a for a in access)


def test_managed_policy_writes_logs_and_the_given_statements(attached: dict[str, Any]) -> None:
    stack, policy, config = attached["scene"].stack, attached["policy"], attached["config"]
    assert config["Scheduling"]["SlurmQueues"][0]["Iam"]["AdditionalIamPolicies"] == [
        {"Policy": stack.resolve(policy.managed_policy_arn)}
    ]
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::IAM::ManagedPolicy",
        {
            "PolicyDocument": {
                "Statement": [
                    {
                        "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                        "Effect": "Allow",
                        "Resource": {"Fn::GetAtt": [Match.string_like_regexp("FmNodeBootstrapLogs"), "Arn"]},
                    },
                    {
                        "Action": "aps:RemoteWrite",
                        "Effect": "Allow",
                        "Resource": "arn:aws:aps:us-east-1:123456789012:workspace/ws-1",
                    },
                ],
                "Version": "2012-10-17",
            }
        },
    )
    # no S3 statement here (S3Access covers the two objects) and nothing on the whole bucket anywhere
    for resource in template.find_resources("AWS::IAM::ManagedPolicy").values():
        assert "s3:" not in str(resource["Properties"]["PolicyDocument"])


def test_the_deployed_configuration_carries_the_action(attached: dict[str, Any]) -> None:
    template = Template.from_stack(attached["scene"].stack)
    template.has_resource_properties(
        "Custom::PclusterCluster",
        {
            "ClusterConfiguration": Match.object_like(
                {
                    "Scheduling": Match.object_like(
                        {
                            "SlurmQueues": Match.array_with(
                                [
                                    Match.object_like(
                                        {
                                            "Name": "gpu",
                                            "CustomActions": {
                                                "OnNodeConfigured": {
                                                    "Script": Match.any_value(),
                                                    "Args": Match.any_value(),
                                                }
                                            },
                                        }
                                    )
                                ]
                            )
                        }
                    )
                }
            )
        },
    )


def test_default_is_every_queue_and_yaml_has_it() -> None:
    scene = new_scene()
    cluster = make_cluster(scene, queues=[_queue(scene, "a"), _queue(scene, "b")])
    cluster.add_node_bootstrap(_bootstrap(scene))
    queues = cluster.to_dict()["Scheduling"]["SlurmQueues"]
    assert all("OnNodeConfigured" in q["CustomActions"] for q in queues)
    assert all(len(q["Iam"]["AdditionalIamPolicies"]) == 1 for q in queues)
    assert "OnNodeConfigured:" in cluster.to_yaml()
    assert len(Template.from_stack(scene.stack).find_resources("AWS::IAM::ManagedPolicy")) == 1


def test_two_bootstraps_on_two_queues_get_two_policies() -> None:
    scene = new_scene()
    cluster = make_cluster(scene, queues=[_queue(scene, "a"), _queue(scene, "b")])
    cluster.add_node_bootstrap(_bootstrap(scene, "One"), queues=["a"])
    cluster.add_node_bootstrap(_bootstrap(scene, "Two"), queues=["b"])
    a, b = cluster.to_dict()["Scheduling"]["SlurmQueues"]
    assert a["CustomActions"]["OnNodeConfigured"]["Args"][0] == "pc-one"
    assert b["CustomActions"]["OnNodeConfigured"]["Args"][0] == "pc-two"
    assert a["Iam"]["AdditionalIamPolicies"] != b["Iam"]["AdditionalIamPolicies"]


@pytest.mark.parametrize(
    ("queues", "match"),
    [
        (["nope"], "a queue of this cluster"),
        ([], "at least one queue name"),
        (["own"], "without its own on_node_configured"),
        ("gpu", "queues"),
    ],
)
def test_bad_queues_are_refused(queues: Any, match: str) -> None:
    scene = new_scene()
    own = _queue(scene, "own", on_node_configured=CustomAction(script="s3://b/k.sh"))
    cluster = make_cluster(scene, queues=[_queue(scene, "gpu"), own])
    with pytest.raises(FmValidationError, match=match):
        cluster.add_node_bootstrap(_bootstrap(scene), queues=queues)


def test_a_queue_takes_one_bootstrap() -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    cluster.add_node_bootstrap(_bootstrap(scene, "One"))
    with pytest.raises(FmValidationError, match="one per queue"):
        cluster.add_node_bootstrap(_bootstrap(scene, "Two"))


@pytest.mark.parametrize("bad", ["not a bootstrap", None])
def test_bootstrap_must_be_a_node_bootstrap(bad: Any) -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    with pytest.raises(Exception, match="bootstrap"):
        cluster.add_node_bootstrap(bad)


@pytest.mark.parametrize("bad", [["aps:RemoteWrite"], [{"Action": "x"}]])
def test_statements_must_be_policy_statements(bad: Any) -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    with pytest.raises(Exception, match="statements"):
        cluster.add_node_bootstrap(_bootstrap(scene), statements=bad)


# --- the example ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def p5en_with_workspace() -> dict[str, Any]:
    from examples.parallelcluster_stacks import ParallelClusterP5enStack
    from fmconstructs.observability.workspace import PrometheusWorkspace

    app = new_app()
    obs = cdk.Stack(app, "Obs", env=cdk.Environment(account="123456789012", region="us-east-1"))
    workspace = PrometheusWorkspace(obs, "Workspace")
    stack = ParallelClusterP5enStack(
        app,
        "FmParallelClusterP5en",
        workspace=workspace,
        env=cdk.Environment(account="123456789012", region="us-east-1"),
    )
    cluster: ParallelCluster = stack.cluster
    return {"stack": stack, "workspace": workspace, "config": cluster.to_dict(), "template": Template.from_stack(stack)}


def test_p5en_gpu_queue_runs_nvme_scratch_and_the_collectors(p5en_with_workspace: dict[str, Any]) -> None:
    stack = p5en_with_workspace["stack"]
    (queue,) = p5en_with_workspace["config"]["Scheduling"]["SlurmQueues"]
    action = queue["CustomActions"]["OnNodeConfigured"]
    assert action["Script"].startswith("s3://") and action["Script"].endswith(".sh")
    assert action["Args"][0] == "parallelcluster-gpu"
    data, values = stack.gpu_bootstrap.archive()
    steps = {name.split("/")[1] for name in read_tar_gz(data) if name.startswith("steps/")}
    # node-join checks (enable_node_health(node_bootstrap=...)) run last, after the scratch and the collectors
    assert steps == {"001-nvme-scratch", "002-observability", "003-node-health"}
    assert values  # the workspace's remote-write URL travels as an argument, not in the archive
    assert len(action["Args"]) == 5 + len(values)
    # the loader (one object), this archive and the Lustre-over-EFA step's archive (OnNodeStart: the file system is
    # EFA-enabled and p5en takes EFA for Lustre)
    assert len(queue["Iam"]["S3Access"]) == 3
    assert queue["CustomActions"]["OnNodeStart"]["Args"][0] == "lustre-efa-gpu"


def test_p5en_nodes_may_remote_write_to_the_workspace_only(p5en_with_workspace: dict[str, Any]) -> None:
    template = p5en_with_workspace["template"]
    template.has_resource_properties(
        "AWS::IAM::ManagedPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        {
                            "Action": "aps:RemoteWrite",
                            "Effect": "Allow",
                            "Resource": {"Fn::ImportValue": Match.any_value()},
                        }
                    ]
                )
            }
        },
    )


def test_p5en_without_workspace_still_has_nvme_scratch() -> None:
    from examples.parallelcluster_stacks import ParallelClusterP5enStack

    stack = ParallelClusterP5enStack(new_app(), "FmParallelClusterP5en")
    data, values = stack.gpu_bootstrap.archive()
    steps = {name.split("/")[1] for name in read_tar_gz(data) if name.startswith("steps/")}
    assert steps == {"001-nvme-scratch", "002-node-health"}
    assert values == []
    (queue,) = stack.cluster.to_dict()["Scheduling"]["SlurmQueues"]
    assert len(queue["CustomActions"]["OnNodeConfigured"]["Args"]) == 5


# --- head node and login nodes -------------------------------------------------------------------------------------


def _login_pool(scene: Scene, name: str = "login") -> Any:
    from fmconstructs.parallelcluster import LoginNodePool

    return LoginNodePool(name=name, instance_type="c7i.xlarge", subnet=scene.subnet_a)


@pytest.fixture(scope="module")
def head_and_login() -> dict[str, Any]:
    scene = new_scene()
    cluster = make_cluster(scene, login_nodes=[_login_pool(scene, "login"), _login_pool(scene, "admin")])
    head_start = _bootstrap(scene, "HeadStart")
    head_updated = _bootstrap(scene, "HeadUpdated")
    login = _bootstrap(scene, "Login")
    policies = {
        "head_start": cluster.add_head_node_bootstrap(head_start, event=CustomActionEvent.ON_NODE_START),
        "head_updated": cluster.add_head_node_bootstrap(head_updated, event=CustomActionEvent.ON_NODE_UPDATED),
        "login": cluster.add_login_node_bootstrap(login, pools=["login"]),
    }
    boots = {"head_start": head_start, "head_updated": head_updated, "login": login}
    return {"scene": scene, "cluster": cluster, "boots": boots, "policies": policies, "config": cluster.to_dict()}


def test_head_node_runs_a_bootstrap_per_event(head_and_login: dict[str, Any]) -> None:
    stack, boots, head = head_and_login["scene"].stack, head_and_login["boots"], head_and_login["config"]["HeadNode"]
    cluster = head_and_login["cluster"]
    assert set(head["CustomActions"]) == {"OnNodeStart", "OnNodeUpdated"}
    for event, key in (
        (CustomActionEvent.ON_NODE_START, "head_start"),
        (CustomActionEvent.ON_NODE_UPDATED, "head_updated"),
    ):
        action = boots[key].script_action()
        assert cluster.head_node_actions(event) == [
            {"Script": stack.resolve(action.script_url), "Args": stack.resolve(list(action.args))}
        ]
    # OnNodeUpdated takes updates: its piece is in the configuration; OnNodeStart's is behind the entry point
    assert head["CustomActions"]["OnNodeUpdated"] == cluster.head_node_actions(CustomActionEvent.ON_NODE_UPDATED)[0]
    assert head["CustomActions"]["OnNodeStart"]["Args"][0].endswith("/head/OnNodeStart")


def test_head_node_reads_the_objects_through_s3_access(head_and_login: dict[str, Any]) -> None:
    stack, boots, head = head_and_login["scene"].stack, head_and_login["boots"], head_and_login["config"]["HeadNode"]
    keys = {stack.resolve(k) for b in ("head_start", "head_updated") for k in boots[b].script_action().object_keys}
    entry = head_and_login["cluster"].node.find_child("HeadNodeEntryPoint")
    keys.add(stack.resolve(entry.object_key))
    access = head["Iam"]["S3Access"]
    assert {a["KeyName"] for a in access} == keys
    assert len(access) == len(keys) == 4  # the entry point, one shared static loader, two archives: no duplicates
    policies = head_and_login["policies"]
    assert head["Iam"]["AdditionalIamPolicies"] == [{"Policy": stack.resolve(entry.policy.managed_policy_arn)}] + [
        {"Policy": stack.resolve(policies[k].managed_policy_arn)} for k in ("head_start", "head_updated")
    ]


def test_login_pool_gets_the_action_and_reads_through_its_policy(head_and_login: dict[str, Any]) -> None:
    stack, boots = head_and_login["scene"].stack, head_and_login["boots"]
    login, admin = head_and_login["config"]["LoginNodes"]["Pools"]
    action = boots["login"].script_action()
    assert login["CustomActions"] == {
        "OnNodeConfigured": {"Script": stack.resolve(action.script_url), "Args": stack.resolve(list(action.args))}
    }
    # LoginNodesIamSchema has no S3Access: the managed policy grants s3:GetObject on the two objects
    assert login["Iam"] == {
        "AdditionalIamPolicies": [{"Policy": stack.resolve(head_and_login["policies"]["login"].managed_policy_arn)}]
    }
    assert "CustomActions" not in admin and "Iam" not in admin
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::IAM::ManagedPolicy",
        {
            "Description": Match.string_like_regexp("login pools login$"),
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Action": "s3:GetObject", "Resource": Match.any_value()})]
                ),
                "Version": "2012-10-17",
            },
        },
    )


def test_head_node_policy_grants_no_s3(head_and_login: dict[str, Any]) -> None:
    template = Template.from_stack(head_and_login["scene"].stack)
    heads = [
        r
        for r in template.find_resources("AWS::IAM::ManagedPolicy").values()
        if "head node" in r["Properties"]["Description"]
    ]
    assert len(heads) == 3  # two pieces and the entry point's (SSM reads only)
    assert all("s3:" not in str(r["Properties"]["PolicyDocument"]) for r in heads)


@pytest.mark.parametrize("event", [CustomActionEvent.ON_NODE_START, CustomActionEvent.ON_NODE_CONFIGURED])
def test_queues_take_node_start_and_node_configured(event: CustomActionEvent) -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    cluster.add_node_bootstrap(_bootstrap(scene), event=event)
    (queue,) = cluster.to_dict()["Scheduling"]["SlurmQueues"]
    assert set(queue["CustomActions"]) == {event.value}


def test_queues_refuse_node_updated() -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    with pytest.raises(FmValidationError, match="OnNodeStart or OnNodeConfigured for queues"):
        cluster.add_node_bootstrap(_bootstrap(scene), event=CustomActionEvent.ON_NODE_UPDATED)


def test_a_queue_takes_one_bootstrap_per_event_not_one_in_all() -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    cluster.add_node_bootstrap(_bootstrap(scene, "Start"), event=CustomActionEvent.ON_NODE_START)
    cluster.add_node_bootstrap(_bootstrap(scene, "Configured"))
    (queue,) = cluster.to_dict()["Scheduling"]["SlurmQueues"]
    assert set(queue["CustomActions"]) == {"OnNodeStart", "OnNodeConfigured"}
    assert len(queue["Iam"]["S3Access"]) == 3


def test_head_node_refuses_an_event_that_is_not_a_custom_action_event() -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    with pytest.raises(FmTypeError, match="event"):
        cluster.add_head_node_bootstrap(_bootstrap(scene), event="OnNodeStart")  # type: ignore[arg-type]


def _actions(cluster: ParallelCluster) -> dict[str, Any]:
    actions: dict[str, Any] = cluster.to_dict()["HeadNode"]["CustomActions"]
    return actions


def test_head_node_runs_every_piece_of_an_event_in_order() -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    one, two = _bootstrap(scene, "One"), _bootstrap(scene, "Two")
    cluster.add_head_node_bootstrap(one)
    single = _actions(cluster)["OnNodeConfigured"]
    assert set(single) == {"Script", "Args"}  # the entry point: the same action whatever the pieces
    cluster.add_head_node_bootstrap(two)
    assert _actions(cluster)["OnNodeConfigured"] == single
    runs = cluster.head_node_actions(CustomActionEvent.ON_NODE_CONFIGURED)
    assert [entry["Args"][0] for entry in runs] == ["pc-one", "pc-two"]
    assert cluster.head_node_pieces(CustomActionEvent.ON_NODE_CONFIGURED) == [one, two]
    head_iam = cluster.to_dict()["HeadNode"]["Iam"]
    # two pieces' policies and the entry point's; the entry point, one shared loader and two archives
    assert len(head_iam["AdditionalIamPolicies"]) == 3 and len(head_iam["S3Access"]) == 4


@pytest.mark.parametrize(
    ("field", "event"),
    [("on_node_start", CustomActionEvent.ON_NODE_START), ("on_node_configured", CustomActionEvent.ON_NODE_CONFIGURED)],
)
def test_head_node_own_action_runs_before_the_pieces(field: str, event: CustomActionEvent) -> None:
    from fmconstructs.parallelcluster import HeadNode

    scene = new_scene()
    head = HeadNode(instance_type="c7i.2xlarge", subnet=scene.subnet_a, **{field: CustomAction(script="s3://b/k.sh")})
    cluster = make_cluster(scene, head_node=head)
    cluster.add_head_node_bootstrap(_bootstrap(scene), event=event)
    first, second = _actions(cluster)[event.value]["Sequence"]
    assert first == {"Script": "s3://b/k.sh"} and second["Args"][0].endswith(f"/head/{event.value}")
    first, piece = cluster.head_node_actions(event)
    assert first == {"Script": "s3://b/k.sh"} and piece["Args"][0] == "pc-boot"


def test_head_node_refuses_the_same_piece_twice_for_an_event() -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    boot = _bootstrap(scene)
    cluster.add_head_node_bootstrap(boot)
    with pytest.raises(FmValidationError, match="bootstrap must be a bootstrap not already in OnNodeConfigured"):
        cluster.add_head_node_bootstrap(boot)


def test_head_node_sequence_needs_version_3_6() -> None:
    scene = new_scene()
    cluster = make_cluster(scene, version="3.5.1")
    cluster.add_head_node_bootstrap(_bootstrap(scene, "One"))
    with pytest.raises(FmValidationError, match=r"version must be 3.6.0 or later: the head node's OnNodeConfigured"):
        cluster.add_head_node_bootstrap(_bootstrap(scene, "Two"))


@pytest.mark.parametrize(
    ("pools", "match"),
    [(["nope"], "a login node pool of this cluster"), ([], "at least one login node pool name")],
)
def test_bad_login_pools_are_refused(pools: Any, match: str) -> None:
    scene = new_scene()
    cluster = make_cluster(scene, login_nodes=[_login_pool(scene)])
    with pytest.raises(FmValidationError, match=match):
        cluster.add_login_node_bootstrap(_bootstrap(scene), pools=pools)


def test_login_bootstrap_needs_login_nodes() -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    with pytest.raises(FmValidationError, match="a cluster with login_nodes"):
        cluster.add_login_node_bootstrap(_bootstrap(scene))


def test_login_pool_takes_one_bootstrap_per_event() -> None:
    scene = new_scene()
    cluster = make_cluster(scene, login_nodes=[_login_pool(scene)])
    cluster.add_login_node_bootstrap(_bootstrap(scene, "One"))
    with pytest.raises(FmValidationError, match="one per pool and event"):
        cluster.add_login_node_bootstrap(_bootstrap(scene, "Two"))


# --- the managed policies' names (the provider may attach policy/parallelcluster* only) -----------------------------


def test_policy_names_start_with_parallelcluster_and_are_unique(head_and_login: dict[str, Any]) -> None:
    stack = head_and_login["scene"].stack
    names = [
        stack.resolve(r["Properties"]["ManagedPolicyName"])
        for r in Template.from_stack(stack).find_resources("AWS::IAM::ManagedPolicy").values()
    ]
    expected = [f"parallelcluster-train-us-east-1-bootstrap{n}" for n in (1, 2, 3)]
    assert sorted(names) == [*expected, "parallelcluster-train-us-east-1-head-entry"]
    assert all(len(n) <= 128 for n in names)


def test_policy_name_has_the_region_token_in_an_environment_agnostic_stack() -> None:
    app = new_app()
    stack = cdk.Stack(app, "Agnostic")
    from aws_cdk import aws_ec2 as ec2

    subnet = ec2.Subnet.from_subnet_attributes(
        stack, "Subnet", subnet_id="subnet-0123456789abcdef0", availability_zone="us-east-1a"
    )
    from fmconstructs.parallelcluster import HeadNode

    queue = SlurmQueue(
        name="cpu", subnets=[subnet], compute_resources=[ComputeResource(name="c7i", instance_type="c7i.large")]
    )
    cluster = ParallelCluster(
        stack,
        "Cluster",
        cluster_name="train",
        head_node=HeadNode(instance_type="c7i.2xlarge", subnet=subnet),
        queues=[queue],
    )
    boot = NodeBootstrap(stack, "Boot", name="boot")
    boot.add_commands("echo hello")
    cluster.add_node_bootstrap(boot)
    Template.from_stack(stack).has_resource_properties(
        "AWS::IAM::ManagedPolicy",
        {"ManagedPolicyName": {"Fn::Join": ["", ["parallelcluster-train-", {"Ref": "AWS::Region"}, "-bootstrap1"]]}},
    )


# --- the P5en example's head node ----------------------------------------------------------------------------------


def test_p5en_head_node_runs_the_collectors(p5en_with_workspace: dict[str, Any]) -> None:
    stack = p5en_with_workspace["stack"]
    head = p5en_with_workspace["config"]["HeadNode"]
    (action,) = stack.cluster.head_node_actions(CustomActionEvent.ON_NODE_CONFIGURED)
    assert action["Args"][0] == "parallelcluster-head"
    data, values = stack.head_bootstrap.archive()
    steps = {name.split("/")[1] for name in read_tar_gz(data) if name.startswith("steps/")}
    # and the node checks' prolog dispatch, and the job mapping's prolog/epilog pieces (issue 22)
    assert steps == {"001-observability", "002-node-health-prolog", "003-slurm-scripts"}
    script = next(
        body.decode()
        for name, (body, _) in read_tar_gz(data).items()
        if name.endswith("/run.sh") and "steps/001-observability" in name
    )
    assert "fm-node-exporter.service" in script and "fm-prometheus-agent.service" in script
    # the head node is the cluster's Slurm client: Slurm node states, per-job info and the Slurm exporter (issue 22)
    assert "fm-slurm-textfile.timer fm-slurm-exporter.service" in script
    assert values  # the remote-write URL travels as an argument
    # the entry point, the shared loader and two archives (this bootstrap; the Slurm topology refresher's
    # OnNodeStart); the two pieces' policies and the entry point's
    assert len(head["Iam"]["S3Access"]) == 4 and len(head["Iam"]["AdditionalIamPolicies"]) == 3


def test_p5en_without_workspace_head_node_only_installs_the_prolog_checks() -> None:
    from examples.parallelcluster_stacks import ParallelClusterP5enStack

    stack = ParallelClusterP5enStack(new_app(), "FmParallelClusterP5en")
    data, values = stack.head_bootstrap.archive()
    assert {name.split("/")[1] for name in read_tar_gz(data) if name.startswith("steps/")} == {"001-node-health-prolog"}
    assert values == []
    # OnNodeStart: the Slurm topology refresher (enable_slurm_topology)
    assert set(stack.cluster.to_dict()["HeadNode"]["CustomActions"]) == {"OnNodeConfigured", "OnNodeStart"}
