"""The pieces of the twin's monitoring harness without daemons: template resolution, the SNS endpoint (form parsing,
SigV4, filter policies, the Lambda event the handler reads), the fake dcgm-exporter's text, the scrape configuration
built from the library's agent configuration, the SSM double."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest
import yaml
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from fmconstructs.observability.collection import (
    DCGM_EXPORTER_PORT,
    INSTANCE_ID_PLACEHOLDER,
    NODE_EXPORTER_PORT,
    NodeLabels,
    agent_config,
    agent_config_yaml,
)
from fmconstructs.observability.metrics import DCGM_FIELDS
from fmconstructs.remediation import JobKill, RemediationPolicy, RemediationTarget
from fmconstructs.remediation.handler import faults
from fmconstructs.remediation.handler.runtime import NOTICE_ATTRIBUTE

from tests.conftest import require_tool
from tests.support.twin.artifacts import RemediationArtifacts, Resolver, agent_config_from_user_data
from tests.support.twin.exporters import FakeDcgmExporter, MonitoredNode, dcgm_fields, render_dcgm_metrics
from tests.support.twin.monitoring import alertmanager_config, node_scrape_configs, prometheus_config
from tests.support.twin.procs import TwinError
from tests.support.twin.remediation import RemediationBridge, TwinSsm
from tests.support.twin.sns import Publish, lambda_event, matches_filter_policy, parse_publish, verify_sigv4

TOPIC = "arn:aws:sns:us-east-1:123456789012:Alerts"
LABELS = NodeLabels(cluster="c1", queue="gpu", node_group="ng", instance_type="p5.48xlarge")


def _config() -> dict[str, object]:
    return agent_config(remote_write_url="https://aps.example/api/v1/remote_write", region="us-east-1", labels=LABELS)


# --- template resolution --------------------------------------------------------------------------------------------


def test_the_resolver_gives_stable_values_to_deploy_time_references() -> None:
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}, "Ws": {"Type": "AWS::APS::Workspace"}}}
    resolver = Resolver(template, refs={"Cluster.Id": "pcs_abc"})
    value = {
        "Fn::Join": [
            "",
            [
                "topic=",
                {"Ref": "Topic"},
                " ws=",
                {"Fn::GetAtt": ["Ws", "Arn"]},
                " id=",
                {"Fn::GetAtt": ["Cluster", "Id"]},
                " in ",
                {"Ref": "AWS::Region"},
            ],
        ]
    }
    assert resolver.resolve(value) == (
        "topic=arn:aws:sns:us-east-1:123456789012:Topic ws=arn:aws:aps:us-east-1:123456789012:workspace/ws-ws "
        "id=pcs_abc in us-east-1"
    )
    assert resolver.resolve({"Fn::Sub": "${AWS::AccountId}/${Topic}/${Ws.Arn}"}).startswith("123456789012/arn:aws:sns")
    assert resolver.resolve({"Fn::Sub": ["${X}-y", {"X": {"Ref": "Other"}}]}) == "Other-y"
    assert resolver.resolve({"Fn::Select": [1, ["a", {"Ref": "B"}]]}) == "B"
    assert base64.b64decode(resolver.resolve({"Fn::Base64": {"Fn::Join": ["", ["#!", {"Ref": "X"}]]}})) == b"#!X"


def test_an_intrinsic_the_twin_cannot_resolve_fails_loudly() -> None:
    with pytest.raises(TwinError, match="cannot resolve Fn::ImportValue"):
        Resolver({}).resolve({"Fn::ImportValue": "x"})


def test_the_agent_configuration_comes_back_out_of_user_data() -> None:
    user_data = "echo hi\ncat > /etc/fmconstructs/prometheus-agent.yml <<'FMCONSTRUCTS_EOF'\n"
    user_data += agent_config_yaml(remote_write_url="https://x", region="us-east-1", labels=LABELS)
    user_data += "FMCONSTRUCTS_EOF\nchmod 0644 /etc/fmconstructs/prometheus-agent.yml\n"
    config = agent_config_from_user_data(user_data)
    assert config == agent_config(remote_write_url="https://x", region="us-east-1", labels=LABELS)
    with pytest.raises(TwinError, match=r"no /etc/fmconstructs/prometheus-agent\.yml heredoc"):
        agent_config_from_user_data("echo nothing")


# --- the SNS endpoint -----------------------------------------------------------------------------------------------


def _signed(body: str, secret: str = "s3cr3t") -> AWSRequest:
    request = AWSRequest(
        method="POST",
        url="http://127.0.0.1:9999/",
        data=body.encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8", "Host": "127.0.0.1:9999"},
    )
    SigV4Auth(Credentials("AKIDTWIN", secret), "sns", "us-east-1").add_auth(request)
    return request


def test_a_publish_form_is_parsed_with_its_attributes() -> None:
    body = (
        "Action=Publish&Version=2010-03-31&TopicArn=arn%3Aaws%3Asns%3Aus-east-1%3A123456789012%3AAlerts"
        "&Message=Alerts+Firing%3A&Subject=%5BFIRING%5D+X"
        "&MessageAttributes.entry.1.Name=severity&MessageAttributes.entry.1.Value.DataType=String"
        "&MessageAttributes.entry.1.Value.StringValue=critical"
    )
    fields = parse_publish(body)
    assert (fields["Action"], fields["TopicArn"], fields["Subject"]) == ("Publish", TOPIC, "[FIRING] X")
    assert fields["MessageAttributes"] == {"severity": "critical"}


def test_sigv4_signatures_are_checked() -> None:
    request = _signed("Action=Publish")
    headers = dict(request.headers.items())
    scope = verify_sigv4("POST", "/", headers, b"Action=Publish", secret_key="s3cr3t")
    assert scope == {"key": "AKIDTWIN", "region": "us-east-1", "service": "sns"}
    with pytest.raises(TwinError, match="does not verify"):
        verify_sigv4("POST", "/", headers, b"Action=Publish&x=1", secret_key="s3cr3t")
    with pytest.raises(TwinError, match="does not verify"):
        verify_sigv4("POST", "/", headers, b"Action=Publish", secret_key="other")
    with pytest.raises(TwinError, match="no SigV4 Authorization header"):
        verify_sigv4("POST", "/", {}, b"", secret_key="s3cr3t")


@pytest.mark.parametrize(
    ("attributes", "passes"),
    [
        ({"severity": "critical"}, True),  # Alertmanager's message: one attribute, no notice mark
        ({NOTICE_ATTRIBUTE: "remediation"}, False),  # the handler's own notice
        ({}, False),  # "exists": false matches only a message with at least one attribute
    ],
)
def test_the_subscription_filter_policy_of_the_construct(attributes: dict[str, str], passes: bool) -> None:
    assert matches_filter_policy({NOTICE_ATTRIBUTE: [{"exists": False}]}, attributes) is passes


@pytest.mark.parametrize(
    ("policy", "attributes", "passes"),
    [
        (None, {}, True),
        ({"severity": ["critical", "warning"]}, {"severity": "warning"}, True),
        ({"severity": ["critical"]}, {"severity": "warning"}, False),
        ({"severity": [{"prefix": "crit"}]}, {"severity": "critical"}, True),
        ({"severity": [{"exists": True}]}, {"other": "x"}, False),
    ],
)
def test_filter_policy_conditions(
    policy: dict[str, list[object]] | None, attributes: dict[str, str], passes: bool
) -> None:
    assert matches_filter_policy(policy, attributes) is passes


def test_a_filter_operator_the_twin_cannot_judge_fails_loudly() -> None:
    with pytest.raises(TwinError, match="cannot judge"):
        matches_filter_policy({"n": [{"numeric": [">", 1]}]}, {"n": "2"})


def test_the_lambda_event_is_what_the_handler_reads() -> None:
    message = (
        "summary text\n\nAlerts Firing:\nLabels:\n - alertname = FmNodeCheckFailed\n - cluster = c1\n"
        " - fmconstructs_trigger = node-check-failed\n - instance_id = i-0123456789abcdef0\n"
        "Annotations:\n - summary = x\nSource: http://prometheus\n"
    )
    publish = Publish(
        TOPIC,
        message,
        "[FIRING] FmNodeCheckFailed",
        {"severity": "critical"},
        "m1",
        "2026-12-02T00:00:00.000Z",
        "AKID",
        "us-east-1",
    )
    event = lambda_event(publish, f"{TOPIC}:sub")
    record = event["Records"][0]
    assert record["EventSource"] == "aws:sns" and record["Sns"]["MessageAttributes"] == {
        "severity": {"Type": "String", "Value": "critical"}
    }
    found, skipped = faults.faults_of(event, {}, NOTICE_ATTRIBUTE)
    assert [(f.instance_id, f.trigger) for f in found] == [("i-0123456789abcdef0", "node-check-failed")]
    assert skipped == 0


# --- the fake dcgm-exporter -----------------------------------------------------------------------------------------


def test_the_fake_dcgm_exporter_serves_the_library_counters_with_dcgm_exporter_labels() -> None:
    assert [f.name for f in dcgm_fields()] == [name for name, _, _ in DCGM_FIELDS]
    text = render_dcgm_metrics({"gpus": 2, "xid": 79, "xid_gpu": 1}, hostname="gpu-1", fields=dcgm_fields())
    xid = [line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_XID_ERRORS{")]
    assert len(xid) == 2 and xid[1].endswith("} 79") and xid[0].endswith("} 0")
    assert xid[1].startswith('DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-')
    assert 'device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-1"}' in xid[1]
    assert "# TYPE DCGM_FI_DEV_XID_ERRORS gauge" in text


def test_job_mapping_copies_a_gpu_series_per_job_and_an_empty_file_drops_it(tmp_path: Path) -> None:
    node = MonitoredNode.under(tmp_path, name="gpu-1", instance_id="i-0123456789abcdef0", agent_config={})
    assert node.job_mapping_dir is not None
    (node.job_mapping_dir / "0").write_text("41\n42\n")
    (node.job_mapping_dir / "1").write_text("")
    (node.job_mapping_dir / ".0.tmp").write_text("99\n")  # not a GPU index: ignored, as dcgm-exporter does
    node.write_scenario({"gpus": 3})
    text = FakeDcgmExporter(node, fields=dcgm_fields()[:1]).metrics()
    assert text is not None
    series = [line for line in text.splitlines() if not line.startswith("#")]
    assert [line.split("{")[1].split('"')[1] for line in series] == ["0", "0", "2"]  # gpu 1 dropped
    assert ['hpc_job="41"' in series[0], 'hpc_job="42"' in series[1], "hpc_job" in series[2]] == [True, True, False]


def test_a_scenario_that_does_not_parse_keeps_the_last_good_one(tmp_path: Path) -> None:
    node = MonitoredNode.under(tmp_path, name="n", instance_id="i-0123456789abcdef0", agent_config={})
    exporter = FakeDcgmExporter(node)
    assert exporter.scenario() == {}  # no file: a healthy node
    node.write_scenario({"gpus": 7})
    assert exporter.scenario() == {"gpus": 7}
    node.scenario.write_text('{"gpus": ')
    assert exporter.scenario() == {"gpus": 7} and len(exporter.errors) == 1
    node.write_scenario({"dcgm_exporter": "down"})
    assert exporter.metrics() is None


# --- scrape configuration from the agent configuration ---------------------------------------------------------------


def test_the_scrape_jobs_are_the_agent_jobs_with_the_documented_substitutions(tmp_path: Path) -> None:
    node = MonitoredNode.under(tmp_path, name="gpu-1", instance_id="i-0123456789abcdef0", agent_config=_config())
    scrapes = node_scrape_configs(node, {NODE_EXPORTER_PORT: 41000, DCGM_EXPORTER_PORT: 41001})
    by_job = {s["job_name"]: s for s in scrapes}
    assert set(by_job) == {"dcgm/gpu-1", "node/gpu-1", "fm-app/gpu-1"}
    node_job = by_job["node/gpu-1"]
    assert node_job["static_configs"][0]["targets"] == ["127.0.0.1:41000"]
    assert node_job["static_configs"][0]["labels"] == LABELS.as_dict("i-0123456789abcdef0")
    assert node_job["relabel_configs"][-1] == {"target_label": "job", "replacement": "node"}
    assert by_job["fm-app/gpu-1"]["file_sd_configs"][0]["files"] == [f"{node.app_sd_dir}/*.json"]
    assert INSTANCE_ID_PLACEHOLDER not in json.dumps(scrapes)
    config = prometheus_config(
        scrapes, rule_paths=[], alertmanager="127.0.0.1:1", global_config={"scrape_interval": "30s"}
    )
    assert "remote_write" not in config and config["global"]["scrape_interval"] == "500ms"


def test_a_port_no_twin_exporter_serves_is_refused(tmp_path: Path) -> None:
    login = agent_config(remote_write_url="https://x", region="us-east-1", labels=LABELS, login_node=True)
    node = MonitoredNode.under(tmp_path, name="login", instance_id="i-0123456789abcdef0", agent_config=login)
    with pytest.raises(TwinError, match="job slurm of login scrapes port"):
        node_scrape_configs(node, {NODE_EXPORTER_PORT: 1, DCGM_EXPORTER_PORT: 2})
    dropped = MonitoredNode(**{**node.__dict__, "drop_jobs": frozenset({"slurm"})})
    assert {s["job_name"] for s in node_scrape_configs(dropped, {NODE_EXPORTER_PORT: 1, DCGM_EXPORTER_PORT: 2})} == {
        "dcgm/login",
        "node/login",
    }


@pytest.mark.validation
def test_the_generated_prometheus_configuration_passes_promtool(tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    node = MonitoredNode.under(tmp_path, name="gpu-1", instance_id="i-0123456789abcdef0", agent_config=_config())
    rules = tmp_path / "rules.yml"
    rules.write_text("groups: []\n")
    config = prometheus_config(
        node_scrape_configs(node, {NODE_EXPORTER_PORT: 41000, DCGM_EXPORTER_PORT: 41001}),
        rule_paths=[rules],
        alertmanager="127.0.0.1:9093",
        global_config=dict(_config()["global"]),  # type: ignore[call-overload]
    )
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_sns_receiver_is_sent_to_the_twin_endpoint() -> None:
    rendered = {
        "route": {"receiver": "sns", "group_wait": "30s"},
        "receivers": [{"name": "sns", "sns_configs": [{"topic_arn": TOPIC, "sigv4": {"region": "us-east-1"}}]}],
    }
    config = alertmanager_config(rendered, sns_url="http://127.0.0.1:1/")
    assert config["receivers"][0]["sns_configs"][0] == {
        "topic_arn": TOPIC,
        "sigv4": {"region": "us-east-1"},
        "api_url": "http://127.0.0.1:1/",
    }
    assert config["route"]["group_wait"] == "500ms" and "api_url" not in rendered["receivers"][0]["sns_configs"][0]


# --- the SSM double -------------------------------------------------------------------------------------------------


def test_the_ssm_double_runs_the_script_and_answers_what_the_handler_reads() -> None:
    ssm = TwinSsm(lambda script: (3, "no Slurm node matches", "x" * 9000), lambda: {"i-0000000000000000a"})
    sent = ssm.send_command(
        InstanceIds=["i-0000000000000000a"],
        DocumentName="AWS-RunShellScript",
        Comment="c",
        Parameters={"commands": ["#!/bin/bash\nexit 3"]},
    )
    answer = ssm.get_command_invocation(CommandId=sent["Command"]["CommandId"], InstanceId="i-0000000000000000a")
    assert (answer["Status"], answer["ResponseCode"], answer["StandardOutputContent"]) == (
        "Failed",
        3,
        "no Slurm node matches",
    )
    assert len(answer["StandardErrorContent"]) == 8000
    with pytest.raises(ClientError, match="InvocationDoesNotExist"):
        ssm.get_command_invocation(CommandId="nope", InstanceId="i-0000000000000000a")
    with pytest.raises(ClientError, match="not a Slurm host"):
        ssm.send_command(
            InstanceIds=["i-0000000000000000b"], DocumentName="AWS-RunShellScript", Parameters={"commands": ["true"]}
        )


# --- the bridge on ParallelCluster (moto, no daemons) ---------------------------------------------------------------


def _parallelcluster_artifacts() -> RemediationArtifacts:
    policy = RemediationPolicy(dry_run=False, job_kill=JobKill.FATAL)
    return RemediationArtifacts(
        function="Handler",
        policy=json.loads(policy.to_json()),
        target=json.loads(RemediationTarget.parallelcluster(cluster_name="pc-twin").to_json()),
        topic_arn=TOPIC,
        table_name="State",
        key_schema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        attribute_definitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        filter_policy=None,
        environment={},
    )


def test_the_bridge_tags_parallelcluster_nodes_and_runs_the_handler_on_them() -> None:
    scripts: list[str] = []

    def slurm(script: str) -> tuple[int, str, str]:
        scripts.append(script)
        return 0, "FMC_REMEDIATION node=queue1-st-p5-1\nFMC_REMEDIATION jobs=0\nFMC_REMEDIATION result=down\n", ""

    with RemediationBridge(_parallelcluster_artifacts(), replace=lambda i: None, run_slurm_script=slurm) as bridge:
        head = bridge.launch("head", private_ip="127.0.0.10")
        compute = bridge.launch("compute", private_ip="127.0.0.11")
        assert bridge.slurm_hosts() == {head}
        assert bridge.ec2 is not None
        (reservation,) = bridge.ec2.describe_instances(InstanceIds=[compute])["Reservations"]
        instance = reservation["Instances"][0]
        assert (instance["PrivateIpAddress"], instance["PrivateDnsName"]) == (
            "127.0.0.11",
            "ip-127-0-0-11.ec2.internal",
        )
        tags = {t["Key"]: t["Value"] for t in instance["Tags"]}
        assert tags == {"parallelcluster:cluster-name": "pc-twin", "parallelcluster:node-type": "Compute"}
        message = (
            "Alerts Firing:\nLabels:\n - alertname = GpuCriticalXid\n - cluster = pc-twin\n"
            f" - instance_id = {compute}\nAnnotations:\n - summary = x\n"
        )
        publish = Publish(TOPIC, message, "[FIRING] GpuCriticalXid", {"severity": "critical"}, "m", "t", "k", "r")
        result = bridge(lambda_event(publish, f"{TOPIC}:s"))
        (record,) = result["records"]
        assert (record["instance"], record["trigger"], record["outcome"]) == (compute, "fatal-xid", "replace-requested")
        assert len(scripts) == 1 and "127.0.0.11" in scripts[0] and "DOWN" in scripts[0]
        assert bridge.ec2.terminated == []  # ParallelCluster: clustermgtd replaces a DOWN node, no terminate
        with pytest.raises(TwinError, match="role must be one of"):
            bridge.launch("login-ish", private_ip="127.0.0.12")
