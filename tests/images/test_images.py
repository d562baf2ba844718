"""GpuNodeImage: the Image Builder resources (pipeline per architecture, recipe, components, infrastructure,
distribution to SSM), security settings, schedules, the PcsAmi hand-off and construction-time validation."""

from __future__ import annotations

import math
import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template

from fmconstructs import CpuArchitecture
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.images import (
    DLAMI_BASE_GPU_PARAMETERS,
    BuildSchedule,
    GpuNodeImage,
    ImageComponent,
    ParentImage,
    PipelineStartCondition,
)
from fmconstructs.pcs import PcsAmi, PcsCluster, SlurmVersion
from fmconstructs.pcs.node_group import PcsGpuNodeGroupOptions

from tests.conftest import ENV, new_app, new_scene
from tests.support.images import _image

PIPELINE = "AWS::ImageBuilder::ImagePipeline"
RECIPE = "AWS::ImageBuilder::ImageRecipe"
COMPONENT = "AWS::ImageBuilder::Component"
INFRA = "AWS::ImageBuilder::InfrastructureConfiguration"
DIST = "AWS::ImageBuilder::DistributionConfiguration"


@pytest.fixture(scope="module")
def x86() -> tuple[GpuNodeImage, Template]:
    scene = new_scene()
    image = _image(
        scene,
        instance_types=["p5.48xlarge", "p6-b200.48xlarge"],
        ssm_parameter_name="/imagebuilder/fmconstructs/pcs/x86_64",
        image_name="fm-x86",
        schedule=BuildSchedule.weekly_when_parent_changes(),
    )
    return image, scene.template()


@pytest.fixture(scope="module")
def gb200() -> tuple[GpuNodeImage, Template]:
    scene = new_scene()
    image = _image(scene, instance_types=["p6e-gb200.36xlarge"], image_name="fm-gb200")
    return image, scene.template()


def _component_names(template: Template) -> list[str]:
    return sorted(r["Properties"]["Name"] for r in template.find_resources(COMPONENT).values())


# --- architecture and parent ---------------------------------------------------------------------------------------------


def test_architecture_comes_from_the_catalog(x86, gb200):
    assert x86[0].architecture is CpuArchitecture.X86_64
    assert gb200[0].architecture is CpuArchitecture.ARM64


@pytest.mark.parametrize(("fixture", "arch"), [("x86", "x86_64"), ("gb200", "arm64")])
def test_parent_is_the_dlami_base_gpu_parameter_of_the_architecture(fixture, arch, request):
    _, template = request.getfixturevalue(fixture)
    parameter = f"/aws/service/deeplearning/ami/{arch}/base-oss-nvidia-driver-gpu-amazon-linux-2023/latest/ami-id"
    assert DLAMI_BASE_GPU_PARAMETERS[CpuArchitecture(arch)] == parameter
    template.has_resource_properties(RECIPE, {"ParentImage": f"ssm:{parameter}"})


def test_one_pipeline_per_image(x86):
    _, template = x86
    template.resource_count_is(PIPELINE, 1)
    template.resource_count_is(RECIPE, 1)
    template.resource_count_is(INFRA, 1)
    template.resource_count_is(DIST, 1)


def test_mixed_architectures_are_refused():
    with pytest.raises(FmValidationError, match="instance_types must be types of one architecture"):
        _image(new_scene(), instance_types=["p5.48xlarge", "p6e-gb200.36xlarge"])


# --- components ---------------------------------------------------------------------------------------------------------


def test_x86_components_have_fabric_manager_and_no_imex(x86):
    image, template = x86
    assert _component_names(template) == sorted(
        f"fm-x86-{n}"
        for n in (
            "efa",
            "lustre-client",
            "nvidia-driver",
            "nvidia-fabric-manager",
            "dcgm",
            "nccl-tests",
            "pcs-agent",
            "pcs-slurm-25-11",
            "slurm-exporter",
            "metrics-agents",
            "gpu-smoke-test",
        )
    )
    assert [c.name for c in image.components][-1] == "gpu-smoke-test"


