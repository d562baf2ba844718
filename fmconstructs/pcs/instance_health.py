"""PCS's own node health and node set-up on a GPU node group: instance health checks and node lifecycle actions.

Typed mirrors of the PCS API shapes (botocore 1.44.8 PCS model, ``pcs/2023-02-10``; names in the comments):

- :class:`PcsInstanceHealthChecks` -> ``UpdateInstanceHealthChecksRequest`` (``healthMonitoring``:
  ``HealthMonitoring{mode, repairAction}``; ``deepHealthChecks``: ``DeepHealthChecks{onStart:
  DeepHealthCheckOnStart{profile, repairAction}}``). Health monitoring STANDARD "continuously checks running
  instances for hardware and software faults"; the deep health check runs NVIDIA DCGM diagnostics (QUICK / MEDIUM /
  LONG = ``dcgmi diag`` level 1 / 2 / 3) "each time an instance starts, including after a reboot, before the compute
  node accepts jobs", after the ``nodeBootstrapped`` scripts, and needs NVIDIA GPUs. A repair action left None is
  PCS's default, AUTO, and is not sent ("GetComputeNodeGroup doesn't return a repairAction that you didn't
  specify"). They need Slurm 26.05 or later (``CreateComputeNodeGroupRequest.instanceHealthChecks``).
- :class:`PcsNodeLifecycleActions` -> ``NodeLifecycleActions{stages: NodeLifecycleStages{nodeBootstrapped,
  nodeReady}, scriptCachingPolicy}`` with :class:`PcsLifecycleScript` = ``NodeLifecycleScript{name, scriptSource:
  ScriptSource{scriptLocation, s3VersionId, checksum}, arguments, onError, executionPolicy}``. PCS "retrieves the
  script, caches it on the instance, runs it as root" (PCS User Guide "Run custom scripts with node lifecycle
  actions"); the nodes need PCS agent 1.5.0-1 or later (PCS User Guide "Configure node lifecycle actions").

**What a change does.** "Changing instance health checks on an existing compute node group replaces all its
instances after their running jobs finish" (PCS User Guide "Configuring instance health checks"; the model's
``UpdateComputeNodeGroupRequest.instanceHealthChecks``: "PCS drains and replaces the instances"); for lifecycle
actions "Configuration changes drain and replace existing nodes" (PCS User Guide "Run custom scripts with node
lifecycle actions"). The node group warns ``fmconstructs:pcs-instance-health-checks-replace-instances``.

How each reaches PCS and how to switch when CloudFormation gains the property: :mod:`.instance_health_resource`.

No aws_cdk import.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .._validate import check_enum, check_instance, check_sequence, check_str
from ..errors import FmValidationError, is_token

__all__ = [
    "PcsDeepHealthProfile",
    "PcsHealthMonitoring",
    "PcsInstanceHealthChecks",
    "PcsLifecycleOnError",
    "PcsLifecycleScript",
    "PcsLifecycleScriptCaching",
    "PcsLifecycleScriptExecution",
    "PcsNodeLifecycleActions",
    "PcsRepairAction",
]


class PcsHealthMonitoring(str, Enum):
    """``HealthMonitoring.mode`` (botocore PCS ``HealthMonitoringMode``)."""

    NONE = "NONE"
    STANDARD = "STANDARD"


class PcsRepairAction(str, Enum):
    """What PCS does with a faulty instance: botocore PCS ``HealthMonitoringRepairAction`` and
    ``DeepHealthCheckOnStartRepairAction`` (the same four values). REPLACE replaces the instance "after running jobs
    finish" (health monitoring) or "before it accepts jobs" (deep health check); ISOLATE "stops new jobs on the
    instance and keeps the instance running until you investigate"; NONE "records the fault in Slurm"."""

    AUTO = "AUTO"
    REPLACE = "REPLACE"
    ISOLATE = "ISOLATE"
    NONE = "NONE"


class PcsDeepHealthProfile(str, Enum):
    """``DeepHealthCheckOnStart.profile`` (botocore PCS ``DeepHealthCheckOnStartProfile``): DCGM diagnostics level 1
    (QUICK), 2 (MEDIUM) or 3 (LONG); NONE turns the check off."""

    NONE = "NONE"
    QUICK = "QUICK"
    MEDIUM = "MEDIUM"
    LONG = "LONG"

    @property
    def dcgm_level(self) -> int | None:
        """The ``dcgmi diag -r`` level the profile runs (the model's documentation of each value)."""
        return {"NONE": None, "QUICK": 1, "MEDIUM": 2, "LONG": 3}[self.value]


