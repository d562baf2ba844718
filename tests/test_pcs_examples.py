"""The PCS example stacks (FmPcsP5, FmPcsGb200) and the node-side IMEX prolog script."""

from __future__ import annotations

import json
import shutil
import subprocess

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template
from conftest import new_app

from examples.pcs_stacks import PcsGb200Stack, PcsP5Stack
from fmconstructs.pcs import IMEX_PROLOG_SCRIPT, pcs_mime_user_data


@pytest.fixture(scope="module")
def stacks() -> dict[str, cdk.Stack]:
    app = new_app()
    return {"FmPcsP5": PcsP5Stack(app, "FmPcsP5"), "FmPcsGb200": PcsGb200Stack(app, "FmPcsGb200")}


@pytest.fixture(scope="module")
def p5(stacks: dict[str, cdk.Stack]) -> Template:
    return Template.from_stack(stacks["FmPcsP5"])


@pytest.fixture(scope="module")
def gb200(stacks: dict[str, cdk.Stack]) -> Template:
    return Template.from_stack(stacks["FmPcsGb200"])


@pytest.mark.parametrize("name", ["p5", "gb200"])
def test_pcs_resources_exist(name, request):
    template: Template = request.getfixturevalue(name)
    template.resource_count_is("AWS::PCS::Cluster", 1)
    template.resource_count_is("AWS::PCS::ComputeNodeGroup", 2)  # login + GPU
    template.resource_count_is("AWS::PCS::Queue", 1)
    template.has_resource_properties("AWS::IAM::InstanceProfile", {"Path": "/aws-pcs/"})


def test_p5_gpu_queue_of_two_nodes_on_a_capacity_block(p5):
    p5.has_resource_properties("AWS::PCS::Queue", {"Name": "gpu"})
    p5.has_resource_properties(
        "AWS::PCS::ComputeNodeGroup",
        {
            "InstanceConfigs": [{"InstanceType": "p5.48xlarge"}],
            "PurchaseOption": "CAPACITY_BLOCK",
            "ScalingConfiguration": {"MinInstanceCount": 2, "MaxInstanceCount": 2},
        },
    )
    (lt,) = [
        r
        for r in p5.find_resources("AWS::EC2::LaunchTemplate").values()
        if r["Properties"]["LaunchTemplateData"].get("InstanceType") == "p5.48xlarge"
    ]
    interfaces = lt["Properties"]["LaunchTemplateData"]["NetworkInterfaces"]
    assert sum(1 for i in interfaces if i["InterfaceType"] in ("efa", "efa-only")) == 32


def test_p5_mounts_persistent2_lustre_at_fsx_with_s3_links(p5, stacks):
    p5.has_resource_properties(
        "AWS::FSx::FileSystem", {"LustreConfiguration": Match.object_like({"DeploymentType": "PERSISTENT_2"})}
    )
    p5.resource_count_is("AWS::FSx::DataRepositoryAssociation", 2)
    for lt in p5.find_resources("AWS::EC2::LaunchTemplate").values():
        parts = lt["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]["Fn::Join"][1]
        text = "".join(p if isinstance(p, str) else json.dumps(p) for p in parts)
        # the steps are an S3 asset; the loader carries the file system's deploy-time values
        assert "fmconstructs.bootstrap loader" in text
        assert "DNSName" in text and "LustreMountName" in text
    stack = stacks["FmPcsP5"]
    assert isinstance(stack, PcsP5Stack)
    for group in (stack.login, stack.gpu):
        script = group.bootstrap.render()
        assert "fmconstructs-lustre-mount '" in script and "'/fsx'" in script


def test_p5_lustre_ports_open_to_the_cluster_group(p5):
    p5.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {
            "FromPort": 988,
            "ToPort": 988,
            "SourceSecurityGroupId": {"Fn::GetAtt": [Match.string_like_regexp("^ClusterSecurityGroup"), "GroupId"]},
        },
    )


def test_gb200_ultraserver_node_group(gb200):
    gb200.has_resource_properties(
        "AWS::PCS::ComputeNodeGroup",
        {
            "InstanceConfigs": [{"InstanceType": "p6e-gb200.36xlarge"}],
            "PurchaseOption": "CAPACITY_BLOCK",
            "ScalingConfiguration": {"MinInstanceCount": 18, "MaxInstanceCount": 18},
            "AmiId": {"Ref": Match.string_like_regexp("^SsmParameterValue")},
        },
    )
    gb200.has_resource_properties(
        "AWS::PCS::Cluster",
        {
            "Scheduler": {"Type": "SLURM", "Version": "25.11"},
            "SlurmConfiguration": Match.object_like(
                {
                    "SlurmCustomSettings": [
                        {"ParameterName": "Prolog", "ParameterValue": Match.any_value()},
                        # PCS User Guide capacity-blocks-nvidia-imex: the IMEX prolog runs with these flags.
                        {"ParameterName": "PrologFlags", "ParameterValue": "Alloc,NoHold"},
                    ]
                }
            ),
        },
    )
    gb200.has_resource_properties("AWS::PCS::Queue", {"Name": "gb200"})


def _gpu_launch_template(template: Template, instance_type: str) -> dict[str, object]:
    (lt,) = [
        r["Properties"]["LaunchTemplateData"]
        for r in template.find_resources("AWS::EC2::LaunchTemplate").values()
        if r["Properties"]["LaunchTemplateData"].get("InstanceType") == instance_type
    ]
    return lt


