"""Slurm accounting, so jobs have users and accounts (issue 22 section 2).

PCS: ``PcsOptions(accounting=, accounting_purge_time_days=)`` reaches ``AWS::PCS::Cluster``
``SlurmConfiguration.Accounting`` (PCS API reference ``AccountingRequest``: Mode STANDARD | NONE, DefaultPurgeTimeInDays
-1 .. 10000, 0 refused) and a cluster with accounting is retained by default.

ParallelCluster: ``ParallelCluster(slurm_accounting=SlurmDatabase(...) | ExternalSlurmdbd(...))`` renders
``Scheduling.SlurmSettings.Database`` / ``ExternalSlurmdbd`` + ``MungeKeySecretArn`` that aws-parallelcluster 3.16.1's
own schema and offline validators accept (tools/pcluster_validate.py); ``SlurmAccountingDatabase`` creates an
encrypted, retained Aurora MySQL cluster with a plain-text password secret and a client group on 3306 for the head node.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk.assertions import Match, Template

from fmconstructs import FmValidationError
from fmconstructs.parallelcluster import (
    ComputeResource,
    ExternalSlurmdbd,
    HeadNode,
    ParallelCluster,
    SlurmAccountingDatabase,
    SlurmDatabase,
    SlurmQueue,
)
from fmconstructs.pcs import AccountingMode, PcsAmi
from fmconstructs.platform import ParallelClusterOptions, PcsOptions, TrainingPlatform

from tests.conftest import ENV, Scene, new_scene
from tests.support.parallelcluster_schema import check_configs, error_text, replace_intrinsics

PCS = "AWS::PCS::Cluster"
AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _pcs_platform(options: PcsOptions) -> Template:
    scene = new_scene()
    TrainingPlatform(scene.stack, "Platform", vpc=scene.vpc, instance_type="p5.48xlarge", nodes=2, orchestrator=options)
    return scene.template()


# --- PCS managed accounting through the platform ----------------------------------------------------------------------
def test_pcs_options_accounting_reaches_the_cluster() -> None:
    # GIVEN PcsOptions with accounting and a purge time; WHEN the platform synthesizes
    template = _pcs_platform(PcsOptions(ami=AMI, accounting=AccountingMode.STANDARD, accounting_purge_time_days=90))
    # THEN the cluster's Slurm configuration carries them, and the cluster (its job history) is retained
    template.has_resource_properties(
        PCS,
        {"SlurmConfiguration": Match.object_like({"Accounting": {"Mode": "STANDARD", "DefaultPurgeTimeInDays": 90}})},
    )
    template.has_resource(PCS, {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})


def test_pcs_options_accounting_without_purge_time_keeps_pcs_default() -> None:
    template = _pcs_platform(PcsOptions(ami=AMI, accounting=AccountingMode.STANDARD))
    accounting = next(iter(template.find_resources(PCS).values()))["Properties"]["SlurmConfiguration"]["Accounting"]
    assert accounting == {"Mode": "STANDARD"}


def test_pcs_options_accounting_given_removal_policy_wins() -> None:
    template = _pcs_platform(
        PcsOptions(ami=AMI, accounting=AccountingMode.STANDARD, removal_policy=cdk.RemovalPolicy.DESTROY)
    )
    template.has_resource(PCS, {"DeletionPolicy": "Delete"})


def test_pcs_options_purge_days_may_be_a_deploy_time_value() -> None:
    scene = new_scene()
    days = cdk.CfnParameter(scene.stack, "PurgeDays", type="Number", default=30).value_as_number
    options = PcsOptions(ami=AMI, accounting=AccountingMode.STANDARD, accounting_purge_time_days=days)
    TrainingPlatform(scene.stack, "Platform", vpc=scene.vpc, instance_type="p5.48xlarge", nodes=2, orchestrator=options)
    scene.template().has_resource_properties(
        PCS,
        {
            "SlurmConfiguration": Match.object_like(
                {"Accounting": {"Mode": "STANDARD", "DefaultPurgeTimeInDays": {"Ref": "PurgeDays"}}}
            )
        },
    )


@pytest.mark.parametrize("days", [-1, 1, 10000])
def test_pcs_options_purge_days_bounds_accepted(days: int) -> None:
    assert PcsOptions(ami=AMI, accounting=AccountingMode.STANDARD, accounting_purge_time_days=days)


_STANDARD = AccountingMode.STANDARD
BAD_PCS: list[tuple[dict[str, Any], str]] = [
    ({"accounting": "STANDARD"}, "accounting"),  # the enum member, not its value
    ({"accounting": None}, "accounting"),
    ({"accounting": _STANDARD, "accounting_purge_time_days": 0}, "accounting_purge_time_days"),  # "0 isn't valid"
    ({"accounting": _STANDARD, "accounting_purge_time_days": -2}, "accounting_purge_time_days"),
    ({"accounting": _STANDARD, "accounting_purge_time_days": 10001}, "accounting_purge_time_days"),
    ({"accounting": _STANDARD, "accounting_purge_time_days": 1.5}, "accounting_purge_time_days"),
    ({"accounting": _STANDARD, "accounting_purge_time_days": "30"}, "accounting_purge_time_days"),
    ({"accounting_purge_time_days": 30}, "accounting_purge_time_days"),  # default NONE
    ({"accounting": AccountingMode.NONE, "accounting_purge_time_days": 30}, "accounting_purge_time_days"),
]


@pytest.mark.parametrize(("props", "parameter"), BAD_PCS)
def test_pcs_options_bad_accounting_refused(props: dict[str, Any], parameter: str) -> None:
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be"):
        PcsOptions(ami=AMI, **props)


# --- ParallelCluster: SlurmSettings.Database / ExternalSlurmdbd --------------------------------------------------------
DB_SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:slurm-db-AbCdEf"
MUNGE_SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:munge-key-AbCdEf"
CLIENT_SG = "sg-0123456789abcdef0"


def _secret(scene: Scene, arn: str = DB_SECRET_ARN, id: str = "DbSecret") -> secretsmanager.ISecret:
    return secretsmanager.Secret.from_secret_complete_arn(scene.stack, id, arn)


def _pc(scene: Scene, **props: Any) -> ParallelCluster:
    props.setdefault("cluster_name", "train")
    queue = SlurmQueue(
        name="gpu",
        subnets=[scene.subnet_a],
        compute_resources=[ComputeResource(name="p5", instance_type="p5.48xlarge", max_nodes=2)],
    )
    head = HeadNode(instance_type="c7i.2xlarge", subnet=scene.subnet_a)
    return ParallelCluster(scene.stack, "Cluster", head_node=head, queues=[queue], **props)


def _database(scene: Scene, **props: Any) -> SlurmDatabase:
    props.setdefault("host", "slurm-db.cluster-abc.us-east-1.rds.amazonaws.com")
    props.setdefault("user_name", "clusteradmin")
    props.setdefault("password_secret", _secret(scene))
    return SlurmDatabase(**props)


def _external(scene: Scene, **props: Any) -> ExternalSlurmdbd:
    props.setdefault("host", "slurmdbd.example.internal")
    props.setdefault("munge_key_secret", _secret(scene, MUNGE_SECRET_ARN, "Munge"))
    return ExternalSlurmdbd(**props)


def test_database_renders_slurm_settings_database() -> None:
    scene = new_scene()
    group = ec2.SecurityGroup.from_security_group_id(scene.stack, "Client", CLIENT_SG)
    cluster = _pc(scene, slurm_accounting=_database(scene, database_name="slurm_acct", client_security_group=group))
    config = cluster.to_dict()
    assert config["Scheduling"]["SlurmSettings"]["Database"] == {
        "Uri": "slurm-db.cluster-abc.us-east-1.rds.amazonaws.com:3306",
        "UserName": "clusteradmin",
        "PasswordSecretArn": DB_SECRET_ARN,
        "DatabaseName": "slurm_acct",
    }
    assert config["HeadNode"]["Networking"]["AdditionalSecurityGroups"] == [CLIENT_SG]
    assert "ExternalSlurmdbd" not in config["Scheduling"]["SlurmSettings"]


def test_external_slurmdbd_renders_host_port_and_munge_key() -> None:
    scene = new_scene()
    cluster = _pc(scene, slurm_accounting=_external(scene))
    settings = cluster.to_dict()["Scheduling"]["SlurmSettings"]
    assert settings["ExternalSlurmdbd"] == {"Host": "slurmdbd.example.internal", "Port": 6819}
    assert settings["MungeKeySecretArn"] == MUNGE_SECRET_ARN
    assert "Database" not in settings


def test_accounting_default_cluster_name_fits_40_characters() -> None:
    scene = new_scene("a-rather-long-stack-name-for-the-training-team")
    cluster = _pc(scene, cluster_name=None, slurm_accounting=_database(scene))
    assert len(cluster.cluster_name) <= 40 and cluster.cluster_name.endswith("-cluster")


def _generated_configs() -> dict[str, dict[str, Any]]:
    configs: dict[str, dict[str, Any]] = {}
    scene = new_scene()
    configs["database"] = _pc(scene, slurm_accounting=_database(scene, database_name="slurm_acct")).to_dict()
    scene = new_scene()
    configs["database-no-name"] = _pc(scene, slurm_accounting=_database(scene, port=3307)).to_dict()
    scene = new_scene()
    configs["external-slurmdbd"] = _pc(scene, slurm_accounting=_external(scene, port=6820)).to_dict()
    scene = new_scene()
    created = SlurmAccountingDatabase(scene.stack, "Accounting", vpc=scene.vpc)
    configs["created-database"] = _pc(scene, slurm_accounting=created.slurm_database).to_dict()
    return {name: replace_intrinsics(config) for name, config in configs.items()}


@pytest.fixture(scope="module")
def official_results() -> dict[str, dict[str, Any]]:
    configs = _generated_configs()
    results = check_configs(list(configs.values()), offline_validators=True)
    return dict(zip(configs, results, strict=True))


@pytest.mark.parametrize("name", ["database", "database-no-name", "external-slurmdbd", "created-database"])
def test_accounting_configuration_passes_the_official_schema(official_results: Any, name: str) -> None:
    result = official_results[name]
    assert result["ok"], error_text(result)


def test_the_official_validators_refuse_what_the_types_prevent() -> None:
    """Both accounting kinds, and ExternalSlurmdbd without a munge key, fail ParallelCluster's own validators: the one
    ``slurm_accounting`` parameter and ExternalSlurmdbd's required ``munge_key_secret`` rule them out."""
    scene = new_scene()
    base = replace_intrinsics(_pc(scene, slurm_accounting=_database(scene)).to_dict())
    both = json_copy(base)
    both["Scheduling"]["SlurmSettings"]["ExternalSlurmdbd"] = {"Host": "slurmdbd.example.internal"}
    both["Scheduling"]["SlurmSettings"]["MungeKeySecretArn"] = MUNGE_SECRET_ARN
    no_munge = json_copy(base)
    del no_munge["Scheduling"]["SlurmSettings"]["Database"]
    no_munge["Scheduling"]["SlurmSettings"]["ExternalSlurmdbd"] = {"Host": "slurmdbd.example.internal"}
    scheme = json_copy(base)
    scheme["Scheduling"]["SlurmSettings"]["Database"]["Uri"] = "mysql://db.example.internal:3306"
    results = check_configs([both, no_munge, scheme], offline_validators=True)
    assert "cannot be defined at the same time" in error_text(results[0])
    assert "MungeKeySecretArn is required" in error_text(results[1])
    assert "do not provide a scheme" in error_text(results[2])