def _check_repair(parameter: str, action: object, *, check_on: bool, check: str) -> None:
    if action is None:
        return
    check_enum(parameter, action, PcsRepairAction)
    if not check_on:
        # HealthMonitoring / DeepHealthCheckOnStart: "You can't specify this value when mode/profile is NONE".
        raise FmValidationError(parameter, action, f"None while {check} is off (PCS refuses a repair action there)")


@dataclass(frozen=True, kw_only=True)
class PcsInstanceHealthChecks:
    """PCS instance health checks of one compute node group (``InstanceHealthChecks``; see the module docstring).

    :param monitoring: ``healthMonitoring.mode``. Default STANDARD; NONE turns health monitoring off.
    :param monitoring_repair_action: ``healthMonitoring.repairAction``. Default None: PCS's AUTO (not sent).
    :param deep_health_check_on_start: ``deepHealthChecks.onStart.profile``. Default None: off (sent as NONE).
        With a profile, the group's own boot gate runs no DCGM (``NodeHealthOptions.without_dcgm``).
    :param deep_health_check_repair_action: ``deepHealthChecks.onStart.repairAction``. Default None: PCS's AUTO.
    """

    monitoring: PcsHealthMonitoring = PcsHealthMonitoring.STANDARD
    monitoring_repair_action: PcsRepairAction | None = None
    deep_health_check_on_start: PcsDeepHealthProfile | None = None
    deep_health_check_repair_action: PcsRepairAction | None = None

    def __post_init__(self) -> None:
        check_enum("monitoring", self.monitoring, PcsHealthMonitoring)
        if self.deep_health_check_on_start is not None:
            check_enum("deep_health_check_on_start", self.deep_health_check_on_start, PcsDeepHealthProfile)
        _check_repair(
            "monitoring_repair_action",
            self.monitoring_repair_action,
            check_on=self.monitoring is not PcsHealthMonitoring.NONE,
            check="monitoring",
        )
        _check_repair(
            "deep_health_check_repair_action",
            self.deep_health_check_repair_action,
            check_on=self.deep_check_on,
            check="deep_health_check_on_start",
        )

    @classmethod
    def off(cls) -> PcsInstanceHealthChecks:
        """Both checks off: deploy this before removing ``instance_health_checks`` to turn PCS's checks off (removing
        the option alone leaves the node group's checks as they are)."""
        return cls(monitoring=PcsHealthMonitoring.NONE)

    @property
    def deep_check_on(self) -> bool:
        """Whether PCS runs DCGM when an instance starts."""
        return self.deep_health_check_on_start not in (None, PcsDeepHealthProfile.NONE)

    def to_api(self) -> dict[str, Any]:
        """``UpdateInstanceHealthChecksRequest``: both objects always present (NONE when off), so the request
        replaces every setting (it "replace[s] all of the current instance health check settings")."""
        monitoring: dict[str, str] = {"mode": self.monitoring.value}
        if self.monitoring_repair_action is not None:
            monitoring["repairAction"] = self.monitoring_repair_action.value
        profile = self.deep_health_check_on_start or PcsDeepHealthProfile.NONE
        on_start: dict[str, str] = {"profile": profile.value}
        if self.deep_health_check_repair_action is not None:
            on_start["repairAction"] = self.deep_health_check_repair_action.value
        return {"healthMonitoring": monitoring, "deepHealthChecks": {"onStart": on_start}}


class PcsLifecycleOnError(str, Enum):
    """``NodeLifecycleScript.onError`` (botocore PCS ``OnError``); PCS's default TERMINATE."""

    TERMINATE = "TERMINATE"
    STOP_SEQUENCE = "STOP_SEQUENCE"
    CONTINUE = "CONTINUE"


class PcsLifecycleScriptExecution(str, Enum):
    """``NodeLifecycleScript.executionPolicy`` (botocore PCS ``ExecutionPolicy``); PCS's default FIRST_BOOT_ONLY."""

    FIRST_BOOT_ONLY = "FIRST_BOOT_ONLY"
    EVERY_BOOT = "EVERY_BOOT"


class PcsLifecycleScriptCaching(str, Enum):
    """``NodeLifecycleActions.scriptCachingPolicy`` (botocore PCS ``ScriptCachingPolicy``); default CACHE_ONCE."""

    CACHE_ONCE = "CACHE_ONCE"
    REFRESH_ON_REBOOT = "REFRESH_ON_REBOOT"