def test_gb200_components_have_imex_and_no_fabric_manager(gb200):
    names = _component_names(gb200[1])
    assert "fm-gb200-nvidia-imex" in names
    assert "fm-gb200-nvidia-fabric-manager" not in names


def test_components_are_versioned_linux_components_with_their_documents(x86):
    image, template = x86
    for component in image.components:
        template.has_resource_properties(
            COMPONENT,
            {
                "Name": f"fm-x86-{component.name}",
                "Platform": "Linux",
                "Version": component.version,
                "Data": component.document_yaml(),
                "SupportedOsVersions": ["Amazon Linux 2023"],
            },
        )


def test_recipe_lists_components_in_install_order(x86):
    image, template = x86
    (recipe,) = template.find_resources(RECIPE).values()
    refs = [c["ComponentArn"]["Fn::GetAtt"][0] for c in recipe["Properties"]["Components"]]
    logical = {
        name: cdk.Stack.of(image).resolve(res.attr_arn)["Fn::GetAtt"][0]
        for name, res in image.component_resources.items()
    }
    assert refs == [logical[c.name] for c in image.components]


def test_two_slurm_versions_for_rolling_updates():
    image = _image(new_scene(), slurm_versions=[SlurmVersion.V25_05, SlurmVersion.V25_11])
    assert [c.name for c in image.components if c.name.startswith("pcs-slurm")] == [
        "pcs-slurm-25-05",
        "pcs-slurm-25-11",
    ]


def test_no_slurm_versions_means_no_pcs_software():
    image = _image(new_scene(), slurm_versions=[])
    assert not image.installs_pcs
    assert not [c for c in image.components if c.name.startswith("pcs-")]


def test_additional_components_run_last():
    mine = ImageComponent(name="my-tools", description="my tools", build_script="true", check_script="true")
    image = _image(new_scene(), additional_components=[mine])
    assert image.components[-1] is mine


def test_recipe_version_changes_when_a_component_changes():
    def version(**props: object) -> str:
        scene = new_scene()
        _image(scene, image_name="same", **props)
        (recipe,) = scene.template().find_resources(RECIPE).values()
        return str(recipe["Properties"]["Version"])

    assert version() == version()
    assert version() != version(slurm_versions=[SlurmVersion.V25_05])
    assert version() != version(root_volume_size_gib=200)


# --- infrastructure: private subnet, IMDSv2, roles, logs ----------------------------------------------------------------


def test_build_instances_run_in_a_private_subnet_with_imdsv2_only(x86):
    _, template = x86
    template.has_resource_properties(
        INFRA,
        {
            "SubnetId": "subnet-0aaaaaaaaaaaaaaa1",
            "InstanceMetadataOptions": {"HttpTokens": "required"},
            "TerminateInstanceOnFailure": True,
            "InstanceTypes": ["g6.2xlarge"],
            "SecurityGroupIds": [{"Fn::GetAtt": [Match.string_like_regexp("^ImageSecurityGroup"), "GroupId"]}],
            "Logging": {
                "S3Logs": {
                    "S3BucketName": {"Ref": Match.string_like_regexp("^ImageLogs")},
                    "S3KeyPrefix": "imagebuilder/fm-x86",
                }
            },
        },
    )
    (group,) = template.find_resources("AWS::EC2::SecurityGroup").values()
    assert "SecurityGroupIngress" not in group["Properties"]


def test_connections_carry_the_build_security_group(x86):
    image, _ = x86
    assert [g.node.path for g in image.connections.security_groups] == [image.security_groups[0].node.path]


def test_arm64_builds_on_graviton_gpu_instances(gb200):
    gb200[1].has_resource_properties(INFRA, {"InstanceTypes": ["g5g.2xlarge"]})


def test_without_gpu_validation_builds_on_general_purpose_instances():
    scene = new_scene()
    image = _image(scene, validate_on_gpu=False)
    scene.template().has_resource_properties(INFRA, {"InstanceTypes": ["c7i.2xlarge"]})
    assert "gpu-smoke-test" not in [c.name for c in image.components]


