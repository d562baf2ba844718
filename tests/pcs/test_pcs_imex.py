"""NVIDIA IMEX on PCS UltraServers: the cluster's Prolog and PrologFlags, the prolog script, exclusive queues.

Source for every expectation here: AWS PCS User Guide "Configure UltraServer instances"
(https://docs.aws.amazon.com/pcs/latest/userguide/capacity-blocks-nvidia-imex.html): set the cluster's ``Prolog``
and ``PrologFlags=Alloc,NoHold``; the prolog skips non-exclusive jobs and non-UltraServer instances, creates
``/dev/nvidia-caps-imex-channels/channel0``, writes the job's node addresses to ``nodes_config.cfg`` and restarts
``nvidia-imex``; UltraServer node groups go in dedicated, exclusive queues whose node groups' instance counts have
power-of-2 ratios.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from fmconstructs import CpuArchitecture, FmValidationError, UltraServerCapacityBlock
from fmconstructs.pcs import (
    IMEX_PROLOG_PATH,
    ClusterSetting,
    PcsAmi,
    PcsCluster,
    PcsGpuNodeGroup,
    QueueSetting,
    SlurmVersion,
)
from fmconstructs.pcs.user_data import IMEX_CHANNEL_PATH, imex_prolog_install_commands, imex_prolog_script

from tests.conftest import new_scene

CLUSTER = "AWS::PCS::Cluster"
QUEUE = "AWS::PCS::Queue"
GB200_AMI = PcsAmi.from_image_id("ami-0123456789abcdef0", architecture=CpuArchitecture.ARM64)
X86_AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
BLOCK_ID = "cr-0123456789abcdef0"


def _cluster(**props: object) -> PcsCluster:
    scene = new_scene()
    return PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, **props)  # type: ignore[arg-type]


def _ultraserver_block(ultraserver_type: str = "u-p6e-gb200x72", count: int = 1) -> UltraServerCapacityBlock:
    return UltraServerCapacityBlock(reservation_id=BLOCK_ID, ultraserver_type=ultraserver_type, ultraserver_count=count)


def _gb200(cluster: PcsCluster, id: str = "Gb200", **block: object) -> PcsGpuNodeGroup:
    capacity = _ultraserver_block(**block)  # type: ignore[arg-type]
    return cluster.add_gpu_node_group(
        id,
        instance_type="p6e-gb200.36xlarge",
        ami=GB200_AMI,
        capacity=capacity,
        max_nodes=capacity.max_instances,
    )


# --- the cluster: Prolog AND PrologFlags ------------------------------------------------------------------------------


def test_imex_sets_prolog_and_prolog_flags_alloc_nohold():
    cluster = _cluster(enable_imex=True)
    assert cluster.slurm_settings == {
        ClusterSetting.PROLOG: IMEX_PROLOG_PATH,
        ClusterSetting.PROLOG_FLAGS: "Alloc,NoHold",
        ClusterSetting.SCHEDULER_PARAMETERS: "nohold_on_prolog_fail",  # the IMEX prolog is the library's
    }
    Template.from_stack(cdk.Stack.of(cluster)).has_resource_properties(
        CLUSTER,
        {
            "SlurmConfiguration": Match.object_like(
                {
                    "SlurmCustomSettings": [
                        {"ParameterName": "Prolog", "ParameterValue": IMEX_PROLOG_PATH},
                        {"ParameterName": "PrologFlags", "ParameterValue": "Alloc,NoHold"},
                        {"ParameterName": "SchedulerParameters", "ParameterValue": "nohold_on_prolog_fail"},
                    ]
                }
            )
        },
    )


def test_imex_merges_the_users_prolog_flags():
    cluster = _cluster(enable_imex=True, slurm_settings={ClusterSetting.PROLOG_FLAGS: "deferbatch,Alloc"})
    assert cluster.slurm_settings[ClusterSetting.PROLOG_FLAGS] == "Alloc,NoHold,DeferBatch"


def test_prolog_flags_without_imex_are_passed_through():
    cluster = _cluster(slurm_settings={ClusterSetting.PROLOG_FLAGS: "Alloc,Contain"})
    assert cluster.slurm_settings == {ClusterSetting.PROLOG_FLAGS: "Alloc,Contain"}


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"slurm_settings": {ClusterSetting.PROLOG_FLAGS: "Alloc,Bogus"}}, r"each one of 'Alloc', 'Contain'"),
        ({"slurm_settings": {ClusterSetting.PROLOG_FLAGS: "Alloc,alloc"}}, r"without repeats \(Alloc twice\)"),
        ({"slurm_settings": {ClusterSetting.PROLOG_FLAGS: "NoHold,X11"}}, r"without X11 when NoHold is set"),
        (
            {"enable_imex": True, "slurm_settings": {ClusterSetting.PROLOG_FLAGS: "Contain"}},
            r"slurm_settings\[PrologFlags\] must be PrologFlags without Contain when NoHold is set",
        ),
        (
            {"enable_imex": True, "slurm_settings": {ClusterSetting.PROLOG_FLAGS: "RunInJob"}},
            r"without RunInJob when NoHold is set",
        ),
        (
            {"enable_imex": True, "slurm_settings": {ClusterSetting.PROLOG_FLAGS: cdk.Token.as_string(cdk.Aws.REGION)}},
            r"slurm_settings\[PrologFlags\] must be a literal value \(fmconstructs adds flags to it\)",
        ),
    ],
)
def test_rejects_invalid_prolog_flags(props, message):
    with pytest.raises(FmValidationError, match=message):
        _cluster(**props)


# --- the prolog script ------------------------------------------------------------------------------------------------


def test_prolog_follows_the_pcs_guide_steps():
    script = imex_prolog_script()
    assert 'ALLOWED_INSTANCE_TYPES="^(p6e-gb200|p6e-gb300)"' in script
    assert '"${SLURM_JOB_OVERSUBSCRIBE:-}" =~ ^(NO|TOPO)$' in script
    assert "systemctl is-enabled" in script
    assert IMEX_CHANNEL_PATH == "/dev/nvidia-caps-imex-channels/channel0"
    assert 'mknod -m 666 "${IMEX_CHANNELS_DIR}/channel0" c "$major" 0' in script
    # ${root}: the shared renderer's sandbox prefix (FMCONSTRUCTS_ROOT, empty on nodes)
    assert 'IMEX_NODES_CONFIG="${FMCONSTRUCTS_IMEX_NODES_CONFIG:-${root}/etc/nvidia-imex/nodes_config.cfg}"' in script


def test_prolog_puts_the_clusters_slurm_first_on_path():
    # Slurm runs prologs without a search path (Slurm "Prolog and Epilog Guide"); PCS AMIs carry Slurm under
    # /opt/aws/pcs/scheduler/slurm-<version>.
    commands = "\n".join(imex_prolog_install_commands(slurm_version="25.05"))
    assert 'PATH="/opt/aws/pcs/scheduler/slurm-25.05/bin:' in commands


def test_node_groups_install_the_prolog_for_the_clusters_version():
    cluster = _cluster(enable_imex=True, slurm_version=SlurmVersion.V25_05)
    group = _gb200(cluster)
    assert "/opt/aws/pcs/scheduler/slurm-25.05/bin" in group.user_data.render()
    assert f"cat > {IMEX_PROLOG_PATH} <<'FMCONSTRUCTS_EOF'" in group.user_data.render()


_STUBS = {
    "curl": """#!/bin/bash
