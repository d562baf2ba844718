"""AWS ParallelCluster 3 backend: the cluster configuration from typed props (catalog, capacity, storage), deployed
through ParallelCluster's CloudFormation custom resource or written as YAML for the ``pcluster`` CLI."""

from .accounting import ExternalSlurmdbd, SlurmAccountingDatabase, SlurmDatabase
from .cluster import DEFAULT_VERSION, ParallelCluster
from .config import (
    CapacityType,
    ComputeResource,
    CustomAction,
    CustomActionEvent,
    HeadNode,
    LoginNodePool,
    Monitoring,
    OperatingSystem,
    QueueUpdateStrategy,
    SharedLustre,
    SlurmQueue,
)
from .limits import head_node_instance_type_for, login_node_instance_type_for
from .updates import DeletionPolicy

__all__ = [
    "DEFAULT_VERSION",
    "CapacityType",
    "ComputeResource",
    "CustomAction",
    "CustomActionEvent",
    "DeletionPolicy",
    "ExternalSlurmdbd",
    "HeadNode",
    "LoginNodePool",
    "Monitoring",
    "OperatingSystem",
    "ParallelCluster",
    "QueueUpdateStrategy",
    "SharedLustre",
    "SlurmAccountingDatabase",
    "SlurmDatabase",
    "SlurmQueue",
    "head_node_instance_type_for",
    "login_node_instance_type_for",
]