def test_instance_role_has_the_image_builder_managed_policies_and_writes_only_its_log_prefix(x86):
    _, template = x86
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": Match.object_like(
                {"Statement": [Match.object_like({"Principal": {"Service": "ec2.amazonaws.com"}})]}
            ),
            "ManagedPolicyArns": [
                {
                    "Fn::Join": [
                        "",
                        ["arn:", {"Ref": "AWS::Partition"}, ":iam::aws:policy/EC2InstanceProfileForImageBuilder"],
                    ]
                },
                {
                    "Fn::Join": [
                        "",
                        ["arn:", {"Ref": "AWS::Partition"}, ":iam::aws:policy/AmazonSSMManagedInstanceCore"],
                    ]
                },
            ],
        },
    )
    (policy,) = template.find_resources("AWS::IAM::Policy").values()
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "s3:PutObject"
    assert statement["Resource"]["Fn::Join"][1][-1] == "/imagebuilder/fm-x86/*"
    template.resource_count_is("AWS::IAM::InstanceProfile", 1)


def test_logs_bucket_is_tls_only_private_and_retained(x86):
    _, template = x86
    template.has_resource(
        "AWS::S3::Bucket",
        {
            "DeletionPolicy": "Retain",
            "Properties": Match.object_like(
                {
                    "PublicAccessBlockConfiguration": Match.object_like(
                        {"BlockPublicAcls": True, "RestrictPublicBuckets": True}
                    )
                }
            ),
        },
    )
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": Match.object_like(
                {
                    "Statement": Match.array_with(
                        [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                    )
                }
            )
        },
    )


def test_public_subnet_is_refused():
    stack = cdk.Stack(new_app(), "Public", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=1)
    with pytest.raises(FmValidationError, match="subnet must be a private subnet"):
        GpuNodeImage(stack, "Image", instance_types=["p5.48xlarge"], vpc=vpc, subnet=vpc.public_subnets[0])


def test_default_subnet_is_the_first_private_subnet_with_egress():
    stack = cdk.Stack(new_app(), "Default", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    image = GpuNodeImage(stack, "Image", instance_types=["p5.48xlarge"], vpc=vpc)
    assert image.subnet.node.path == vpc.private_subnets[0].node.path


def test_vpc_without_private_subnets_is_refused():
    stack = cdk.Stack(new_app(), "Flat", env=ENV)
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        max_azs=1,
        subnet_configuration=[ec2.SubnetConfiguration(name="p", subnet_type=ec2.SubnetType.PUBLIC)],
    )
    with pytest.raises(FmValidationError, match="private subnet with egress"):
        GpuNodeImage(stack, "Image", instance_types=["p5.48xlarge"], vpc=vpc)


# --- encryption, distribution, SSM ---------------------------------------------------------------------------------------


def test_root_volume_and_ami_are_encrypted_with_the_retained_key(x86):
    _, template = x86
    key_ref = {"Fn::GetAtt": [Match.string_like_regexp("^ImageKey"), "Arn"]}
    template.has_resource_properties(
        RECIPE,
        {
            "BlockDeviceMappings": [
                {
                    "DeviceName": "/dev/xvda",
                    "Ebs": {
                        "Encrypted": True,
                        "KmsKeyId": key_ref,
                        "VolumeSize": 150,
                        "VolumeType": "gp3",
                        "DeleteOnTermination": True,
                    },
                }
            ]
        },
    )
    template.has_resource_properties(
        DIST,
        {
            "Distributions": [
                Match.object_like({"AmiDistributionConfiguration": Match.object_like({"KmsKeyId": key_ref})})
            ]
        },
    )
    template.has_resource(
        "AWS::KMS::Key", {"DeletionPolicy": "Retain", "Properties": Match.object_like({"EnableKeyRotation": True})}
    )


