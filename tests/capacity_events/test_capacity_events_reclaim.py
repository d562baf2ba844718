"""Drain on the reclaim warning of interruptible Capacity Reservations (issue 24 section 2).

The rule: source ``aws.ec2``, detail-type "EC2 Capacity Reservation Instance Interruption Warning" (EC2 User Guide
monitor-interruptible-cr, "Instance interruption warning": sent 2 minutes before the instance is terminated; its detail
names ``instance-id`` and ``instance-termination-time``, no reservation). The handler reads the instance
(ec2:DescribeInstances), acts only on the listed reservations, and drains / cordons that one instance with the
Capacity Block machinery. Handler tests use botocore Stubber and a fake Kubernetes client; nothing calls AWS.
"""

from __future__ import annotations

import subprocess
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template
from botocore.stub import ANY, Stubber

from fmconstructs.capacity_events import CapacityBlockEvents
from fmconstructs.capacity_events.handler import index
from fmconstructs.capacity_events.handler import job_warning as jw
from fmconstructs.capacity_events.handler import reclaim as rc
from fmconstructs.capacity_events.reclaim import reclaim_pattern
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.pcs import NODE_GROUP_ID_TAG

from tests.conftest import ENV, new_app

TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
IODCR = "cr-0fedcba9876543210"
OTHER = "cr-0123456789abcdef0"
LOGIN_GROUP = "pcs_abcdef1234"
INSTANCE = "i-0aaaaaaaaaaaaaaa1"
LOGIN = "i-0bbbbbbbbbbbbbbb1"
ENDS = "2026-12-01T18:02:00Z"
DETAIL_TYPE = "EC2 Capacity Reservation Instance Interruption Warning"
COMMAND = "0b5c2f34-1d8b-4b8a-9c1f-2a3b4c5d6e7f"


def _stack() -> tuple[cdk.Stack, sns.Topic]:
    stack = cdk.Stack(new_app(), "Reclaim", env=ENV)
    return stack, sns.Topic(stack, "Alerts")


@pytest.fixture(scope="module")
def notify_template() -> Template:
    stack, topic = _stack()
    CapacityBlockEvents(stack, "Events", alert_topic=topic, interruptible_reservation_ids=[IODCR])
    return Template.from_stack(stack)


# --- the construct --------------------------------------------------------------------------------------------------


def test_reclaim_rule_pattern_is_the_ec2_interruption_warning(notify_template):
    notify_template.has_resource_properties(
        "AWS::Events::Rule",
        {"EventPattern": {"source": ["aws.ec2"], "detail-type": [DETAIL_TYPE]}},
    )
    assert reclaim_pattern() == {"source": ["aws.ec2"], "detail-type": [DETAIL_TYPE]}


def test_reclaim_rule_sits_beside_the_block_rule_with_retries_and_dead_letter_queue(notify_template):
    notify_template.resource_count_is("AWS::Events::Rule", 2)
    notify_template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": {"source": ["aws.ec2"], "detail-type": [DETAIL_TYPE]},
            "Targets": [
                Match.object_like(
                    {"RetryPolicy": {"MaximumRetryAttempts": 2}, "DeadLetterConfig": {"Arn": Match.any_value()}}
                )
            ],
        },
    )


def test_handler_reads_the_warned_instance(notify_template):
    notify_template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Sid": "ReadReclaimedInstance", "Action": "ec2:DescribeInstances"})]
                )
            }
        },
    )
    notify_template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Environment": {"Variables": Match.object_like({"INTERRUPTIBLE_RESERVATION_IDS": f'["{IODCR}"]'})}},
    )


def test_api_services_include_ec2_for_the_reclaim():
    stack, topic = _stack()
    events = CapacityBlockEvents(stack, "Events", alert_topic=topic, interruptible_reservation_ids=[IODCR])
    assert "ec2" in events.api_services
    assert events.reclaim_rule is not None and events.interruptible_reservation_ids == (IODCR,)


def test_no_reclaim_rule_without_interruptible_reservations():
    stack, topic = _stack()
    events = CapacityBlockEvents(stack, "Events", alert_topic=topic)
    assert events.reclaim_rule is None
    Template.from_stack(stack).resource_count_is("AWS::Events::Rule", 1)


