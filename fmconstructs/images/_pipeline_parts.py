"""The Image Builder recipe, infrastructure and distribution configurations of a :class:`~.image.GpuNodeImage`
(build steps of its constructor, moved here by concern; construct ids and scopes are the image's)."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from aws_cdk import Aws, Stack
from aws_cdk import aws_imagebuilder as imagebuilder

from .components import content_version

if TYPE_CHECKING:
    from .image import GpuNodeImage

#: The root device of the Amazon Linux 2023 DLAMIs (aws-hpc-recipes dlami-for-pcs.yaml ``DLAMIConfigs.al2023
#: .deviceName``).
ROOT_DEVICE_NAME = "/dev/xvda"


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def image_recipe(image: GpuNodeImage, size: Any) -> imagebuilder.CfnImageRecipe:
    """The image recipe: parent image, components and the encrypted root volume, versioned by content."""
    stack = Stack.of(image)
    recipe_description = f"fmconstructs GPU node image ({image.architecture.value}) on {image.parent_image.description}"
    recipe_props: dict[str, Any] = {
        "name": image.image_name,
        "parent_image": image.parent_image.value,
        "description": recipe_description[:1024],
        "components": [
            imagebuilder.CfnImageRecipe.ComponentConfigurationProperty(component_arn=resource.attr_arn)
            for resource in image.component_resources.values()
        ],
        "block_device_mappings": [
            imagebuilder.CfnImageRecipe.InstanceBlockDeviceMappingProperty(
                device_name=ROOT_DEVICE_NAME,
                ebs=imagebuilder.CfnImageRecipe.EbsInstanceBlockDeviceSpecificationProperty(
                    encrypted=True,
                    kms_key_id=image.encryption_key.key_arn,
                    volume_size=size,
                    volume_type="gp3",
                    delete_on_termination=True,
                ),
            )
        ],
    }
    # A recipe version can never be overwritten either: its patch comes from everything it is made of, so any
    # change (parent, component versions, volume, key) is a new version that CloudFormation can replace.
    recipe_digest = _digest(
        {
            "props": stack.resolve({k: v for k, v in recipe_props.items() if k != "components"}),
            "components": [(c.name, c.version) for c in image.components],
        }
    )
    return imagebuilder.CfnImageRecipe(
        # Our own version scheme for the recipe, not an external pin (cfn-lint checks the format in the tier):
        # "1.0" plus a number from the content digest, so any change makes a new recipe version.
        image,
        "Recipe",
        version=content_version("1.0", recipe_digest),  # our own recipe version scheme, not an upstream pin
        **recipe_props,
    )


def infrastructure_configuration(image: GpuNodeImage) -> imagebuilder.CfnInfrastructureConfiguration:
    """The infrastructure configuration: build instance types, subnet, IMDSv2 only, logs to S3."""
    return imagebuilder.CfnInfrastructureConfiguration(
        image,
        "Infrastructure",
        name=f"{image.image_name}-infrastructure",
        description="fmconstructs: private subnet, IMDSv2 only, logs to S3",
        instance_profile_name=image.instance_profile.instance_profile_name,
        instance_types=list(image.build_instance_types),
        subnet_id=image.subnet.subnet_id,
        security_group_ids=[g.security_group_id for g in image.security_groups],
        instance_metadata_options=imagebuilder.CfnInfrastructureConfiguration.InstanceMetadataOptionsProperty(
            http_tokens="required"
        ),
        logging=imagebuilder.CfnInfrastructureConfiguration.LoggingProperty(
            s3_logs=imagebuilder.CfnInfrastructureConfiguration.S3LogsProperty(
                s3_bucket_name=image.logs_bucket.bucket_name, s3_key_prefix=image.logs_prefix.rstrip("/")
            )
        ),
        terminate_instance_on_failure=True,
        resource_tags={"fmconstructs:image": image.image_name},
    )


def distribution_configuration(image: GpuNodeImage) -> imagebuilder.CfnDistributionConfiguration:
    """The distribution configuration: the encrypted AMI, tagged, with its id written to the SSM parameter."""
    ami_tags = {
        "fmconstructs:image": image.image_name,
        "fmconstructs:architecture": image.architecture.value,
        "fmconstructs:slurm": " ".join(v.value for v in image.slurm_versions) or "none",
    }
    dist = imagebuilder.CfnDistributionConfiguration
    # aws-cdk-lib types DistributionProperty.ami_distribution_configuration as Any (a JSON value), so a
    # dist.AmiDistributionConfigurationProperty would be written with camelCase keys that CloudFormation rejects:
    # the keys are spelled as the CloudFormation schema spells them.
    ami_distribution = {
        # "The name must include the {{ imagebuilder:buildDate }} dynamic tag" (botocore imagebuilder
        # AmiDistributionConfiguration.name).
        "Name": f"{image.image_name}-{{{{ imagebuilder:buildDate }}}}",
        "Description": f"fmconstructs GPU node image {image.image_name} ({image.architecture.value})",
        "KmsKeyId": image.encryption_key.key_arn,
        "AmiTags": ami_tags,
    }
    return dist(
        image,
        "Distribution",
        name=f"{image.image_name}-distribution",
        description=f"fmconstructs: encrypted AMI, id in {image.ssm_parameter_name}",
        distributions=[
            dist.DistributionProperty(
                region=Aws.REGION,
                ami_distribution_configuration=ami_distribution,
                ssm_parameter_configurations=[
                    dist.SsmParameterConfigurationProperty(
                        parameter_name=image.ssm_parameter_name, data_type="aws:ec2:image"
                    )
                ],
            )
        ],
    )