#: botocore PCS ``NodeLifecycleScriptNameString``: 1-64 characters, pattern below (matched whole).
_SCRIPT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _-]*")
_SCRIPT_NAME_MAX = 64
#: botocore PCS ``ScriptSourceScriptLocationString`` (1-1024 characters, an S3 URI or an HTTPS URL; matched whole).
_SCRIPT_LOCATION = re.compile(
    r"(s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+|https://([a-zA-Z0-9](?:[a-zA-Z0-9_-]{0,61}[a-zA-Z0-9])?\.)+"
    r"[a-zA-Z]{2,63}(?::[0-9]{1,5})?(?:[/?#][^\s]*)?)"
)
_SCRIPT_LOCATION_MAX = 1024
#: botocore PCS ``ScriptSourceChecksumString``: 64 hexadecimal characters (SHA-256).
_CHECKSUM = re.compile(r"[a-fA-F0-9]{64}")
#: botocore PCS ``NodeLifecycleScriptArguments`` (at most 20) of ``NodeLifecycleScriptArgument`` (at most 256 chars).
_MAX_ARGUMENTS = 20
_MAX_ARGUMENT_LENGTH = 256
#: botocore PCS ``ScriptSourceS3VersionIdString``: at most 1024 characters.
_S3_VERSION_MAX = 1024
#: botocore PCS ``NodeLifecycleScriptList``: 1-20 scripts per stage.
_MAX_SCRIPTS = 20


def _script_item(parameter: str, value: object) -> PcsLifecycleScript:
    script: PcsLifecycleScript = check_instance(parameter, value, PcsLifecycleScript, "a PcsLifecycleScript")
    return script


@dataclass(frozen=True, kw_only=True)
class PcsLifecycleScript:
    """One node lifecycle script (``NodeLifecycleScript``).

    :param name: unique in its stage, 1-64 characters: a letter or digit, then letters, digits, spaces, ``_``, ``-``.
    :param script_location: ``s3://bucket/key`` or an ``https://`` URL.
    :param checksum_sha256: the script's SHA-256, 64 hex characters (``scriptSource.checksum``). Default None.
    :param s3_version_id: pins an S3 object version (S3 locations only). Default None.
    :param arguments: at most 20, each at most 256 characters.
    :param on_error: default None: PCS's TERMINATE.
    :param execution: default None: PCS's FIRST_BOOT_ONLY.
    """

    name: str
    script_location: str
    checksum_sha256: str | None = None
    s3_version_id: str | None = None
    arguments: Sequence[str] = ()
    on_error: PcsLifecycleOnError | None = None
    execution: PcsLifecycleScriptExecution | None = None

    def __post_init__(self) -> None:
        check_str(
            "name",
            self.name,
            pattern=_SCRIPT_NAME,
            max_length=_SCRIPT_NAME_MAX,
            allowed="1-64 characters, a letter or digit then letters, digits, spaces, '_' or '-' "
            "(PCS NodeLifecycleScript.name)",
        )
        location = check_str(
            "script_location",
            self.script_location,
            pattern=_SCRIPT_LOCATION,
            max_length=_SCRIPT_LOCATION_MAX,
            allowed="an s3://bucket/key URI or an https:// URL of at most 1024 characters (PCS ScriptSource)",
        )
        if self.checksum_sha256 is not None:
            check_str(
                "checksum_sha256",
                self.checksum_sha256,
                pattern=_CHECKSUM,
                allowed="64 hexadecimal characters (the script's SHA-256)",
            )
        self._check_version(location)
        self._check_arguments()
        if self.on_error is not None:
            check_enum("on_error", self.on_error, PcsLifecycleOnError)
        if self.execution is not None:
            check_enum("execution", self.execution, PcsLifecycleScriptExecution)

    def _check_version(self, location: str) -> None:
        if self.s3_version_id is None:
            return
        version = check_str(
            "s3_version_id", self.s3_version_id, max_length=_S3_VERSION_MAX, allowed="at most 1024 characters"
        )
        if not is_token(location) and not location.startswith("s3://"):
            raise FmValidationError("s3_version_id", version, "None for an https:// script_location (S3 only)")

    def _check_arguments(self) -> None:
        arguments = check_sequence("arguments", self.arguments, lambda p, v: check_str(p, v))
        if len(arguments) > _MAX_ARGUMENTS:
            raise FmValidationError("arguments", list(arguments), f"at most {_MAX_ARGUMENTS} arguments")
        for index, argument in enumerate(arguments):
            if not is_token(argument) and len(argument) > _MAX_ARGUMENT_LENGTH:
                raise FmValidationError(f"arguments[{index}]", argument, f"at most {_MAX_ARGUMENT_LENGTH} characters")

    def to_api(self) -> dict[str, Any]:
        """``NodeLifecycleScript`` as the PCS API spells it (camelCase); unset optional members are left out."""
        source: dict[str, str] = {"scriptLocation": self.script_location}
        if self.s3_version_id is not None:
            source["s3VersionId"] = self.s3_version_id
        if self.checksum_sha256 is not None:
            source["checksum"] = self.checksum_sha256
        script: dict[str, Any] = {"name": self.name, "scriptSource": source}
        if self.arguments:
            script["arguments"] = list(self.arguments)
        if self.on_error is not None:
            script["onError"] = self.on_error.value
        if self.execution is not None:
            script["executionPolicy"] = self.execution.value
        return script


