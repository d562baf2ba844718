"""Slurm topology in the twin: the library's ParallelCluster head-node refresher, fed EC2 answers from moto and
botocore's Stubber, writing the topology.conf the twin's slurmctld runs with.

What is the library's (``fmconstructs.parallelcluster.topology``, ``TrainingPlatform(slurm_topology=True)``):
the ``TopologyPlugin=topology/tree`` custom setting, the head node's OnNodeStart step ``slurm-topology`` (its
environment file, the first topology.conf, the timer), the refresh script and the renderer
(``fmconstructs/topology/slurm.py``) it installs. :func:`head_node_setup` runs that step on the twin's head node
(the controller's view) before slurmctld starts, as ParallelCluster runs OnNodeStart before it configures and starts
Slurm (User Guide "custom-bootstrap-actions-v3", cited in the library); :meth:`HeadNode.refresh` runs the
refresher's service ``ExecStart``, what its timer does every few minutes.

What the twin stands in for:

- the twin's slurm.conf is ``/etc/slurm/slurm.conf``, ParallelCluster's ``/opt/slurm/etc/slurm.conf``:
  ``/etc/slurm/topology.conf`` is a link to ``/opt/slurm/etc/topology.conf`` (in the twin's shared ``/opt``), so the
  file the refresher writes is the one slurmctld reads (topology.conf(5): "located in the same directory as the
  slurm.conf");
- the head node's own ``/etc/fmconstructs`` and ``/usr/local/bin`` are directories of the twin: ``systemctl`` there
  records its calls (the twin has no systemd; the test runs the timer's service itself) and ``aws`` answers
  ``ec2 describe-instances`` and ``ec2 describe-instance-topology`` with JSON the bridge wrote, logging every call;
- the answers: DescribeInstances from moto (the compute instances with ParallelCluster's tags and the twin nodes'
  addresses as ``PrivateIpAddress``); DescribeInstanceTopology (which moto does not implement) checked by a Stubber
  against the EC2 service model. :meth:`TopologyFeed.check_calls` then replays the filters the refresher passed (the
  CLI's ``Name=...,Values=...`` shorthand) against moto and the Stubber, so a filter that selects other instances,
  or that EC2 would refuse, fails the loop.

ParallelCluster names static nodes ``<queue>-st-<compute resource>-<n>`` (User Guide "Multiple queue mode": "$QUEUE-
$STATDYN-..."; v3 uses the compute resource name, as the library's ``initial_topology_conf`` does):
:func:`parallelcluster_node_prefix` reads it from the rendered cluster configuration.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.stub import Stubber

from fmconstructs.parallelcluster import topology as pc_topology

from .cluster import TwinCluster
from .procs import TwinError
from .remediation import TwinEc2
from .root import chroot_argv

__all__ = ["HeadNode", "TopologyFeed", "cli_filters", "head_node_setup", "parallelcluster_node_prefix"]

_AMI = "ami-12c6146b"
_FAKE_AWS = r'''#!/usr/bin/python3
"""The twin's aws CLI (tests/support/twin/topology.py): logs each call, answers ec2 <command> from aws-<command>.json."""
import json, os, sys

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "aws-calls.log"), "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
args = [a for a in sys.argv[1:]]
if len(args) >= 2 and args[0] == "ec2":
    path = os.path.join(here, "aws-%s.json" % args[1])
    if os.path.exists(path):
        sys.stdout.write(open(path).read())
        sys.exit(0)
