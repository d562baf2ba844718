"""The TrainingPlatform guide's sample (docs/backends/platform.md) runs as written (in a stack with a VPC) and gives what its comments say."""

from __future__ import annotations

import re

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template

from tests.conftest import ENV, new_app
from tests.house.docs_pages import page

PLATFORM = page("backends/platform.md")


def _sample() -> str:
    block = re.search(r"```python\n(.*?)```", PLATFORM, re.S)
    assert block is not None
    return block.group(1)


def test_readme_platform_sample_synthesizes_with_one_efa_group_and_4800_gib():
    stack = cdk.Stack(new_app(), "ReadmePlatform", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    scope: dict[str, object] = {"self": stack, "vpc": vpc}
    exec(compile(_sample(), "docs/backends/platform.md", "exec"), scope)  # the sample is ours, in this repository
    platform = scope["platform"]
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::FSx::FileSystem", {"StorageCapacity": 4800})
    fs_groups = template.find_resources("AWS::FSx::FileSystem")
    (fs,) = fs_groups.values()
    group_ref = stack.resolve(platform.security_group.security_group_id)  # type: ignore[attr-defined]
    assert group_ref in fs["Properties"]["SecurityGroupIds"]