def test_key_lets_service_linked_roles_use_it_through_ec2_only(x86):
    _, template = x86
    # The image's key (the stack's log-group key, fmconstructs._log_groups.log_key, is the other one).
    (key,) = [k for k in template.find_resources("AWS::KMS::Key").values() if "AMIs" in k["Properties"]["Description"]]
    (statement,) = [
        s for s in key["Properties"]["KeyPolicy"]["Statement"] if s.get("Sid") == "AllowServiceLinkedRolesThroughEc2"
    ]
    assert statement["Condition"]["StringEquals"]["kms:CallerAccount"] == "123456789012"
    assert statement["Condition"]["StringEquals"]["kms:ViaService"] == {
        "Fn::Join": ["", ["ec2.us-east-1.", {"Ref": "AWS::URLSuffix"}]]
    }
    assert statement["Condition"]["ArnLike"]["aws:PrincipalArn"]["Fn::Join"][1][-1] == (
        ":iam::123456789012:role/aws-service-role/*"
    )


def test_given_key_is_used_and_none_is_created():
    scene = new_scene()
    key = kms.Key.from_key_arn(
        scene.stack, "Key", "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    )
    image = _image(scene, encryption_key=key)
    assert image.encryption_key is key
    # Only the stack's log-group key (fmconstructs._log_groups.log_key): no key for the image.
    (only,) = scene.template().find_resources("AWS::KMS::Key").values()
    assert only["Properties"]["Description"] == "fmconstructs: CloudWatch Logs groups of this stack"


def test_ami_id_goes_to_the_ssm_parameter_as_an_image_id(x86):
    image, template = x86
    assert image.ssm_parameter_name == "/imagebuilder/fmconstructs/pcs/x86_64"
    template.has_resource_properties(
        DIST,
        {
            "Distributions": [
                Match.object_like(
                    {
                        "Region": {"Ref": "AWS::Region"},
                        "SsmParameterConfigurations": [
                            {"ParameterName": "/imagebuilder/fmconstructs/pcs/x86_64", "DataType": "aws:ec2:image"}
                        ],
                        "AmiDistributionConfiguration": Match.object_like(
                            {"Name": "fm-x86-{{ imagebuilder:buildDate }}"}
                        ),
                    }
                )
            ]
        },
    )


def test_default_parameter_name_is_under_imagebuilder(gb200):
    assert gb200[0].ssm_parameter_name == "/imagebuilder/fmconstructs/fm-gb200"


# --- pipeline: schedule, manual trigger, tests, logs ----------------------------------------------------------------------


def test_scheduled_pipeline_builds_when_dependencies_change(x86):
    image, template = x86
    template.has_resource_properties(
        PIPELINE,
        {
            "Name": "fm-x86",
            "Status": "ENABLED",
            "Schedule": {
                "ScheduleExpression": "cron(0 6 ? * MON *)",
                "PipelineExecutionStartCondition": "EXPRESSION_MATCH_AND_DEPENDENCY_UPDATES_AVAILABLE",
            },
            "ImageTestsConfiguration": {"ImageTestsEnabled": True, "TimeoutMinutes": 90},
            "LoggingConfiguration": {
                "ImageLogGroupName": {"Ref": Match.string_like_regexp("^ImageImageLogs")},
                "PipelineLogGroupName": {"Ref": Match.string_like_regexp("^ImagePipelineLogs")},
            },
        },
    )
    assert image.node.default_child is image.pipeline


def test_manual_pipeline_has_no_schedule(gb200):
    _, template = gb200
    template.has_resource_properties(PIPELINE, {"Schedule": Match.absent(), "Status": "ENABLED"})


def test_log_groups_have_image_builder_names_and_retention(x86):
    _, template = x86
    template.has_resource_properties(
        "AWS::Logs::LogGroup", {"LogGroupName": "/aws/imagebuilder/fm-x86", "RetentionInDays": 365}
    )
    template.has_resource_properties(
        "AWS::Logs::LogGroup", {"LogGroupName": "/aws/imagebuilder/pipeline/fm-x86", "RetentionInDays": 365}
    )


def test_manual_trigger_command_and_grant(x86):
    image, _ = x86
    resolved = cdk.Stack.of(image).resolve(image.start_pipeline_command)
    assert resolved["Fn::Join"][1][0] == "aws imagebuilder start-image-pipeline-execution --image-pipeline-arn "
    scene = new_scene()
    img = _image(scene)
    role = cdk.aws_iam.Role(scene.stack, "Operator", assumed_by=cdk.aws_iam.AccountRootPrincipal())
    img.grant_start_pipeline(role)
    scene.template().has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {
                            "Action": "imagebuilder:StartImagePipelineExecution",
                            "Resource": {"Fn::GetAtt": [Match.string_like_regexp("^Image"), "Arn"]},
                        }
                    )
                ],
                "Version": "2012-10-17",
            }
        },
    )


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        (
            BuildSchedule.cron("rate(7 days)", start_condition=PipelineStartCondition.EXPRESSION_MATCH_ONLY),
            {"ScheduleExpression": "rate(7 days)", "PipelineExecutionStartCondition": "EXPRESSION_MATCH_ONLY"},
        ),
        (
            BuildSchedule.cron("cron(0 2 1 * ? *)", timezone="Europe/Paris"),
            {"ScheduleExpression": "cron(0 2 1 * ? *)", "Timezone": "Europe/Paris"},
        ),
    ],
)
def test_schedules(schedule, expected):
    scene = new_scene()
    _image(scene, schedule=schedule)
    scene.template().has_resource_properties(PIPELINE, {"Schedule": Match.object_like(expected)})


# --- the PCS hand-off ------------------------------------------------------------------------------------------------------


def _max_nodes_kw() -> str:
    params = PcsGpuNodeGroupOptions.__annotations__  # the constructor takes **options: Unpack[PcsGpuNodeGroupOptions]
    return "max_nodes" if "max_nodes" in params else "max_instance_count"


def test_pcs_node_group_takes_the_image_parameter():
    app = new_app()
    images = cdk.Stack(app, "Images", env=ENV)
    vpc = ec2.Vpc(images, "Vpc", max_azs=2)
    image = GpuNodeImage(images, "X86", instance_types=["p5.48xlarge"], vpc=vpc)
    cluster_stack = cdk.Stack(app, "Cluster", env=ENV)
    cluster_vpc = ec2.Vpc(cluster_stack, "Vpc", max_azs=2)
    cluster = PcsCluster(cluster_stack, "Cluster", vpc=cluster_vpc)
    ami = PcsAmi.from_ssm_parameter(image.ssm_parameter_name, architecture=image.architecture)
    cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=ami, **{_max_nodes_kw(): 2})
    template = Template.from_stack(cluster_stack)
    parameters = template.find_parameters(
        "*", {"Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>", "Default": image.ssm_parameter_name}
    )
    (parameter,) = parameters
    template.has_resource_properties("AWS::PCS::ComputeNodeGroup", {"AmiId": {"Ref": parameter}})


def test_gb200_image_parameter_refused_for_p5():
    scene = new_scene()
    image = _image(scene, instance_types=["p6e-gb200.36xlarge"])
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    ami = PcsAmi.from_ssm_parameter(image.ssm_parameter_name, architecture=image.architecture)
    with pytest.raises(FmValidationError, match=r"ami\.architecture must be x86_64"):
        cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=ami, **{_max_nodes_kw(): 2})


# --- validation at construction -------------------------------------------------------------------------------------------


def _token_str(stack: cdk.Stack) -> str:
    return cdk.CfnParameter(stack, f"P{len(stack.node.children)}").value_as_string


BAD = [
    ("instance_types", "p5.48xlarge", FmTypeError),
    ("instance_types", [], FmValidationError),
    ("instance_types", ["p5.48xlarge\n"], FmValidationError),
    ("instance_types", ["m5.large"], FmValidationError),
    ("instance_types", [5], FmTypeError),
    ("vpc", "vpc-0123", FmTypeError),
    ("subnet", "subnet-0123", FmTypeError),
    ("slurm_versions", "25.11", FmTypeError),
    ("slurm_versions", ["25.11"], FmTypeError),
    ("slurm_versions", [SlurmVersion.V25_11, SlurmVersion.V25_11], FmValidationError),
    ("pcs_agent_version", "1.3", FmValidationError),
    ("pcs_agent_version", None, FmTypeError),
    ("slurm_installer_version", "25.05.5-1", FmValidationError),
    ("slurm_installer_version", 25.11, FmTypeError),
    ("efa_installer_version", "1.50.0\n", FmValidationError),
    ("parent_image", "ami-0123456789abcdef0", FmTypeError),
    ("schedule", "cron(0 6 * * ? *)", FmTypeError),
    ("ssm_parameter_name", "/fmconstructs/pcs/ami", FmValidationError),
    ("ssm_parameter_name", "/imagebuilder/a b", FmValidationError),
    ("ssm_parameter_name", "/imagebuilder/x\n", FmValidationError),
    ("ssm_parameter_name", 7, FmTypeError),
    ("image_name", "a", FmValidationError),
    ("image_name", "has space", FmValidationError),
    ("image_name", "-lead", FmValidationError),
    ("image_name", "name\n", FmValidationError),
    ("image_name", ["name"], FmTypeError),
    ("build_instance_types", "g6.2xlarge", FmTypeError),
    ("build_instance_types", [], FmValidationError),
    ("build_instance_types", ["c7i.2xlarge"], FmValidationError),  # not a GPU type with validate_on_gpu
    ("build_instance_types", ["g5g.2xlarge"], FmValidationError),  # arm64 for an x86_64 image
    ("validate_on_gpu", 1, FmTypeError),
    ("validate_on_gpu", "yes", FmTypeError),
    ("root_volume_size_gib", 0, FmValidationError),
    ("root_volume_size_gib", 16001, FmValidationError),
    ("root_volume_size_gib", 150.5, FmValidationError),
    ("root_volume_size_gib", True, FmTypeError),
    ("root_volume_size_gib", math.nan, FmValidationError),
    ("root_volume_size_gib", math.inf, FmValidationError),
    ("root_volume_size_gib", "150", FmTypeError),
    ("encryption_key", "arn:aws:kms:us-east-1:123456789012:key/x", FmTypeError),
    ("logs_bucket", "my-bucket", FmTypeError),
    ("server_access_logs_bucket", "my-bucket", FmTypeError),
    ("security_groups", [], FmValidationError),
    ("security_groups", "sg-0123", FmTypeError),
    ("additional_components", "tools", FmTypeError),
    ("additional_components", [{"name": "x"}], FmTypeError),
    ("removal_policy", "retain", FmTypeError),
    ("log_retention", 365, FmTypeError),
]


@pytest.mark.parametrize(("parameter", "value", "error"), BAD, ids=[f"{p}={v!r}" for p, v, _ in BAD])
def test_bad_input_raises_our_error_naming_the_parameter(parameter, value, error):
    with pytest.raises(error) as raised:
        _image(new_scene(), **{parameter: value})
    assert parameter in str(raised.value)
    assert "${Token[" not in str(raised.value)


def test_slurm_installer_pin_needs_one_slurm_version():
    with pytest.raises(FmValidationError, match="slurm_installer_version must be 'latest' unless exactly one"):
        _image(
            new_scene(), slurm_versions=[SlurmVersion.V25_05, SlurmVersion.V25_11], slurm_installer_version="25.11.2-1"
        )


def test_additional_component_names_must_differ_from_builtin_ones():
    dup = ImageComponent(name="efa", description="mine", build_script="true")
    with pytest.raises(FmValidationError, match="additional_components"):
        _image(new_scene(), additional_components=[dup])


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"expression": "0 6 * * 1"}, "schedule.expression"),
        ({"expression": "cron(0 6 * * ? *)\n"}, "schedule.expression"),
        ({"expression": 5}, "schedule.expression"),
        ({"expression": "rate(1 day)", "start_condition": "EXPRESSION_MATCH_ONLY"}, "schedule.start_condition"),
        ({"expression": "rate(1 day)", "timezone": "U"}, "schedule.timezone"),
        ({"timezone": "Etc/UTC"}, "schedule.timezone"),
    ],
)
def test_bad_schedules(kwargs, parameter):
    with pytest.raises(FmValidationError, match=re.escape(parameter)):
        BuildSchedule(**kwargs)


