"""FmPrivateP5: GPU nodes in subnets with no NAT gateway and no internet route, VPC endpoints only, exporters from
the image (issue 11 section 3, "Done means"). Synthesized standalone; the validation tier below runs aws-cdk-lib's
CloudFormation validation, cdk-nag AwsSolutions and cfn-lint on it, as tests/house/test_validation_tier.py does for the
example app."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from examples.private_stack import PrivatePcsP5Stack

PCS_INTERFACE_SERVICES = {
    "ssm",
    "ssmmessages",
    "ec2messages",
    "logs",
    "monitoring",
    "ecr.api",
    "ecr.dkr",
    "sts",
    "aps-workspaces",
    "pcs",
}


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("private.out")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=False)
    PrivatePcsP5Stack(app, "FmPrivateP5")
    app.synth()
    return outdir


@pytest.fixture(scope="module")
def template(assembly: Path) -> dict:
    return json.loads((assembly / "FmPrivateP5.template.json").read_text())


def resources(template: dict, kind: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


# --- no internet route ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind",
    [
        "AWS::EC2::NatGateway",
        "AWS::EC2::InternetGateway",
        "AWS::EC2::VPCGatewayAttachment",
        "AWS::EC2::EgressOnlyInternetGateway",
        "AWS::EC2::EIP",
        "AWS::EC2::TransitGatewayAttachment",
    ],
)
def test_no_gateway_to_the_internet(template, kind):
    assert resources(template, kind) == {}


def test_no_route_leaves_the_vpc(template):
    """The route tables hold only the VPC's local route and the S3 gateway endpoint's prefix-list route (both added
    by EC2, not resources): no AWS::EC2::Route at all, so nothing routes to 0.0.0.0/0 or ::/0."""
    assert resources(template, "AWS::EC2::Route") == {}
    text = json.dumps(template)
    assert "0.0.0.0/0" not in text.replace('"CidrIp": "0.0.0.0/0"', "CIDRIP")  # no route destination
    assert len(resources(template, "AWS::EC2::RouteTable")) == 2


def test_subnets_are_isolated(template):
    subnets = resources(template, "AWS::EC2::Subnet")
    assert len(subnets) == 2
    for subnet in subnets.values():
        assert subnet["Properties"]["MapPublicIpOnLaunch"] is False
        assert {"Key": "aws-cdk:subnet-type", "Value": "Isolated"} in subnet["Properties"]["Tags"]


def test_nodes_run_in_the_isolated_subnet(template):
    subnet_ids = {json.dumps({"Ref": k}) for k in resources(template, "AWS::EC2::Subnet")}
    for group in resources(template, "AWS::PCS::ComputeNodeGroup").values():
        assert [json.dumps(s) for s in group["Properties"]["SubnetIds"]] and all(
            json.dumps(s) in subnet_ids for s in group["Properties"]["SubnetIds"]
        )
    cluster = next(iter(resources(template, "AWS::PCS::Cluster").values()))
    assert json.dumps(cluster["Properties"]["Networking"]["SubnetIds"][0]) in subnet_ids


# --- the endpoints ------------------------------------------------------------------------------------------------------
def test_pcs_endpoints_are_present_with_private_dns(template):
    interface = {}
    for endpoint in resources(template, "AWS::EC2::VPCEndpoint").values():
        props = endpoint["Properties"]
        name = props["ServiceName"]["Fn::Join"][1]
        assert name[:2] == ["com.amazonaws.", {"Ref": "AWS::Region"}]
        if props["VpcEndpointType"] == "Interface":
            assert props["PrivateDnsEnabled"] is True and len(props["SubnetIds"]) == 2
            interface[name[2].lstrip(".")] = props
        else:
            assert name[2] == ".s3"
            assert sorted(json.dumps(r) for r in props["RouteTableIds"]) == sorted(
                json.dumps({"Ref": k}) for k in resources(template, "AWS::EC2::RouteTable")
            )
    assert set(interface) == PCS_INTERFACE_SERVICES


def test_endpoints_accept_https_from_the_vpc_only(template):
    vpc = next(iter(resources(template, "AWS::EC2::VPC").values()))
    groups = [
        g
        for g in resources(template, "AWS::EC2::SecurityGroup").values()
        if "interface endpoints" in g["Properties"]["GroupDescription"]
    ]
    assert len(groups) == 1
    rules = groups[0]["Properties"]["SecurityGroupIngress"]
    assert [(r["CidrIp"], r["IpProtocol"], r["FromPort"], r["ToPort"]) for r in rules] == [
        (vpc["Properties"]["CidrBlock"], "tcp", 443, 443)
    ]


# --- exporters from the image -----------------------------------------------------------------------------------------
def node_side_text(assembly: Path, template: dict) -> str:
    """Everything that runs on the nodes: the launch templates' user data and every file asset (the node scripts,
    when they are delivered as an S3 asset)."""
    parts = [json.dumps(lt["Properties"]["LaunchTemplateData"].get("UserData")) for lt in
             resources(template, "AWS::EC2::LaunchTemplate").values()]  # fmt: skip
    for asset in assembly.glob("asset.*"):
        if asset.is_dir():
            parts += [p.read_text(errors="replace") for p in asset.rglob("*") if p.is_file()]
        elif asset.name.endswith((".tgz", ".tar.gz")):
            with tarfile.open(asset) as tar:
                for member in tar.getmembers():
                    extracted = tar.extractfile(member)
                    if extracted is not None:
                        parts.append(extracted.read().decode(errors="replace"))
    return "\n".join(parts)


def test_nodes_download_nothing_from_the_internet(assembly, template):
    text = node_side_text(assembly, template)
    assert "fm_release node_exporter" in text  # the collection commands are there (inline or in an asset)
    assert "github.com" not in text
    assert "docker pull" not in text
    runs = [line for line in text.splitlines() if "docker run" in line]
    assert runs and all("--pull never" in line for line in runs)
    # curl only reaches the instance metadata service (IMDSv2) and the local Prometheus agent
    local = ("169.254.169.254", "127.0.0.1")
    assert [line for line in text.splitlines() if "curl " in line and not any(h in line for h in local)] == []
    for line in text.splitlines():
        if "nvcr.io" in line:  # only the name of the image GpuNodeImage put in the local store
            assert "docker run" not in line and "--pull" not in line and "curl" not in line, line


def test_gpu_ami_is_the_images_ssm_parameter(template):
    parameters = [p for p in template["Parameters"].values() if p["Type"].endswith("<AWS::EC2::Image::Id>")]
    assert [p["Default"] for p in parameters] == ["/imagebuilder/fmconstructs/pcs/x86_64-slurm-25.11"]


def test_outputs_have_descriptions(template):
    outputs = template["Outputs"]
    assert {"ClusterId", "LoginCommand", "GpuNodeGroupId", "EndpointSecurityGroupId", "PcsEndpointId"} <= set(outputs)
    assert all(len(o.get("Description", "")) > 20 for o in outputs.values())


def test_node_role_can_remote_write_but_reads_no_mirror(template):
    statements = [
        s
        for p in resources(template, "AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    actions = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert "aps:RemoteWrite" in actions
    assert "ecr:BatchGetImage" not in actions  # IMAGE: nothing pulled


# --- validation tier ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def validated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from cdk_nag import AwsSolutionsChecks

    outdir = tmp_path_factory.mktemp("private.validated")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=True)
    PrivatePcsP5Stack(app, "FmPrivateP5")
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag error
    return outdir


@pytest.mark.validation
def test_cdk_nag_reports_nothing_unacknowledged(validated):
    report = json.loads((validated / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []
    assert "CloudFormation-Validate" in (validated / "FmPrivateP5.metadata.json").read_text()


@pytest.mark.validation
def test_cfn_lint_has_zero_errors(validated):
    from cfnlint.api import lint_file

    matches = lint_file(validated / "FmPrivateP5.template.json")
    assert [f"{m.rule.id} {m.message[:200]}" for m in matches if m.rule.severity == "error"] == []


@pytest.mark.validation
def test_template_builds_with_assertions(validated):
    Template.from_json(json.loads((validated / "FmPrivateP5.template.json").read_text())).resource_count_is(
        "AWS::EC2::NatGateway", 0
    )
