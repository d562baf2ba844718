"""fmconstructs.cli.changes_baseline: a template reduced to what fmc changes compares, which gives the same findings."""

from __future__ import annotations

from fmconstructs.cli.changes import compare_templates
from fmconstructs.cli.changes_baseline import project_resource, project_template

FS = {
    "Type": "AWS::FSx::FileSystem",
    "DeletionPolicy": "Retain",
    "Metadata": {"aws:cdk:path": "S/Fs/Resource", "other": 1},
    "Properties": {
        "FileSystemType": "LUSTRE",
        "StorageCapacity": 4800,
        "SecurityGroupIds": [{"Fn::GetAtt": ["Sg", "GroupId"]}],
        "LustreConfiguration": {"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 500},
        "Tags": [{"Key": "a", "Value": "b"}],
    },
}
SG = {"Type": "AWS::EC2::SecurityGroup", "Properties": {"GroupDescription": "d", "VpcId": "vpc-1", "Tags": []}}


def test_a_resource_keeps_its_create_only_values_path_and_policy_only():
    kept = project_resource(FS)
    assert kept["DeletionPolicy"] == "Retain" and kept["Metadata"] == {"aws:cdk:path": "S/Fs/Resource"}
    props = kept["Properties"]
    assert props["StorageCapacity"] == 4800 and props["FileSystemType"] == "LUSTRE"
    assert props["LustreConfiguration"] == {"DeploymentType": "PERSISTENT_2"}  # throughput updates in place
    assert "Tags" not in props


def test_a_type_without_create_only_data_keeps_its_type():
    assert project_resource({"Type": "Custom::Unknown", "Properties": {"A": 1}}) == {"Type": "Custom::Unknown"}


def test_a_reduced_baseline_finds_the_cascade_a_whole_template_finds():
    old = {"Resources": {"Fs": FS, "Sg": SG}}
    new = {"Resources": {"Fs": FS, "Sg": {**SG, "Properties": {**SG["Properties"], "GroupDescription": "new"}}}}
    whole = [f.to_json() for f in compare_templates("S", old, new).findings]
    reduced = [f.to_json() for f in compare_templates("S", project_template(old), new).findings]
    assert whole == reduced
    assert {(f["logical_id"], f["kind"]) for f in whole} == {("Sg", "replace"), ("Fs", "replace")}


def _login_cluster(args: list[str]) -> dict[str, object]:
    action = {"OnNodeStart": {"Script": "s3://b/k.sh", "Args": args}}
    config = {"LoginNodes": {"Pools": [{"Name": "login", "Count": 1, "CustomActions": action}]}}
    props = {"ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:p", "ClusterConfiguration": config}
    return {"Resources": {"Cluster": {"Type": "Custom::PclusterCluster", "Properties": props}}}


def test_a_login_pools_start_action_is_kept_and_its_change_refused():
    # aws-parallelcluster 3.16.1 LoginNodesCustomActionsSchema: OnNodeStart/OnNodeConfigured UpdatePolicy.UNSUPPORTED
    old = project_template(_login_cluster(["v1"]))
    pool = old["Resources"]["Cluster"]["Properties"]["ClusterConfiguration"]["LoginNodes"]["Pools"][0]
    assert pool == {"CustomActions": {"OnNodeStart": {"Script": "s3://b/k.sh", "Args": ["v1"]}}}
    (finding,) = compare_templates("S", old, _login_cluster(["v2"])).findings
    assert (finding.kind, finding.prop, finding.fails) == (
        "refused",
        "ClusterConfiguration/LoginNodes/Pools/0/CustomActions/OnNodeStart/Args/0",
        True,
    )
