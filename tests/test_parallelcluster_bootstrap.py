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
from fmconstructs.parallelcluster import ComputeResource, CustomAction, ParallelCluster, SlurmQueue
from tests.conftest import Scene, new_app, new_scene
from tests.test_parallelcluster import BLOCK, make_cluster


def _queue(scene: Scene, name: str, **kwargs: Any) -> SlurmQueue:
    return SlurmQueue(
        name=name,
        subnets=[scene.subnet_a],
        compute_resources=[ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK)],
        **kwargs,
    )


def _bootstrap(scene: Scene, id: str = "Boot") -> NodeBootstrap:
    boot = NodeBootstrap(scene.stack, id, name=f"pc-{id.lower()}")
    boot.add_commands("echo hello")
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
    assert steps == {"001-nvme-scratch", "002-observability"}
    assert values  # the workspace's remote-write URL travels as an argument, not in the archive
    assert len(action["Args"]) == 5 + len(values)
    assert len(queue["Iam"]["S3Access"]) == 2


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
    assert {name.split("/")[1] for name in read_tar_gz(data) if name.startswith("steps/")} == {"001-nvme-scratch"}
    assert values == []
    (queue,) = stack.cluster.to_dict()["Scheduling"]["SlurmQueues"]
    assert len(queue["CustomActions"]["OnNodeConfigured"]["Args"]) == 5