def json_copy(value: dict[str, Any]) -> dict[str, Any]:
    import copy

    return copy.deepcopy(value)


BAD_DATABASE: list[tuple[dict[str, Any], str]] = [
    ({"host": "mysql://db.example.internal"}, "host"),
    ({"host": "db.example.internal:3306"}, "host"),  # the port is its own parameter
    ({"host": "/db"}, "host"),
    ({"host": ""}, "host"),
    ({"host": 3306}, "host"),
    ({"user_name": ""}, "user_name"),
    ({"user_name": None}, "user_name"),
    ({"password_secret": DB_SECRET_ARN}, "password_secret"),  # an ISecret, not its ARN
    ({"port": 0}, "port"),
    ({"port": 65536}, "port"),
    ({"port": "3306"}, "port"),
    ({"database_name": "Slurm"}, "database_name"),  # ^[0-9a-z_]+$
    ({"database_name": "slurm-acct"}, "database_name"),
    ({"database_name": ""}, "database_name"),
    ({"database_name": "a" * 65}, "database_name"),
    ({"client_security_group": CLIENT_SG}, "client_security_group"),
]


@pytest.mark.parametrize(("props", "parameter"), BAD_DATABASE)
def test_bad_database_refused(props: dict[str, Any], parameter: str) -> None:
    scene = new_scene()
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be"):
        _database(scene, **props)