def test_deploy_time_reservation_ids_are_accepted():
    stack, topic = _stack()
    token = cdk.CfnParameter(stack, "Iodcr").value_as_string
    CapacityBlockEvents(stack, "Events", alert_topic=topic, interruptible_reservation_ids=[token])
    Template.from_stack(stack).resource_count_is("AWS::Events::Rule", 2)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ([], FmValidationError),
        (["cr-1"], FmValidationError),
        ([IODCR, IODCR], FmValidationError),
        (IODCR, FmTypeError),
        ([5], FmTypeError),
    ],
)
def test_rejects_bad_interruptible_reservation_ids(value: object, error: type[Exception]):
    stack, topic = _stack()
    with pytest.raises(error, match=r"^interruptible_reservation_ids"):
        CapacityBlockEvents(stack, "Events", alert_topic=topic, interruptible_reservation_ids=value)  # type: ignore[arg-type]


# --- the handler ----------------------------------------------------------------------------------------------------


def _event(instance_id: str = INSTANCE) -> dict[str, Any]:
    return {
        "source": "aws.ec2",
        "detail-type": DETAIL_TYPE,
        "detail": {
            "instance-id": instance_id,
            "instance-action": "terminate",
            "instance-termination-time": ENDS,
            "azId": "use1-az4",
        },
    }