def _check_scripts(parameter: str, scripts: object) -> tuple[PcsLifecycleScript, ...]:
    checked = check_sequence(parameter, scripts, _script_item)
    if len(checked) > _MAX_SCRIPTS:
        raise FmValidationError(parameter, [s.name for s in checked], f"at most {_MAX_SCRIPTS} scripts")
    names = [s.name for s in checked]
    if len(names) != len(set(names)):
        raise FmValidationError(parameter, names, "scripts with distinct names")
    return checked


@dataclass(frozen=True, kw_only=True)
class PcsNodeLifecycleActions:
    """PCS node lifecycle actions of one compute node group (``NodeLifecycleActions``).

    :param node_bootstrapped: scripts run "after PCS finishes setting up the compute node and before the Slurm
        daemon (slurmd) starts", in order (``NodeLifecycleStages.nodeBootstrapped``, at most 20).
    :param node_ready: scripts run "after the Slurm daemon (slurmd) starts and the compute node registers with the
        Slurm controller" (``NodeLifecycleStages.nodeReady``, at most 20).
    :param script_caching: default None: PCS's CACHE_ONCE.
    """

    node_bootstrapped: Sequence[PcsLifecycleScript] = field(default=())
    node_ready: Sequence[PcsLifecycleScript] = field(default=())
    script_caching: PcsLifecycleScriptCaching | None = None

    def __post_init__(self) -> None:
        bootstrapped = _check_scripts("node_bootstrapped", self.node_bootstrapped)
        ready = _check_scripts("node_ready", self.node_ready)
        if not bootstrapped and not ready:
            # NodeLifecycleScriptList has min 1: an empty stage cannot be sent, and no stage at all sets nothing.
            raise FmValidationError("node_bootstrapped", [], "at least one script in node_bootstrapped or node_ready")
        object.__setattr__(self, "node_bootstrapped", bootstrapped)
        object.__setattr__(self, "node_ready", ready)
        if self.script_caching is not None:
            check_enum("script_caching", self.script_caching, PcsLifecycleScriptCaching)

    def to_api(self) -> dict[str, Any]:
        """``NodeLifecycleActions`` as the PCS API spells it; an empty stage is left out (lists hold 1-20)."""
        stages: dict[str, Any] = {}
        if self.node_bootstrapped:
            stages["nodeBootstrapped"] = [s.to_api() for s in self.node_bootstrapped]
        if self.node_ready:
            stages["nodeReady"] = [s.to_api() for s in self.node_ready]
        actions: dict[str, Any] = {"stages": stages}
        if self.script_caching is not None:
            actions["scriptCachingPolicy"] = self.script_caching.value
        return actions


def check_instance_health_checks(parameter: str, value: object) -> PcsInstanceHealthChecks | None:
    """None or a :class:`PcsInstanceHealthChecks`."""
    if value is None:
        return None
    checks: PcsInstanceHealthChecks = check_instance(
        parameter, value, PcsInstanceHealthChecks, "a PcsInstanceHealthChecks"
    )
    return checks


def check_node_lifecycle_actions(parameter: str, value: object) -> PcsNodeLifecycleActions | None:
    """None or a :class:`PcsNodeLifecycleActions`."""
    if value is None:
        return None
    actions: PcsNodeLifecycleActions = check_instance(
        parameter, value, PcsNodeLifecycleActions, "a PcsNodeLifecycleActions"
    )
    return actions