BAD_EXTERNAL: list[tuple[dict[str, Any], str]] = [
    ({"host": "http://slurmdbd"}, "host"),
    ({"host": None}, "host"),
    ({"munge_key_secret": MUNGE_SECRET_ARN}, "munge_key_secret"),
    ({"munge_key_secret": None}, "munge_key_secret"),
    ({"port": -1}, "port"),
    ({"port": 1.5}, "port"),
]


@pytest.mark.parametrize(("props", "parameter"), BAD_EXTERNAL)
def test_bad_external_slurmdbd_refused(props: dict[str, Any], parameter: str) -> None:
    scene = new_scene()
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be"):
        _external(scene, **props)


def test_bad_slurm_accounting_type_refused() -> None:
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"^slurm_accounting must be"):
        _pc(scene, slurm_accounting={"Uri": "db:3306"})


@pytest.mark.parametrize(("kind", "version"), [("database", "3.2.0"), ("external", "3.9.3")])
def test_accounting_needs_a_parallelcluster_version_that_has_it(kind: str, version: str) -> None:
    scene = new_scene()
    accounting = _database(scene) if kind == "database" else _external(scene)
    with pytest.raises(FmValidationError, match=r"^version must be 3\.(3|10)\.0 or later"):
        _pc(scene, version=version, slurm_accounting=accounting)


