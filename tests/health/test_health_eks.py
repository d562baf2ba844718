"""EKS node health: GPU nodes join with the node-checks taint, the GPU add-ons tolerate it, a gate DaemonSet (RBAC for
nodes get/patch only, an own-node ValidatingAdmissionPolicy) lifts it when the node's checks pass and keeps it with
the failing check as an annotation otherwise (run in a sandbox with a stub Kubernetes API); the node monitoring agent
add-on comes with node auto repair; options off -> none of it."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.assertions import Match, Template

from fmconstructs.eks import (
    DEFAULT_KUBERNETES_VERSION,
    GpuEksCluster,
    dcgm_exporter_values,
    efa_device_plugin_values,
    nvidia_device_plugin_values,
    nvidia_dra_driver_values,
)
from fmconstructs.eks.health import (
    NODE_CHECKS_ANNOTATION,
    NODE_CHECKS_GROUP_LABEL,
    NODE_CHECKS_IMAGE,
    NODE_CHECKS_TAINT_KEY,
    NODE_MONITORING_AGENT_ADDON_NAME,
    node_checks_daemonset_manifests,
    node_checks_policy_manifests,
    node_checks_rbac_manifests,
    node_monitoring_agent_configuration,
)
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.health import NodeCheckSpec, NodeHealthOptions, metric_names, render_slurm_boot_gate
from fmconstructs.health.install import dcgm_host_commands
from fmconstructs.health.kubernetes_gate import render_kubernetes_node_gate
from fmconstructs.health.metric_names import NODE_EXPORTER_TEXTFILE_DIR
from fmconstructs.storage import LustreFileSystem

from tests.conftest import new_scene, require_tool
from tests.support.health_checks import Run, Sandbox

K8S_VERSION = DEFAULT_KUBERNETES_VERSION.version
NODE_CHECKS_TOLERATION = {"key": NODE_CHECKS_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
KUBERNETES_RESOURCE = "Custom::AWSCDK-EKS-KubernetesResource"


# --- the CDK wiring ---------------------------------------------------------------------------------------------------


def synth(**group_options: Any) -> Template:
    scene = new_scene("EksHealth")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", max_nodes=2, **group_options)
    return Template.from_stack(scene.stack)


@pytest.fixture(scope="module")
def default_template() -> Template:
    return synth()


@pytest.fixture(scope="module")
def off_template() -> Template:
    return synth(node_checks=False, enable_node_auto_repair=False)


def gpu_nodegroup(template: Template) -> dict[str, Any]:
    groups = template.find_resources(
        "AWS::EKS::Nodegroup", {"Properties": {"AmiType": Match.string_like_regexp("NVIDIA")}}
    )
    assert len(groups) == 1
    return next(iter(groups.values()))


def manifests(template: Template) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for resource in template.find_resources(KUBERNETES_RESOURCE).values():
        manifest = resource["Properties"]["Manifest"]
        if isinstance(manifest, str):
            out.extend(json.loads(manifest))
    return out


def test_gpu_nodes_join_with_the_node_checks_taint_and_the_group_label(default_template: Template) -> None:
    props = gpu_nodegroup(default_template)["Properties"]
    assert props["Taints"] == [
        {"Key": "nvidia.com/gpu", "Value": "true", "Effect": "NO_SCHEDULE"},
        {"Key": NODE_CHECKS_TAINT_KEY, "Value": "pending", "Effect": "NO_SCHEDULE"},
    ]
    assert props["Labels"][NODE_CHECKS_GROUP_LABEL].startswith("p5-48xlarge-")


def test_user_taints_keep_the_node_checks_taint_once(scene: Any) -> None:
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    own = eks.TaintSpec(key=NODE_CHECKS_TAINT_KEY, value="pending", effect=eks.TaintEffect.NO_SCHEDULE)
    group = cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", max_nodes=1, taints=[own])
    assert [t.key for t in group.taints] == [NODE_CHECKS_TAINT_KEY]
    none = cluster.add_gpu_node_group("P5b", instance_type="p5.48xlarge", max_nodes=1, taints=[])
    assert [t.key for t in none.taints] == [NODE_CHECKS_TAINT_KEY]


def test_the_group_gets_its_gate_daemonset_and_waits_for_it(default_template: Template) -> None:
    kinds = [(m["kind"], m["metadata"]["name"]) for m in manifests(default_template)]
    assert ("ServiceAccount", "fmconstructs-node-checks") in kinds
    assert ("ClusterRole", "fmconstructs-node-checks") in kinds
    assert ("ValidatingAdmissionPolicy", "fmconstructs-node-checks") in kinds
    daemon_sets = [m for m in manifests(default_template) if m["kind"] == "DaemonSet"]
    assert len(daemon_sets) == 1
    label = gpu_nodegroup(default_template)["Properties"]["Labels"][NODE_CHECKS_GROUP_LABEL]
    assert daemon_sets[0]["spec"]["template"]["spec"]["nodeSelector"] == {NODE_CHECKS_GROUP_LABEL: label}
    gate = next(
        r
        for r in default_template.find_resources(KUBERNETES_RESOURCE)
        if "FmNodeChecks" in r and label.replace("-", "") in r
    )
    assert gate in gpu_nodegroup(default_template)["DependsOn"]


def test_the_gate_script_is_rendered_for_the_group(default_template: Template) -> None:
    config_map = next(m for m in manifests(default_template) if m["kind"] == "ConfigMap")
    script = config_map["data"]["node-gate.sh"]
    assert "fmconstructs node checks (boot) for p5.48xlarge" in script
    assert f'TAINT_KEY="{NODE_CHECKS_TAINT_KEY}"' in script
    assert "dcgmi diag -r 2" in script  # the Slurm gates' default level (the EKS AMI gets DCGM at boot)


def _gate_script(template: Template) -> str:
    config_map = next(m for m in manifests(template) if m["kind"] == "ConfigMap")
    script: str = config_map["data"]["node-gate.sh"]
    return script


def _check_list(script: str) -> str:
    match = re.search(r"fmconstructs node checks \(boot\) on [^:]+: ([a-z, -]+) \(budget", script)
    assert match, script[:400]
    return match.group(1)


@pytest.mark.parametrize(
    "options",
    [NodeHealthOptions(), NodeHealthOptions(dcgm_level=1), NodeHealthOptions(dcgm_level=None)],
    ids=["default", "dcgm-1", "no-dcgm"],
)
def test_the_eks_gate_runs_the_slurm_gates_boot_checks_for_the_same_options(
    scene: Any, options: NodeHealthOptions
) -> None:
    """The defect: the EKS gate ran no DCGM (dcgm_level=None hard-coded) whatever the options said."""
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", max_nodes=1, node_checks=options)
    eks_gate = _gate_script(Template.from_stack(scene.stack))
    spec = options.spec_for("p5.48xlarge", efa_interfaces=group.efa_interface_count)
    slurm_gate = render_slurm_boot_gate(spec, slurm_bin_dir="/opt/slurm/bin")
    assert _check_list(eks_gate) == _check_list(slurm_gate)
    assert ("dcgm-diag" in _check_list(eks_gate)) is (options.dcgm_level is not None)
    assert ("datacenter-gpu-manager-4" in eks_gate) is (options.dcgm_level is not None)  # DCGM on the host first
    assert group.launch_template.bootstrap.is_empty  # nothing added to the user data


def test_the_dcgm_step_installs_dcgm_only_when_missing_and_never_fails_the_boot() -> None:
    script = "\n".join(dcgm_host_commands())
    assert script.startswith("if ! command -v dcgmi >/dev/null 2>&1; then")
    assert 'dnf install -y --setopt=install_weak_deps=True "datacenter-gpu-manager-4-cuda${cuda:-12}" ||' in script
    assert "systemctl enable --now nvidia-dcgm ||" in script


def test_the_dcgm_step_passes_shellcheck(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    path = tmp_path / "dcgm.sh"
    path.write_text("#!/bin/bash\n" + "\n".join(dcgm_host_commands()) + "\n")
    result = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def test_a_lustre_host_mount_is_checked_by_the_gate(scene: Any) -> None:
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", max_nodes=1)
    file_system = LustreFileSystem(
        scene.stack, "Fsx", vpc=scene.vpc, subnet=scene.vpc.private_subnets[0], storage_capacity_gib=1200
    )
    group.add_lustre_client(file_system, mount_point="/fsx")
    assert 'findmnt -t lustre -n "/fsx"' in _gate_script(Template.from_stack(scene.stack))


def test_disabled_options_mean_no_gate(scene: Any) -> None:
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group(
        "P5", instance_type="p5.48xlarge", max_nodes=1, node_checks=NodeHealthOptions(enabled=False)
    )
    assert group.node_checks is False and group.node_health is None
    assert NODE_CHECKS_TAINT_KEY not in [t.key for t in group.taints]


def test_auto_repair_installs_the_node_monitoring_agent_without_waiting_for_it(default_template: Template) -> None:
    addons = default_template.find_resources(
        "AWS::EKS::Addon", {"Properties": {"AddonName": NODE_MONITORING_AGENT_ADDON_NAME}}
    )
    assert len(addons) == 1
    agent_id, agent = next(iter(addons.items()))
    group = gpu_nodegroup(default_template)
    assert group["Properties"]["NodeRepairConfig"] == {"Enabled": True}
    assert agent_id not in group["DependsOn"]  # a DaemonSet: it reaches nodes that joined before it
    assert json.loads(agent["Properties"]["ConfigurationValues"]) == node_monitoring_agent_configuration()


def test_options_off_mean_no_taint_no_gate_no_agent(off_template: Template) -> None:
    props = gpu_nodegroup(off_template)["Properties"]
    assert props["Taints"] == [{"Key": "nvidia.com/gpu", "Value": "true", "Effect": "NO_SCHEDULE"}]
    assert NODE_CHECKS_GROUP_LABEL not in props["Labels"]
    assert props.get("NodeRepairConfig", {"Enabled": False}) == {"Enabled": False}
    assert manifests(off_template) == []
    # Only the cluster's own add-ons (vpc-cni on its Pod Identity role and the agent): no node monitoring agent.
    names = {r["Properties"]["AddonName"] for r in off_template.find_resources("AWS::EKS::Addon").values()}
    assert "eks-node-monitoring-agent" not in names


def test_gpu_addons_install_the_agent_once(scene: Any) -> None:
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    addons = cluster.add_gpu_addons()
    cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", max_nodes=1)
    assert addons.node_monitoring_agent is cluster.add_node_monitoring_agent()
    Template.from_stack(scene.stack).resource_properties_count_is(
        "AWS::EKS::Addon", {"AddonName": NODE_MONITORING_AGENT_ADDON_NAME}, 1
    )


@pytest.mark.parametrize(("option", "value"), [("node_checks", "yes"), ("node_checks", None), ("node_checks", 1)])
def test_node_checks_option_is_a_bool(scene: Any, option: str, value: object) -> None:
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises((FmTypeError, FmValidationError), match=option):
        cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", max_nodes=1, **{option: value})


def test_agent_version_must_be_a_version(scene: Any) -> None:
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises(FmValidationError, match="addon_version"):
        cluster.add_node_monitoring_agent(addon_version="v1.7.0 \n")


# --- tolerations -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tolerations",
    [
        nvidia_device_plugin_values()["tolerations"],
        efa_device_plugin_values(["p5.48xlarge"])["tolerations"],
        dcgm_exporter_values()["tolerations"],
        nvidia_dra_driver_values()["kubeletPlugin"]["tolerations"],
        node_monitoring_agent_configuration()["dcgmAgent"]["tolerations"],
        nvidia_device_plugin_values(hyperpod_instance_types=["ml.p5.48xlarge"])["tolerations"],
    ],
    ids=["nvidia-device-plugin", "efa-device-plugin", "dcgm-exporter", "dra-kubelet-plugin", "nma-dcgm", "hyperpod"],
)
def test_gpu_addons_tolerate_the_node_checks_taint(tolerations: list[dict[str, str]]) -> None:
    assert NODE_CHECKS_TOLERATION in tolerations


def test_the_gate_tolerates_every_taint() -> None:
    daemon_set = node_checks_daemonset_manifests("p5-48xlarge-0123abcd", "#!/bin/bash\n")[1]
    assert daemon_set["spec"]["template"]["spec"]["tolerations"] == [{"operator": "Exists"}]


# --- manifests ---------------------------------------------------------------------------------------------------------


def all_manifests() -> list[dict[str, Any]]:
    spec = NodeCheckSpec.for_instance_type("p5.48xlarge", dcgm_level=None)
    script = render_kubernetes_node_gate(spec, taint_key=NODE_CHECKS_TAINT_KEY, annotation_key=NODE_CHECKS_ANNOTATION)
    return [
        *node_checks_rbac_manifests(),
        *node_checks_policy_manifests(),
        *node_checks_daemonset_manifests("p5-48xlarge-0123abcd", script),
    ]


@pytest.mark.parametrize("index", range(7))
def test_manifests_validate_against_kubernetes_schemas(index: int) -> None:
    manifest = all_manifests()[index]
    assert kubernetes_validate.validate(manifest, K8S_VERSION, strict=True) == K8S_VERSION


def test_rbac_is_get_and_patch_on_nodes_only() -> None:
    role = next(m for m in node_checks_rbac_manifests() if m["kind"] == "ClusterRole")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]
    binding = next(m for m in node_checks_rbac_manifests() if m["kind"] == "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "fmconstructs-node-checks", "namespace": "kube-system"}
    ]


def test_admission_policy_limits_the_service_account_to_its_own_node_and_taint() -> None:
    policy, binding = node_checks_policy_manifests()
    spec = policy["spec"]
    assert spec["matchConditions"][0]["expression"] == (
        "request.userInfo.username == 'system:serviceaccount:kube-system:fmconstructs-node-checks'"
    )
    expressions = [v["expression"] for v in spec["validations"]]
    assert (
        "request.userInfo.extra['authentication.kubernetes.io/node-name'].exists(n, n == object.metadata.name)"
        in (expressions[0])
    )
    assert f".filter(t, t.key != '{NODE_CHECKS_TAINT_KEY}')" in expressions[1]
    # uncordon only a node remediation marked; never cordon; of the other annotations only remediation's two may go
    mark = metric_names.CORDONED_BY_ANNOTATION
    assert f"k == '{mark}' && " in expressions[3] and "== 'remediation'" in expressions[3]
    assert expressions[3].startswith("(has(object.spec.unschedulable) && object.spec.unschedulable) == ")
    assert f"k in ['{mark}', '{metric_names.REMEDIATION_REASON_ANNOTATION}'] && !(k in " in expressions[4]
    assert spec["failurePolicy"] == "Fail"
    assert binding["spec"] == {"policyName": "fmconstructs-node-checks", "validationActions": ["Deny"]}


def test_gate_pod_enters_the_host_with_the_minimal_settings() -> None:
    pod = node_checks_daemonset_manifests("p5-48xlarge-0123abcd", "#!/bin/bash\n")[1]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["hostPID"] is True and "hostNetwork" not in pod
    assert container["securityContext"] == {"privileged": True}
    assert container["image"] == NODE_CHECKS_IMAGE
    assert (
        "nsenter --target 1 --mount --uts --ipc --net --pid -- /bin/bash -s < /etc/fmconstructs/node-gate.sh"
        in (container["command"][2])
    )
    # The only host path: node exporter's textfile directory, created by the kubelet, at the same path (the checks
    # run in the host's mount namespace and write there).
    assert [v for v in pod["volumes"] if "hostPath" in v] == [
        {"name": "textfile", "hostPath": {"path": NODE_EXPORTER_TEXTFILE_DIR, "type": "DirectoryOrCreate"}}
    ]
    assert {"name": "textfile", "mountPath": NODE_EXPORTER_TEXTFILE_DIR} in container["volumeMounts"]


def test_gate_without_metrics_mounts_no_host_path() -> None:
    pod = node_checks_daemonset_manifests("p5-48xlarge-0123abcd", "#!/bin/bash\n", textfile_dir=None)[1]
    assert [v for v in pod["spec"]["template"]["spec"]["volumes"] if "hostPath" in v] == []


# --- the gate, in a sandbox with a stub Kubernetes API (curl) -------------------------------------------------------

# The node object lives in $NODE_STATE; PATCH applies a merge patch, or a JSON patch (RFC 6902 test/remove/add, the
# paths as RFC 6901 pointers): a failed "test" or a missing path fails the call (curl --fail: exit 22). FAKE_PATCH_FAILS
# fails that many JSON patches first (a concurrent change).
CURL = r"""#!/bin/bash
method=GET; type=""; body=""; url=""
while [ $# -gt 0 ]; do
  case "$1" in
    -X) method="$2"; shift ;;
    -H) case "$2" in "Content-Type: "*) type="${2#Content-Type: }" ;; esac; shift ;;
    --data-binary) body="$2"; shift ;;
    --cacert|--max-time) shift ;;
    -*) ;;
    *) url="$1" ;;
  esac
  shift