@pytest.mark.parametrize(
    ("factory", "value", "parameter"),
    [
        (ParentImage.from_ami_id, "ami-123", "ami_id"),
        (ParentImage.from_ami_id, "ami-0123456789abcdef0\n", "ami_id"),
        (ParentImage.from_ssm_parameter, "aws/service/x", "parameter"),
        (ParentImage.from_ssm_parameter, 3, "parameter"),
        (ParentImage.dlami_base_gpu, "x86_64", "architecture"),
    ],
)
def test_bad_parent_images(factory, value, parameter):
    with pytest.raises(FmValidationError, match=parameter):
        factory(value)


def test_parent_images():
    assert ParentImage.from_ami_id("ami-0123456789abcdef0").value == "ami-0123456789abcdef0"
    assert ParentImage.from_ssm_parameter("/my/golden/ami").value == "ssm:/my/golden/ami"
    scene = new_scene()
    _image(scene, parent_image=ParentImage.from_ssm_parameter("/my/golden/ami"))
    scene.template().has_resource_properties(RECIPE, {"ParentImage": "ssm:/my/golden/ami"})


def test_instance_types_must_be_known_at_synth_time():
    scene = new_scene()
    with pytest.raises(FmValidationError, match="instance_types must be instance types known at synth time"):
        _image(scene, instance_types=[_token_str(scene.stack)])


def test_image_name_must_be_known_at_synth_time():
    scene = new_scene()
    with pytest.raises(FmValidationError, match="image_name must be a name known at synth time"):
        _image(scene, image_name=_token_str(scene.stack))


def test_everything_deploy_time_synthesizes():
    """VPC, subnet, security group, key, buckets and the parameter name from deploy-time values."""
    stack = cdk.Stack(new_app(), "Tokens")
    vpc_id = cdk.CfnParameter(stack, "VpcId", type="AWS::EC2::VPC::Id").value_as_string
    subnet_id = cdk.CfnParameter(stack, "SubnetId", type="AWS::EC2::Subnet::Id").value_as_string
    vpc = ec2.Vpc.from_vpc_attributes(stack, "Vpc", vpc_id=vpc_id, availability_zones=cdk.Fn.get_azs())
    subnet = ec2.Subnet.from_subnet_id(stack, "Subnet", subnet_id)
    group = ec2.SecurityGroup.from_security_group_id(stack, "Group", cdk.CfnParameter(stack, "Sg").value_as_string)
    key = kms.Key.from_key_arn(stack, "ImportedKey", cdk.CfnParameter(stack, "KeyArn").value_as_string)
    bucket = cdk.aws_s3.Bucket.from_bucket_name(
        stack, "ImportedLogs", cdk.CfnParameter(stack, "Bucket").value_as_string
    )
    size = cdk.CfnParameter(stack, "Size", type="Number").value_as_number
    image = GpuNodeImage(
        stack,
        "Image",
        instance_types=["p5.48xlarge"],
        vpc=vpc,
        subnet=subnet,
        security_groups=[group],
        encryption_key=key,
        logs_bucket=bucket,
        root_volume_size_gib=size,
        ssm_parameter_name=cdk.CfnParameter(stack, "AmiParameter").value_as_string,
    )
    template = Template.from_stack(stack)
    template.has_resource_properties(INFRA, {"SubnetId": {"Ref": "SubnetId"}, "SecurityGroupIds": [{"Ref": "Sg"}]})
    template.has_resource_properties(
        DIST,
        {
            "Distributions": [
                Match.object_like(
                    {"SsmParameterConfigurations": [Match.object_like({"ParameterName": {"Ref": "AmiParameter"}})]}
                )
            ]
        },
    )
    template.has_resource_properties(
        RECIPE,
        {"BlockDeviceMappings": [Match.object_like({"Ebs": Match.object_like({"VolumeSize": {"Ref": "Size"}})})]},
    )
    assert image.architecture is CpuArchitecture.X86_64