print("twin aws: no answer for %s" % args, file=sys.stderr)
sys.exit(255)
'''
_FAKE_SYSTEMCTL = """#!/bin/sh
# The twin head node's systemctl: records the call (the twin has no systemd).
echo "$*" >> "$(dirname "$0")/systemctl-calls.log"
"""


def parallelcluster_node_prefix(cluster: TwinCluster) -> str:
    """``<queue>-st-<compute resource>`` of the rendered cluster's first queue (module docstring)."""
    (resource,) = cluster.rendered.resources("Custom::PclusterCluster").values()
    queue = resource["Properties"]["ClusterConfiguration"]["Scheduling"]["SlurmQueues"][0]
    return f"{queue['Name']}-st-{queue['ComputeResources'][0]['Name']}"


def cli_filters(argv: Sequence[str]) -> list[dict[str, Any]]:
    """The boto3 ``Filters`` of an aws CLI call's ``--filters Name=a,Values=x,y ...`` (the CLI's shorthand syntax)."""
    args = list(argv)
    if "--filters" not in args:
        return []
    filters: list[dict[str, Any]] = []
    for item in args[args.index("--filters") + 1 :]:
        if item.startswith("--"):
            break
        name, sep, values = item.partition(",Values=")
        if not sep or not name.startswith("Name="):
            raise TwinError(f"not a CLI filter: {item!r}")
        filters.append({"Name": name.removeprefix("Name="), "Values": values.split(",")})
    return filters


@dataclass
class HeadNode:
    """The ParallelCluster head node's own directories in the twin and a way to run commands there."""

    cluster: TwinCluster
    home: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.cluster.home / "head"
        for sub in ("bin", "etc-fmconstructs"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        for name, text in (("aws", _FAKE_AWS), ("systemctl", _FAKE_SYSTEMCTL)):
            path = self.bin_dir / name
            path.write_text(text)
            path.chmod(0o755)

    @property
    def bin_dir(self) -> Path:
        return self.home / "bin"

    def run(self, command: Sequence[str], *, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
        twin = self.cluster.slurm
        if twin is None:
            raise TwinError("the twin cluster has no Slurm yet")
        binds = [
            *twin.common_binds(),
            (self.bin_dir, "/usr/local/bin"),
            (self.home / "etc-fmconstructs", "/etc/fmconstructs"),
        ]
        argv = chroot_argv(twin.root, command, binds=binds, namespace_pid=twin.namespace.pid)
        return subprocess.run(argv, capture_output=True, text=True, env=twin.env(), timeout=timeout_s, check=False)

    def environment(self) -> dict[str, str]:
        """The refresher's settings as the head node's step wrote them (``/etc/fmconstructs/slurm-topology.env``)."""
        path = self.home / "etc-fmconstructs" / Path(pc_topology.ENV_PATH).name
        pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
        return dict(pairs)

    def calls(self, log: str) -> list[str]:
        path = self.bin_dir / log
        return path.read_text().splitlines() if path.exists() else []

    def refresh(self) -> subprocess.CompletedProcess[str]:
        """The refresher's service ``ExecStart`` (what the library's timer starts), run on the head node."""
        unit = self.cluster.rendered.bootstrap("SlurmTopology").files()[
            f"/etc/systemd/system/{pc_topology.UNIT}.service"
        ][0]
        (exec_start,) = [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecStart=")]
        return self.run(exec_start.split())


def head_node_setup(head: HeadNode) -> subprocess.CompletedProcess[str]:
    """The ``before_controller`` of a ParallelCluster twin with topology: link ``/opt/slurm/etc``, install the
    ``SlurmTopology`` bootstrap's ``/opt`` files and run its step on the head node; raises if the step fails."""
    twin = head.cluster.slurm
    if twin is None:
        raise TwinError("the twin cluster has no Slurm yet")
    link = head.cluster.home / "etc-slurm" / Path(pc_topology.TOPOLOGY_CONF_PATH).name
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(pc_topology.TOPOLOGY_CONF_PATH)
    bootstrap = head.cluster.rendered.bootstrap("SlurmTopology")
    for path, (text, mode) in bootstrap.files().items():
        if path.startswith("/opt/"):
            twin.install(path, text, mode)
    step = bootstrap.step(pc_topology.TOPOLOGY_STEP)
    if step is None:
        raise TwinError(f"no {pc_topology.TOPOLOGY_STEP} step in {bootstrap.path}")
    done = head.run(["/bin/bash", "-c", step.script])
    if done.returncode != 0:
        raise TwinError(f"the head node's {step.name} step exited {done.returncode}: {done.stderr}{done.stdout}")
    return done


@dataclass
class TopologyFeed:
    """EC2's answers for the refresher (module docstring): call inside moto (``mock_aws``)."""

    head: HeadNode
    cluster_name: str
    region: str = "us-east-1"
    ec2: TwinEc2 = field(init=False)
    instances: dict[str, str] = field(default_factory=dict, init=False)  # Slurm node name -> instance id
    _stubbed: Any = field(init=False)
    _stubber: Stubber = field(init=False)

    def __post_init__(self) -> None:
        session = boto3.session.Session(region_name=self.region)
        self.ec2 = TwinEc2(session.client("ec2"), replace=lambda _: None)
        self._stubbed = session.client("ec2")
        self._stubber = Stubber(self._stubbed)
        self._stubber.activate()

    def launch(self, node: str, address: str) -> str:
        """A running compute instance of the cluster (ParallelCluster's tags) with the twin node's address."""
        tags = {"parallelcluster:cluster-name": self.cluster_name, "parallelcluster:node-type": "Compute"}
        response = self.ec2._moto.run_instances(
            ImageId=_AMI,
            MinCount=1,
            MaxCount=1,
            InstanceType="p5.48xlarge",
            TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
        )
        instance_id = str(response["Instances"][0]["InstanceId"])
        self.ec2.addresses[instance_id] = (address, f"ip-{address.replace('.', '-')}.ec2.internal")
        self.instances[node] = instance_id
        return instance_id

    def _instances_filters(self) -> list[dict[str, Any]]:
        return [
            {"Name": "tag:parallelcluster:cluster-name", "Values": [self.cluster_name]},
            {"Name": "tag:parallelcluster:node-type", "Values": ["Compute"]},
        ]

    def write(self, network_nodes: Mapping[str, Sequence[str]]) -> dict[str, Any]:
        """Write both answers: DescribeInstances of the cluster's compute instances and a DescribeInstanceTopology
        page placing each node (Slurm name -> its network nodes, top-down); returns the topology page."""
        instances = self.ec2.describe_instances(Filters=self._instances_filters())
        instances.pop("ResponseMetadata", None)
        page = {
            "Instances": [
                {
                    "InstanceId": self.instances[node],
                    "InstanceType": "p5.48xlarge",
                    "NetworkNodes": list(nodes),
                    "AvailabilityZone": f"{self.region}a",
                    "ZoneId": "use1-az1",
                }
                for node, nodes in network_nodes.items()
            ]
        }
        self._stubber.add_response("describe_instance_topology", page)  # checks the page against the EC2 model
        self._stubbed.describe_instance_topology()
        (self.head.bin_dir / "aws-describe-instances.json").write_text(json.dumps(instances, default=str))
        (self.head.bin_dir / "aws-describe-instance-topology.json").write_text(json.dumps(page))
        return page

    def check_calls(self) -> list[list[str]]:
        """The refresher's aws calls; raises if its DescribeInstances filters select other instances in moto than
        the answer held, or its DescribeInstanceTopology request is not valid for the EC2 model."""
        calls = [json.loads(line) for line in self.head.calls("aws-calls.log")]
        served = json.loads((self.head.bin_dir / "aws-describe-instances.json").read_text())
        for argv in calls:
            filters = cli_filters(argv)
            if argv[:2] == ["ec2", "describe-instances"]:
                found = self.ec2.describe_instances(Filters=filters)
                if _ids(found) != _ids(served):
                    raise TwinError(f"the refresher's filters {filters} select {_ids(found)}, not {_ids(served)}")
            elif argv[:2] == ["ec2", "describe-instance-topology"]:
                self._stubber.add_response("describe_instance_topology", {"Instances": []}, {"Filters": filters})
                self._stubbed.describe_instance_topology(Filters=filters)
        return calls


def _ids(response: Mapping[str, Any]) -> set[str]:
    return {i["InstanceId"] for r in response.get("Reservations", []) for i in r.get("Instances", [])}