done
echo "curl ${method} ${url} ${type} ${body}" >>"$CALLS"
[ -n "${FAKE_API_DOWN:-}" ] && { echo "curl: (7) Failed to connect" >&2; exit 7; }
case "${method} ${type}" in
  "GET ") cat "$NODE_STATE" ;;
  "PATCH application/merge-patch+json") jq --argjson p "$body" '. * $p' "$NODE_STATE" >"$NODE_STATE.new" ;;
  "PATCH application/json-patch+json")
    failed="$NODE_STATE.failed"
    if [ "$(cat "$failed" 2>/dev/null || echo 0)" -lt "${FAKE_PATCH_FAILS:-0}" ]; then
      echo $(( $(cat "$failed" 2>/dev/null || echo 0) + 1 )) >"$failed"
      echo "curl: (22) The requested URL returned error: 422" >&2; exit 22
    fi
    jq --argjson p "$body" '
      def steps: split("/")[1:] | map(gsub("~1"; "/") | gsub("~0"; "~") | (tonumber? // .));
      reduce $p[] as $op (.;
        ($op.path | steps) as $at
        | if $op.op == "test" then (if getpath($at) == $op.value then . else error("test failed") end)
          elif $op.op == "remove" then (if getpath($at) == null then error("no such path") else delpaths([$at]) end)
          elif $op.op == "add" and ($at | last) == "-" then setpath($at[:-1]; getpath($at[:-1]) + [$op.value])
          elif $op.op == "add" then setpath($at; $op.value)
          else error("unsupported op") end)' "$NODE_STATE" >"$NODE_STATE.new" 2>/dev/null ||
      { rm -f "$NODE_STATE.new"; echo "curl: (22) The requested URL returned error: 422" >&2; exit 22; } ;;
  *) exit 22 ;;
esac
[ -f "$NODE_STATE.new" ] && mv "$NODE_STATE.new" "$NODE_STATE"
exit 0
"""

NODE = "ip-10-0-0-5.ec2.internal"


class Node(Sandbox):
    def __init__(
        self,
        tmp_path: Path,
        taints: list[dict[str, str]] | None = None,
        *,
        unschedulable: bool = False,
        annotations: dict[str, str] | None = None,
    ) -> None:
        super().__init__(tmp_path, {"curl": CURL, "sleep": "#!/bin/bash\nexit 0\n"})
        self.state = tmp_path / "node.json"
        if taints is None:
            taints = [
                {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                {"key": NODE_CHECKS_TAINT_KEY, "value": "pending", "effect": "NoSchedule"},
            ]
        node: dict[str, Any] = {
            "metadata": {"name": NODE, "annotations": {"node.alpha.kubernetes.io/ttl": "0", **(annotations or {})}},
            "spec": {"taints": taints, **({"unschedulable": True} if unschedulable else {})},
        }
        self.state.write_text(json.dumps(node))

    def gate(self, spec: NodeCheckSpec | None = None, host_setup: tuple[str, ...] = (), **env: str) -> Run:
        spec = spec or NodeCheckSpec.for_instance_type("p5.48xlarge", dcgm_level=None, lustre_mount_point="/fsx")
        script = render_kubernetes_node_gate(
            spec, taint_key=NODE_CHECKS_TAINT_KEY, annotation_key=NODE_CHECKS_ANNOTATION, host_setup=host_setup
        )
        return self.run(
            script,
            NODE_STATE=str(self.state),
            NODE_NAME=NODE,
            KUBERNETES_SERVICE_HOST="172.20.0.1",
            KUBERNETES_SERVICE_PORT="443",
            KUBE_TOKEN="token",
            KUBE_CA_PEM="-----BEGIN CERTIFICATE-----",
            **env,
        )

    @property
    def node(self) -> dict[str, Any]:
        node: dict[str, Any] = json.loads(self.state.read_text())
        return node

    @property
    def taint_keys(self) -> list[str]:
        return [t["key"] for t in self.node["spec"].get("taints", [])]


@pytest.fixture(autouse=True)
def _jq() -> None:
    require_tool("jq", "jq")


def test_a_passing_node_loses_only_its_node_checks_taint(tmp_path: Path) -> None:
    node = Node(tmp_path)
    run = node.gate()
    assert run.rc == 0, run.out
    assert node.taint_keys == ["nvidia.com/gpu"]
    assert node.node["metadata"]["annotations"][NODE_CHECKS_ANNOTATION].startswith("PASS ")
    patches = [c for c in run.calls if c.startswith("curl PATCH")]
    assert patches[-1].endswith(
        '[{"op":"test","path":"/spec/taints/1/key","value":"fmconstructs.io/node-checks"},'
        '{"op":"remove","path":"/spec/taints/1"}]'
    )
    assert f"https://172.20.0.1:443/api/v1/nodes/{NODE}" in patches[-1]
    assert f"GATE: {NODE} passed its checks" in run.log


def test_a_failing_node_keeps_the_taint_with_the_failing_check_annotated(tmp_path: Path) -> None:
    node = Node(tmp_path)
    run = node.gate(FAKE_GPU_COUNT="7")
    assert run.rc == 1
    assert node.taint_keys == ["nvidia.com/gpu", NODE_CHECKS_TAINT_KEY]
    assert node.node["metadata"]["annotations"][NODE_CHECKS_ANNOTATION] == "FAIL gpu-count: 7 GPUs visible, expected 8"
    assert not [c for c in run.calls if "json-patch" in c]
    assert f"{NODE_CHECKS_TAINT_KEY} kept" in run.log


@pytest.mark.parametrize(
    ("env", "check"),
    [
        ({"FAKE_EFA_COUNT": "31"}, "efa-devices"),
        ({"FAKE_LUSTRE_RC": "1"}, "lustre-mount"),
        ({"FAKE_FM_STATE": "failed"}, "fabric-manager"),
    ],
)
def test_every_failing_check_keeps_the_taint(tmp_path: Path, env: dict[str, str], check: str) -> None:
    node = Node(tmp_path)
    assert node.gate(**env).rc == 1
    assert NODE_CHECKS_TAINT_KEY in node.taint_keys
    assert node.node["metadata"]["annotations"][NODE_CHECKS_ANNOTATION].startswith(f"FAIL {check}: ")


REMEDIATION_CORDON = {
    metric_names.CORDONED_BY_ANNOTATION: metric_names.CORDONED_BY_REMEDIATION,
    metric_names.REMEDIATION_REASON_ANNOTATION: "fmconstructs: remediation reset-xid: Xid 119",
}


def test_a_node_remediation_cordoned_is_uncordoned_when_its_checks_pass(tmp_path: Path) -> None:
    """After remediation's reboot (it put the taint back): checks pass -> cordon, mark and reason gone, then the
    taint; the patch tests the mark and the cordon before it removes them."""
    node = Node(tmp_path, unschedulable=True, annotations=REMEDIATION_CORDON)
    run = node.gate()
    assert run.rc == 0, run.out
    assert "unschedulable" not in node.node["spec"]
    assert node.taint_keys == ["nvidia.com/gpu"]
    notes = node.node["metadata"]["annotations"]
    assert not set(REMEDIATION_CORDON) & set(notes)
    assert notes[NODE_CHECKS_ANNOTATION].startswith("PASS ")
    patches = [c.split(" ", 4)[-1] for c in run.calls if "json-patch" in c]
    uncordon = json.loads(patches[0])
    assert uncordon[:2] == [
        {"op": "test", "path": "/metadata/annotations/fmconstructs.io~1cordoned-by", "value": "remediation"},
        {"op": "test", "path": "/spec/unschedulable", "value": True},
    ]
    assert {"op": "remove", "path": "/spec/unschedulable"} in uncordon
    assert json.loads(patches[1])[1] == {"op": "remove", "path": "/spec/taints/1"}  # uncordon first, then the taint
    assert f"GATE: {NODE} uncordoned" in run.log


def test_an_operators_cordon_is_never_lifted(tmp_path: Path) -> None:
    node = Node(tmp_path, unschedulable=True)
    run = node.gate()
    assert run.rc == 0, run.out
    assert node.node["spec"]["unschedulable"] is True
    assert node.taint_keys == ["nvidia.com/gpu"]
    assert [c for c in run.calls if "json-patch" in c and "unschedulable" in c] == []


def test_a_node_failing_after_remediations_reboot_stays_cordoned_and_tainted(tmp_path: Path) -> None:
    node = Node(tmp_path, unschedulable=True, annotations=REMEDIATION_CORDON)
    run = node.gate(FAKE_GPU_COUNT="7")
    assert run.rc == 1
    assert node.node["spec"]["unschedulable"] is True
    assert node.node["metadata"]["annotations"][metric_names.CORDONED_BY_ANNOTATION] == "remediation"
    assert NODE_CHECKS_TAINT_KEY in node.taint_keys
    assert not [c for c in run.calls if "json-patch" in c]


def test_a_refused_uncordon_is_read_again_and_retried(tmp_path: Path) -> None:
    node = Node(tmp_path, unschedulable=True, annotations=REMEDIATION_CORDON)
    run = node.gate(FAKE_PATCH_FAILS="1")
    assert run.rc == 0, run.out
    assert "unschedulable" not in node.node["spec"] and node.taint_keys == ["nvidia.com/gpu"]
    assert "uncordoning" in run.log and "failed (attempt 1)" in run.log


def test_a_cordon_that_cannot_be_lifted_keeps_the_taint(tmp_path: Path) -> None:
    node = Node(tmp_path, unschedulable=True, annotations=REMEDIATION_CORDON)
    run = node.gate(FAKE_PATCH_FAILS="9")
    assert run.rc == 2
    assert node.node["spec"]["unschedulable"] is True and NODE_CHECKS_TAINT_KEY in node.taint_keys


DNF = '#!/bin/bash\necho "dnf $*" >>"$CALLS"\nexit "${FAKE_DNF_RC:-0}"\n'
DCGM_SPEC = NodeCheckSpec.for_instance_type("p5.48xlarge", dcgm_level=2, lustre_mount_point="/fsx")


def test_with_dcgm_on_the_host_the_gate_runs_its_diagnostics_and_installs_nothing(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.add_stub("dnf", DNF)
    node.add_stub("nv-hostengine", "#!/bin/bash\n")
    run = node.gate(DCGM_SPEC, tuple(dcgm_host_commands()))
    assert run.rc == 0, run.out
    assert not [c for c in run.calls if c.startswith("dnf")]
    assert "systemctl enable --now nvidia-dcgm" in run.calls
    assert "dcgmi diag -r 2" in run.calls
    assert run.calls.index("systemctl enable --now nvidia-dcgm") < run.calls.index("dcgmi diag -r 2")


def test_without_dcgm_the_gate_installs_it_and_a_failed_install_fails_dcgm_diag(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.add_stub("dnf", DNF)
    (node.root / "bin" / "dcgmi").unlink()
    run = node.gate(DCGM_SPEC, tuple(dcgm_host_commands()), FAKE_DNF_RC="1")
    assert run.rc == 1
    assert "dnf install -y --setopt=install_weak_deps=True datacenter-gpu-manager-4-cuda12" in run.calls
    assert node.node["metadata"]["annotations"][NODE_CHECKS_ANNOTATION].startswith("FAIL dcgm-diag: ")
    assert NODE_CHECKS_TAINT_KEY in node.taint_keys


def test_the_host_set_up_runs_only_when_the_checks_run(tmp_path: Path) -> None:
    node = Node(tmp_path, taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])
    node.add_stub("dnf", DNF)
    run = node.gate(DCGM_SPEC, ("dnf check-update",))
    assert run.rc == 0 and not [c for c in run.calls if c.startswith("dnf")]


def test_a_node_without_the_taint_is_not_checked_again(tmp_path: Path) -> None:
    node = Node(tmp_path, taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])
    run = node.gate(FAKE_GPU_COUNT="7")
    assert run.rc == 0
    assert not [c for c in run.calls if c.startswith("nvidia-smi")]
    assert not [c for c in run.calls if c.startswith("curl PATCH")]


def test_an_unreachable_api_keeps_the_taint_and_runs_no_checks(tmp_path: Path) -> None:
    node = Node(tmp_path)
    run = node.gate(FAKE_API_DOWN="1")
    assert run.rc == 2
    assert NODE_CHECKS_TAINT_KEY in node.taint_keys
    assert not [c for c in run.calls if c.startswith("nvidia-smi")]


def test_the_gate_passes_shellcheck(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    spec = NodeCheckSpec.for_instance_type("p5.48xlarge", dcgm_level=2, lustre_mount_point="/fsx")
    script = tmp_path / "gate.sh"
    script.write_text(
        render_kubernetes_node_gate(
            spec,
            taint_key=NODE_CHECKS_TAINT_KEY,
            annotation_key=NODE_CHECKS_ANNOTATION,
            host_setup=dcgm_host_commands(),
        )
    )
    result = subprocess.run([shellcheck, "-s", "bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"taint_key": "node-checks"}, "taint_key"),
        ({"taint_key": "Bad Key/x"}, "taint_key"),
        ({"annotation_key": "fmconstructs.io/"}, "annotation_key"),
        ({"annotation_key": 'a.io/x"; rm -rf /'}, "annotation_key"),
        ({"taint_key": None}, "taint_key"),
    ],
)
def test_gate_refuses_keys_that_are_not_kubernetes_keys(kwargs: dict[str, Any], parameter: str) -> None:
    spec = NodeCheckSpec.for_instance_type("p5.48xlarge", dcgm_level=None)
    keys = {"taint_key": NODE_CHECKS_TAINT_KEY, "annotation_key": NODE_CHECKS_ANNOTATION, **kwargs}
    with pytest.raises((FmTypeError, FmValidationError), match=parameter):
        render_kubernetes_node_gate(spec, **keys)


def test_the_pod_command_passes_shellcheck(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    pod = node_checks_daemonset_manifests("p5-48xlarge-0123abcd", "#!/bin/bash\n")[1]["spec"]["template"]["spec"]
    command = pod["containers"][0]["command"]
    assert command[:2] == ["sh", "-c"]
    script = tmp_path / "wrapper.sh"
    script.write_text("#!/bin/sh\n" + command[2] + "\n")
    result = subprocess.run([shellcheck, "-s", "sh", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout
