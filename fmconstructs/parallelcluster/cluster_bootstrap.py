"""The node bootstrap wiring of :class:`~fmconstructs.parallelcluster.cluster.ParallelCluster`: fmconstructs'
:class:`~fmconstructs.bootstrap.NodeBootstrap` as ``CustomActions`` of the queues, the head node and the login pools,
with their IAM policies, and the features built on it (IMEX, node health, Slurm topology, Slurm scripts)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import jsii
from aws_cdk import (
    Stack,
)
from aws_cdk import aws_iam as iam
from constructs import Construct, IValidation

from .._validate import (
    check_enum,
    check_instance,
    check_sequence,
    check_str,
    known,
)
from ..bootstrap import NodeBootstrap, ScriptAction
from ..compute.slurm_scripts import SlurmScriptPiece
from ..errors import FmTypeError, FmValidationError
from ..health import NodeHealthOptions
from .config import (
    QUEUE_EVENTS,
    SEQUENCE_MIN_VERSION,
    CustomActionEvent,
    HeadNode,
    LoginNodePool,
    SlurmQueue,
)
from .config import version_tuple as _version
from .head_entry import ENTRY_EVENTS, HeadNodeEntryPoint
from .imex import IMEX_CUSTOM_SLURM_SETTINGS, imex_prolog_files

if TYPE_CHECKING:
    from ..teams import Team
    from .cluster import ParallelCluster

    _Construct = Construct  # mypy sees the mixin as a construct; at run time it is a plain class
else:
    _Construct = object

# The provider's role may attach customer managed policies whose ARN matches policy/parallelcluster* (aws/
# aws-parallelcluster cloudformation/policies/parallelcluster-policies.yaml DefaultParallelClusterIamAdminPolicy, Sid
# IamPolicy, ArnLike iam:PolicyARN). IAM ManagedPolicyName: at most 128 characters (IAM API CreatePolicy PolicyName).
POLICY_NAME_PREFIX = "parallelcluster"
POLICY_NAME_MAX_LENGTH = 128
#: The bootstrap :meth:`ParallelCluster.enable_imex` creates, and its step.
IMEX_BOOTSTRAP_NAME = "parallelcluster-imex"
IMEX_STEP = "nvidia-imex-prolog"
# Kinds of node sections a bootstrap targets (the head node's name is its kind).
_QUEUE, _HEAD, _LOGIN = "queue", "head", "login"
# The HeadNode/SlurmQueue fields holding a user's own action for an event.
_EVENT_FIELDS = {
    CustomActionEvent.ON_NODE_START: "on_node_start",
    CustomActionEvent.ON_NODE_CONFIGURED: "on_node_configured",
}


@jsii.implements(IValidation)
class _ImexOnHeadNode:
    """The bootstrap holding the IMEX prolog must run on the head node (``enable_imex(bootstrap=...)``)."""

    def __init__(self, cluster: _ClusterBootstraps) -> None:
        self._cluster = cluster

    def validate(self) -> list[str]:
        imex = self._cluster._imex_bootstrap
        on_head = any(
            bootstrap is imex and any(kind == _HEAD for kind, _ in targets)
            for bootstrap, targets, _ in self._cluster._attached_bootstraps
        )
        if imex is None or on_head:
            return []
        return [
            f"enable_imex: bootstrap {imex.node.path} holds the IMEX prolog but does not run on the head node: "
            "attach it with add_head_node_bootstrap"
        ]


class _ClusterBootstraps(_Construct):
    """The bootstrap side of :class:`~fmconstructs.parallelcluster.cluster.ParallelCluster` (a mixin)."""

    cluster_name: str
    head_node: HeadNode
    queues: tuple[SlurmQueue, ...]
    login_nodes: tuple[LoginNodePool, ...]
    # (section kind, name, event) -> the bootstraps' script actions and their policy ARNs, in order (queues and login
    # pools take one per event; the head node's events run every piece, :meth:`add_head_node_bootstrap`)
    _bootstraps: dict[tuple[str, str, CustomActionEvent], list[tuple[ScriptAction, str]]]
    version: str
    _attached_bootstraps: list[tuple[NodeBootstrap, list[tuple[str, str]], CustomActionEvent]]
    _bootstrap_policies: list[iam.ManagedPolicy]
    _imex_bootstrap: NodeBootstrap | None
    _custom_slurm_settings: list[dict[str, Any]]
    _head_entry: HeadNodeEntryPoint | None
    stable_head_node_actions: bool

    # --- node bootstrap -------------------------------------------------------------------------------------------
    def add_node_bootstrap(
        self,
        bootstrap: NodeBootstrap,
        *,
        queues: Sequence[str] | None = None,
        event: CustomActionEvent = CustomActionEvent.ON_NODE_CONFIGURED,
        statements: Sequence[iam.PolicyStatement] = (),
    ) -> iam.ManagedPolicy:
        """Run ``bootstrap`` (fmconstructs' node-side steps) on the compute nodes of ``queues`` (default: every queue)
        as their ``CustomActions.<event>`` (default OnNodeConfigured; queues also take OnNodeStart: User Guide
        "custom-bootstrap-actions-v3": OnNodeStart runs before the node's own configuration, OnNodeConfigured after
        it, both as root; "custom-bootstrap-actions-config-v3": ``Script`` is an ``s3://`` URL, ``Args`` its
        arguments, ``Iam.S3Access`` lets the node read it).

        The action is :meth:`NodeBootstrap.script_action`: the static loader's URL and, as ``Args``, the archive's
        URL, sha256 and deploy-time values. ParallelCluster runs the script with ``Args`` as its positional arguments
        in order (aws/aws-parallelcluster-cookbook cookbooks/aws-parallelcluster-environment/files/
        custom_action_executor/custom_action_executor.py at f75d84c, lines 712 and 314; the file has since moved to
        cookbooks/aws-parallelcluster-platform/files/custom_action_executor/ with the same code:
        ``ScriptDefinition(url=s["Script"], args=s["Args"])`` and ``subprocess.run([exe_script.path] +
        (exe_script.args or []), ...)``, no shell), which
        is what the static loader reads. Each queue gets ``Iam.S3Access`` entries for exactly the loader and the
        archive objects (``BucketName`` + ``KeyName``: aws-parallelcluster 3.16.1 ``S3Access.resource_regex`` grants
        ``s3:Get*``/``s3:List*`` on ``<bucket>/<key>`` only, cdk_builder_utils.py ``_add_s3_access_policies_to_role``)
        and ``Iam.AdditionalIamPolicies`` with one customer managed policy created here: log writes to the
        bootstrap's log group plus ``statements`` (e.g. ``aps:RemoteWrite`` for the observability collectors). The
        policy is named ``parallelcluster-<cluster name>-<Region>-bootstrap<n>``: the provider's role may attach only
        customer managed policies whose ARN matches ``policy/parallelcluster*`` or ``policy/parallelcluster/*``
        (aws/aws-parallelcluster cloudformation/policies/parallelcluster-policies.yaml,
        ``DefaultParallelClusterIamAdminPolicy`` Sid ``IamPolicy``: ``iam:AttachRolePolicy`` with ``ArnLike
        iam:PolicyARN``; cloudformation/custom_resource/cluster.yaml gives the provider's Lambda role that policy
        through its nested policies stack, ``EnableIamAdminAccess: true``).

        Returns that policy. Add the bootstrap's steps before calling this (the archive is built now). A queue takes
        one bootstrap per event and no ``on_node_start``/``on_node_configured`` of its own for that event. A failing
        step fails the node's bootstrap ("If a custom action fails, the instance bootstrap also fails": the loader
        exits non-zero).
        """
        check_instance("bootstrap", bootstrap, NodeBootstrap, "a NodeBootstrap")
        check_enum("event", event, CustomActionEvent)
        if event not in QUEUE_EVENTS:
            raise FmValidationError(
                "event", event.value, "OnNodeStart or OnNodeConfigured for queues (QueueCustomActionsSchema)"
            )
        names = [q.name for q in self.queues]
        targets = self._targets("queues", queues, names, "queue")
        for name in targets:
            queue = self.queues[names.index(name)]
            own = queue.on_node_start if event is CustomActionEvent.ON_NODE_START else queue.on_node_configured
            if own is not None:
                field_name = _EVENT_FIELDS[event]
                raise FmValidationError(
                    "queues", name, f"a queue without its own {field_name} (the bootstrap is its {event.value})"
                )
            if (_QUEUE, name, event) in self._bootstraps:
                raise FmValidationError(
                    "queues", name, "a queue without a node bootstrap already (one per queue and event)"
                )
        return self._attach(
            bootstrap, [(_QUEUE, n) for n in targets], event, statements, f"ParallelCluster queues {', '.join(targets)}"
        )

    def add_head_node_bootstrap(
        self,
        bootstrap: NodeBootstrap,
        *,
        event: CustomActionEvent = CustomActionEvent.ON_NODE_CONFIGURED,
        statements: Sequence[iam.PolicyStatement] = (),
    ) -> iam.ManagedPolicy:
        """Run ``bootstrap`` on the head node as a piece of its ``HeadNode.CustomActions.<event>`` (OnNodeStart,
        OnNodeConfigured or OnNodeUpdated: HeadNodeCustomActionsSchema; OnNodeUpdated runs on ``pcluster
        update-cluster`` only, not when the cluster is created). Same delivery and IAM as :meth:`add_node_bootstrap`:
        ``HeadNode.Iam.S3Access`` on the two objects (HeadNodeIamSchema has S3Access) and the managed policy in
        ``HeadNode.Iam.AdditionalIamPolicies``.

        The cluster owns each head node event and runs every piece given for it, in the order given, after the head
        node's own ``on_node_start``/``on_node_configured``: one piece renders as ``{Script, Args}`` as before, several
        as a ``Sequence`` (User Guide "custom-bootstrap-actions-config-v3": ``Sequence``, "added in AWS ParallelCluster
        version 3.6.0", runs its scripts in order), so node health, IMEX, topology and Slurm scripts each add their
        own piece. ParallelCluster refuses any change to the head node's OnNodeStart/OnNodeConfigured on an existing
        cluster (aws-parallelcluster 3.16.1 cluster_schema.py HeadNodeCustomActionsSchema: UpdatePolicy.UNSUPPORTED;
        OnNodeUpdated is SUPPORTED): adding a piece there is a create-time choice. Returns the policy."""
        check_instance("bootstrap", bootstrap, NodeBootstrap, "a NodeBootstrap")
        check_enum("event", event, CustomActionEvent)
        entries = self._bootstraps.get((_HEAD, _HEAD, event), [])
        if any(b is bootstrap and event is e for b, _, e in self._attached_bootstraps):
            raise FmValidationError("bootstrap", bootstrap.node.path, f"a bootstrap not already in {event.value}")
        field_name = _EVENT_FIELDS.get(event)
        own = field_name is not None and getattr(self.head_node, field_name) is not None
        if (entries or own) and _version(self.version) < SEQUENCE_MIN_VERSION:
            raise FmValidationError(
                "version",
                self.version,
                f"3.6.0 or later: the head node's {event.value} runs several scripts as a CustomActions Sequence "
                "(User Guide custom-bootstrap-actions-config-v3)",
            )
        return self._attach(bootstrap, [(_HEAD, _HEAD)], event, statements, "the ParallelCluster head node")

    def head_node_pieces(self, event: CustomActionEvent) -> list[NodeBootstrap]:
        """The bootstraps the head node runs at ``event``, in order."""
        check_enum("event", event, CustomActionEvent)
        return [b for b, targets, e in self._attached_bootstraps if e is event and (_HEAD, _HEAD) in targets]

    def head_node_actions(self, event: CustomActionEvent) -> list[dict[str, Any]]:
        """What the head node runs at ``event``, in order, each as ``{Script, Args}`` resolved as in the template: its
        own action, then each piece. With ``stable_head_node_actions`` the pieces of OnNodeStart/OnNodeConfigured are
        what the entry point reads from SSM (:mod:`.head_entry`), in place of the entry point's own action."""
        check_enum("event", event, CustomActionEvent)
        stack = Stack.of(self)
        rendered = cast("ParallelCluster", self).to_dict()["HeadNode"].get("CustomActions", {}).get(event.value)
        if rendered is None:
            return []
        scripts: list[dict[str, Any]] = rendered.get("Sequence", [rendered])
        if self._head_entry is None or event not in ENTRY_EVENTS:
            return scripts
        entry = stack.resolve(self._head_entry.action(event))
        pieces = [
            stack.resolve({"Script": action.script_url, "Args": list(action.args)})
            for action, _ in self._bootstraps.get((_HEAD, _HEAD, event), [])
        ]
        return [run for script in scripts for run in (pieces if script == entry else [script])]

    def _check_unattached(self, parameter: str, bootstrap: NodeBootstrap) -> None:
        """A bootstrap given to a feature must take its step before it is attached (its archive is built then)."""
        if any(b is bootstrap for b, _, _ in self._attached_bootstraps):
            raise FmValidationError(
                parameter,
                bootstrap.node.path,
                "a bootstrap not attached yet (attaching builds its archive, so a later step fails synthesis); omit "
                f"{parameter} and the feature adds its own piece to the head node's event",
            )

    def add_login_node_bootstrap(
        self,
        bootstrap: NodeBootstrap,
        *,
        pools: Sequence[str] | None = None,
        event: CustomActionEvent = CustomActionEvent.ON_NODE_CONFIGURED,
        statements: Sequence[iam.PolicyStatement] = (),
    ) -> iam.ManagedPolicy:
        """Run ``bootstrap`` on the login nodes of ``pools`` (default: every pool) as their
        ``LoginNodes.Pools[].CustomActions.<event>`` (OnNodeStart, OnNodeConfigured or OnNodeUpdated:
        LoginNodesCustomActionsSchema). Login pools have no ``Iam.S3Access`` (LoginNodesIamSchema: InstanceRole and
        AdditionalIamPolicies only), so the managed policy also grants ``s3:GetObject`` on exactly the loader and the
        archive objects. One bootstrap per pool and event. Returns the policy."""
        check_instance("bootstrap", bootstrap, NodeBootstrap, "a NodeBootstrap")
        check_enum("event", event, CustomActionEvent)
        names = [p.name for p in self.login_nodes]
        if not names:
            raise FmValidationError("pools", pools, "a cluster with login_nodes")
        targets = self._targets("pools", pools, names, "login node pool")
        for name in targets:
            if (_LOGIN, name, event) in self._bootstraps:
                raise FmValidationError(
                    "pools", name, "a pool without a node bootstrap already (one per pool and event)"
                )
        return self._attach(
            bootstrap,
            [(_LOGIN, n) for n in targets],
            event,
            statements,
            f"ParallelCluster login pools {', '.join(targets)}",
            read_in_policy=True,
        )

    @staticmethod
    def _targets(parameter: str, given: Sequence[str] | None, names: list[str], noun: str) -> list[str]:
        if given is None:
            return list(names)
        targets = list(check_sequence(parameter, given, lambda p, v: check_str(p, v)))
        if not targets:
            raise FmValidationError(parameter, [], f"at least one {noun} name (or None for every {noun})")
        for name in targets:
            if name not in names:
                raise FmValidationError(parameter, name, f"a {noun} of this cluster: {', '.join(names)}")
        return targets

    def _attach(
        self,
        bootstrap: NodeBootstrap,
        targets: list[tuple[str, str]],
        event: CustomActionEvent,
        statements: Sequence[iam.PolicyStatement],
        where: str,
        *,
        read_in_policy: bool = False,
    ) -> iam.ManagedPolicy:
        extra = check_sequence(
            "statements", statements, lambda p, v: check_instance(p, v, iam.PolicyStatement, "an iam.PolicyStatement")
        )
        action = bootstrap.script_action()
        index = len(self._bootstrap_policies) + 1
        own = [action.read_statement()] if read_in_policy else []
        policy = iam.ManagedPolicy(
            self,
            f"NodeBootstrapPolicy{index}",
            managed_policy_name=self._policy_name(index),
            description=f"fmconstructs node bootstrap {bootstrap.name} ({event.value}) on {where}",
            statements=[action.log_statement(), *own, *extra],
        )
        self._bootstrap_policies.append(policy)
        for kind, name in targets:
            self._bootstraps.setdefault((kind, name, event), []).append((action, policy.managed_policy_arn))
            if kind == _HEAD and event in ENTRY_EVENTS and self.stable_head_node_actions:
                self._head_entry_point().add_piece(event, action)
        self._attached_bootstraps.append((bootstrap, targets, event))
        return policy

    def _head_entry_point(self) -> HeadNodeEntryPoint:
        """The cluster's :class:`~.head_entry.HeadNodeEntryPoint`, made on the first head node piece it serves."""
        if self._head_entry is None:
            self._head_entry = HeadNodeEntryPoint(
                self, HeadNodeEntryPoint.ID, cluster_name=self.cluster_name, policy_name=self._policy_name("head-entry")
            )
        return self._head_entry

    def _policy_name(self, index: int | str) -> str:
        """``parallelcluster-<cluster name>-<Region>-bootstrap<n>`` (``-<index>`` for a str index such as
        ``lustre-efa``): the prefix the provider's role may attach (see :meth:`add_node_bootstrap`); cluster names are
        unique per Region and IAM names per account."""
        suffix = f"bootstrap{index}" if isinstance(index, int) else index
        name = f"{POLICY_NAME_PREFIX}-{self.cluster_name}-{Stack.of(self).region}-{suffix}"
        # 15 + 1 + at most 60 (CLUSTER_NAME_PATTERN) + 1 + a Region name + "-bootstrapN": far below 128 characters.
        if known(name) and len(name) > POLICY_NAME_MAX_LENGTH:
            raise FmValidationError("managed_policy_name", name, f"at most {POLICY_NAME_MAX_LENGTH} characters")
        return name

    def enable_imex(self, *, bootstrap: NodeBootstrap | None = None) -> NodeBootstrap:
        """NVIDIA IMEX for the cluster's P6e-GB200 UltraServer queues, as the ParallelCluster User Guide
        "support-nvidia-imex-p6e-gb200-instance" documents it (:mod:`fmconstructs.parallelcluster.imex`): the
        ``91_nvidia_imex_prolog.sh`` Slurm prolog installed in ``/opt/slurm/etc/scripts/prolog.d/`` by a head node
        custom action, and ``Scheduling.SlurmSettings.CustomSlurmSettings`` ``PrologFlags: "Alloc,NoHold"`` and
        ``MessageTimeout: 240``. Jobs that need IMEX run exclusively (``--exclusive``, or a queue with
        ``job_exclusive_allocation=True``): the prolog skips other jobs.

        ``bootstrap`` (default: a new one, a piece of the head node's OnNodeStart as the page does, next to any
        other piece of that event): the head node bootstrap that gets the ``nvidia-imex-prolog`` step; when you give
        one (not attached yet), attach it to the head node with :meth:`add_head_node_bootstrap` after this call
        (checked at synthesis). Returns the bootstrap."""
        if self._imex_bootstrap is not None:
            # Not a child check: a bootstrap of the caller's may hold the step (no ImexBootstrap child then).
            raise FmValidationError(
                "enable_imex",
                f"a second call on {self.node.path}",
                "called once per cluster (keep the head node bootstrap the first call returned)",
            )
        ultra = [
            queue.name
            for queue in self.queues
            if any(r.spec is not None and r.spec.ultraserver_types for r in queue.compute_resources)
        ]
        if not ultra:
            raise FmValidationError(
                "enable_imex", [q.name for q in self.queues], "a cluster with an UltraServer (p6e-gb200) queue"
            )
        own = bootstrap is None
        if bootstrap is None:
            bootstrap = NodeBootstrap(self, "ImexBootstrap", name=IMEX_BOOTSTRAP_NAME)
        check_instance("bootstrap", bootstrap, NodeBootstrap, "a NodeBootstrap")
        self._check_unattached("bootstrap", bootstrap)
        bootstrap.add_step(IMEX_STEP, files=imex_prolog_files())
        self._imex_bootstrap = bootstrap
        self._custom_slurm_settings.extend(dict(setting) for setting in IMEX_CUSTOM_SLURM_SETTINGS)
        if own:
            self.add_head_node_bootstrap(bootstrap, event=CustomActionEvent.ON_NODE_START)
        self.node.add_validation(_ImexOnHeadNode(self))
        return bootstrap

    def enable_node_health(
        self,
        options: NodeHealthOptions | None = None,
        *,
        queues: Sequence[str] | None = None,
        head_bootstrap: NodeBootstrap | None = None,
        node_bootstrap: NodeBootstrap | None = None,
    ) -> list[NodeBootstrap]:
        """Node-join checks on the GPU queues ``queues`` (default: every queue), :mod:`.health`: each node runs the
        boot gate as its queue's OnNodeConfigured action (never drained; a failing node is held out of work in a
        Slurm reservation with the failing check as its comment, the bootstrap goes on, and remediation replaces it)
        and, with ``options.prolog_checks``, the PROLOG checks before every job from
        ``/opt/slurm/etc/scripts/prolog.d/95_fmconstructs_node_checks.sh`` (installed by ``head_bootstrap``, default:
        a new piece of the head node's OnNodeConfigured; give your own, not attached yet, to share it, then attach it
        with :meth:`add_head_node_bootstrap`). ``options`` default: ``NodeHealthOptions()``. Each
        queue takes no other OnNodeConfigured bootstrap. ``node_bootstrap``: for one queue, add the ``node-health``
        step to this bootstrap (the queue's OnNodeConfigured, which you attach with :meth:`add_node_bootstrap` after
        this call) instead of a new one, so the checks run after your own steps. Returns the bootstraps created or
        extended."""
        from .health import enable_node_health

        return enable_node_health(
            cast("ParallelCluster", self),  # this mixin is always a ParallelCluster
            options or NodeHealthOptions(),
            queues=queues,
            head_bootstrap=head_bootstrap,
            node_bootstrap=node_bootstrap,
        )

    def enable_slurm_topology(
        self,
        *,
        bootstrap: NodeBootstrap | None = None,
        event: CustomActionEvent = CustomActionEvent.ON_NODE_START,
        interval_minutes: int = 5,
    ) -> NodeBootstrap:
        """Slurm ``topology/tree`` for the P5/P6 queues, refreshed every ``interval_minutes`` on the head node from
        EC2 DescribeInstanceTopology (:mod:`.topology`): ``TopologyPlugin: topology/tree`` in CustomSlurmSettings, a
        head node bootstrap (default: a new one run as the head node's ``event``, OnNodeStart) installing a systemd
        timer that rewrites ``/opt/slurm/etc/topology.conf`` and runs ``scontrol reconfigure`` when nodes join or
        leave. Refused on clusters with p6e-gb200 queues (ParallelCluster writes their topology/block itself). The
        bootstrap is a piece of the head node's ``event`` next to the others (IMEX, the Slurm scripts); ``event`` must
        run at creation (OnNodeStart or OnNodeConfigured). With your own ``bootstrap`` (not attached yet), attach it
        with :meth:`add_head_node_bootstrap` at one of those events after this call, giving
        ``statements=fmconstructs.parallelcluster.topology.topology_statements()`` (checked at synthesis). Returns
        the bootstrap."""
        from .topology import enable_slurm_topology

        return enable_slurm_topology(
            cast("ParallelCluster", self), bootstrap=bootstrap, event=event, interval_minutes=interval_minutes
        )

    def add_teams(self, teams: Sequence[Team]) -> NodeBootstrap:
        """Teams (:class:`~fmconstructs.teams.Team`) as Slurm accounts, QoS and associations
        (:mod:`.teams`): the sacctmgr script on the head node (OnNodeConfigured and OnNodeUpdated) and the slurm.conf
        lines in CustomSlurmSettings. Needs ``slurm_accounting``. Returns the bootstrap."""
        from .teams import add_teams

        return add_teams(cast("ParallelCluster", self), teams)

    def add_custom_slurm_settings(self, settings: Mapping[str, str]) -> None:
        """Add ``Scheduling.SlurmSettings.CustomSlurmSettings`` entries (one ``{name: value}`` item each), e.g.
        :data:`fmconstructs.health.SCRONTAB_SLURM_SETTINGS`. ParallelCluster refuses the settings of its deny list
        (aws-parallelcluster pcluster/validators/slurm_settings_validator.py ``SLURM_SETTINGS_DENY_LIST``)."""
        if not isinstance(settings, Mapping):
            raise FmTypeError("settings", settings, "a mapping of Slurm setting name to value")
        for name, value in settings.items():
            check_str("settings (name)", name, pattern=re.compile(r"[A-Za-z][A-Za-z0-9]*"), allowed="a Slurm name")
            check_str(f"settings[{name!r}]", value, pattern=re.compile(r"[^\n]*"), allowed="one line")
            self._custom_slurm_settings.append({name: value})

    def add_slurm_scripts(
        self,
        *pieces: SlurmScriptPiece,
        prolog_flags: Sequence[str] = (),
        bootstrap: NodeBootstrap | None = None,
        event: CustomActionEvent = CustomActionEvent.ON_NODE_CONFIGURED,
    ) -> NodeBootstrap:
        """Run ``pieces`` around every job (:mod:`.slurm_scripts`): a head node bootstrap (default: a new one run as
        the head node's ``event``, OnNodeConfigured; give your own, then attach it with
        :meth:`add_head_node_bootstrap`) copies
        them into ``/opt/slurm/etc/scripts/prolog.d/`` and ``epilog.d/``, which ParallelCluster's ``slurm.conf``
        runs on every compute node; ``prolog_flags`` are merged into one ``PrologFlags`` custom setting. Returns the
        bootstrap."""
        from .slurm_scripts import add_slurm_scripts

        return add_slurm_scripts(
            cast("ParallelCluster", self), pieces, prolog_flags=prolog_flags, bootstrap=bootstrap, event=event
        )