def test_accounting_cluster_name_over_40_characters_refused() -> None:
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"^cluster_name must be at most 40"):
        _pc(scene, cluster_name="a" * 41, slurm_accounting=_database(scene))


def test_token_host_port_and_database_name_accepted() -> None:
    scene = new_scene()
    host = cdk.Fn.import_value("DbHost")
    port = cdk.CfnParameter(scene.stack, "DbPort", type="Number", default=3306).value_as_number
    cluster = _pc(scene, slurm_accounting=_database(scene, host=host, port=port))
    uri = cluster.to_dict()["Scheduling"]["SlurmSettings"]["Database"]["Uri"]
    assert "DbHost" in str(uri) and "DbPort" in str(uri)


def test_accounting_custom_slurm_settings_refused_at_synthesis() -> None:
    scene = new_scene()
    cluster = _pc(scene, slurm_accounting=_database(scene))
    cluster.add_custom_slurm_settings({"AccountingStorageHost": "elsewhere"})
    with pytest.raises(Exception, match="AccountingStorageHost"):
        scene.app.synth()


# --- the opt-in database ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def created() -> tuple[Template, SlurmAccountingDatabase]:
    scene = new_scene()
    database = SlurmAccountingDatabase(scene.stack, "Accounting", vpc=scene.vpc)
    _pc(scene, slurm_accounting=database.slurm_database)
    return scene.template(), database


def test_created_database_is_encrypted_aurora_mysql_retained(created: Any) -> None:
    template, _ = created
    template.has_resource(
        "AWS::RDS::DBCluster",
        {
            "Properties": Match.object_like(
                {"Engine": "aurora-mysql", "StorageEncrypted": True, "DeletionProtection": True}
            ),
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )
    for resource_type in (
        "AWS::SecretsManager::Secret",
        "AWS::RDS::DBInstance",
        "AWS::EC2::SecurityGroup",
        "AWS::EC2::SecurityGroupIngress",
        "AWS::EC2::SecurityGroupEgress",
        "AWS::RDS::DBClusterParameterGroup",
    ):
        policies = {r.get("DeletionPolicy") for r in template.find_resources(resource_type).values()}
        assert policies == {"Retain"}, resource_type
    template.has_resource_properties(
        "AWS::RDS::DBClusterParameterGroup",
        {"Parameters": Match.object_like({"require_secure_transport": "ON"})},
    )


def test_created_secret_is_a_plain_text_password(created: Any) -> None:
    template, _ = created
    secret = next(iter(template.find_resources("AWS::SecretsManager::Secret").values()))["Properties"]
    assert "SecretStringTemplate" not in secret["GenerateSecretString"]


def test_created_database_admits_the_client_group_on_3306(created: Any) -> None:
    template, database = created
    stack = cdk.Stack.of(database)
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {
            "IpProtocol": "tcp",
            "FromPort": 3306,
            "ToPort": 3306,
            "GroupId": stack.resolve(database.security_group.security_group_id),
            "SourceSecurityGroupId": stack.resolve(database.client_security_group.security_group_id),
        },
    )