case "$*" in
  *api/token*) echo token ;;
  *instance-type*) echo "${FAKE_INSTANCE_TYPE}" ;;
esac
""",
    "systemctl": """#!/bin/bash
echo "systemctl $* config=$(cat "${FMCONSTRUCTS_IMEX_NODES_CONFIG}" 2>/dev/null | tr '\\n' ' ')" >> "${CALLS}"
[ "$1" = start ] && exit "${FAKE_START_RC:-0}"
exit 0
""",
    "scontrol": """#!/bin/bash
echo "scontrol $*" >> "${CALLS}"
echo "NodeName=gb200-1 Arch=aarch64 NodeAddr=10.0.0.11 NodeHostName=gb200-1 State=ALLOCATED"
echo "NodeName=gb200-2 Arch=aarch64 NodeAddr=10.0.0.12 NodeHostName=gb200-2 State=ALLOCATED"
""",
    "pkill": '#!/bin/bash\necho "pkill $*" >> "${CALLS}"\nexit 1\n',
    "mknod": '#!/bin/bash\necho "mknod $*" >> "${CALLS}"\ntouch "$3"\n',
    "logger": "#!/bin/bash\nexit 0\n",
}


def _run_prolog(tmp_path: Path, **env: str) -> tuple[int, list[str], Path]:
    """Run the prolog with stubbed system commands; returns (exit code, recorded calls, nodes_config path)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in _STUBS.items():
        stub = bin_dir / name
        stub.write_text(body)
        stub.chmod(0o755)
    script = tmp_path / "prolog.sh"
    script.write_text(imex_prolog_script())
    proc_devices = tmp_path / "devices"
    proc_devices.write_text("Character devices:\n195 nvidia\n234 nvidia-caps-imex-channels\n")
    calls = tmp_path / "calls"
    nodes_config = tmp_path / "etc" / "nodes_config.cfg"
    full_env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "CALLS": str(calls),
        "FMCONSTRUCTS_IMEX_LOG": str(tmp_path / "prolog.log"),
        "FMCONSTRUCTS_PROC_DEVICES": str(proc_devices),
        "FMCONSTRUCTS_IMEX_CHANNELS_DIR": str(tmp_path / "channels"),
        "FMCONSTRUCTS_IMEX_NODES_CONFIG": str(nodes_config),
        "SLURM_JOB_ID": "42",
        "SLURM_JOB_NODELIST": "gb200-[1-2]",
        "SLURM_JOB_OVERSUBSCRIBE": "NO",
        "FAKE_INSTANCE_TYPE": "p6e-gb200.36xlarge",
        **env,
    }
    result = subprocess.run(["/bin/bash", str(script)], env=full_env, capture_output=True, text=True, check=False)
    recorded = calls.read_text().splitlines() if calls.exists() else []
    return result.returncode, recorded, nodes_config