def _clients() -> tuple[Any, Any, Any]:
    kwargs = {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    return boto3.client("ec2", **kwargs), boto3.client("ssm", **kwargs), boto3.client("sns", **kwargs)


def _instance(reservation: str = IODCR, state: str = "running") -> dict[str, Any]:
    return {
        "InstanceId": INSTANCE,
        "PrivateIpAddress": "10.0.1.10",
        "PrivateDnsName": "ip-10-0-1-10.ec2.internal",
        "CapacityReservationId": reservation,
        "State": {"Name": state},
    }


def _describe(stub: Stubber, instance: dict[str, Any]) -> None:
    stub.add_response("describe_instances", {"Reservations": [{"Instances": [instance]}]}, {"InstanceIds": [INSTANCE]})


def _login(stub: Stubber) -> None:
    stub.add_response(
        "describe_instances",
        {"Reservations": [{"Instances": [{"InstanceId": LOGIN}]}]},
        {
            "Filters": [
                {"Name": f"tag:{NODE_GROUP_ID_TAG}", "Values": [LOGIN_GROUP]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        },
    )


def _drain(stub: Stubber, after_drain: list[str] | None = None) -> None:
    script = index.drain_script(["10.0.1.10", "ip-10-0-1-10"], after_drain, rc.RECLAIM_DRAIN_REASON)
    stub.add_response(
        "send_command",
        {"Command": {"CommandId": COMMAND}},
        {
            "InstanceIds": [LOGIN],
            "DocumentName": "AWS-RunShellScript",
            "Comment": f"drain {IODCR} (capacity reservation reclaimed)",
            "Parameters": {"commands": [script]},
        },
    )
    stub.add_response(
        "get_command_invocation",
        {"Status": "Success", "StandardOutputContent": "drained: gpu-1", "ResponseCode": 0},
        {"CommandId": COMMAND, "InstanceId": LOGIN},
    )


def _publish(stub: Stubber) -> None:
    stub.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": DETAIL_TYPE, "Message": ANY})


def test_reclaim_warning_drains_the_instance_on_the_login_node():
    ec2, ssm, sns_client = _clients()
    with Stubber(ec2) as ec2_stub, Stubber(ssm) as ssm_stub, Stubber(sns_client) as sns_stub:
        _describe(ec2_stub, _instance())
        _login(ec2_stub)
        _drain(ssm_stub)
        _publish(sns_stub)
        result = index.process(
            _event(),
            ec2=ec2,
            ssm=ssm,
            sns=sns_client,
            topic_arn=TOPIC,
            login_node_group_id=LOGIN_GROUP,
            interruptible_reservation_ids=[IODCR],
        )
        for stub in (ec2_stub, ssm_stub, sns_stub):
            stub.assert_no_pending_responses()
    assert result["command_id"] == COMMAND and result["capacity_reservation_id"] == IODCR
    assert f"instance {INSTANCE} of {IODCR} ends {ENDS}" in result["message"]
    assert "Drained the block's Slurm nodes" in result["message"] and "gpu-1" in result["message"]


def test_reclaim_warning_signals_jobs_after_the_drain_when_a_job_warning_is_configured():
    ec2, ssm, sns_client = _clients()
    with Stubber(ec2) as ec2_stub, Stubber(ssm) as ssm_stub, Stubber(sns_client) as sns_stub:
        _describe(ec2_stub, _instance())
        _login(ec2_stub)
        _drain(ssm_stub, jw.slurm_signal_lines("USR1", "batch"))
        _publish(sns_stub)
        index.process(
            _event(),
            ec2=ec2,
            ssm=ssm,
            sns=sns_client,
            topic_arn=TOPIC,
            login_node_group_id=LOGIN_GROUP,
            interruptible_reservation_ids=[IODCR],
            job_warning={"slurm_signal": "USR1", "slurm_scope": "batch"},
        )
        ssm_stub.assert_no_pending_responses()


def test_instance_of_another_reservation_is_ignored_without_a_notice():
    ec2, ssm, sns_client = _clients()
    with Stubber(ec2) as ec2_stub, Stubber(ssm), Stubber(sns_client):
        _describe(ec2_stub, _instance(OTHER))
        result = index.process(
            _event(),
            ec2=ec2,
            ssm=ssm,
            sns=sns_client,
            topic_arn=TOPIC,
            login_node_group_id=LOGIN_GROUP,
            interruptible_reservation_ids=[IODCR],
        )
    assert result == {"detail_type": DETAIL_TYPE, "ignored": True, "instance_id": INSTANCE}


def test_without_a_list_every_reservation_is_acted_on():
    ec2, ssm, sns_client = _clients()
    with Stubber(ec2) as ec2_stub, Stubber(ssm), Stubber(sns_client) as sns_stub:
        _describe(ec2_stub, _instance(OTHER))
        _publish(sns_stub)
        result = index.process(_event(), ec2=ec2, ssm=ssm, sns=sns_client, topic_arn=TOPIC, login_node_group_id="")
        sns_stub.assert_no_pending_responses()
    assert result["capacity_reservation_id"] == OTHER and "command_id" not in result


@pytest.mark.parametrize(
    ("instance", "expected"),
    [(None, "not found"), (_instance(state="shutting-down"), "is shutting-down: nothing to drain")],
)
def test_missing_or_ending_instance_is_reported_not_drained(instance: dict[str, Any] | None, expected: str):
    ec2, ssm, sns_client = _clients()
    with Stubber(ec2) as ec2_stub, Stubber(ssm), Stubber(sns_client) as sns_stub:
        if instance is None:
            ec2_stub.add_response("describe_instances", {"Reservations": []}, {"InstanceIds": [INSTANCE]})
        else:
            _describe(ec2_stub, instance)
        _publish(sns_stub)
        result = index.process(
            _event(),
            ec2=ec2,
            ssm=ssm,
            sns=sns_client,
            topic_arn=TOPIC,
            login_node_group_id=LOGIN_GROUP,
            interruptible_reservation_ids=[IODCR] if instance is not None else [],
        )
    assert expected in result["message"] and "command_id" not in result


def test_malformed_instance_id_is_reported_without_aws_calls():
    ec2, ssm, sns_client = _clients()
    with Stubber(ec2), Stubber(ssm), Stubber(sns_client) as sns_stub:
        _publish(sns_stub)
        result = index.process(
            _event("i-; rm -rf /"), ec2=ec2, ssm=ssm, sns=sns_client, topic_arn=TOPIC, login_node_group_id=LOGIN_GROUP
        )
    assert "Unrecognized instance id" in result["message"]


class FakeKube:
    """The two KubeApi calls the cordon makes (nodes, cordon), recorded."""

    def __init__(self) -> None:
        self.budget = index.Budget(30.0)
        self.cordoned: list[tuple[str, dict[str, str]]] = []

    def nodes(self) -> list[dict[str, Any]]:
        return [
            {"metadata": {"name": "node-a"}, "spec": {"providerID": f"aws:///us-east-1a/{INSTANCE}"}},
            {"metadata": {"name": "node-b"}, "spec": {"providerID": "aws:///us-east-1a/i-0ccccccccccccccc1"}},
        ]

    def cordon(self, name: str, annotations: dict[str, str]) -> None:
        self.cordoned.append((name, annotations))


def test_reclaim_warning_cordons_the_eks_node():
    ec2, ssm, sns_client = _clients()
    kube = FakeKube()
    with Stubber(ec2) as ec2_stub, Stubber(ssm), Stubber(sns_client) as sns_stub:
        _describe(ec2_stub, _instance())
        _publish(sns_stub)
        result = index.process(
            _event(),
            ec2=ec2,
            ssm=ssm,
            sns=sns_client,
            topic_arn=TOPIC,
            login_node_group_id="",
            eks_cluster_name="training",
            kube_factory=lambda: kube,  # type: ignore[arg-type,return-value]
            interruptible_reservation_ids=[IODCR],
        )
    assert kube.cordoned == [
        ("node-a", {index.ENDS_AT_ANNOTATION: ENDS, index.RESERVATION_ANNOTATION: IODCR}),
    ]
    assert result["cordoned"] == ["node-a"]


def test_reservation_ids_setting():
    assert rc.reservation_ids_setting(f'["{IODCR}"]') == [IODCR]
    assert rc.reservation_ids_setting(None) == [] and rc.reservation_ids_setting('{"a": 1}') == []


def test_drain_script_refuses_an_unknown_reason():
    with pytest.raises(ValueError, match="unknown drain reason"):
        index.drain_script(["10.0.1.10"], reason='x"; reboot; "')


def test_drain_script_drains_with_the_reclaim_reason(tmp_path):
    # GIVEN fake sinfo/scontrol on PATH, WHEN the reclaim drain runs, THEN the node is drained with the reclaim reason.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "sinfo").write_text("#!/bin/bash\nprintf '%s\\n' 'gpu-1 10.0.1.10 ip-10-0-1-10' 'gpu-2 10.0.1.99 x'\n")
    (bindir / "scontrol").write_text('#!/bin/bash\necho "$@" > "$(dirname "$0")/called"\n')
    for f in bindir.iterdir():
        f.chmod(0o755)
    script = tmp_path / "drain.sh"
    script.write_text(index.drain_script(["10.0.1.10"], reason=rc.RECLAIM_DRAIN_REASON))
    proc = subprocess.run(
        ["/bin/bash", str(script)], capture_output=True, text=True, env={"PATH": f"{bindir}:/usr/bin:/bin"}, check=False
    )
    assert proc.returncode == 0, proc.stderr
    called = (bindir / "called").read_text().strip()
    assert called == "update nodename=gpu-1 state=DRAIN reason=capacity reservation reclaimed"


def test_a_failed_instance_read_is_reported_in_the_notice():
    ec2, ssm, sns_client = _clients()
    with Stubber(ec2) as ec2_stub, Stubber(ssm), Stubber(sns_client) as sns_stub:
        ec2_stub.add_client_error(
            "describe_instances", service_error_code="UnauthorizedOperation", http_status_code=403
        )
        _publish(sns_stub)
        result = index.process(
            _event(),
            ec2=ec2,
            ssm=ssm,
            sns=sns_client,
            topic_arn=TOPIC,
            login_node_group_id=LOGIN_GROUP,
            interruptible_reservation_ids=[IODCR],
        )
        sns_stub.assert_no_pending_responses()
    assert f"Reading instance {INSTANCE} FAILED" in result["message"] and "command_id" not in result


@pytest.mark.parametrize("pcs", [False, True])
def test_reclaim_rule_is_cdk_nag_clean(tmp_path, pcs: bool):
    import json

    from aws_cdk import aws_kms as kms
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=True)
    stack = cdk.Stack(app, "FmReclaim", env=ENV)
    topic = sns.Topic(stack, "Alerts", master_key=kms.Key(stack, "Key", enable_key_rotation=True), enforce_ssl=True)
    CapacityBlockEvents(
        stack,
        "Reclaim",
        alert_topic=topic,
        pcs_login_node_group_id=LOGIN_GROUP if pcs else None,
        capacity_reservation_ids=[IODCR],
        interruptible_reservation_ids=[IODCR],
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag error
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []
