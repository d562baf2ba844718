"""FmCompute: one launch template per catalog type with the documented EFA layouts."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match

from examples.compute_stack import DEFAULT_CAPACITY_BLOCK_ID, DEFAULT_ODCR_ID, ComputeStack
from examples.summary import summarize_template
from fmconstructs import BUILTIN_INSTANCE_TYPES


def launch_templates(template):
    return {
        lid: r["Properties"]["LaunchTemplateData"]
        for lid, r in template.find_resources("AWS::EC2::LaunchTemplate").items()
    }


def by_type(template, instance_type, market=None):
    found = [
        d
        for d in launch_templates(template).values()
        if d["InstanceType"] == instance_type
        and (market is None or d.get("InstanceMarketOptions", {}).get("MarketType") == market)
    ]
    return found


@pytest.mark.parametrize(
    ("instance_type", "efa", "efa_cards"),
    [
        ("p5.48xlarge", 32, list(range(32))),
        ("p5e.48xlarge", 32, list(range(32))),
        ("p5en.48xlarge", 16, list(range(16))),
        ("p6-b200.48xlarge", 8, list(range(8))),
        ("p6-b300.48xlarge", 16, list(range(1, 17))),
        ("p6e-gb200.36xlarge", 4, [1, 5, 9, 13]),
    ],
)
def test_each_catalog_type_has_a_launch_template(compute_template, instance_type, efa, efa_cards):
    data = by_type(compute_template, instance_type)[0]
    nics = data["NetworkInterfaces"]
    efa_nics = [n for n in nics if n["InterfaceType"] == "efa-only"]
    assert len(efa_nics) == efa
    assert sorted(n["NetworkCardIndex"] for n in efa_nics) == efa_cards
    assert (nics[0]["NetworkCardIndex"], nics[0]["DeviceIndex"], nics[0]["InterfaceType"]) == (
        0,
        0,
        "interface",
    )
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    assert data["BlockDeviceMappings"][0]["Ebs"]["Encrypted"] is True


def test_eight_launch_templates(compute_template):
    compute_template.resource_count_is("AWS::EC2::LaunchTemplate", 8)
    assert {d["InstanceType"] for d in launch_templates(compute_template).values()} == set(BUILTIN_INSTANCE_TYPES)


def test_one_shared_efa_group_and_placement_group(compute_template):
    compute_template.resource_count_is("AWS::EC2::PlacementGroup", 1)
    compute_template.has_resource_properties("AWS::EC2::PlacementGroup", {"Strategy": "cluster"})
    # VPC default-less: the EFA group, the node group.
    compute_template.resource_count_is("AWS::EC2::SecurityGroup", 2)


def test_odcr_and_capacity_block_variants(compute_template):
    odcr = [d for d in by_type(compute_template, "p5.48xlarge") if "CapacityReservationSpecification" in d]
    assert odcr[0]["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": DEFAULT_ODCR_ID
    }
    assert "Placement" in odcr[0]
    block = by_type(compute_template, "p5en.48xlarge", market="capacity-block")[0]
    assert block["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": DEFAULT_CAPACITY_BLOCK_ID
    }
    assert "Placement" not in block


def test_gb200_is_on_an_ultraserver_block_without_placement_group(compute_template):
    data = by_type(compute_template, "p6e-gb200.36xlarge")[0]
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert (
        "CapacityReservationResourceGroupArn" in data["CapacityReservationSpecification"]["CapacityReservationTarget"]
    )
    assert "Placement" not in data


def test_reservation_ids_come_from_context():
    from tests.conftest import new_app

    app = new_app(
        **{
            "fmconstructs:odcr-id": "cr-0aaaaaaaaaaaaaaaa",
            "fmconstructs:capacity-block-id": "cr-0bbbbbbbbbbbbbbbb",
        }
    )
    stack = ComputeStack(app, "Ctx")
    from aws_cdk.assertions import Template

    t = Template.from_stack(stack)
    t.has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {
            "LaunchTemplateData": Match.object_like(
                {
                    "CapacityReservationSpecification": {
                        "CapacityReservationTarget": {"CapacityReservationId": "cr-0aaaaaaaaaaaaaaaa"}
                    }
                }
            )
        },
    )
    t.has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {
            "LaunchTemplateData": Match.object_like(
                {
                    "CapacityReservationSpecification": {
                        "CapacityReservationTarget": {"CapacityReservationId": "cr-0bbbbbbbbbbbbbbbb"}
                    }
                }
            )
        },
    )


def test_summary_lines(compute_template):
    lines = summarize_template("FmCompute", compute_template.to_json())
    assert lines[0].startswith("FmCompute: ")
    assert any("p6-b300.48xlarge, 8x B300, 16 EFA / 17 interfaces" in line for line in lines)
    assert any("capacity-block -> cr-" in line for line in lines)
    assert len(lines) == 1 + 8


def test_pcs_example_alarms_on_fsx_saturation_to_the_shared_topic(example_stacks):
    from aws_cdk.assertions import Template

    from fmconstructs.remediation import HELD_BACK_NAMESPACE

    found = Template.from_stack(example_stacks["FmPcsP5"]).find_resources("AWS::CloudWatch::Alarm")
    # the remediation's held-back alarm goes to the same topic; the file system's are the others
    assert any(a["Properties"].get("Namespace") == HELD_BACK_NAMESPACE for a in found.values())
    alarms = {k: a for k, a in found.items() if a["Properties"].get("Namespace") != HELD_BACK_NAMESPACE}
    assert len(alarms) == 3  # throughput, aggregate free capacity, fullest storage target (OST)
    for alarm in alarms.values():
        assert "Fn::ImportValue" in str(alarm["Properties"]["AlarmActions"])  # FmObservability's topic


def test_observability_example_is_shared_by_the_cluster_stacks(example_stacks):
    assert example_stacks["FmObservability"] in example_stacks["FmPcsP5"].dependencies
    assert example_stacks["FmObservability"] in example_stacks["FmEksP5en"].dependencies


def test_self_managed_fleet_on_the_capacity_block(compute_template):
    asg = next(iter(compute_template.find_resources("AWS::AutoScaling::AutoScalingGroup").values()))["Properties"]
    assert (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"]) == ("2", "2", "2")
    assert asg["LaunchTemplate"]["Version"]["Fn::GetAtt"][1] == "LatestVersionNumber"  # pinned, never $Latest
    assert asg["NotificationConfigurations"][0]["TopicARN"]
    block = by_type(compute_template, "p5en.48xlarge", market="capacity-block")[0]
    assert "ImageId" in block and "IamInstanceProfile" in block
    compute_template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})


def test_fleet_events_key_lets_auto_scaling_publish(compute_template):
    """The encrypted topic of the example fleet: its key policy names AWSServiceRoleForAutoScaling with
    kms:GenerateDataKey* and kms:Decrypt (Auto Scaling UG key-policy-requirements-EBS-encryption; SNS DG key
    management); an account-root principal would need an IAM policy that a service-linked role cannot have."""
    topic = next(iter(compute_template.find_resources("AWS::SNS::Topic").values()))["Properties"]
    key_id = topic["KmsMasterKeyId"]["Fn::GetAtt"][0]
    statements = compute_template.to_json()["Resources"][key_id]["Properties"]["KeyPolicy"]["Statement"]
    granted = [s for s in statements if "kms:GenerateDataKey*" in s["Action"]]
    assert len(granted) == 1
    (statement,) = granted
    role = "".join(p if isinstance(p, str) else "<partition>" for p in statement["Principal"]["AWS"]["Fn::Join"][1])
    assert role.endswith(":role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling")
    assert sorted(statement["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"]
    assert "Condition" not in statement


# --- issue 10: outputs an operator needs ---------------------------------------------------------------------------


def test_every_output_has_a_description(compute_template):
    outputs = compute_template.to_json()["Outputs"]
    assert outputs
    missing = [name for name, output in outputs.items() if not output.get("Description")]
    assert missing == []


def test_operator_outputs(compute_template):
    outputs = compute_template.to_json()["Outputs"]
    for name in (
        "EfaSecurityGroupId",
        "NodeSecurityGroupId",
        "PlacementGroupName",
        "FleetAutoScalingGroupName",
        "FleetDescribeCommand",
        "FleetEventsTopicArn",
        "P5en48xlargeCapacityBlockLaunchTemplateId",
        "P5en48xlargeCapacityBlockLaunchTemplateVersion",
    ):
        assert name in outputs, name
    version = outputs["P5en48xlargeCapacityBlockLaunchTemplateVersion"]["Value"]
    assert version["Fn::GetAtt"][1] == "LatestVersionNumber"
    command = outputs["FleetDescribeCommand"]["Value"]["Fn::Join"][1]
    assert command[0].startswith("aws autoscaling describe-auto-scaling-groups --auto-scaling-group-names ")
    asg_id = next(iter(compute_template.find_resources("AWS::AutoScaling::AutoScalingGroup")))
    assert outputs["FleetAutoScalingGroupName"]["Value"] == {"Ref": asg_id} and command[1] == {"Ref": asg_id}
    assert (
        "p5en.48xlarge (capacity-block, 16 EFA interfaces"
        in outputs["P5en48xlargeCapacityBlockLaunchTemplateId"]["Description"]
    )


def test_the_example_uses_the_new_names_only():
    import warnings

    from tests.conftest import new_app

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="jsii.*")
        ComputeStack(new_app(), "NoOldNames")