def test_prolog_configures_imex_for_an_exclusive_job(tmp_path):
    code, calls, nodes_config = _run_prolog(tmp_path)
    assert code == 0
    assert nodes_config.read_text() == "10.0.0.11\n10.0.0.12\n"
    assert f"mknod -m 666 {tmp_path}/channels/channel0 c 234 0" in calls
    assert "scontrol -ao show node gb200-[1-2]" in calls
    systemctl = [c for c in calls if c.startswith("systemctl")]
    assert systemctl[0].startswith("systemctl is-enabled nvidia-imex")
    # Stopped before the node list changes (the guide: nodes_config.cfg cannot change while IMEX runs), then started.
    assert systemctl[1] == "systemctl stop nvidia-imex config="
    assert systemctl[2] == "systemctl start nvidia-imex config=10.0.0.11 10.0.0.12 "
    assert "pkill -9 -x nvidia-imex" in calls


def test_prolog_keeps_an_existing_channel(tmp_path):
    (tmp_path / "channels").mkdir()
    (tmp_path / "channels" / "channel0").touch()
    _, calls, _ = _run_prolog(tmp_path)
    assert not any(c.startswith("mknod") for c in calls)


@pytest.mark.parametrize(
    "env",
    [
        {"SLURM_JOB_OVERSUBSCRIBE": "OK"},  # a shared job: restarting IMEX would break the other jobs
        {"SLURM_JOB_OVERSUBSCRIBE": "NO", "SLURM_JOB_EXCLUSIVE": "USER"},  # Slurm 26.05 reports exclusivity here
        {"FAKE_INSTANCE_TYPE": "p5.48xlarge"},  # the cluster-wide Prolog also runs on p5 nodes
    ],
)
def test_prolog_leaves_imex_alone(tmp_path, env):
    code, calls, nodes_config = _run_prolog(tmp_path, **env)
    assert code == 0
    assert not nodes_config.exists()
    assert not any(c.startswith(("systemctl stop", "systemctl start", "mknod")) for c in calls)


def test_prolog_accepts_slurm_26_05_exclusive_topo(tmp_path):
    code, _, nodes_config = _run_prolog(tmp_path, SLURM_JOB_OVERSUBSCRIBE="OK", SLURM_JOB_EXCLUSIVE="TOPO")
    assert code == 0 and nodes_config.exists()


def test_prolog_never_fails_the_job(tmp_path):
    code, _, _ = _run_prolog(tmp_path, FAKE_START_RC="1")
    assert code == 0
    assert "nvidia-imex did not start" in (tmp_path / "prolog.log").read_text()


def test_prolog_channel_mode_lets_users_open_it(tmp_path):
    # NVIDIA IMEX guide "IMEX Channels" lists channel0 as crw-rw-rw-; the stub records the mode it was asked for.
    _, calls, _ = _run_prolog(tmp_path)
    (mknod,) = [c for c in calls if c.startswith("mknod")]
    assert mknod.split()[1:3] == ["-m", "666"]
    assert stat.S_ISREG(os.stat(tmp_path / "channels" / "channel0").st_mode)


# --- exclusive UltraServer queues -------------------------------------------------------------------------------------


def _queue_settings(queue_stack: cdk.Stack) -> list[dict[str, str]]:
    (queue,) = Template.from_stack(queue_stack).find_resources(QUEUE).values()
    return queue["Properties"].get("SlurmConfiguration", {}).get("SlurmCustomSettings", [])