@pytest.mark.parametrize(("name", "instance_type"), [("p5", "p5.48xlarge"), ("gb200", "p6e-gb200.36xlarge")])
def test_gpu_launch_templates_name_the_node_groups_subnet_on_every_interface(name, instance_type, request):
    # PCS User Guide working-with_networking_efa_create-lt: SubnetId on each interface, the node group's subnet.
    template: Template = request.getfixturevalue(name)
    interfaces = _gpu_launch_template(template, instance_type)["NetworkInterfaces"]
    (group,) = [
        g["Properties"]
        for g in template.find_resources("AWS::PCS::ComputeNodeGroup").values()
        if g["Properties"]["InstanceConfigs"] == [{"InstanceType": instance_type}]
    ]
    (subnet,) = group["SubnetIds"]
    assert interfaces and all(i["SubnetId"] == subnet for i in interfaces)


def test_gb200_targets_the_block_by_reservation_id(gb200):
    # PCS User Guide capacity-blocks-configure-cng: "A CapacityReservationSpecification with a valid
    # CapacityReservationId".
    data = _gpu_launch_template(gb200, "p6e-gb200.36xlarge")
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0a1b2c3d4e5f60718"}
    }


def test_gb200_queue_is_exclusive(gb200):
    gb200.has_resource_properties(
        "AWS::PCS::Queue",
        {
            "Name": "gb200",
            "SlurmConfiguration": {
                "SlurmCustomSettings": [{"ParameterName": "OverSubscribe", "ParameterValue": "EXCLUSIVE"}]
            },
        },
    )


def test_mime_archive_format():
    text = pcs_mime_user_data("#!/bin/bash\necho hi\n", extra_parts=[("text/cloud-config", "#cloud-config\n")])
    assert text.splitlines()[:3] == [
        'Content-Type: multipart/mixed; boundary="==FMCONSTRUCTS-BOUNDARY=="',
        "MIME-Version: 1.0",
        "",
    ]
    # A blank line before every boundary and after every part header (PCS User Guide, EC2 user data).
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("--==FMCONSTRUCTS-BOUNDARY=="):
            assert lines[index - 1] == ""
        if line.startswith("Content-Type: text/"):
            assert lines[index + 1] == ""
    assert text.index("#cloud-config") < text.index("echo hi")


def test_imex_prolog_passes_shellcheck(tmp_path):
    assert shutil.which("shellcheck"), "shellcheck is missing: `make test` installs it"
    path = tmp_path / "imex-prolog.sh"
    path.write_text(IMEX_PROLOG_SCRIPT)
    subprocess.run(["shellcheck", "--severity=warning", str(path)], check=True)


def test_imex_prolog_is_a_no_op_for_shared_jobs(tmp_path):
    path = tmp_path / "imex-prolog.sh"
    path.write_text(IMEX_PROLOG_SCRIPT)
    logger = tmp_path / "logger"
    logger.write_text("#!/bin/bash\nexit 0\n")
    logger.chmod(0o755)
    env = {
        "PATH": str(tmp_path),
        "SLURM_JOB_NODELIST": "gb200-[1-2]",
        "FMCONSTRUCTS_IMEX_LOG": str(tmp_path / "prolog.log"),
    }  # no SLURM_JOB_OVERSUBSCRIBE=NO: not an exclusive job (behaviour tests: test_pcs_imex.py)
    result = subprocess.run(["/bin/bash", str(path)], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "the job is not exclusive" in (tmp_path / "prolog.log").read_text()


def test_p5_file_system_is_the_smallest_efa_step_at_1000_mbps_per_tib(p5):
    # 4,800 GiB = 4.6875 TiB x 1,000 MB/s/TiB = 4,687.5 MB/s (FSx UG increase-storage-capacity: EFA-enabled
    # PERSISTENT_2 at 1,000 MB/s/TiB comes in multiples of 4,800 GiB); asking for 4.8 GB/s would double it.
    p5.has_resource_properties(
        "AWS::FSx::FileSystem",
        {
            "StorageCapacity": 4800,
            "LustreConfiguration": Match.object_like({"PerUnitStorageThroughput": 1000, "EfaEnabled": True}),
        },
    )


def test_gb200_nodes_take_the_ami_fmimages_writes():
    """FmImages' arm64 pipeline writes the AMI id under /imagebuilder/ (Image Builder's service-linked role may only
    write there); FmPcsGb200 reads that parameter by default."""
    from examples.images_stack import GB200_AMI_PARAMETER
    from examples.pcs_stacks import DEFAULT_GB200_AMI_PARAMETER

    assert DEFAULT_GB200_AMI_PARAMETER == GB200_AMI_PARAMETER
    assert GB200_AMI_PARAMETER.startswith("/imagebuilder/")


def test_p5_nodes_can_take_the_fmimages_parameter_by_context():
    import aws_cdk as cdk
    from aws_cdk.assertions import Template
    from conftest import new_app

    from examples.images_stack import X86_AMI_PARAMETER
    from examples.pcs_stacks import PcsP5Stack

    app = new_app(**{"fmconstructs:pcs-ami-x86-parameter": X86_AMI_PARAMETER})
    stack = PcsP5Stack(app, "P5FromImages", env=cdk.Environment(account="123456789012", region="us-east-1"))
    template = Template.from_stack(stack).to_json()
    parameters = template.get("Parameters", {})
    assert any(p.get("Default") == X86_AMI_PARAMETER for p in parameters.values()), parameters
