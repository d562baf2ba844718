"""Lustre over EFA on ParallelCluster, as the User Guide tutorial "Creating a cluster with an EFA-enabled FSx Lustre"
(tutorial-efa-enabled-fsx-lustre) does it: the queue's OnNodeStart custom action configures the Lustre client for EFA
before ParallelCluster mounts (aws-parallelcluster 3.16.1 compute_node/user_data.sh: init, ``fetch_and_run
-preinstall`` = OnNodeStart, then the config recipe that mounts FsxLustre storage). fmconstructs runs its LNet-only
step (``lustre_lnet_commands``) there, registers the queue against the file system's 1,024 EFA connections, opens the
EFA security groups to each other, and warns ``parallelcluster-lustre-over-tcp`` for what mounts over TCP instead."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match

from fmconstructs import EfaSecurityGroup, FmValidationError, LustreFileSystem, OnDemand
from fmconstructs.bootstrap import NodeBootstrap, read_tar_gz
from fmconstructs.errors import WarningId
from fmconstructs.parallelcluster import (
    ComputeResource,
    CustomAction,
    CustomActionEvent,
    ParallelCluster,
    SharedLustre,
)
from fmconstructs.parallelcluster.cluster import LUSTRE_EFA_STEP

from tests.conftest import Scene, new_scene
from tests.support.parallelcluster import BLOCK, make_cluster
from tests.support.parallelcluster_lustre_efa import _efa_fs, _p5, _queue
from tests.support.parallelcluster_schema import check_configs, replace_intrinsics

OVER_TCP = WarningId.PARALLELCLUSTER_LUSTRE_OVER_TCP.qualified


def _warnings(scene: Scene, id: str = OVER_TCP) -> list[str]:
    found = Annotations.from_stack(scene.stack).find_warning("*", Match.string_like_regexp(".*"))
    texts = [str(entry.entry.data) for entry in found]
    return [text for text in texts if f"[ack: {id}]" in text]


def _step_script(bootstrap: NodeBootstrap) -> str:
    data, _ = bootstrap.archive()
    files = read_tar_gz(data)
    return "\n".join(content.decode() for path, (content, _) in files.items() if path.startswith("steps/"))


@pytest.fixture(scope="module")
def built() -> dict[str, Any]:
    """An EFA file system shared by the nodes' EFA group; a p5en block queue, a p5 queue of two compute resources
    and a CPU queue."""
    scene = new_scene()
    group = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = _efa_fs(scene, group)
    queues = [
        _queue(scene, "gpu", ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK)),
        _queue(scene, "p5", _p5("small", 2), _p5("large", 3)),
        _queue(scene, "cpu", ComputeResource(name="c7i", instance_type="c7i.4xlarge", max_nodes=4)),
    ]
    cluster = make_cluster(
        scene, queues=queues, shared_storage=[SharedLustre(file_system=fs)], node_security_group=group
    )
    return {"scene": scene, "fs": fs, "cluster": cluster, "config": cluster.to_dict()}


def _queue_config(built: dict[str, Any], name: str) -> dict[str, Any]:
    queues: list[dict[str, Any]] = built["config"]["Scheduling"]["SlurmQueues"]
    (queue,) = [q for q in queues if q["Name"] == name]
    return queue


# --- the OnNodeStart step ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("queue", "args"), [("gpu", "--lnet-only 8 p5en"), ("p5", "--lnet-only 8 p5")])
def test_efa_queues_configure_lnet_over_efa_in_on_node_start(built: dict[str, Any], queue: str, args: str) -> None:
    # GIVEN an EFA-enabled file system and EFA queues of catalog types
    cluster: ParallelCluster = built["cluster"]
    stack = built["scene"].stack
    bootstrap = cluster.lustre_efa_bootstraps[queue]
    action = bootstrap.script_action()
    # THEN the queue's OnNodeStart is the LNet-only step with the catalog's interface count, and nothing else
    config = _queue_config(built, queue)
    assert config["CustomActions"] == {
        "OnNodeStart": {"Script": stack.resolve(action.script_url), "Args": stack.resolve(list(action.args))}
    }
    assert config["CustomActions"]["OnNodeStart"]["Args"][0] == f"lustre-efa-{queue}"
    script = _step_script(bootstrap)
    assert f"/usr/local/sbin/fmconstructs-lustre-mount {args}" in script
    assert [step.name for step in bootstrap.steps] == [LUSTRE_EFA_STEP]


def test_efa_queue_reads_the_step_and_writes_its_logs(built: dict[str, Any]) -> None:
    config = _queue_config(built, "gpu")
    stack = built["scene"].stack
    action = built["cluster"].lustre_efa_bootstraps["gpu"].script_action()
    bucket = stack.resolve(action.bucket.bucket_name)
    assert config["Iam"]["S3Access"] == [
        {"BucketName": bucket, "KeyName": stack.resolve(k)} for k in action.object_keys
    ]
    policy = built["cluster"].node.find_child("LustreEfaPolicy")
    assert config["Iam"]["AdditionalIamPolicies"] == [{"Policy": stack.resolve(policy.managed_policy_arn)}]
    built["scene"].template().has_resource_properties(
        "AWS::IAM::ManagedPolicy",
        {
            "ManagedPolicyName": "parallelcluster-train-us-east-1-lustre-efa",
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Action": ["logs:CreateLogStream", "logs:PutLogEvents"]})]
                )
            },
        },
    )


def test_the_file_system_mount_stays_parallelclusters(built: dict[str, Any]) -> None:
    (storage,) = built["config"]["SharedStorage"]
    assert list(storage["FsxLustreSettings"]) == ["FileSystemId"]  # no EFA setting: the cookbook mounts @tcp


# --- the 1,024 EFA connection budget -------------------------------------------------------------------------------
def test_efa_queues_are_registered_with_the_sum_of_their_max_counts(built: dict[str, Any]) -> None:
    fs: LustreFileSystem = built["fs"]
    registered = [(g.consumer_path, g.max_nodes, g.efa_interfaces_per_node) for g in fs.efa_client_groups]
    assert registered == [("Test/Cluster/LustreEfa-gpu", 4, 8), ("Test/Cluster/LustreEfa-p5", 2 + 3, 8)]
    assert fs.max_efa_connections == 4 * 8 + 5 * 8


def test_too_many_efa_connections_are_refused_at_construction() -> None:
    # Issue 18: every count is known, so the cluster is refused at construction (it was a synthesis error).
    scene = new_scene()
    group = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = _efa_fs(scene, group)
    with pytest.raises(
        FmValidationError, match=r"^EFA connections to Test/Fs must be at most 1,024.*Test/Cluster/LustreEfa-p5"
    ):
        make_cluster(
            scene,
            queues=[_queue(scene, "p5", _p5("a", 100), _p5("b", 29))],  # 129 nodes x 8 interfaces = 1,032
            shared_storage=[SharedLustre(file_system=fs)],
            node_security_group=group,
        )


def test_a_deploy_time_max_count_warns_that_the_budget_is_unknown() -> None:
    scene = new_scene()
    group = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = _efa_fs(scene, group)
    nodes = cdk.CfnParameter(scene.stack, "Nodes", type="Number").value_as_number
    make_cluster(
        scene,
        queues=[_queue(scene, "p5", _p5("a", 2), _p5("b", nodes))],
        shared_storage=[SharedLustre(file_system=fs)],
        node_security_group=group,
    )
    assert len(fs.efa_client_groups) == 1 and fs.max_efa_connections is None
    assert _warnings(scene, WarningId.LUSTRE_EFA_CONNECTIONS_UNKNOWN.qualified)


# --- security groups -----------------------------------------------------------------------------------------------
def test_a_separate_node_group_is_opened_to_the_file_systems_efa_group() -> None:
    # GIVEN the file system's own EFA group and another EFA group for the nodes
    scene = new_scene()
    fs = _efa_fs(scene)
    nodes = EfaSecurityGroup(scene.stack, "NodesEfa", vpc=scene.vpc)
    make_cluster(scene, shared_storage=[SharedLustre(file_system=fs)], node_security_group=nodes)
    # THEN all traffic both ways between the two groups (the tutorial's "Create Security Groups" step)
    template = scene.template()
    fs_group = {"Fn::GetAtt": [Match.string_like_regexp("^Efa"), "GroupId"]}
    nodes_group = {"Fn::GetAtt": [Match.string_like_regexp("^NodesEfa"), "GroupId"]}
    for kind, own, other, key in (
        ("Ingress", fs_group, nodes_group, "SourceSecurityGroupId"),
        ("Egress", fs_group, nodes_group, "DestinationSecurityGroupId"),
        ("Ingress", nodes_group, fs_group, "SourceSecurityGroupId"),
        ("Egress", nodes_group, fs_group, "DestinationSecurityGroupId"),
    ):
        template.has_resource_properties(
            f"AWS::EC2::SecurityGroup{kind}", {"IpProtocol": "-1", "GroupId": own, key: other}
        )
    assert [g.max_efa_connections for g in fs.efa_client_groups] == [32]
    assert not _warnings(scene)


# --- over TCP, with a warning --------------------------------------------------------------------------------------
def test_a_queue_of_a_type_outside_the_catalog_mounts_over_tcp_with_a_warning(built: dict[str, Any]) -> None:
    config = _queue_config(built, "cpu")
    assert "CustomActions" not in config
    assert "cpu" not in built["cluster"].lustre_efa_bootstraps
    (warning,) = _warnings(built["scene"])
    assert warning.startswith("queue cpu mounts the EFA-enabled file system fsx (Test/Fs) over TCP, not EFA:")
    assert "c7i.4xlarge" in warning and "not a catalog type" in warning


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (
            "opted-out",
            "every compute node mounts the EFA-enabled file system fsx (Test/Fs) over TCP, not EFA: "
            "SharedLustre(efa_clients=False)",
        ),
        ("no-node-group", "LNet over EFA needs node_security_group"),
        ("efa-off", "compute resource p5 has Efa.Enabled false"),
        ("other-zone", "is in us-east-1b, not in us-east-1a with file system fsx"),
        ("mixed-families", "several instance families or EFA interface counts"),
    ],
)
def test_what_cannot_use_efa_mounts_over_tcp_with_a_warning(case: str, expected: str) -> None:
    scene = new_scene()
    group = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = _efa_fs(scene, group)
    queue = _queue(scene, "gpu", _p5())
    props: dict[str, Any] = {"node_security_group": group}
    shared = SharedLustre(file_system=fs, efa_clients=case != "opted-out")
    if case == "no-node-group":
        props = {}
    elif case == "efa-off":
        queue = _queue(scene, "gpu", _p5(efa=False, placement_group=False))
    elif case == "other-zone":
        queue = _queue(scene, "gpu", _p5(), subnets=[scene.subnet_b])
    elif case == "mixed-families":
        queue = _queue(scene, "gpu", _p5(), ComputeResource(name="p5en", instance_type="p5en.48xlarge", max_nodes=1))
    cluster = make_cluster(scene, queues=[queue], shared_storage=[shared], **props)
    config = cluster.to_dict()
    assert "CustomActions" not in config["Scheduling"]["SlurmQueues"][0]
    assert cluster.lustre_efa_bootstraps == {}
    assert fs.efa_client_groups == ()
    (warning,) = _warnings(scene)
    assert expected in warning
    scene.app.synth()  # a zone mismatch is a warning here, not register_efa_clients' error


def test_a_file_system_without_efa_changes_nothing() -> None:
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    cluster = make_cluster(scene, shared_storage=[SharedLustre(file_system=fs)])
    assert "CustomActions" not in cluster.to_dict()["Scheduling"]["SlurmQueues"][0]
    assert cluster.lustre_efa_bootstraps == {} and not _warnings(scene)


@pytest.mark.parametrize("bad", [None, 1, "yes"])
def test_efa_clients_must_be_a_bool(bad: Any) -> None:
    scene = new_scene()
    with pytest.raises(FmValidationError, match="efa_clients"):
        SharedLustre(file_system=_efa_fs(scene), efa_clients=bad)


# --- with the queue's own OnNodeStart ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def combined() -> dict[str, Any]:
    """One queue with its own OnNodeStart action, one with a node bootstrap at OnNodeStart and another at
    OnNodeConfigured."""
    scene = new_scene()
    group = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = _efa_fs(scene, group)
    own = CustomAction(script="s3://fm-bootstrap/start.sh", args=["--fast"])
    queues = [
        _queue(scene, "own", _p5(), on_node_start=own, s3_read_buckets=["fm-bootstrap"]),
        _queue(scene, "boot", _p5()),
    ]
    cluster = make_cluster(
        scene, queues=queues, shared_storage=[SharedLustre(file_system=fs)], node_security_group=group
    )
    start = NodeBootstrap(scene.stack, "Start", name="start")
    start.add_commands("echo start")
    configured = NodeBootstrap(scene.stack, "Configured", name="configured")
    configured.add_commands("echo configured")
    cluster.add_node_bootstrap(start, queues=["boot"], event=CustomActionEvent.ON_NODE_START)
    cluster.add_node_bootstrap(configured, queues=["boot"])
    return {"scene": scene, "cluster": cluster, "start": start, "configured": configured, "config": cluster.to_dict()}


def _action(stack: cdk.Stack, bootstrap: NodeBootstrap) -> dict[str, Any]:
    action = bootstrap.script_action()
    return {"Script": stack.resolve(action.script_url), "Args": stack.resolve(list(action.args))}


def test_the_lnet_step_runs_first_in_a_sequence_with_the_queues_own_action(combined: dict[str, Any]) -> None:
    stack, cluster = combined["scene"].stack, combined["cluster"]
    own = combined["config"]["Scheduling"]["SlurmQueues"][0]
    assert own["CustomActions"] == {
        "OnNodeStart": {
            "Sequence": [
                _action(stack, cluster.lustre_efa_bootstraps["own"]),
                {"Script": "s3://fm-bootstrap/start.sh", "Args": ["--fast"]},
            ]
        }
    }
    assert own["Iam"]["S3Access"][0] == {"BucketName": "fm-bootstrap"}


def test_the_lnet_step_runs_before_a_node_bootstrap_at_on_node_start(combined: dict[str, Any]) -> None:
    stack, cluster = combined["scene"].stack, combined["cluster"]
    boot = combined["config"]["Scheduling"]["SlurmQueues"][1]
    assert boot["CustomActions"] == {
        "OnNodeStart": {
            "Sequence": [_action(stack, cluster.lustre_efa_bootstraps["boot"]), _action(stack, combined["start"])]
        },
        "OnNodeConfigured": _action(stack, combined["configured"]),
    }
    # the loader object is shared: loader + three archives
    assert len(boot["Iam"]["S3Access"]) == 4
    assert len(boot["Iam"]["AdditionalIamPolicies"]) == 3


def test_combined_configuration_passes_parallelclusters_schema_and_validators(combined: dict[str, Any]) -> None:
    (result,) = check_configs([replace_intrinsics(combined["config"])], offline_validators=True)
    assert result["ok"], result
    assert not [f for f in result["validator_failures"] if f["level"] == "ERROR"]


def test_efa_lustre_queues_pass_parallelclusters_schema_and_validators(built: dict[str, Any]) -> None:
    (result,) = check_configs([replace_intrinsics(built["config"])], offline_validators=True)
    assert result["ok"], result
    assert not [f for f in result["validator_failures"] if f["level"] == "ERROR"]


def test_a_sequence_needs_parallelcluster_3_6_0() -> None:
    scene = new_scene()
    group = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    own = CustomAction(script="s3://fm-bootstrap/start.sh")
    cluster = make_cluster(
        scene,
        queues=[_queue(scene, "gpu", _p5(capacity=OnDemand()), on_node_start=own)],
        shared_storage=[SharedLustre(file_system=_efa_fs(scene, group))],
        node_security_group=group,
        version="3.5.1",
    )
    with pytest.raises(FmValidationError, match=r"version must be 3.6.0 or later: queue gpu runs the Lustre-over-EFA"):
        cluster.to_dict()
