"""Per-instance-group options of HyperPod's current ``CreateCluster`` API: Spot or On-Demand capacity, Kubernetes
labels and taints, scheduled rolling AMI updates with alarm-based rollback, and the AMI.

Only what CloudFormation ``AWS::SageMaker::Cluster`` accepts (the schema cfn-lint 1.58 bundles,
``cfnlint/data/schemas/resources`` ``AWS::SageMaker::Cluster``; aws-cdk-lib 2.275 ``CfnCluster``
``ClusterInstanceGroupProperty``), checked against the botocore 1.44.8 ``sagemaker`` model
(``ClusterInstanceGroupSpecification``). Field names and limits:

- ``CapacityRequirements``: ``ClusterCapacityRequirements`` with ``Spot`` or ``OnDemand``, each an empty object
  (``ClusterSpotOptions`` / ``ClusterOnDemandOptions`` have no members in either source).
- ``KubernetesConfig``: ``Labels`` (map, at most 50; keys 1-317 characters and values 1-63, botocore
  ``ClusterKubernetesLabelKey``/``ClusterKubernetesLabelValue`` patterns) and ``Taints`` (at most 50;
  ``Key``, optional ``Value``, ``Effect`` NoSchedule | PreferNoSchedule | NoExecute). botocore: "the cluster works to
  reconcile the actual state with the declared state for nodes in this instance group".
- ``ScheduledUpdateConfig``: ``ScheduleExpression`` (required; the CloudFormation schema's cron pattern) and
  ``DeploymentConfig`` (``RollingUpdatePolicy.MaximumBatchSize`` required within it, ``RollbackMaximumBatchSize``;
  ``CapacitySizeConfig`` ``Type`` INSTANCE_COUNT | CAPACITY_PERCENTAGE, ``Value`` >= 1; ``WaitIntervalInSeconds``
  0-3600; ``AutoRollbackConfiguration``: 1-10 ``AlarmDetails.AlarmName``, 1-255 characters in botocore, 256 in the
  CloudFormation schema: the smaller is enforced). botocore: "An array that contains the alarms that SageMaker
  monitors to know whether to roll back the AMI update".
- ``ImageId``: ``ami-[0-9a-fA-F]{8,17}`` or ``default``, 7-21 characters. botocore ``ImageId``: a custom AMI "must be
  unencrypted", "must be owned by the same Amazon Web Services account that is creating the HyperPod cluster", and
  "Only the primary AMI snapshot volume is supported". fmconstructs' ``GpuNodeImage`` (FmImages) always builds an
  encrypted AMI (its root volume and distributed AMI are encrypted with ``encryption_key``), so its AMIs cannot be a
  HyperPod ``ImageId``: pass an AMI id you built for HyperPod (a string or a token).
- ``MinInstanceCount`` (0-6758) is a field of :class:`~fmconstructs.hyperpod.HyperPodInstanceGroup`
  (``min_nodes``); CloudFormation: "MinInstanceCount must be less than or equal to InstanceCount"; botocore: the
  group becomes InService once this many instances run; if that does not happen "within 3 hours, the instance group
  rolls back".

Also in both sources but not offered here: ``InstanceRequirements`` (several instance types), ``ImageReleaseVersion``,
``AutoPatchConfig``, ``NetworkInterface``, ``OverrideVpcConfig``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from aws_cdk import aws_sagemaker as sagemaker

from .._validate import check_count, check_enum, check_str
from .._validate_k8s import LABEL_KEY_MAX, check_label_key, check_label_value
from .._validate_schedule import check_aws_cron
from ..errors import FmTypeError, FmValidationError, is_token
from . import rules


class CapacityType(str, Enum):
    """``CapacityRequirements`` of an instance group: its key (``Spot`` or ``OnDemand``)."""

    SPOT = "Spot"
    ON_DEMAND = "OnDemand"


class TaintEffect(str, Enum):
    """``ClusterKubernetesTaint.Effect`` (botocore ``ClusterKubernetesTaintEffect``)."""

    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class BatchSizeType(str, Enum):
    """``CapacitySizeConfig.Type`` (botocore ``NodeUnavailabilityType``)."""

    INSTANCE_COUNT = "INSTANCE_COUNT"
    CAPACITY_PERCENTAGE = "CAPACITY_PERCENTAGE"


#: botocore ``ClusterKubernetesLabelKey`` / ``ClusterKubernetesTaintKey``: 1-317 characters of Kubernetes' label-key
#: pattern; ``ClusterKubernetesLabelValue`` / ``ClusterKubernetesTaintValue``: 1-63 of its label-value pattern (the
#: library's one Kubernetes checker, :mod:`fmconstructs._validate_k8s`).
_SAGEMAKER = "botocore sagemaker ClusterKubernetesLabelKey"
#: botocore ``ClusterKubernetesLabels`` and ``ClusterKubernetesTaints``: at most 50 each.
MAX_KUBERNETES_LABELS = 50
MAX_KUBERNETES_TAINTS = 50

#: ``ScheduledUpdateConfig.ScheduleExpression`` pattern of the CloudFormation schema (botocore sets none; 1-256
#: characters): ``cron(<minute> <hour> <day> <month> <day of week> <year>)``.
SCHEDULE_EXPRESSION = re.compile(
    r"cron\((?:[0-5][0-9]|[0-9]|) (?:[01][0-9]|2[0-3]|[0-9]) (?:[1-9]|0[1-9]|[12][0-9]|3[01]|\?) "
    r"(?:[1-9]|0[1-9]|1[0-2]|\*|\*/(?:[1-9]|1[0-2])|) "
    r"(?:MON|TUE|WED|THU|FRI|SAT|SUN|[1-7]|\?|L|(?:[1-7]#[1-5])|(?:[1-7]L)) (?:20[2-9][0-9]|\*|)\)"
)
_SCHEDULE_ALLOWED = (
    "cron(<minute> <hour> <day|?> <month|*> <day of week|?> <year|*>) as the AWS::SageMaker::Cluster schema accepts, "
    "e.g. cron(0 3 ? * SUN *)"
)
#: ``DeploymentConfig.WaitIntervalInSeconds``: 0-3600; ``AutoRollbackConfiguration``: 1-10 alarms.
MAX_WAIT_INTERVAL_SECONDS = 3600
MAX_ROLLBACK_ALARMS = 10
#: ``AlarmName``: 1-255 characters (botocore; the CloudFormation schema allows 256).
MAX_ALARM_NAME_LENGTH = 255
#: ``ImageId`` (botocore and the CloudFormation schema): 7-21 characters.
IMAGE_ID = re.compile(r"ami-[0-9a-fA-F]{8,17}|default")
IMAGE_ID_ALLOWED = (
    "an AMI id (ami- and 8-17 hex digits) or 'default' (ClusterInstanceGroup.ImageId); a custom AMI must be "
    "unencrypted and owned by this account (botocore ImageId), which rules out GpuNodeImage (FmImages) AMIs"
)


def _kubernetes_key(parameter: str, value: object, *, kind: str = "label") -> str:
    key: str = check_label_key(parameter, value, max_length=LABEL_KEY_MAX, service=_SAGEMAKER, kind=kind)
    return key


def _kubernetes_value(parameter: str, value: object) -> str:
    checked: str = check_label_value(parameter, value, allow_empty=False)  # ClusterKubernetesLabelValue: min 1
    return checked


@dataclass(frozen=True)
class KubernetesTaint:
    """One ``KubernetesConfig.Taints`` item. ``value`` is optional (``Key`` and ``Effect`` are required)."""

    key: str
    effect: TaintEffect
    value: str | None = None

    def __post_init__(self) -> None:
        _kubernetes_key("key", self.key, kind="taint")
        check_enum("effect", self.effect, TaintEffect)
        if self.value is not None:
            _kubernetes_value("value", self.value)

    def _property(self) -> sagemaker.CfnCluster.ClusterKubernetesTaintProperty:
        return sagemaker.CfnCluster.ClusterKubernetesTaintProperty(
            key=self.key, effect=self.effect.value, value=self.value
        )


@dataclass(frozen=True)
class HyperPodKubernetesConfig:
    """``KubernetesConfig`` of an instance group on EKS: labels and taints HyperPod keeps on the group's nodes.

    :param labels: node labels (at most 50). Default: none.
    :param taints: :class:`KubernetesTaint` items (at most 50, each key and effect once). Default: none.
    """

    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[KubernetesTaint] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.labels, Mapping):
            raise FmTypeError("labels", self.labels, "a mapping of label keys to values")
        if len(self.labels) > MAX_KUBERNETES_LABELS:
            raise FmValidationError("labels", len(self.labels), f"at most {MAX_KUBERNETES_LABELS} labels")
        for key, value in self.labels.items():
            _kubernetes_key("labels key", key)
            _kubernetes_value(f"labels[{key!r}]", value)
        if isinstance(self.taints, str | bytes) or not isinstance(self.taints, Sequence):
            raise FmTypeError("taints", self.taints, "a list of KubernetesTaint")
        for index, taint in enumerate(self.taints):
            if not isinstance(taint, KubernetesTaint):
                raise FmTypeError(f"taints[{index}]", taint, "a KubernetesTaint")
        if len(self.taints) > MAX_KUBERNETES_TAINTS:
            raise FmValidationError("taints", len(self.taints), f"at most {MAX_KUBERNETES_TAINTS} taints")
        pairs = [(t.key, t.effect) for t in self.taints]
        if len(set(pairs)) != len(pairs):
            raise FmValidationError("taints", [f"{k}:{e.value}" for k, e in pairs], "each key and effect at most once")
        object.__setattr__(self, "labels", dict(self.labels))
        object.__setattr__(self, "taints", tuple(self.taints))

    def __hash__(self) -> int:
        """Hashable like the other frozen value objects (an instance group holding it stays hashable)."""
        return hash((tuple(sorted(self.labels.items())), tuple(self.taints)))

    def _property(self) -> sagemaker.CfnCluster.ClusterKubernetesConfigProperty:
        return sagemaker.CfnCluster.ClusterKubernetesConfigProperty(
            labels=dict(self.labels) or None, taints=[t._property() for t in self.taints] or None
        )


@dataclass(frozen=True)
class UpdateBatchSize:
    """``CapacitySizeConfig``: how many instances an AMI update (or its rollback) takes at a time."""

    type: BatchSizeType
    value: Any

    @classmethod
    def instances(cls, count: int) -> UpdateBatchSize:
        """``INSTANCE_COUNT``: ``count`` instances at a time (>= 1)."""
        return cls(BatchSizeType.INSTANCE_COUNT, count)

    @classmethod
    def percent(cls, percent: int) -> UpdateBatchSize:
        """``CAPACITY_PERCENTAGE``: ``percent`` of the group at a time (1-100)."""
        return cls(BatchSizeType.CAPACITY_PERCENTAGE, percent)

    def __post_init__(self) -> None:
        kind = check_enum("type", self.type, BatchSizeType)
        # NodeUnavailabilityValue: >= 1 (botocore); a percentage is at most 100.
        maximum = 100 if kind is BatchSizeType.CAPACITY_PERCENTAGE else None
        check_count("value", self.value, minimum=1, maximum=maximum)

    def _property(self) -> sagemaker.CfnCluster.CapacitySizeConfigProperty:
        return sagemaker.CfnCluster.CapacitySizeConfigProperty(type=self.type.value, value=self.value)


def _alarm_name(parameter: str, alarm: object) -> str:
    """A CloudWatch alarm's name: an ``IAlarm`` (``alarm_name``, a token when CloudFormation names it) or a str."""
    name = alarm if isinstance(alarm, str) else getattr(alarm, "alarm_name", None)
    if not isinstance(name, str):
        raise FmTypeError(parameter, alarm, "a cloudwatch.IAlarm or an alarm name (str)")
    checked: str = check_str(parameter, name, pattern=re.compile(r"(?s)(?!\s*$).+"), min_length=1,
                             max_length=MAX_ALARM_NAME_LENGTH, allowed="an alarm name of 1-255 characters")  # fmt: skip
    return checked