def test_created_database_reaches_the_cluster_config(created: Any) -> None:
    template, database = created
    stack = cdk.Stack.of(database)
    resource = next(iter(template.find_resources("Custom::PclusterCluster").values()))
    config = resource["Properties"]["ClusterConfiguration"]
    db = config["Scheduling"]["SlurmSettings"]["Database"]
    assert db["PasswordSecretArn"] == stack.resolve(database.password_secret.secret_arn)
    assert db["UserName"] == "clusteradmin"
    groups = config["HeadNode"]["Networking"]["AdditionalSecurityGroups"]
    assert stack.resolve(database.client_security_group.security_group_id) in groups


def test_created_database_removal_policy_destroy() -> None:
    scene = new_scene()
    SlurmAccountingDatabase(scene.stack, "Accounting", vpc=scene.vpc, removal_policy=cdk.RemovalPolicy.DESTROY)
    template = scene.template()
    template.has_resource(
        "AWS::RDS::DBCluster",
        {"Properties": Match.object_like({"DeletionProtection": False}), "DeletionPolicy": "Delete"},
    )


BAD_CREATE: list[tuple[dict[str, Any], str]] = [
    ({"vpc": None}, "vpc"),
    ({"engine_version": "8.0.mysql_aurora.3.10.0"}, "engine_version"),
    ({"min_capacity_acus": 0}, "min_capacity_acus"),
    ({"max_capacity_acus": 200}, "max_capacity_acus"),
    ({"min_capacity_acus": 8, "max_capacity_acus": 4}, "max_capacity_acus"),
    ({"user_name": "1admin"}, "user_name"),
    ({"user_name": "admin-user"}, "user_name"),
    ({"removal_policy": cdk.RemovalPolicy.SNAPSHOT}, "removal_policy"),
]


@pytest.mark.parametrize(("props", "parameter"), BAD_CREATE)
def test_bad_created_database_refused(props: dict[str, Any], parameter: str) -> None:
    scene = new_scene()
    props.setdefault("vpc", scene.vpc)
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be"):
        SlurmAccountingDatabase(scene.stack, "Accounting", **props)


@pytest.mark.parametrize("removal_policy", [cdk.RemovalPolicy.RETAIN, cdk.RemovalPolicy.DESTROY])
def test_created_database_is_nag_and_cfn_lint_clean(tmp_path: Path, removal_policy: cdk.RemovalPolicy) -> None:
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "FmAccounting", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
    )
    SlurmAccountingDatabase(stack, "Accounting", vpc=vpc, removal_policy=removal_policy)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged cdk-nag error
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []
    from cfnlint.api import lint_file

    matches = lint_file(tmp_path / "FmAccounting.template.json")
    assert [f"{m.rule.id} {m.message[:200]}" for m in matches if m.rule.severity == "error"] == []


# --- through the platform -----------------------------------------------------------------------------------------------
def test_parallelcluster_options_slurm_accounting_reaches_the_cluster() -> None:
    scene = new_scene()
    database = SlurmAccountingDatabase(scene.stack, "Accounting", vpc=scene.vpc)
    options = ParallelClusterOptions(cluster_name="train", slurm_accounting=database.slurm_database)
    TrainingPlatform(scene.stack, "Platform", vpc=scene.vpc, instance_type="p5.48xlarge", nodes=2, orchestrator=options)
    resource = next(iter(scene.template().find_resources("Custom::PclusterCluster").values()))
    settings = resource["Properties"]["ClusterConfiguration"]["Scheduling"]["SlurmSettings"]
    assert settings["Database"]["UserName"] == "clusteradmin"


def test_parallelcluster_options_bad_slurm_accounting_refused() -> None:
    with pytest.raises(FmValidationError, match=r"^slurm_accounting must be"):
        ParallelClusterOptions(slurm_accounting="db.example.internal:3306")
