"""Topology-aware, all-or-nothing scheduling on EKS: Kueue 0.19.2 (Topology Aware Scheduling over the EKS network-node
labels, waitForPodsReady), JobSet 0.12.0, flavors, the ClusterQueue quotas and LocalQueues, and the sample JobSet.
Every rendered Kueue and JobSet object is validated against the CRD schemas of the pinned versions (tests/data/
kueue_crds, see SOURCE.md there)."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import jsonschema
import pytest
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs import CapacityBlock, FmValidationError
from fmconstructs.eks import GpuEksCluster, KueueScheduling, render_sample_training_job
from fmconstructs.eks.scheduling import (
    JOBSET,
    KUEUE,
    kueue_configuration,
    network_layers,
    topology_levels,
)
from fmconstructs.errors import WarningId
from fmconstructs.platform import EksOptions, TrainingPlatform

from tests.conftest import ENV, new_app, new_scene
from tests.support.eks_kueue import validate


def kueue_objects(template: Template) -> list[dict[str, Any]]:
    found = []
    for resource in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").values():
        body = resource["Properties"]["Manifest"]
        if "kueue.x-k8s.io/" not in json.dumps(body):
            continue
        assert isinstance(body, str), "Kueue manifests carry no deploy-time values"
        found += [m for m in json.loads(body) if m["apiVersion"].startswith("kueue.x-k8s.io/")]
    return found


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def chart(template: Template, name: str) -> dict[str, Any]:
    found = template.find_resources("Custom::AWSCDK-EKS-HelmChart", {"Properties": {"Chart": name}})
    assert len(found) == 1, f"{len(found)} {name} charts"
    return next(iter(found.values()))


# --- FmEksP5en (p5en on a Capacity Block, p6-b300 on an ODCR) ---------------------------------------------------------
@pytest.fixture(scope="module")
def p5en():
    from examples.eks_stack import EksStack

    stack = EksStack(new_app(), "FmEksP5en")
    return stack, Template.from_stack(stack)


@pytest.fixture(scope="module")
def gb200():
    from examples.eks_gb200_stack import EksGb200Stack

    stack = EksGb200Stack(new_app(), "FmEksGb200")
    return stack, Template.from_stack(stack)


@pytest.mark.parametrize("example", ["p5en", "gb200"])
def test_every_kueue_object_is_valid_against_the_pinned_crd_schemas(example, request):
    _, template = request.getfixturevalue(example)
    objects = kueue_objects(template)
    assert {o["kind"] for o in objects} == {"Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue"}
    for manifest in objects:
        validate(manifest)


def test_kueue_and_jobset_charts_are_pinned_oci_charts_that_wait_for_their_webhooks(p5en):
    _, template = p5en
    kueue = chart(template, "kueue")["Properties"]
    assert (kueue["Repository"], kueue["Version"], kueue["Namespace"]) == (
        "oci://registry.k8s.io/kueue/charts/kueue",
        "0.19.2",
        "kueue-system",
    )
    assert kueue["Wait"] is True
    jobset = chart(template, "jobset")["Properties"]
    assert (jobset["Repository"], jobset["Version"]) == ("oci://registry.k8s.io/jobset/charts/jobset", "0.12.0")
    # Kueue's JobSet integration needs the JobSet API: the JobSet chart comes first.
    jobset_id = next(iter(template.find_resources("Custom::AWSCDK-EKS-HelmChart", {"Properties": {"Chart": "jobset"}})))
    assert jobset_id in chart(template, "kueue")["DependsOn"]


def test_kueue_configuration_turns_on_all_or_nothing_admission(p5en):
    _, template = p5en
    values = json.loads(chart(template, "kueue")["Properties"]["Values"])
    config = json.loads(values["managerConfig"]["controllerManagerConfigYaml"])
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2" and config["kind"] == "Configuration"
    assert config["waitForPodsReady"] == {
        "timeout": "30m",
        "blockAdmission": False,
        "requeuingStrategy": {"timestamp": "Eviction"},
    }
    assert config["resources"] == {"quotaCheckStrategy": "IgnoreUndeclared"}
    assert "jobset.x-k8s.io/jobset" in config["integrations"]["frameworks"]


def test_topologies_are_the_eks_network_node_labels_then_the_hostname(p5en):
    _, template = p5en
    topologies = {t["metadata"]["name"]: t["spec"]["levels"] for t in of_kind(kueue_objects(template), "Topology")}
    layer = "topology.k8s.aws/network-node-layer-"
    assert topologies == {
        "aws-network-3-layers": [{"nodeLabel": f"{layer}{n}"} for n in (1, 2, 3)]
        + [{"nodeLabel": "kubernetes.io/hostname"}],
        "aws-network-4-layers": [{"nodeLabel": f"{layer}{n}"} for n in (1, 2, 3, 4)]
        + [{"nodeLabel": "kubernetes.io/hostname"}],
    }


def test_a_flavor_per_node_group_selects_its_nodes_and_tolerates_the_gpu_taint(p5en):
    stack, template = p5en
    flavors = {f["metadata"]["name"]: f["spec"] for f in of_kind(kueue_objects(template), "ResourceFlavor")}
    assert flavors["p5en-48xlarge-capacity-block"]["topologyName"] == "aws-network-3-layers"
    assert flavors["p6-b300-48xlarge-capacity-reservation"]["topologyName"] == "aws-network-4-layers"
    for group, name in (
        (stack.p5en, "p5en-48xlarge-capacity-block"),
        (stack.p6_b300, "p6-b300-48xlarge-capacity-reservation"),
    ):
        for key, value in flavors[name]["nodeLabels"].items():
            assert group.labels[key] == value  # labels the node group puts on its nodes
        assert flavors[name]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_cluster_queue_quotas_are_gpus_and_efa_interfaces_times_max_nodes(p5en):
    stack, template = p5en
    (queue,) = of_kind(kueue_objects(template), "ClusterQueue")
    (group,) = queue["spec"]["resourceGroups"]
    assert group["coveredResources"] == ["nvidia.com/gpu", "vpc.amazonaws.com/efa"]
    quotas = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}
    assert quotas == {
        "p5en-48xlarge-capacity-block": {
            "nvidia.com/gpu": 8 * stack.p5en.max_nodes,
            "vpc.amazonaws.com/efa": stack.p5en.efa_interface_count * stack.p5en.max_nodes,
        },
        "p6-b300-48xlarge-capacity-reservation": {
            "nvidia.com/gpu": 8 * stack.p6_b300.max_nodes,
            "vpc.amazonaws.com/efa": stack.p6_b300.efa_interface_count * stack.p6_b300.max_nodes,
        },
    }
    assert quotas["p5en-48xlarge-capacity-block"] == {"nvidia.com/gpu": 16, "vpc.amazonaws.com/efa": 32}


def test_local_queue_in_the_named_namespace_after_the_namespace_exists(p5en):
    stack, template = p5en
    (local,) = of_kind(kueue_objects(template), "LocalQueue")
    assert local["metadata"]["namespace"] == "training" and local["spec"] == {"clusterQueue": "fm-gpu"}
    queues_id = stack.resolve(stack.scheduling.queues.node.default_child.logical_id)
    volume_id = stack.resolve(stack.volume.node.default_child.logical_id)
    assert volume_id in template.to_json()["Resources"][queues_id]["DependsOn"]


def test_gb200_queue_holds_the_ultraserver_gpus_in_a_three_layer_topology(gb200):
    stack, template = gb200
    objects = kueue_objects(template)
    (flavor,) = of_kind(objects, "ResourceFlavor")
    assert flavor["spec"]["topologyName"] == "aws-network-3-layers"
    assert flavor["spec"]["nodeLabels"]["fmconstructs.io/instance-type"] == "p6e-gb200.36xlarge"
    (queue,) = of_kind(objects, "ClusterQueue")
    resources = {r["name"]: r["nominalQuota"] for r in queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert resources == {
        "nvidia.com/gpu": 4 * stack.gb200.max_nodes,
        "vpc.amazonaws.com/efa": 4 * stack.gb200.max_nodes,
    }
    assert resources["nvidia.com/gpu"] == 72
    # The NVLink-domain label is not a level (nvidia.com/gpu.clique on EKS is UNCONFIRMED).
    assert all("clique" not in json.dumps(t) for t in of_kind(objects, "Topology"))


# --- the sample JobSet --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("instance_type", "gpus", "efa", "level"),
    [
        ("p5en.48xlarge", 8, 16, "topology.k8s.aws/network-node-layer-3"),
        ("p6e-gb200.36xlarge", 4, 4, "topology.k8s.aws/network-node-layer-3"),
        ("p6-b200.48xlarge", 8, None, "topology.k8s.aws/network-node-layer-4"),
    ],
)
def test_sample_job_is_a_schema_valid_jobset_on_one_network_node(instance_type, gpus, efa, level):
    job = render_sample_training_job(
        instance_type=instance_type, nodes=4, image="public.ecr.aws/x/train:1", namespace="training"
    )
    validate(job)
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "fm-gpu"}
    (replicated,) = job["spec"]["replicatedJobs"]
    spec = replicated["template"]["spec"]
    assert (spec["parallelism"], spec["completions"]) == (4, 4)
    pod = spec["template"]
    assert pod["metadata"]["annotations"] == {"kueue.x-k8s.io/podset-required-topology": level}
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == gpus
    if efa is not None:
        assert limits["vpc.amazonaws.com/efa"] == efa
    else:
        assert limits["vpc.amazonaws.com/efa"] > 0
    assert pod["spec"]["nodeSelector"] == {"fmconstructs.io/instance-type": instance_type}


def test_sample_job_preferred_topology_and_command():
    job = render_sample_training_job(
        instance_type="p5en.48xlarge",
        nodes=2,
        image="img:1",
        required=False,
        topology_level="topology.k8s.aws/network-node-layer-2",
        command=["torchrun", "train.py"],
        queue_name="team-a",
    )
    validate(job)
    pod = job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-preferred-topology": "topology.k8s.aws/network-node-layer-2"
    }
    assert pod["spec"]["containers"][0]["command"] == ["torchrun", "train.py"]


def test_the_schema_check_catches_an_unknown_field():
    job = render_sample_training_job(instance_type="p5en.48xlarge", nodes=2, image="img:1")
    job["spec"]["replicatedJobs"][0]["replicaz"] = 1
    with pytest.raises(jsonschema.ValidationError):
        validate(job)


@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"nodes": 0}, "nodes"),
        ({"image": ""}, "image"),
        ({"queue_name": "Team_A"}, "queue_name"),
        ({"namespace": "a.b"}, "namespace"),
        ({"topology_level": "topology.k8s.aws/network-node-layer-4"}, "topology_level"),  # p5en has 3 layers
        ({"topology_level": "topology.kubernetes.io/zone"}, "topology_level"),
        ({"command": []}, "command"),
        ({"command": "python train.py"}, "command"),
    ],
)
def test_sample_job_bad_input(overrides, parameter):
    props: dict[str, Any] = {"instance_type": "p5en.48xlarge", "nodes": 2, "image": "img:1", **overrides}
    with pytest.raises(FmValidationError, match=rf"^{parameter}"):
        render_sample_training_job(**props)


def test_unknown_instance_type_is_refused():
    with pytest.raises(FmValidationError):
        render_sample_training_job(instance_type="p9.96xlarge", nodes=2, image="img:1")


def test_network_layers_follow_the_ec2_topology_prerequisites():
    assert [network_layers(t) for t in ("p5.48xlarge", "p5en.48xlarge", "p6e-gb200.36xlarge")] == [3, 3, 3]
    assert [network_layers(t) for t in ("p6-b200.48xlarge", "p6-b300.48xlarge")] == [4, 4]
    with pytest.raises(FmValidationError, match=r"^layers"):
        topology_levels(5)


# --- the construct on its own cluster -----------------------------------------------------------------------------------
def _cluster():
    scene = new_scene()
    return scene, GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)


def test_node_groups_added_after_scheduling_join_the_queue_and_same_type_groups_share_a_flavor():
    scene, cluster = _cluster()
    scheduling = cluster.add_topology_scheduling(namespaces=["team-a", "team-b"], create_namespaces=True)
    cluster.add_gpu_node_group("A", instance_type="p5.48xlarge", max_nodes=2, subnets=[scene.subnet_a])
    cluster.add_gpu_node_group("B", instance_type="p5.48xlarge", max_nodes=3, subnets=[scene.subnet_a])
    objects = kueue_objects(scene.template())
    for manifest in objects:
        validate(manifest)
    assert [f.gpus for f in scheduling.flavors] == [40]
    (queue,) = of_kind(objects, "ClusterQueue")
    assert queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": 40,
    }
    assert sorted(q["metadata"]["namespace"] for q in of_kind(objects, "LocalQueue")) == ["team-a", "team-b"]
    assert len(of_kind(objects, "ResourceFlavor")) == 1


def test_a_deploy_time_max_nodes_warns_and_stays_out_of_the_quota():
    scene, cluster = _cluster()
    nodes = cdk.CfnParameter(scene.stack, "Nodes", type="Number", default=2).value_as_number
    cluster.add_gpu_node_group("A", instance_type="p5.48xlarge", max_nodes=nodes, subnets=[scene.subnet_a])
    scheduling = cluster.add_topology_scheduling()
    assert scheduling.flavors == ()
    Annotations.from_stack(scene.stack).has_warning("*", Match.string_like_regexp(WarningId.EKS_SCHEDULING_QUOTA.value))


def test_mirrored_kueue_image_goes_to_the_chart_image_key():
    from fmconstructs.eks import ChartSource

    scene, cluster = _cluster()
    source = ChartSource.oci("oci://111122223333.dkr.ecr.us-east-1.amazonaws.com/charts/kueue").with_image(
        "111122223333.dkr.ecr.us-east-1.amazonaws.com/kueue/kueue", tag="v0.19.2"
    )
    cluster.add_topology_scheduling(kueue_source=source, jobset=False)
    template = scene.template()
    props = chart(template, "kueue")["Properties"]
    assert props["Repository"] == "oci://111122223333.dkr.ecr.us-east-1.amazonaws.com/charts/kueue"
    values = json.loads(props["Values"])
    assert values["controllerManager"]["manager"]["image"]["repository"].endswith("/kueue/kueue")
    assert "image" not in values
    assert not template.find_resources("Custom::AWSCDK-EKS-HelmChart", {"Properties": {"Chart": "jobset"}})


@pytest.mark.parametrize(
    ("options", "parameter"),
    [
        ({"namespaces": []}, "namespaces"),
        ({"namespaces": "training"}, "namespaces"),
        ({"namespaces": ["a", "a"]}, "namespaces"),
        ({"namespaces": ["Bad_NS"]}, r"namespaces\[0\]"),
        ({"cluster_queue_name": "Q"}, "cluster_queue_name"),
        ({"local_queue_name": ""}, "local_queue_name"),
        ({"pods_ready_timeout_minutes": 0}, "pods_ready_timeout_minutes"),
        ({"pods_ready_timeout_minutes": 100_000}, "pods_ready_timeout_minutes"),
        ({"create_namespaces": "yes"}, "create_namespaces"),
        ({"jobset": 1}, "jobset"),
    ],
)
def test_scheduling_bad_input(options, parameter):
    _, cluster = _cluster()
    with pytest.raises(FmValidationError, match=rf"^{parameter}"):
        cluster.add_topology_scheduling(**options)


def test_scheduling_is_added_once_per_cluster():
    _, cluster = _cluster()
    cluster.add_topology_scheduling()
    with pytest.raises(FmValidationError, match=r"^add_topology_scheduling"):
        cluster.add_topology_scheduling()
    assert isinstance(cluster.topology_scheduling, KueueScheduling)


def test_no_second_kueue_next_to_hyperpod_task_governance():
    _, cluster = _cluster()
    cluster.add_hyperpod_instance_types(["ml.p5en.48xlarge"])
    with pytest.raises(FmValidationError, match=r"^add_topology_scheduling"):
        cluster.add_topology_scheduling()
    _, other = _cluster()
    other.add_topology_scheduling()
    with pytest.raises(FmValidationError, match=r"^instance_types"):
        other.add_hyperpod_instance_types(["ml.p5en.48xlarge"])


def test_kueue_configuration_timeout():
    assert kueue_configuration(pods_ready_timeout_minutes=45)["waitForPodsReady"]["timeout"] == "45m"
    assert (KUEUE.version, JOBSET.version) == ("0.19.2", "0.12.0")


# --- TrainingPlatform(EksOptions(scheduling=...)) ----------------------------------------------------------------------
def _platform(**options: Any) -> Template:
    app = new_app()
    stack = cdk.Stack(app, "Platform", env=ENV)
    scene_vpc = new_scene_vpc(stack)
    TrainingPlatform(
        stack,
        "Platform",
        vpc=scene_vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        capacity=CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2),
        orchestrator=EksOptions(gpu_addons=False, **options),
        health=None,
    )
    return Template.from_stack(stack)


def new_scene_vpc(stack: cdk.Stack):
    from aws_cdk import aws_ec2 as ec2

    return ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1", "rtb-0bbbbbbbbbbbbbbb2"],
    )


def test_platform_schedules_through_kueue_by_default_and_can_opt_out():
    template = _platform()
    chart(template, "kueue")
    objects = kueue_objects(template)
    for manifest in objects:
        validate(manifest)
    (local,) = of_kind(objects, "LocalQueue")
    assert local["metadata"]["namespace"] == "default"
    off = _platform(scheduling=False)
    assert not off.find_resources("Custom::AWSCDK-EKS-HelmChart", {"Properties": {"Chart": "kueue"}})
    with pytest.raises(FmValidationError, match=r"^scheduling"):
        EksOptions(scheduling="yes")  # type: ignore[arg-type]