@dataclass(frozen=True)
class HyperPodScheduledUpdate:
    """``ScheduledUpdateConfig``: when HyperPod updates the group's AMI, how many instances at a time, and which
    CloudWatch alarms roll the update back.

    :param schedule_expression: ``ScheduleExpression``, e.g. ``cron(0 3 ? * SUN *)`` (the CloudFormation schema's
        pattern).
    :param batch_size: ``RollingUpdatePolicy.MaximumBatchSize`` (:class:`UpdateBatchSize`). Default: none (no
        ``RollingUpdatePolicy``; HyperPod's default).
    :param rollback_batch_size: ``RollingUpdatePolicy.RollbackMaximumBatchSize`` (needs ``batch_size``).
    :param wait_interval_seconds: ``DeploymentConfig.WaitIntervalInSeconds`` between batches (0-3600).
    :param rollback_alarms: ``AutoRollbackConfiguration``: 1-10 ``cloudwatch.IAlarm`` (any fmconstructs alarm, e.g.
        the storage target alarm, or your own) or alarm names; rendered by name. Default: none.
    """

    schedule_expression: str
    batch_size: UpdateBatchSize | None = None
    rollback_batch_size: UpdateBatchSize | None = None
    wait_interval_seconds: Any = None
    rollback_alarms: Sequence[Any] = ()

    def __post_init__(self) -> None:
        check_str("schedule_expression", self.schedule_expression, min_length=1, max_length=256,
                  allowed="a cron expression of 1-256 characters (botocore CronScheduleExpression)")  # fmt: skip
        # The AWS cron rules (fields in range, '?' in one day field), then the narrower CloudFormation pattern (which
        # also admits empty fields: 'cron( 3 ? * SUN *)').
        check_aws_cron("schedule_expression", self.schedule_expression, service="SageMaker HyperPod")
        check_str("schedule_expression", self.schedule_expression, pattern=SCHEDULE_EXPRESSION,
                  allowed=_SCHEDULE_ALLOWED)  # fmt: skip
        for name in ("batch_size", "rollback_batch_size"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, UpdateBatchSize):
                raise FmTypeError(name, value, "an UpdateBatchSize (UpdateBatchSize.instances(n) or .percent(p))")
        if self.rollback_batch_size is not None and self.batch_size is None:
            raise FmValidationError(
                "rollback_batch_size",
                f"{self.rollback_batch_size.type.value} {self.rollback_batch_size.value}",
                "None without batch_size (RollingUpdatePolicy requires MaximumBatchSize)",
            )
        if self.wait_interval_seconds is not None:
            check_count("wait_interval_seconds", self.wait_interval_seconds, maximum=MAX_WAIT_INTERVAL_SECONDS)
        alarms = self.rollback_alarms
        if isinstance(alarms, str | bytes) or not isinstance(alarms, Sequence):
            raise FmTypeError("rollback_alarms", alarms, "a list of cloudwatch.IAlarm or alarm names")
        if len(alarms) > MAX_ROLLBACK_ALARMS:
            raise FmValidationError("rollback_alarms", len(alarms), f"at most {MAX_ROLLBACK_ALARMS} alarms")
        names = [_alarm_name(f"rollback_alarms[{i}]", a) for i, a in enumerate(alarms)]
        known_names = [n for n in names if not is_token(n)]
        if len(set(known_names)) != len(known_names):
            raise FmValidationError("rollback_alarms", known_names, "each alarm at most once")
        object.__setattr__(self, "rollback_alarms", tuple(alarms))

    @property
    def rollback_alarm_names(self) -> tuple[str, ...]:
        return tuple(_alarm_name("rollback_alarms", a) for a in self.rollback_alarms)

    def _property(self) -> sagemaker.CfnCluster.ScheduledUpdateConfigProperty:
        rolling = None
        if self.batch_size is not None:
            rolling = sagemaker.CfnCluster.RollingUpdatePolicyProperty(
                maximum_batch_size=self.batch_size._property(),
                rollback_maximum_batch_size=(
                    self.rollback_batch_size._property() if self.rollback_batch_size is not None else None
                ),
            )
        alarms = [sagemaker.CfnCluster.AlarmDetailsProperty(alarm_name=n) for n in self.rollback_alarm_names]
        deployment = None
        if rolling is not None or alarms or self.wait_interval_seconds is not None:
            deployment = sagemaker.CfnCluster.DeploymentConfigProperty(
                rolling_update_policy=rolling,
                wait_interval_in_seconds=self.wait_interval_seconds,
                auto_rollback_configuration=alarms or None,
            )
        return sagemaker.CfnCluster.ScheduledUpdateConfigProperty(
            schedule_expression=self.schedule_expression, deployment_config=deployment
        )


