"""Slurm accounting for :class:`~fmconstructs.parallelcluster.ParallelCluster`: jobs keep their user and account.

With accounting, slurmdbd records every job (user, account, duration, resources) in a MySQL database: ``sacct`` shows
finished jobs and ``sacctmgr`` manages users, accounts and QOS for limits and fair-share (ParallelCluster User Guide
"Slurm accounting with AWS ParallelCluster", slurm-accounting-v3). ParallelCluster sets the default cluster user as
the Slurm database admin and adds no other user: creating accounts and users is yours (same page).

Two ways, exactly one per cluster (ParallelCluster's ``ExternalSlurmdbdVsDatabaseIncompatibility`` refuses both):

- :class:`SlurmDatabase` -> ``Scheduling.SlurmSettings.Database`` (ParallelCluster >= 3.3.0): slurmdbd runs on the head
  node and connects to a MySQL-compatible server you give (``Uri`` host:port, ``UserName``, ``PasswordSecretArn``, an
  optional ``DatabaseName``), or to one :class:`SlurmAccountingDatabase` creates.
- :class:`ExternalSlurmdbd` -> ``Scheduling.SlurmSettings.ExternalSlurmdbd`` (``Host``, ``Port``; ParallelCluster >=
  3.10.0) and ``MungeKeySecretArn``: a slurmdbd server you run, shared by several clusters (same page).

Field names, patterns and defaults: aws-parallelcluster 3.16.1 ``pcluster/schemas/cluster_schema.py``
(``DatabaseSchema``, ``ExternalSlurmdbdSchema``, ``SlurmSettingsSchema``), ``pcluster/config/cluster_config.py``
(``ExternalSlurmdbd`` port default 6819), ``pcluster/validators/database_validators.py`` (``DatabaseUriValidator``: no
scheme, no leading '/', port 3306 assumed when absent), ``pcluster/validators/slurm_settings_validator.py``
(``ExternalSlurmdbdRequiresCustomMungeKey``; ``SLURM_SETTINGS_DENY_LIST["SlurmConf"]["Accounting"]``) and
``pcluster/validators/cluster_validators.py`` (``ClusterNameValidator``: at most 40 characters with accounting,
constants.py ``PCLUSTER_NAME_MAX_LENGTH_SLURM_ACCOUNTING``).

**Secrets.** ``PasswordSecretArn`` is a Secrets Manager secret holding the password as plain text (the AWS HPC Blog
"Leveraging Slurm Accounting in AWS ParallelCluster": "store the password ... as a plaintext secret"; the tutorial's
template aws/aws-parallelcluster ``cloudformation/database/serverless-database.yaml`` stores ``SecretString:
<password>``), not RDS's JSON ``{"username", "password"}``. ParallelCluster grants its head node role
``secretsmanager:GetSecretValue`` on ``PasswordSecretArn`` and on ``MungeKeySecretArn`` itself
(aws-parallelcluster 3.16.1 ``pcluster/templates/cdk_builder_utils.py`` ``HeadNodeIamResources._build_policy``, Sids
``AllowGettingSlurmDbSecretValue`` and ``SecretsManager``): the construct adds no grant. A secret encrypted with a
customer managed KMS key would also need ``kms:Decrypt`` for the head node, which ParallelCluster does not add
(UNCONFIRMED whether it is needed; :class:`SlurmAccountingDatabase` uses the AWS managed key).

**Network.** The database (or slurmdbd) must be reachable from the head node (User Guide, same page). Give the group
that the server admits as ``client_security_group``: the cluster adds it to the head node's
``Networking.AdditionalSecurityGroups``, as the tutorial's template does with its ``DatabaseClientSecurityGroup``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import jsii
from aws_cdk import CfnResource, Duration, RemovalPolicy, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct, IValidation

from .._nag import acknowledge
from .._replacement import check_removal_policy
from .._validate import (
    check_construct,
    check_count,
    check_number,
    check_scope_id,
    check_security_group,
    check_str,
    check_vpc,
    known,
    located,
)
from ..errors import FmTypeError, FmValidationError

#: DatabaseUriValidator: "Assuming the use of port 3306" when the Uri has none (the MySQL port).
MYSQL_PORT = 3306
#: pcluster/config/cluster_config.py ``ExternalSlurmdbd``: ``port`` default 6819 (slurmdbd's port).
SLURMDBD_PORT = 6819
#: constants.py PCLUSTER_NAME_MAX_LENGTH_SLURM_ACCOUNTING (ClusterNameValidator with Database or ExternalSlurmdbd).
CLUSTER_NAME_MAX_LENGTH_WITH_ACCOUNTING = 40
#: slurm_settings_validator.py SLURM_SETTINGS_DENY_LIST["SlurmConf"]["Accounting"] (lowercase): ParallelCluster sets
#: these itself when ``Database`` is given, and refuses them in ``CustomSlurmSettings``.
ACCOUNTING_SLURM_SETTINGS_DENY_LIST = (
    "accountingstoragetype",
    "accountingstoragehost",
    "accountingstorageport",
    "accountingstorageuser",
    "jobacctgathertype",
)
# DatabaseSchema.database_name: ^[0-9a-z_]+$, length 1-64.
_DATABASE_NAME = re.compile(r"[0-9a-z_]{1,64}")
# A host name or IPv4 address, no scheme, path or port (DatabaseUriValidator refuses a scheme and a leading '/').
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.\-]{0,251}[A-Za-z0-9])?")
_HOST_TEXT = "a host name or IP address without scheme, port or path (e.g. 'db.example.internal')"


def _host(parameter: str, value: object) -> Any:
    return check_str(parameter, value, pattern=_HOST, allowed=_HOST_TEXT)


def _port(parameter: str, value: object) -> Any:
    return check_count(parameter, value, minimum=1, maximum=65535)


def _secret(parameter: str, value: object) -> secretsmanager.ISecret:
    secret: secretsmanager.ISecret = check_construct(
        parameter, value, attribute="secret_arn", expected="a secretsmanager.ISecret"
    )
    return secret


def _client_group(parameter: str, value: object) -> ec2.ISecurityGroup | None:
    if value is None:
        return None
    group: ec2.ISecurityGroup = check_security_group(parameter, value)
    return group


@dataclass(frozen=True, kw_only=True)
class SlurmDatabase:
    """``Scheduling.SlurmSettings.Database``: slurmdbd on the head node stores accounting in this MySQL server.

    :param host: the server's address, without scheme or port (``Uri`` is ``<host>:<port>``); may be a deploy-time
        value (e.g. ``cluster.cluster_endpoint.hostname``).
    :param user_name: ``UserName``: a database user that can create the accounting database and write to it.
    :param password_secret: ``PasswordSecretArn``: the secret holding that user's password as plain text (module
        docstring). ParallelCluster gives the head node ``secretsmanager:GetSecretValue`` on it.
    :param port: default 3306.
    :param database_name: ``DatabaseName``: 1-64 of ``0-9 a-z _``. Default: ParallelCluster's (the cluster name).
    :param client_security_group: a group the server admits; the head node joins it. Default: none (the head node must
        reach the server some other way).
    """

    host: str
    user_name: str
    password_secret: secretsmanager.ISecret
    port: int = MYSQL_PORT
    database_name: str | None = None
    client_security_group: ec2.ISecurityGroup | None = None

    def __post_init__(self) -> None:
        _host("host", self.host)
        check_str("user_name", self.user_name, min_length=1, max_length=64, allowed="a database user name (1-64)")
        _secret("password_secret", self.password_secret)
        _port("port", self.port)
        if self.database_name is not None:
            check_str(
                "database_name",
                self.database_name,
                pattern=_DATABASE_NAME,
                allowed="1-64 lowercase letters, digits or '_' (DatabaseSchema.database_name)",
            )
        _client_group("client_security_group", self.client_security_group)

    def to_config(self) -> dict[str, Any]:
        """``{"Database": {...}}`` for ``SlurmSettings``."""
        database: dict[str, Any] = {
            "Uri": f"{self.host}:{Token.as_string(self.port)}",
            "UserName": self.user_name,
            "PasswordSecretArn": self.password_secret.secret_arn,
        }
        if self.database_name is not None:
            database["DatabaseName"] = self.database_name
        return {"Database": database}


@dataclass(frozen=True, kw_only=True)
class ExternalSlurmdbd:
    """``Scheduling.SlurmSettings.ExternalSlurmdbd`` and ``MungeKeySecretArn``: a slurmdbd server you run
    (ParallelCluster >= 3.10.0), e.g. one shared by several clusters.

    :param host: ``Host``: the slurmdbd server's address (reachable from the head node).
    :param munge_key_secret: ``MungeKeySecretArn``: the munge key the slurmdbd server uses (ParallelCluster requires it
        with ExternalSlurmdbd: ``ExternalSlurmdbdRequiresCustomMungeKey``); every node of the cluster uses it.
    :param port: ``Port``. Default 6819 (ParallelCluster's).
    :param client_security_group: a group the slurmdbd server admits; the head node joins it. Default: none.

    ParallelCluster warns that traffic to an external slurmdbd is not encrypted
    (``ExternalSlurmdbdTrafficNotEncrypted``): keep it in a trusted network.
    """

    host: str
    munge_key_secret: secretsmanager.ISecret
    port: int = SLURMDBD_PORT
    client_security_group: ec2.ISecurityGroup | None = None

    def __post_init__(self) -> None:
        _host("host", self.host)
        _secret("munge_key_secret", self.munge_key_secret)
        _port("port", self.port)
        _client_group("client_security_group", self.client_security_group)

    def to_config(self) -> dict[str, Any]:
        """``{"ExternalSlurmdbd": {...}, "MungeKeySecretArn": ...}`` for ``SlurmSettings``."""
        return {
            "ExternalSlurmdbd": {"Host": self.host, "Port": self.port},
            "MungeKeySecretArn": self.munge_key_secret.secret_arn,
        }


SlurmAccounting = SlurmDatabase | ExternalSlurmdbd


def check_slurm_accounting(parameter: str, value: object) -> SlurmAccounting | None:
    """None, a :class:`SlurmDatabase` or an :class:`ExternalSlurmdbd` (never both: one parameter holds one)."""
    if value is None or isinstance(value, SlurmDatabase | ExternalSlurmdbd):
        return value
    raise FmTypeError(parameter, value, "a SlurmDatabase, an ExternalSlurmdbd or None")


def apply_slurm_accounting(accounting: SlurmAccounting, config: dict[str, Any]) -> None:
    """Add ``accounting`` to a ``ClusterConfiguration``: its keys in ``Scheduling.SlurmSettings``, its client group in
    the head node's ``Networking.AdditionalSecurityGroups``."""
    config["Scheduling"].setdefault("SlurmSettings", {}).update(accounting.to_config())
    if accounting.client_security_group is not None:
        groups = config["HeadNode"]["Networking"].setdefault("AdditionalSecurityGroups", [])
        groups.append(accounting.client_security_group.security_group_id)


#: User Guide slurm-accounting-v3: "Starting with version 3.3.0" (Database) and "Starting with version 3.10.0"
#: (ExternalSlurmdbd).
DATABASE_MIN_VERSION = (3, 3, 0)
EXTERNAL_SLURMDBD_MIN_VERSION = (3, 10, 0)


def check_accounting_version(accounting: SlurmAccounting, version: str) -> None:
    """The ParallelCluster ``version`` supports the accounting kind (a malformed version is checked elsewhere)."""
    if not known(version) or not re.fullmatch(r"\d+\.\d+\.\d+", version):
        return
    parsed = tuple(int(part) for part in version.split("."))
    kind, minimum = (
        ("SlurmDatabase", DATABASE_MIN_VERSION)
        if isinstance(accounting, SlurmDatabase)
        else ("ExternalSlurmdbd", EXTERNAL_SLURMDBD_MIN_VERSION)
    )
    if parsed < minimum:
        raise FmValidationError(
            "version", version, f"{'.'.join(map(str, minimum))} or later with a {kind} (slurm-accounting-v3)"
        )


def check_accounting_cluster_name(name: str) -> None:
    """ClusterNameValidator: at most 40 characters when the cluster has Slurm accounting."""
    if known(name) and len(name) > CLUSTER_NAME_MAX_LENGTH_WITH_ACCOUNTING:
        raise FmValidationError(
            "cluster_name",
            name,
            f"at most {CLUSTER_NAME_MAX_LENGTH_WITH_ACCOUNTING} characters with slurm_accounting "
            "(ClusterNameValidator)",
        )


@jsii.implements(IValidation)
class AccountingSettingsCheck:
    """At synthesis: no ``CustomSlurmSettings`` entry ParallelCluster refuses beside ``Database``."""

    def __init__(self, settings: list[dict[str, Any]]) -> None:
        self._settings = settings

    def validate(self) -> list[str]:
        names = sorted(
            {str(k) for s in self._settings for k in s if str(k).lower() in ACCOUNTING_SLURM_SETTINGS_DENY_LIST}
        )
        if not names:
            return []
        return [
            f"CustomSlurmSettings {', '.join(names)} are set by ParallelCluster with a SlurmDatabase and refused "
            "(SLURM_SETTINGS_DENY_LIST Accounting): remove them"
        ]


# --- the opt-in database -------------------------------------------------------------------------------------------
#: Aurora MySQL 3.10 (MySQL 8.0.42 compatible): a long-term support release (Aurora User Guide "Long-term support (LTS)
#: and beta releases for Amazon Aurora MySQL": 3.10.* and 3.04.*; release notes "Aurora MySQL database engine updates
#: 2025-07-31 (Version 3.10.0)"). ParallelCluster's tutorial template uses Aurora MySQL 3 (8.0.mysql_aurora.3.03.0).
DEFAULT_ENGINE_VERSION = rds.AuroraMysqlEngineVersion.VER_3_10_0
#: serverless-database.yaml MinCapacity / MaxCapacity defaults (ACUs).
DEFAULT_MIN_CAPACITY_ACUS = 1.0
DEFAULT_MAX_CAPACITY_ACUS = 4.0
#: serverless-database.yaml ClusterAdmin default.
DEFAULT_USER_NAME = "clusteradmin"
# serverless-database.yaml's cluster parameter group, as it is: TLS required, innodb_lock_wait_timeout 900.
_PARAMETERS = {"require_secure_transport": "ON", "innodb_lock_wait_timeout": "900"}


class SlurmAccountingDatabase(Construct):
    """An Aurora MySQL Serverless v2 cluster for ParallelCluster's Slurm accounting, as ParallelCluster's tutorial
    template (aws/aws-parallelcluster ``cloudformation/database/serverless-database.yaml``) builds it: encrypted
    storage, TLS required, a plain-text password secret, a database security group admitting only a client group on
    the database port. Pass :attr:`slurm_database` to ``ParallelCluster(slurm_accounting=...)``.

    :param vpc: the VPC of the cluster.
    :param vpc_subnets: default: the VPC's private subnets (else its isolated ones); the template takes two subnets
        in two zones.
    :param engine_version: default Aurora MySQL 3.10.0 (:data:`DEFAULT_ENGINE_VERSION`, LTS).
    :param min_capacity_acus: / max_capacity_acus: Serverless v2 capacity. Default 1 and 4 (the template's).
    :param user_name: the admin user ParallelCluster connects as. Default ``clusteradmin``.
    :param removal_policy: RETAIN (default: the job history outlives the stack) or DESTROY, for every resource of
        the construct: the database cluster and instance, the password secret (a retained database needs it), both
        security groups and their rules (the retained database and head node keep using them), the parameter and
        subnet groups. RETAIN also turns on deletion protection; a retained database keeps billing until you delete
        it.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        vpc_subnets: ec2.SubnetSelection | None = None,
        engine_version: rds.AuroraMysqlEngineVersion = DEFAULT_ENGINE_VERSION,
        min_capacity_acus: float = DEFAULT_MIN_CAPACITY_ACUS,
        max_capacity_acus: float = DEFAULT_MAX_CAPACITY_ACUS,
        user_name: str = DEFAULT_USER_NAME,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    ) -> None:
        check_scope_id(scope, id)
        check_vpc("vpc", vpc)
        if not isinstance(engine_version, rds.AuroraMysqlEngineVersion):
            raise FmTypeError("engine_version", engine_version, "an rds.AuroraMysqlEngineVersion")
        # serverless-database.yaml parameter bounds: MinCapacity 0.5 .. 127.5, MaxCapacity 1 .. 128.
        check_number("min_capacity_acus", min_capacity_acus, minimum=0.5, maximum=127.5, unit="ACUs")
        check_number("max_capacity_acus", max_capacity_acus, minimum=1, maximum=128, unit="ACUs")
        if known(min_capacity_acus) and known(max_capacity_acus) and min_capacity_acus > max_capacity_acus:
            raise FmValidationError("max_capacity_acus", max_capacity_acus, f">= min_capacity_acus {min_capacity_acus}")
        # A letter then letters or digits, at most 16 (Aurora MySQL MasterUsername: UNCONFIRMED here, not re-read;
        # the template's ClusterAdmin takes 3-64 characters).
        check_str("user_name", user_name, pattern=re.compile(r"[A-Za-z][A-Za-z0-9]{2,15}"), allowed=_USER_TEXT)
        self.removal_policy = check_removal_policy("removal_policy", removal_policy)
        super().__init__(scope, id)
        self.password_secret = self._create_secret()
        self.security_group, self.client_security_group = self._create_security_groups(vpc)
        self.cluster = self._create_cluster(
            vpc, vpc_subnets, engine_version, min_capacity_acus, max_capacity_acus, user_name
        )
        self.security_group.add_ingress_rule(
            self.client_security_group,
            ec2.Port.tcp(MYSQL_PORT),
            "Slurm accounting: slurmdbd on the ParallelCluster head node",
        )
        #: What ``ParallelCluster(slurm_accounting=...)`` takes.
        self.slurm_database = SlurmDatabase(
            host=self.cluster.cluster_endpoint.hostname,
            user_name=user_name,
            password_secret=self.password_secret,
            port=MYSQL_PORT,
            client_security_group=self.client_security_group,
        )
        self._apply_removal_policy()
        self._acknowledge_nag()

    def _apply_removal_policy(self) -> None:
        # Every resource follows the database: a retained cluster keeps its network interfaces in these groups (their
        # deletion would fail) and the head node keeps reaching it through the rules; the parameter and subnet groups
        # stay attached to it.
        for child in self.node.find_all():
            if isinstance(child, CfnResource):
                child.apply_removal_policy(self.removal_policy)

    def _create_secret(self) -> secretsmanager.Secret:
        # A plain-text password (no secret_string_template): ParallelCluster reads the secret as the password.
        # Excluded characters: the template's password rule refuses # / ' " @ (serverless-database.yaml); backslash,
        # backtick and space are left out too (this construct's choice: no quoting surprises in configuration files).
        secret = secretsmanager.Secret(
            self,
            "Password",
            description="Slurm accounting database password (ParallelCluster SlurmSettings.Database)",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=32, exclude_characters="#/'\"@\\` ", require_each_included_type=True
            ),
        )
        secret.apply_removal_policy(self.removal_policy)
        return secret

    def _create_security_groups(self, vpc: ec2.IVpc) -> tuple[ec2.SecurityGroup, ec2.SecurityGroup]:
        database = ec2.SecurityGroup(
            self, "SecurityGroup", vpc=vpc, description="Slurm accounting database", allow_all_outbound=False
        )
        client = ec2.SecurityGroup(
            self,
            "ClientSecurityGroup",
            vpc=vpc,
            description="Slurm accounting database clients (the ParallelCluster head node)",
            allow_all_outbound=False,
        )
        client.add_egress_rule(database, ec2.Port.tcp(MYSQL_PORT), "Slurm accounting database")
        return database, client

    def _create_cluster(
        self,
        vpc: ec2.IVpc,
        vpc_subnets: ec2.SubnetSelection | None,
        engine_version: rds.AuroraMysqlEngineVersion,
        min_capacity_acus: float,
        max_capacity_acus: float,
        user_name: str,
    ) -> rds.DatabaseCluster:
        engine = rds.DatabaseClusterEngine.aurora_mysql(version=engine_version)
        cluster = rds.DatabaseCluster(
            self,
            "Cluster",
            engine=engine,
            vpc=vpc,
            vpc_subnets=vpc_subnets or ec2.SubnetSelection(subnets=vpc.private_subnets or vpc.isolated_subnets),
            security_groups=[self.security_group],
            credentials=rds.Credentials.from_password(user_name, self.password_secret.secret_value),
            writer=rds.ClusterInstance.serverless_v2("Writer"),
            serverless_v2_min_capacity=min_capacity_acus,
            serverless_v2_max_capacity=max_capacity_acus,
            storage_encrypted=True,
            parameter_group=rds.ParameterGroup(self, "Parameters", engine=engine, parameters=_PARAMETERS),
            backup=rds.BackupProps(retention=Duration.days(7)),
            deletion_protection=self.removal_policy is RemovalPolicy.RETAIN,
            removal_policy=self.removal_policy,
            port=MYSQL_PORT,
        )
        return cluster

    def _acknowledge_nag(self) -> None:
        if self.removal_policy is not RemovalPolicy.RETAIN:
            acknowledge(
                self.cluster,
                "AwsSolutions-RDS10",
                "removal_policy=DESTROY was chosen for this accounting database: deletion protection would block it",
            )
        acknowledge(
            self.cluster,
            "AwsSolutions-RDS6",
            "slurmdbd authenticates with a user name and password from Secrets Manager (ParallelCluster "
            "SlurmSettings.Database has no IAM database authentication)",
        )
        acknowledge(
            self.cluster,
            "AwsSolutions-RDS11",
            "ParallelCluster's accounting Uri defaults to the MySQL port 3306; the database group admits only the "
            "head node's client group",
        )
        acknowledge(
            self.cluster,
            "AwsSolutions-RDS14",
            "Backtrack is not needed for the Slurm accounting database; automated backups (7 days) restore it",
        )
        acknowledge(
            self.password_secret,
            "AwsSolutions-SMG4",
            "the password is the Aurora admin password ParallelCluster reads at head node setup; rotating it would "
            "break slurmdbd until the cluster is updated",
        )


_USER_TEXT = "a letter then 2-15 letters or digits (an Aurora MySQL master user name)"
