"""ParallelCluster.enable_slurm_topology: TopologyPlugin=topology/tree, a head-node refresher (script + systemd timer)
that renders topology.conf from DescribeInstanceTopology and runs scontrol reconfigure only on change; shellchecked
and run in a sandbox with fake aws/scontrol; FmParallelClusterP5en renders a topology from a faked response."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from fmconstructs import FmValidationError, UltraServerCapacityBlock
from fmconstructs.bootstrap import NodeBootstrap, read_tar_gz
from fmconstructs.parallelcluster import ComputeResource, CustomActionEvent, SlurmQueue
from fmconstructs.parallelcluster.topology import (
    REFRESH_PATH,
    RENDERER_PATH,
    TOPOLOGY_STEP,
    initial_topology_conf,
    render_refresh_script,
    topology_statements,
)

from tests.conftest import Scene, new_app, new_scene, require_tool
from tests.support.parallelcluster import BLOCK, make_cluster


def _files(bootstrap: NodeBootstrap) -> dict[str, str]:
    data, _ = bootstrap.archive()
    return {name: content.decode() for name, (content, _mode) in read_tar_gz(data).items()}


def _step_file(files: dict[str, str], path: str) -> str:
    (match,) = [text for name, text in files.items() if name.endswith(path)]
    return match


def test_enable_sets_topology_plugin_and_a_head_node_on_node_start_action() -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    bootstrap = cluster.enable_slurm_topology()
    config = cluster.to_dict()
    assert {"TopologyPlugin": "topology/tree"} in config["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"]
    action = config["HeadNode"]["CustomActions"]["OnNodeStart"]
    assert action["Script"].startswith("s3://")
    files = _files(bootstrap)
    assert any(name.endswith(REFRESH_PATH) for name in files)
    renderer = _step_file(files, RENDERER_PATH)
    assert "def render_topology_conf(" in renderer and "import aws_cdk" not in renderer
    timer = _step_file(files, "/etc/systemd/system/fmconstructs-slurm-topology.timer")
    assert "OnUnitActiveSec=5min" in timer
    data, _ = bootstrap.archive()
    steps = {name.split("/")[1] for name in read_tar_gz(data) if name.startswith("steps/")}
    assert any(step.endswith(TOPOLOGY_STEP) for step in steps)


def test_head_node_policy_grants_the_two_list_actions() -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    cluster.enable_slurm_topology()
    Template.from_stack(scene.stack).has_resource_properties(
        "AWS::IAM::ManagedPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": ["ec2:DescribeInstanceTopology", "ec2:DescribeInstances"],
                                "Effect": "Allow",
                                "Resource": "*",
                            }
                        )
                    ]
                )
            }
        },
    )


def test_initial_file_lists_every_parallelcluster_node() -> None:
    scene = new_scene()
    queues = [
        SlurmQueue(
            name="gpu",
            subnets=[scene.subnet_a],
            compute_resources=[
                ComputeResource(name="p5en", instance_type="p5en.48xlarge", min_nodes=2, max_nodes=4),
                ComputeResource(name="b200", instance_type="p6-b200.48xlarge", min_nodes=0, max_nodes=1),
            ],
        )
    ]
    text = initial_topology_conf(queues)
    assert text.splitlines()[-1] == "SwitchName=fm-unplaced Nodes=gpu-st-p5en-[1-2],gpu-dy-p5en-[1-2],gpu-dy-b200-1"


def test_own_bootstrap_and_interval() -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    mine = NodeBootstrap(scene.stack, "Mine", name="head-mine")
    returned = cluster.enable_slurm_topology(bootstrap=mine, interval_minutes=15)
    assert returned is mine
    cluster.add_head_node_bootstrap(mine, event=CustomActionEvent.ON_NODE_START, statements=topology_statements())
    assert "OnUnitActiveSec=15min" in _step_file(_files(mine), "fmconstructs-slurm-topology.timer")


def test_topology_is_a_piece_of_the_head_node_start_next_to_the_others() -> None:
    from fmconstructs.observability.slurm_job_mapping import enable_parallelcluster_job_mapping

    scene = new_scene()
    cluster = make_cluster(scene)
    enable_parallelcluster_job_mapping(cluster, event=CustomActionEvent.ON_NODE_START)  # the platform's event
    topology = cluster.enable_slurm_topology()
    assert cluster.head_node_pieces(CustomActionEvent.ON_NODE_START)[-1] is topology
    runs = cluster.head_node_actions(CustomActionEvent.ON_NODE_START)
    assert [entry["Args"][0] for entry in runs] == ["slurm-scripts", "slurm-topology"]


def test_topology_only_on_update_is_refused() -> None:
    cluster = make_cluster(new_scene())
    with pytest.raises(FmValidationError, match=r"event must be OnNodeStart or OnNodeConfigured \(OnNodeUpdated runs"):
        cluster.enable_slurm_topology(event=CustomActionEvent.ON_NODE_UPDATED)


def test_topology_in_a_bootstrap_that_never_runs_at_creation_fails_synthesis() -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    mine = NodeBootstrap(scene.stack, "Mine", name="head-mine")
    cluster.enable_slurm_topology(bootstrap=mine)
    cluster.add_head_node_bootstrap(mine, event=CustomActionEvent.ON_NODE_UPDATED, statements=topology_statements())
    assert any("does not run on the head node at OnNodeStart or OnNodeConfigured" in e for e in cluster.node.validate())


def test_topology_in_an_attached_bootstrap_is_refused() -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    mine = NodeBootstrap(scene.stack, "Mine", name="head-mine")
    mine.add_commands("echo mine")
    cluster.add_head_node_bootstrap(mine)
    with pytest.raises(FmValidationError, match="bootstrap must be a bootstrap not attached yet"):
        cluster.enable_slurm_topology(bootstrap=mine)


def _gb200(scene: Scene) -> SlurmQueue:
    ultra = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef0", zone="us-east-1a")
    resource = ComputeResource(name="nvl72", instance_type="p6e-gb200.36xlarge", capacity=ultra)
    return SlurmQueue(name="gb200", subnets=[scene.subnet_a], compute_resources=[resource])


def _cpu(scene: Scene) -> SlurmQueue:
    return SlurmQueue(
        name="cpu",
        subnets=[scene.subnet_a],
        compute_resources=[ComputeResource(name="c7i", instance_type="c7i.xlarge")],
    )


@pytest.mark.parametrize(
    ("queues", "kwargs", "match"),
    [
        ("gb200", {}, "p6e-gb200"),
        ("cpu", {}, "p5en.48xlarge"),
        ("p5en", {"interval_minutes": 0}, "interval_minutes"),
        ("p5en", {"interval_minutes": 2000}, "interval_minutes"),
        ("p5en", {"interval_minutes": "5"}, "interval_minutes"),
        ("p5en", {"bootstrap": "not one"}, "bootstrap"),
    ],
)
def test_bad_input(queues: str, kwargs: dict[str, Any], match: str) -> None:
    scene = new_scene()
    overrides: dict[str, Any] = {}
    if queues == "gb200":
        overrides["queues"] = [_gb200(scene)]
    elif queues == "cpu":
        overrides["queues"] = [_cpu(scene)]
    cluster = make_cluster(scene, **overrides)
    with pytest.raises((FmValidationError, TypeError), match=match):
        cluster.enable_slurm_topology(**kwargs)


def test_refresh_script_passes_shellcheck(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    script = tmp_path / "refresh.sh"
    script.write_text(render_refresh_script())
    result = subprocess.run([shellcheck, "-s", "bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


# --- sandbox: fake aws and scontrol ----------------------------------------------------------------------------------

TOPOLOGY = {
    "Instances": [
        {"InstanceId": "i-a", "InstanceType": "p5en.48xlarge", "NetworkNodes": ["nn-1", "nn-2", "nn-3"]},
        {"InstanceId": "i-b", "InstanceType": "p5en.48xlarge", "NetworkNodes": ["nn-1", "nn-2", "nn-4"]},
    ]
}
INSTANCES = {
    "Reservations": [
        {"Instances": [{"InstanceId": "i-a", "PrivateIpAddress": "10.0.0.1"}]},
        {"Instances": [{"InstanceId": "i-b", "PrivateIpAddress": "10.0.0.2"}]},
    ]
}
NODES = "NodeName=gpu-st-p5en-1 NodeAddr=10.0.0.1 State=IDLE\nNodeName=gpu-st-p5en-2 NodeAddr=10.0.0.2 State=IDLE\n"


def _sandbox(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "topology.json").write_text(json.dumps(TOPOLOGY))
    (tmp_path / "instances.json").write_text(json.dumps(INSTANCES))
    (tmp_path / "nodes.txt").write_text(NODES)
    aws = bin_dir / "aws"
    aws.write_text(
        "#!/bin/bash\n"
        f'echo "$*" >> {tmp_path}/aws.log\n'
        f'case "$2" in describe-instances) cat {tmp_path}/instances.json ;; '
        f"describe-instance-topology) cat {tmp_path}/topology.json ;; *) exit 3 ;; esac\n"
    )
    scontrol = bin_dir / "scontrol"
    scontrol.write_text(
        f'#!/bin/bash\necho "$*" >> {tmp_path}/scontrol.log\nif [ "$1" = show ]; then cat {tmp_path}/nodes.txt; fi\n'
    )
    for tool in (aws, scontrol):
        tool.chmod(0o755)
    script = tmp_path / "refresh.sh"
    script.write_text(render_refresh_script())
    script.chmod(0o755)
    from fmconstructs.topology import slurm

    return {
        **os.environ,
        "FM_CLUSTER_NAME": "train",
        "FM_INSTANCE_TYPES": "p5en.48xlarge",
        "AWS_DEFAULT_REGION": "us-east-1",
        "FM_AWS": str(aws),
        "FM_SCONTROL": str(scontrol),
        "FM_PYTHON": sys.executable,
        "FM_TOPOLOGY_FILE": str(tmp_path / "topology.conf"),
        "FM_RENDERER": slurm.__file__,
    }


def _run(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(tmp_path / "refresh.sh")], env=env, capture_output=True, text=True, check=False, timeout=60
    )


def _reconfigures(tmp_path: Path) -> int:
    log = tmp_path / "scontrol.log"
    return log.read_text().splitlines().count("reconfigure") if log.exists() else 0


def test_sandbox_writes_then_reconfigures_only_on_change(tmp_path: Path) -> None:
    env = _sandbox(tmp_path)
    first = _run(tmp_path, env)
    assert first.returncode == 0, first.stderr
    conf = (tmp_path / "topology.conf").read_text()
    assert "SwitchName=nn-2 Switches=nn-3,nn-4" in conf
    assert "SwitchName=nn-3 Nodes=gpu-st-p5en-1" in conf
    assert _reconfigures(tmp_path) == 1
    aws_log = (tmp_path / "aws.log").read_text()
    assert "Name=tag:parallelcluster:cluster-name,Values=train" in aws_log
    assert "Name=tag:parallelcluster:node-type,Values=Compute" in aws_log
    assert "Name=instance-type,Values=p5en.48xlarge" in aws_log
    # unchanged fleet: no rewrite, no reconfigure
    assert _run(tmp_path, env).returncode == 0
    assert _reconfigures(tmp_path) == 1
    # node 2 leaves (no instance, powered down): file changes, one more reconfigure
    (tmp_path / "nodes.txt").write_text(NODES.replace("10.0.0.2", "gpu-st-p5en-2"))
    assert _run(tmp_path, env).returncode == 0
    conf = (tmp_path / "topology.conf").read_text()
    assert "SwitchName=fm-unplaced Nodes=gpu-st-p5en-2" in conf and "nn-4" not in conf
    assert _reconfigures(tmp_path) == 2


def test_sandbox_keeps_the_file_when_slurm_lists_no_nodes(tmp_path: Path) -> None:
    env = _sandbox(tmp_path)
    (tmp_path / "topology.conf").write_text("# previous\nSwitchName=s Nodes=n\n")
    (tmp_path / "nodes.txt").write_text("")
    result = _run(tmp_path, env)
    assert result.returncode == 0
    assert (tmp_path / "topology.conf").read_text() == "# previous\nSwitchName=s Nodes=n\n"
    assert _reconfigures(tmp_path) == 0


def test_sandbox_fails_when_aws_fails(tmp_path: Path) -> None:
    env = _sandbox(tmp_path)
    env["FM_AWS"] = "false"
    assert _run(tmp_path, env).returncode != 0
    assert not (tmp_path / "topology.conf").exists()


def test_sandbox_needs_the_cluster_name(tmp_path: Path) -> None:
    env = _sandbox(tmp_path)
    del env["FM_CLUSTER_NAME"]
    result = _run(tmp_path, env)
    assert result.returncode != 0 and "FM_CLUSTER_NAME" in result.stderr


# --- FmParallelClusterP5en ------------------------------------------------------------------------------------------


def test_p5en_example_renders_topology_from_a_faked_response(tmp_path: Path) -> None:
    from examples.parallelcluster_stacks import ParallelClusterP5enStack

    stack = ParallelClusterP5enStack(new_app(), "FmParallelClusterP5en")
    config = stack.cluster.to_dict()
    assert {"TopologyPlugin": "topology/tree"} in config["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"]
    assert "OnNodeStart" in config["HeadNode"]["CustomActions"]
    files = _files(stack.topology_bootstrap)
    # the shipped renderer and refresh script, run against a faked DescribeInstanceTopology
    env = _sandbox(tmp_path)
    renderer = tmp_path / "slurm_topology.py"
    renderer.write_text(_step_file(files, RENDERER_PATH))
    (tmp_path / "refresh.sh").write_text(_step_file(files, REFRESH_PATH))
    env["FM_RENDERER"] = str(renderer)
    result = _run(tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert "SwitchName=nn-4 Nodes=gpu-st-p5en-2" in (tmp_path / "topology.conf").read_text()
    initial = _step_file(files, "topology.conf.initial")
    assert initial.splitlines()[-1].startswith("SwitchName=fm-unplaced Nodes=gpu-st-")
    assert BLOCK is not None