def check_image_id(parameter: str, value: object) -> str:
    """``ImageId``: an AMI id, ``default``, or a token (e.g. an SSM parameter's value)."""
    if value is not None and not isinstance(value, str) and hasattr(value, "ssm_parameter_name"):
        raise FmTypeError(
            parameter,
            f"a {type(value).__name__}",
            "an AMI id: GpuNodeImage (FmImages) AMIs are encrypted, and HyperPod accepts only unencrypted custom AMIs "
            "(botocore ImageId)",
        )
    checked: str = check_str(parameter, value, pattern=IMAGE_ID, min_length=7, max_length=21, allowed=IMAGE_ID_ALLOWED)
    return checked


def check_group_option_types(kubernetes: object, scheduled_update: object) -> None:
    """The types of :class:`~fmconstructs.hyperpod.HyperPodInstanceGroup`'s ``kubernetes`` and
    ``scheduled_update``."""
    if kubernetes is not None and not isinstance(kubernetes, HyperPodKubernetesConfig):
        raise FmTypeError("kubernetes", kubernetes, "a HyperPodKubernetesConfig")
    if scheduled_update is not None and not isinstance(scheduled_update, HyperPodScheduledUpdate):
        raise FmTypeError("scheduled_update", scheduled_update, "a HyperPodScheduledUpdate")


def check_min_nodes(min_nodes: object, nodes: object, maximum: int) -> None:
    """``MinInstanceCount``: 0-``maximum`` and at most ``InstanceCount`` (CloudFormation schema) when both are
    known."""
    check_count("min_nodes", min_nodes, minimum=0, maximum=maximum)
    rules.min_nodes_at_most_nodes(min_nodes, nodes)


def group_option_properties(group: Any) -> dict[str, Any]:
    """The ``ClusterInstanceGroupProperty`` keyword arguments of a group's current-API options (None when unset)."""
    capacity_type = group.capacity.capacity_type
    requirements = None
    if capacity_type is CapacityType.SPOT:
        requirements = sagemaker.CfnCluster.ClusterCapacityRequirementsProperty(spot={})
    elif capacity_type is CapacityType.ON_DEMAND:
        requirements = sagemaker.CfnCluster.ClusterCapacityRequirementsProperty(on_demand={})
    return {
        "min_instance_count": group.min_nodes,
        "capacity_requirements": requirements,
        "kubernetes_config": group.kubernetes._property() if group.kubernetes is not None else None,
        "scheduled_update_config": group.scheduled_update._property() if group.scheduled_update is not None else None,
        "image_id": group.image_id,
    }