def test_ultraserver_queue_is_exclusive():
    cluster = _cluster(enable_imex=True)
    queue = _gb200(cluster).add_queue("Q", queue_name="gb200")
    assert queue.ultraserver
    assert _queue_settings(cdk.Stack.of(cluster)) == [{"ParameterName": "OverSubscribe", "ParameterValue": "EXCLUSIVE"}]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({QueueSetting.EXCLUSIVE: "NODE"}, [{"ParameterName": "Exclusive", "ParameterValue": "NODE"}]),
        ({QueueSetting.EXCLUSIVE: "topo"}, [{"ParameterName": "Exclusive", "ParameterValue": "topo"}]),
        (
            {QueueSetting.OVER_SUBSCRIBE: "exclusive"},
            [{"ParameterName": "OverSubscribe", "ParameterValue": "exclusive"}],
        ),
        (
            {QueueSetting.DEFAULT: "YES"},
            [
                {"ParameterName": "Default", "ParameterValue": "YES"},
                {"ParameterName": "OverSubscribe", "ParameterValue": "EXCLUSIVE"},
            ],
        ),
    ],
)
def test_ultraserver_queue_keeps_exclusive_settings_it_is_given(given, expected):
    cluster = _cluster(enable_imex=True)
    _gb200(cluster).add_queue("Q", slurm_settings=given)
    assert _queue_settings(cdk.Stack.of(cluster)) == expected


def test_other_queues_stay_shared():
    cluster = _cluster(enable_imex=True)
    cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=X86_AMI, max_nodes=2).add_queue("Q")
    assert _queue_settings(cdk.Stack.of(cluster)) == []


def test_ultraserver_groups_of_power_of_2_sizes_share_a_queue():
    cluster = _cluster(enable_imex=True)
    x36 = _gb200(cluster, "X36", ultraserver_type="u-p6e-gb200x36")
    x72 = _gb200(cluster, "X72", ultraserver_type="u-p6e-gb200x72", count=2)
    queue = cluster.add_queue("Q", node_groups=[x36, x72])  # 9 and 36 instances: ratio 4
    assert queue.ultraserver


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({QueueSetting.OVER_SUBSCRIBE: "NO"}, r"slurm_settings\[OverSubscribe\] must be EXCLUSIVE on a queue of Ultra"),
        ({QueueSetting.EXCLUSIVE: "USER"}, r"slurm_settings\[Exclusive\] must be NODE or TOPO on a queue of Ultra"),
    ],
)
def test_ultraserver_queue_rejects_shared_settings(settings, message):
    cluster = _cluster(enable_imex=True)
    with pytest.raises(FmValidationError, match=message):
        _gb200(cluster).add_queue("Q", slurm_settings=settings)


def test_ultraserver_groups_get_dedicated_queues():
    cluster = _cluster(enable_imex=True)
    p5 = cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=X86_AMI, max_nodes=2)
    with pytest.raises(FmValidationError, match=r"node_groups must be UltraServer node groups only, or none"):
        cluster.add_queue("Q", node_groups=[_gb200(cluster), p5])


def test_ultraserver_group_sizes_need_power_of_2_ratios():
    cluster = _cluster(enable_imex=True)
    nine = _gb200(cluster, "Nine", ultraserver_type="u-p6e-gb200x36")
    twenty_seven = _gb200(cluster, "TwentySeven", ultraserver_type="u-p6e-gb200x36", count=3)
    with pytest.raises(FmValidationError, match=r"instance counts have power-of-2 ratios .*has 27, the smallest has 9"):
        cluster.add_queue("Q", node_groups=[nine, twenty_seven])


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {QueueSetting.EXCLUSIVE: "ALWAYS"},
            r"slurm_settings\[Exclusive\] must be one of 'NO', 'NODE', 'USER', 'TOPO'",
        ),
        ({QueueSetting.OVER_SUBSCRIBE: "SOMETIMES"}, r"slurm_settings\[OverSubscribe\] must be EXCLUSIVE, NO, YES"),
        ({QueueSetting.OVER_SUBSCRIBE: "FORCE:x"}, r"slurm_settings\[OverSubscribe\] must be EXCLUSIVE, NO, YES"),
    ],
)
def test_rejects_invalid_exclusivity_values(settings, message):
    cluster = _cluster()
    group = cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=X86_AMI, max_nodes=2)
    with pytest.raises(FmValidationError, match=message):
        group.add_queue("Q", slurm_settings=settings)


def test_accepts_over_subscribe_force_with_a_count():
    cluster = _cluster()
    group = cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=X86_AMI, max_nodes=2)
    assert group.add_queue("Q", slurm_settings={QueueSetting.OVER_SUBSCRIBE: "FORCE:4"}).slurm_settings == {
        QueueSetting.OVER_SUBSCRIBE: "FORCE:4"
    }
