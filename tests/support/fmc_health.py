"""Shared by the `fmc health` tests: an assembly and the recorded AWS answers of a healthy deployment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REGION = "us-east-1"
PCS_CLUSTER = "pcs_abc1234567"
PCS_GROUP = "pcs_grp1234567"
ASG_NAME = "eks-gpu-asg"
PCS_TAG = "aws:pcs:compute-node-group-id"
HYPERPOD_ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/hp1"


def _template() -> dict[str, Any]:
    def res(rtype: str, props: dict[str, Any]) -> dict[str, Any]:
        return {"Type": rtype, "Properties": props}

    return {
        "Resources": {
            "Pcs": res("AWS::PCS::Cluster", {"Scheduler": {"Type": "SLURM", "Version": "25.05"}}),
            "PcsGpu": res(
                "AWS::PCS::ComputeNodeGroup",
                {
                    "ClusterId": {"Fn::GetAtt": ["Pcs", "Id"]},
                    "InstanceConfigs": [{"InstanceType": "p5.48xlarge"}],
                    "ScalingConfiguration": {"MinInstanceCount": 2, "MaxInstanceCount": 2},
                },
            ),
            "Eks": res("AWS::EKS::Cluster", {"Name": "eks1"}),
            "EksGpu": res(
                "AWS::EKS::Nodegroup",
                {"ClusterName": {"Ref": "Eks"}, "InstanceTypes": ["p5.48xlarge"], "ScalingConfig": {"MinSize": 2}},
            ),
            "HyperPod": res(
                "AWS::SageMaker::Cluster",
                {
                    "InstanceGroups": [
                        {"InstanceGroupName": "gpu", "InstanceType": "ml.p5.48xlarge", "InstanceCount": 2}
                    ]
                },
            ),
            "Pcluster": res(
                "Custom::PclusterCluster",
                {
                    "ClusterName": "pc1",
                    "ClusterConfiguration": {
                        "HeadNode": {"InstanceType": "m7i.xlarge"},
                        "Scheduling": {
                            "SlurmQueues": [
                                {
                                    "Name": "gpu",
                                    "ComputeResources": [
                                        {"Name": "p5", "InstanceType": "p5.48xlarge", "MinCount": 1, "MaxCount": 2}
                                    ],
                                }
                            ]
                        },
                    },
                },
            ),
            "Workspace": res("AWS::APS::Workspace", {}),
        }
    }


def _assembly(root: Path, template: dict[str, Any] | None = None) -> Path:
    out = root / "cdk.out"
    out.mkdir()
    (out / "Fm.template.json").write_text(json.dumps(template or _template()))
    manifest = {
        "artifacts": {
            "Fm": {
                "type": "aws:cloudformation:stack",
                "environment": f"aws://123456789012/{REGION}",
                "properties": {"templateFile": "Fm.template.json"},
            }
        }
    }
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def _summary(lid: str, rtype: str, physical: str, status: str = "CREATE_COMPLETE") -> dict[str, Any]:
    return {"LogicalResourceId": lid, "ResourceType": rtype, "PhysicalResourceId": physical, "ResourceStatus": status}


def _instances(count: int, tags: list[dict[str, str]]) -> dict[str, Any]:
    return {"Reservations": [{"Instances": [{"InstanceId": f"i-{n:017x}", "Tags": tags} for n in range(count)]}]}


def _responses(workspace_url: str) -> dict[str, Any]:
    """Every AWS answer of a healthy deployment."""
    pc_tags = [
        {"Key": "parallelcluster:cluster-name", "Value": "pc1"},
        {"Key": "parallelcluster:node-type", "Value": "Compute"},
        {"Key": "parallelcluster:queue-name", "Value": "gpu"},
        {"Key": "parallelcluster:compute-resource-name", "Value": "p5"},
    ]
    head_tags = [
        {"Key": "parallelcluster:cluster-name", "Value": "pc1"},
        {"Key": "parallelcluster:node-type", "Value": "HeadNode"},
    ]
    pc_instances = _instances(1, pc_tags)
    pc_instances["Reservations"].append(_instances(1, head_tags)["Reservations"][0])
    return {
        "cloudformation": {
            "DescribeStacks": [
                {
                    "Stacks": [
                        {"StackName": "Fm", "StackStatus": "CREATE_COMPLETE", "CreationTime": "2026-01-01T00:00:00Z"}
                    ]
                },
                {
                    "Stacks": [
                        {"StackName": "pc1", "StackStatus": "CREATE_COMPLETE", "CreationTime": "2026-01-01T00:00:00Z"}
                    ]
                },
            ],
            "ListStackResources": {
                "StackResourceSummaries": [
                    _summary("Pcs", "AWS::PCS::Cluster", f"arn:aws:pcs:us-east-1:123456789012:cluster/{PCS_CLUSTER}"),
                    _summary(
                        "PcsGpu",
                        "AWS::PCS::ComputeNodeGroup",
                        f"arn:aws:pcs:us-east-1:123456789012:computenodegroup/{PCS_GROUP}",
                    ),
                    _summary("Eks", "AWS::EKS::Cluster", "eks1"),
                    _summary("EksGpu", "AWS::EKS::Nodegroup", "eks1/gpu"),
                    _summary("HyperPod", "AWS::SageMaker::Cluster", HYPERPOD_ARN),
                    _summary("Pcluster", "Custom::PclusterCluster", "pc1"),
                    _summary(
                        "Workspace", "AWS::APS::Workspace", "arn:aws:aps:us-east-1:123456789012:workspace/ws-test"
                    ),
                ]
            },
        },
        "pcs": {
            "GetCluster": {"cluster": {"id": PCS_CLUSTER, "status": "ACTIVE"}},
            "GetComputeNodeGroup": {
                "computeNodeGroup": {
                    "id": PCS_GROUP,
                    "status": "ACTIVE",
                    "scalingConfiguration": {"minInstanceCount": 2, "maxInstanceCount": 2},
                }
            },
        },
        "eks": {
            "DescribeCluster": {"cluster": {"name": "eks1", "status": "ACTIVE", "health": {"issues": []}}},
            "DescribeNodegroup": {
                "nodegroup": {
                    "nodegroupName": "gpu",
                    "status": "ACTIVE",
                    "health": {"issues": []},
                    "resources": {"autoScalingGroups": [{"name": ASG_NAME}]},
                }
            },
        },
        "autoscaling": {
            "DescribeAutoScalingGroups": {
                "AutoScalingGroups": [
                    {
                        "AutoScalingGroupName": ASG_NAME,
                        "DesiredCapacity": 2,
                        "Instances": [
                            {"InstanceId": f"i-eks{n}", "LifecycleState": "InService", "HealthStatus": "Healthy"}
                            for n in range(2)
                        ],
                    }
                ]
            }
        },
        "sagemaker": {
            "DescribeCluster": {
                "ClusterArn": HYPERPOD_ARN,
                "ClusterStatus": "InService",
                "InstanceGroups": [
                    {"InstanceGroupName": "gpu", "CurrentCount": 2, "TargetCount": 2, "Status": "InService"}
                ],
            },
            "ListClusterNodes": {
                "ClusterNodeSummaries": [
                    {"InstanceGroupName": "gpu", "InstanceId": f"i-hp{n}", "InstanceStatus": {"Status": "Running"}}
                    for n in range(2)
                ]
            },
        },
        # ParallelCluster's nodes are read first (clusters before node groups), then the PCS group's
        "ec2": {"DescribeInstances": [pc_instances, _instances(2, [{"Key": PCS_TAG, "Value": PCS_GROUP}])]},
        "amp": {
            "DescribeWorkspace": {
                "workspace": {"workspaceId": "ws-test", "prometheusEndpoint": workspace_url + "api/v1/"}
            }
        },
    }
