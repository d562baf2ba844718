"""Network topology for schedulers, below the backends: pure functions from EC2 API responses to Slurm text.

:mod:`fmconstructs.topology.slurm` renders Slurm ``topology.conf`` (``topology/tree`` and ``topology/block``) and node
features from ``DescribeInstanceTopology`` responses; backends choose where it runs (ParallelCluster: a head-node
timer, :mod:`fmconstructs.parallelcluster.topology`).

What is topology-aware on each Slurm backend (sources in :mod:`fmconstructs.topology.slurm`):

- **ParallelCluster**: P5/P6 queues with :meth:`ParallelCluster.enable_slurm_topology` (``topology/tree`` refreshed
  from DescribeInstanceTopology on the head node); p6e-gb200 queues keep ParallelCluster's own ``topology/block``
  (cookbook ``pcluster_topology_generator.py``), and a cluster with such a queue is left to it.
- **PCS**: PCS configures the topology plugin itself: for UltraServer Capacity Blocks (PCS User Guide "Configure
  UltraServer instances", "Automatic topology selection", as cited in :mod:`fmconstructs.pcs.cluster`) and, per
  queue, ``topology/tree`` from where "AWS PCS tells Slurm ... each compute node sits in the network" (PCS User Guide
  "Network topology-aware scheduling in AWS PCS", network-topology; jobs limit leaf switches with ``--switches``).
  ``TopologyPlugin`` is not among the custom Slurm settings PCS accepts (:mod:`fmconstructs.pcs.slurm`), so
  fmconstructs writes no topology setting there; how a queue turns PCS's own topology on is UNCONFIRMED (the stored
  page was cut before its "Requirements"; neither botocore 1.44.8's PCS model nor aws-cdk-lib 2.275.0's
  ``CfnQueue`` has a topology property), so ``TrainingPlatform(slurm_topology=True)`` is still refused on PCS. The
  closest supported thing: node features per network node
  (:func:`~fmconstructs.topology.slurm.node_features_for_topology`), used with ``sbatch --constraint=<network node
  id>``. ``Features`` is not in PCS's custom settings list either, so a user applies them
  with Slurm admin rights (``scontrol update NodeName=<node> AvailableFeatures=<id> ActiveFeatures=<id>``); whether
  that is allowed on PCS and survives PCS's own reconfiguration is UNCONFIRMED.
- **SageMaker HyperPod Slurm**: "When using UltraServers with Amazon SageMaker HyperPod, SageMaker HyperPod
  automatically applies topology labels to your resources" and topology-aware scheduling "works with both clusters
  on Slurm and Amazon EKS" (SageMaker Developer Guide "Using topology-aware scheduling in Amazon SageMaker
  HyperPod", sagemaker-hyperpod-topology). What HyperPod writes for non-UltraServer types (P5/P6) on Slurm was not
  found: UNCONFIRMED, treated as not topology-aware; fmconstructs writes no topology there.

Job side: ``sbatch --switches=<count>[@<max-time-to-wait>]`` asks ``topology/tree`` for at most that many leaf
switches, waiting up to max-time for them (Slurm sbatch option ``--switches=max-switches{@max-time-to-wait}``:
SchedMD slurm-dev patch to src/sbatch/opt.c). With ``topology/block`` (GB200 UltraServers): ``--segment=<nodes>``
places each segment of that many nodes inside one block (NVIDIA "Maximizing GB200 NVL72 efficiency with Slurm block
scheduling", CoreWeave SUNK "Topology and block scheduling in Slurm": Blocks, Segments, ``--exclusive=topo``;
the sbatch man page itself was not read: UNCONFIRMED wording), and ``--exclusive=topo`` keeps other jobs off the
blocks a job uses (aws-parallelcluster-cookbook#3123).
"""

from .slurm import (
    InstanceTopology,
    describe_instance_topology,
    hostlist,
    node_features_for_topology,
    parse_instance_topology,
    render_block_topology,
    render_topology_conf,
    slurm_node_names,
)

__all__ = [
    "InstanceTopology",
    "describe_instance_topology",
    "hostlist",
    "node_features_for_topology",
    "parse_instance_topology",
    "render_block_topology",
    "render_topology_conf",
    "slurm_node_names",
]
