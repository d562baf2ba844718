"""Before a Capacity Block ends: the job-level warning (:class:`JobWarning`) and the schedule for long lead times.

Wired by :class:`~fmconstructs.capacity_events.CapacityBlockEvents`; the run-time halves are
:mod:`fmconstructs.capacity_events.handler.job_warning` and :mod:`fmconstructs.capacity_events.handler.lead`.

- :class:`JobWarning`: what running jobs get before the end. Slurm: a signal (default ``USR1``) to every running job
  on the block's nodes, sent by ``scancel --signal`` right after the drain (same SSM command on the PCS login node).
  Kubernetes: an annotation (default ``fmconstructs.io/capacity-ending-at``: the block's end, RFC 3339) and a
  ``Warning`` Event ``CapacityBlockEnding`` on every running non-DaemonSet pod of the cordoned nodes. Off by default:
  an unhandled SIGUSR1 ends a process (signal(7): default action "Term"), so a job must opt in by handling it.
- :func:`add_expiry_schedule`: an EventBridge Scheduler schedule group for the handler's one-time schedules, the
  role Scheduler assumes to invoke the handler (Lambda Developer Guide with-eventbridge-scheduler, "Set up the
  execution role": "EventBridge Scheduler must have permission to invoke its target API operation on your behalf"),
  and the handler's rights: scheduler:CreateSchedule in that group only, iam:PassRole on that role only,
  ec2:DescribeCapacityReservations / ec2:DescribeCapacityBlocks (the block's end date and kind).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct

from .._validate import check_bool, check_enum
from .._validate_k8s import check_label_key
from ..errors import FmValidationError
from .handler.job_warning import DEFAULT_POD_ANNOTATION, SLURM_SIGNALS, slurm_signal_name

#: The ClusterRole rules the pod warning adds to the cordon's: list and patch pods, create events. No delete, no evict.
JOB_WARNING_RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
)


class SlurmSignalScope(str, Enum):
    """Which processes of a Slurm job get the signal (scancel(1))."""

    #: Every job step (e.g. what ``srun`` runs), not the batch script: scancel's default for signals other than KILL.
    STEPS = "steps"
    #: Only the batch script (``--batch``): for a script that traps the signal.
    BATCH = "batch"
    #: The batch script, its children and every step (``--full``).
    FULL = "full"


@dataclass(frozen=True)
class JobWarning:
    """The job-level warning before a Capacity Block ends (see the module docstring).

    :param slurm_signal: signal name for ``scancel --signal`` (USR1, USR2, TERM, INT, HUP, CONT, URG), or None for no
        Slurm signal. default: USR1.
    :param slurm_signal_scope: which processes get it. default: STEPS.
    :param pod_annotation: the annotation key set on each running pod of the block's nodes (value: the block's end,
        RFC 3339), or None for no pod warning. default: ``fmconstructs.io/capacity-ending-at``.
    :param pod_event: also post a ``Warning`` Event ``CapacityBlockEnding`` on each such pod. default: True.
    """

    slurm_signal: str | None = "USR1"
    slurm_signal_scope: SlurmSignalScope = SlurmSignalScope.STEPS
    pod_annotation: str | None = DEFAULT_POD_ANNOTATION
    pod_event: bool = True

    def __post_init__(self) -> None:
        if self.slurm_signal is not None:
            name = slurm_signal_name(self.slurm_signal)
            if name is None:
                raise FmValidationError(
                    "slurm_signal", self.slurm_signal, f"one of {', '.join(sorted(SLURM_SIGNALS))}, with or without SIG"
                )
            object.__setattr__(self, "slurm_signal", name)
        check_enum("slurm_signal_scope", self.slurm_signal_scope, SlurmSignalScope)
        if self.pod_annotation is not None:
            check_label_key("pod_annotation", self.pod_annotation, kind="annotation")
        check_bool("pod_event", self.pod_event)

    def settings(self) -> dict[str, Any]:
        """The handler's JOB_WARNING setting."""
        return {
            "slurm_signal": self.slurm_signal,
            "slurm_scope": self.slurm_signal_scope.value,
            "pod_annotation": self.pod_annotation,
            "pod_event": self.pod_event,
        }


@dataclass(frozen=True)
class ExpirySchedule:
    """What :func:`add_expiry_schedule` created."""

    group: scheduler.CfnScheduleGroup
    role: iam.Role

    def grant_invoke(self, function: lambda_.IFunction) -> None:
        """Let Scheduler (through :attr:`role`) invoke ``function``."""
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="InvokeTheHandler", actions=["lambda:InvokeFunction"], resources=[function.function_arn]
            )
        )

    def nag_findings(self, nag_text: Callable[[object], str]) -> dict[str, str]:
        """The cdk-nag AwsSolutions-IAM5 finding of the CreateSchedule grant, with its reason."""
        stack = cdk.Stack.of(self.group)
        region = "<AWS::Region>" if cdk.Token.is_unresolved(stack.region) else stack.region
        account = "<AWS::AccountId>" if cdk.Token.is_unresolved(stack.account) else stack.account
        arn = f"arn:<AWS::Partition>:scheduler:{region}:{account}:schedule/{nag_text(stack.resolve(self.group.ref))}/*"
        return {
            f"AwsSolutions-IAM5[Resource::{arn}]": "scheduler:CreateSchedule only in this construct's schedule "
            "group: the handler names each one-time schedule after the block and its run time"
        }

    def environment(self) -> dict[str, str]:
        return {"SCHEDULE_GROUP": self.group.ref, "SCHEDULE_ROLE_ARN": self.role.role_arn}


def add_expiry_schedule(scope: Construct, handler_role: iam.IRole) -> ExpirySchedule:
    """The schedule group, Scheduler's role, and the handler role's rights to schedule itself (see module doc)."""
    stack = cdk.Stack.of(scope)
    # Ref of AWS::Scheduler::ScheduleGroup "returns the Name attribute of the schedule group" (CloudFormation
    # Template Reference); a schedule's ARN is .../schedule/<group>/<name> (UNCONFIRMED: the form seen in Scheduler
    # IAM examples, not in the Service Authorization Reference).
    group = scheduler.CfnScheduleGroup(scope, "ExpirySchedules")
    # Confused-deputy guard: only schedules of this account may use the role (aws:SourceAccount; UNCONFIRMED: the
    # EventBridge Scheduler User Guide's execution-role page was not opened, the condition key is the general one).
    role = iam.Role(
        scope,
        "SchedulerRole",
        assumed_by=iam.ServicePrincipal(
            "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": stack.account}}
        ),
        description="EventBridge Scheduler: invoke the Capacity Block events handler at a block's lead time",
    )
    handler_role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="ScheduleExpiryActions",
            actions=["scheduler:CreateSchedule"],
            resources=[
                stack.format_arn(service="scheduler", resource="schedule", resource_name=f"{group.ref}/*"),
            ],
        )
    )
    handler_role.add_to_principal_policy(
        iam.PolicyStatement(sid="PassSchedulerRole", actions=["iam:PassRole"], resources=[role.role_arn])
    )
    # Describe* actions support no resource-level permissions (as ec2:DescribeInstances above; UNCONFIRMED for these
    # two: the Service Authorization Reference rows were not opened).
    handler_role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="ReadBlockEndAndKind",
            actions=["ec2:DescribeCapacityReservations", "ec2:DescribeCapacityBlocks"],
            resources=["*"],
        )
    )
    return ExpirySchedule(group=group, role=role)
