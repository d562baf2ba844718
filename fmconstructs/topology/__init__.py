"""Network topology for schedulers, below the backends: pure functions from EC2 API responses to Slurm text.

:mod:`fmconstructs.topology.slurm` renders Slurm ``topology.conf`` (``topology/tree`` and ``topology/block``) and node
features from ``DescribeInstanceTopology`` responses; backends choose where it runs (ParallelCluster: a head-node
timer, :mod:`fmconstructs.parallelcluster.topology`).

What is topology-aware on each Slurm backend (sources in :mod:`fmconstructs.topology.slurm`):

- **ParallelCluster**: P5/P6 queues with :meth:`ParallelCluster.enable_slurm_topology` (``topology/tree`` refreshed
  from DescribeInstanceTopology on the head node); p6e-gb200 queues keep ParallelCluster's own ``topology/block``
  (cookbook ``pcluster_topology_generator.py``), and a cluster with such a queue is left to it.
- **PCS**: PCS configures the topology plugin itself for UltraServer Capacity Blocks (PCS User Guide "Automatic
  topology selection"); ``TopologyPlugin`` is not among the custom Slurm settings PCS accepts (PCS API
  ``SlurmCustomSetting``: clusters Prolog, Epilog, SelectTypeParameters, AccountingStorageEnforce, PrologFlags;
  node groups Weight, RealMemory), so P5/P6 node groups on PCS are not topology-aware. The closest supported thing
  is node features per network node (:func:`~fmconstructs.topology.slurm.node_features_for_topology`), usable with
  ``sbatch --constraint``: UNCONFIRMED whether PCS lets you set ``Features`` (not in its custom settings list), so
  apply them yourself on the nodes (``scontrol update NodeName=... AvailableFeatures=...`` from the controller is not
  available to PCS users either): treat them as a placement report, not a scheduler setting.
- **SageMaker HyperPod Slurm**: HyperPod applies topology labels automatically on UltraServers (p6e-gb200) and
  documents topology-aware scheduling for Slurm clusters (SageMaker Developer Guide "Using topology-aware scheduling
  in Amazon SageMaker HyperPod"); fmconstructs writes no topology there.

Job side (Slurm ``sbatch`` man page): ``--switches=<count>[@<max-time>]`` asks ``topology/tree`` for at most that many
leaf switches; ``--segment=<n>`` (``topology/block``) splits the allocation into segments of n nodes each placed in one
block; ``--exclusive=topo`` keeps other jobs off the blocks a job uses (aws-parallelcluster-cookbook#3123 mentions
it for blocks).
"""

from .slurm import (
    InstanceTopology,
    describe_instance_topology,
    node_features_for_topology,
    parse_instance_topology,
    render_block_topology,
    render_topology_conf,
)

__all__ = [
    "InstanceTopology",
    "describe_instance_topology",
    "node_features_for_topology",
    "parse_instance_topology",
    "render_block_topology",
    "render_topology_conf",
]
