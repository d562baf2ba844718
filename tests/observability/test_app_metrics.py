"""Training jobs' own metrics on Slurm: the prolog writes a Prometheus file-discovery file for the ports a job declares
in its comment, the epilog removes it (sandbox runs with the variables slurmd sets), and the node agent's ``fm-app``
job reads those files (``promtool check config --agent`` also parses the files the prolog wrote)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from fmconstructs import FmValidationError
from fmconstructs.errors import FmTypeError
from fmconstructs.observability import app_metrics, collection
from fmconstructs.observability.app_metrics import (
    APP_METRICS_SAMPLE_LIMIT,
    DEFAULT_APP_METRICS_SD_DIR,
    RESERVED_PORTS,
    SCRIPT_NAME,
    AppMetricsSpec,
    DeclarationVariable,
    app_metrics_scrape_config,
    app_metrics_slurm_files,
    render_app_metrics_epilog,
    render_app_metrics_prolog,
)
from fmconstructs.observability.collection import NodeLabels, agent_config, agent_config_yaml, node_files

from tests.conftest import require_tool

URL = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-12345678-abcd-ef01-2345-6789abcdef01/api/v1/remote_write"
LABELS = NodeLabels(cluster="training", queue="gpu", node_group="p5", instance_type="p5.48xlarge")

# --- sandbox ---------------------------------------------------------------------------------------------------------


def _run(script: str, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "script.sh"
    path.write_text(script)
    # Like slurmd: a minimal environment, the job's variables only (the script sets its own PATH).
    return subprocess.run(["/bin/bash", str(path)], env=env, capture_output=True, text=True, check=False, timeout=60)


def _sd_files(directory: Path) -> dict[str, object]:
    """Every file in the directory (temporary ones included), parsed as JSON."""
    return {p.name: json.loads(p.read_text()) for p in sorted(directory.iterdir())}


def _targets(ports: list[int], job: str) -> list[dict[str, object]]:
    return [{"targets": [f"127.0.0.1:{port}" for port in ports], "labels": {"hpc_job": job}}]


@pytest.fixture
def spec(tmp_path: Path) -> AppMetricsSpec:
    return AppMetricsSpec(sd_dir=str(tmp_path / "run" / "app-metrics-sd"))


@pytest.mark.parametrize(
    ("env", "ports"),
    [
        ({"SLURM_JOB_COMMENT": "fm_metrics_ports=9300"}, [9300]),
        ({"SLURM_JOB_COMMENT": "fm_metrics_ports=9300-9307"}, list(range(9300, 9308))),
        ({"SLURM_JOB_COMMENT": "run 42; fm_metrics_ports=9300,9310-9311 lr=3e-4"}, [9300, 9310, 9311]),
        ({"SLURM_JOB_COMMENT": "fm_metrics_ports=9300,9300-9301"}, [9300, 9301]),  # repeats counted once
        ({"SLURM_JOB_EXTRA": "fm_metrics_ports=12000"}, [12000]),
        # The comment is read first; a comment without the word leaves the extra field in charge.
        ({"SLURM_JOB_COMMENT": "fm_metrics_ports=9301", "SLURM_JOB_EXTRA": "fm_metrics_ports=9302"}, [9301]),
        ({"SLURM_JOB_COMMENT": "nightly", "SLURM_JOB_EXTRA": "fm_metrics_ports=9302"}, [9302]),
    ],
)
def test_declared_ports_become_one_target_group_with_the_job_label(
    spec: AppMetricsSpec, tmp_path: Path, env: dict[str, str], ports: list[int]
) -> None:
    result = _run(render_app_metrics_prolog(spec), tmp_path, {"SLURM_JOB_ID": "101", **env})
    assert result.returncode == 0, result.stderr
    assert _sd_files(Path(spec.sd_dir)) == {"101.json": _targets(ports, "101")}
    assert (Path(spec.sd_dir) / "101.json").stat().st_mode & 0o777 == 0o644


def test_job_without_a_declaration_writes_nothing(spec: AppMetricsSpec, tmp_path: Path) -> None:
    env = {"SLURM_JOB_ID": "7", "SLURM_JOB_COMMENT": "my_fm_metrics_ports=9300", "SLURM_JOB_GPUS": "0"}
    assert _run(render_app_metrics_prolog(spec), tmp_path, env).returncode == 0
    assert not Path(spec.sd_dir).exists()
    assert _run(render_app_metrics_epilog(spec), tmp_path, env).returncode == 0


def test_two_jobs_on_a_node_coexist_and_the_epilog_removes_only_its_own(spec: AppMetricsSpec, tmp_path: Path) -> None:
    prolog, epilog = render_app_metrics_prolog(spec), render_app_metrics_epilog(spec)
    assert (
        _run(prolog, tmp_path, {"SLURM_JOB_ID": "101", "SLURM_JOB_COMMENT": "fm_metrics_ports=9300-9303"}).returncode
        == 0
    )
    assert (
        _run(prolog, tmp_path, {"SLURM_JOB_ID": "202", "SLURM_JOB_COMMENT": "fm_metrics_ports=9304-9307"}).returncode
        == 0
    )
    assert _sd_files(Path(spec.sd_dir)) == {
        "101.json": _targets([9300, 9301, 9302, 9303], "101"),
        "202.json": _targets([9304, 9305, 9306, 9307], "202"),
    }
    # slurmd's Epilog environment has the job id (and the comment, unused).
    result = _run(epilog, tmp_path, {"SLURM_JOB_ID": "101"})
    assert result.returncode == 0, result.stderr
    assert _sd_files(Path(spec.sd_dir)) == {"202.json": _targets([9304, 9305, 9306, 9307], "202")}
    assert _run(epilog, tmp_path, {"SLURM_JOB_ID": "202"}).returncode == 0
    assert _sd_files(Path(spec.sd_dir)) == {}
    assert Path(spec.sd_dir).is_dir()  # never removed: the agent watches the directory


def test_prolog_rerun_replaces_the_file(spec: AppMetricsSpec, tmp_path: Path) -> None:
    prolog = render_app_metrics_prolog(spec)
    assert _run(prolog, tmp_path, {"SLURM_JOB_ID": "5", "SLURM_JOB_COMMENT": "fm_metrics_ports=9300"}).returncode == 0
    assert _run(prolog, tmp_path, {"SLURM_JOB_ID": "5", "SLURM_JOB_COMMENT": "fm_metrics_ports=9301"}).returncode == 0
    assert _sd_files(Path(spec.sd_dir)) == {"5.json": _targets([9301], "5")}


def test_epilog_removes_a_temporary_file_a_killed_prolog_left(spec: AppMetricsSpec, tmp_path: Path) -> None:
    directory = Path(spec.sd_dir)
    directory.mkdir(parents=True)
    (directory / ".5.json.tmp.4242").write_text("[")
    (directory / ".50.json.tmp.4242").write_text("[")  # another job's: kept
    assert _run(render_app_metrics_epilog(spec), tmp_path, {"SLURM_JOB_ID": "5"}).returncode == 0
    assert [p.name for p in directory.iterdir()] == [".50.json.tmp.4242"]


@pytest.mark.parametrize(
    "comment",
    [
        "fm_metrics_ports=",
        "fm_metrics_ports=abc",
        "fm_metrics_ports=9300-",
        "fm_metrics_ports=9300,,9301",
        "fm_metrics_ports=80",  # privileged
        "fm_metrics_ports=1023-1024",
        "fm_metrics_ports=65536",
        "fm_metrics_ports=123456",
        "fm_metrics_ports=9307-9300",  # reversed
        "fm_metrics_ports=9300-9308",  # 9 ports, the default limit is 8
        "fm_metrics_ports=9300-9305,9310-9312",  # 9 ports in two ranges
        "fm_metrics_ports=1024-65535",  # a huge range is refused before any loop
        "fm_metrics_ports=9100",  # node_exporter
        "fm_metrics_ports=9398-9402",  # covers dcgm-exporter
        "fm_metrics_ports=9090",  # the agent
        "fm_metrics_ports=9300$(touch /tmp/pwned)",
        "fm_metrics_ports=9300`id`",
        "fm_metrics_ports=9300/../../x",
        'fm_metrics_ports=9300"],"labels":{"user":"x"}}',
    ],
)
def test_malformed_declaration_is_ignored_and_exits_zero(spec: AppMetricsSpec, tmp_path: Path, comment: str) -> None:
    result = _run(render_app_metrics_prolog(spec), tmp_path, {"SLURM_JOB_ID": "9", "SLURM_JOB_COMMENT": comment})
    assert result.returncode == 0
    assert not Path(spec.sd_dir).exists()
    assert not Path("/tmp/pwned").exists()


@pytest.mark.parametrize(
    "env",
    [
        {"SLURM_JOB_COMMENT": "fm_metrics_ports=9300"},  # no job id
        {"SLURM_JOB_ID": "12; rm -rf /", "SLURM_JOB_COMMENT": "fm_metrics_ports=9300"},
        {"SLURM_JOB_ID": "../12", "SLURM_JOB_COMMENT": "fm_metrics_ports=9300"},
    ],
)
def test_bad_job_id_writes_nothing_and_exits_zero(spec: AppMetricsSpec, tmp_path: Path, env: dict[str, str]) -> None:
    assert _run(render_app_metrics_prolog(spec), tmp_path, env).returncode == 0
    assert _run(render_app_metrics_epilog(spec), tmp_path, env).returncode == 0
    assert not Path(spec.sd_dir).exists()


def test_failures_never_exit_nonzero(tmp_path: Path) -> None:
    # The parent of the discovery directory is a file: mkdir fails, the prolog still exits 0 (no drained node).
    (tmp_path / "blocker").write_text("")
    spec = AppMetricsSpec(sd_dir=str(tmp_path / "blocker" / "sd"))
    env = {"SLURM_JOB_ID": "5", "SLURM_JOB_COMMENT": "fm_metrics_ports=9300"}
    assert _run(render_app_metrics_prolog(spec), tmp_path, env).returncode == 0
    assert _run(render_app_metrics_epilog(spec), tmp_path, env).returncode == 0


def test_custom_key_variable_and_limit(tmp_path: Path) -> None:
    spec = AppMetricsSpec(
        sd_dir=str(tmp_path / "sd"),
        declaration_variables=(DeclarationVariable.SLURM_JOB_EXTRA,),
        declaration_key="metrics",
        max_ports_per_job=16,
    )
    prolog = render_app_metrics_prolog(spec)
    env = {"SLURM_JOB_ID": "3", "SLURM_JOB_COMMENT": "metrics=9000", "SLURM_JOB_EXTRA": "metrics=9300-9315"}
    assert _run(prolog, tmp_path, env).returncode == 0
    assert _sd_files(Path(spec.sd_dir)) == {"3.json": _targets(list(range(9300, 9316)), "3")}


@pytest.mark.parametrize("render", [render_app_metrics_prolog, render_app_metrics_epilog])
def test_scripts_pass_shellcheck(render: object, tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    script = tmp_path / "s.sh"
    assert callable(render)
    script.write_text(render(AppMetricsSpec()))
    result = subprocess.run([shellcheck, "-s", "bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


# --- the agent's fm-app job ------------------------------------------------------------------------------------------


def _fm_app(config: dict[str, object]) -> dict[str, object]:
    jobs = [job for job in config["scrape_configs"] if job["job_name"] == "fm-app"]  # type: ignore[attr-defined]
    assert len(jobs) == 1
    return jobs[0]  # type: ignore[no-any-return]


def test_gpu_node_agent_scrapes_the_discovered_ports_with_the_node_labels() -> None:
    config = agent_config(remote_write_url=URL, region="us-east-1", labels=LABELS, instance_id="i-0abc")
    job = _fm_app(config)
    assert job["file_sd_configs"] == [
        {"files": ["/var/run/fmconstructs/app-metrics-sd/*.json"], "refresh_interval": "1m"}
    ]
    assert job["sample_limit"] == APP_METRICS_SAMPLE_LIMIT
    relabel = job["relabel_configs"]
    assert isinstance(relabel, list)
    fixed = {r["target_label"]: r["replacement"] for r in relabel if "source_labels" not in r}
    assert fixed == {
        "cluster": "training",
        "queue": "gpu",
        "node_group": "p5",
        "instance_type": "p5.48xlarge",
        "instance_id": "i-0abc",
    }
    (instance,) = [r for r in relabel if r["target_label"] == "instance"]
    assert instance == {
        "source_labels": ["__address__"],
        "regex": ".*:([0-9]+)",
        "target_label": "instance",
        "replacement": "i-0abc:$1",
    }


def test_login_node_agent_has_no_fm_app_job() -> None:
    config = agent_config(remote_write_url=URL, region="us-east-1", labels=LABELS, instance_id="i-0", login_node=True)
    assert "fm-app" not in [job["job_name"] for job in config["scrape_configs"]]  # type: ignore[attr-defined]


def test_agent_unit_creates_the_discovery_directory_before_the_agent_starts() -> None:
    unit = node_files(login_node=False)["/etc/systemd/system/fm-prometheus-agent.service"][0]
    service = unit.split("[Service]\n", 1)[1].splitlines()
    assert service[0] == "ExecStartPre=-/bin/mkdir -p /var/run/fmconstructs/app-metrics-sd"
    assert service[1].startswith("ExecStart=/usr/local/bin/fm-prometheus --agent ")


def test_agent_config_and_the_files_the_prolog_wrote_pass_promtool(spec: AppMetricsSpec, tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    prolog = render_app_metrics_prolog(spec)
    assert (
        _run(prolog, tmp_path, {"SLURM_JOB_ID": "101", "SLURM_JOB_COMMENT": "fm_metrics_ports=9300-9307"}).returncode
        == 0
    )
    assert _run(prolog, tmp_path, {"SLURM_JOB_ID": "202", "SLURM_JOB_EXTRA": "fm_metrics_ports=9400"}).returncode == 0
    assert _run(prolog, tmp_path, {"SLURM_JOB_ID": "303", "SLURM_JOB_EXTRA": "fm_metrics_ports=9401"}).returncode == 0
    assert sorted(p.name for p in Path(spec.sd_dir).iterdir()) == ["101.json", "303.json"]
    text = agent_config_yaml(remote_write_url=URL, region="us-east-1", labels=LABELS, instance_id="i-0abc")
    # promtool reads the files the file_sd patterns match: point the pattern at the sandbox.
    text = text.replace(f"{DEFAULT_APP_METRICS_SD_DIR}/*.json", f"{spec.sd_dir}/*.json")
    assert f"{spec.sd_dir}/*.json" in text
    path = tmp_path / "agent.yml"
    path.write_text(text)
    proc = subprocess.run([promtool, "check", "config", "--agent", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # And promtool does read them: a broken file makes the same check fail.
    (Path(spec.sd_dir) / "404.json").write_text('[{"targets": "127.0.0.1:9300"}]')
    proc = subprocess.run([promtool, "check", "config", "--agent", str(path)], capture_output=True, text=True)
    assert proc.returncode != 0


def test_discovered_targets_carry_the_job_and_node_labels_after_relabelling(
    spec: AppMetricsSpec, tmp_path: Path
) -> None:
    """promtool runs the agent's file discovery and relabelling on the files the prolog wrote."""
    promtool = require_tool("promtool", "prometheus")
    env = {"SLURM_JOB_ID": "77", "SLURM_JOB_COMMENT": "fm_metrics_ports=9300-9301"}
    assert _run(render_app_metrics_prolog(spec), tmp_path, env).returncode == 0
    text = agent_config_yaml(remote_write_url=URL, region="us-east-1", labels=LABELS, instance_id="i-0abc")
    path = tmp_path / "agent.yml"
    path.write_text(text.replace(f"{DEFAULT_APP_METRICS_SD_DIR}/*.json", f"{spec.sd_dir}/*.json"))
    proc = subprocess.run(
        [promtool, "check", "service-discovery", "--timeout=5s", str(path), "fm-app"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    targets = json.loads(proc.stdout)
    labels = [{k: v for k, v in t["labels"].items() if not k.startswith("__")} for t in targets]
    node = {"cluster": "training", "queue": "gpu", "node_group": "p5", "instance_type": "p5.48xlarge"}
    assert labels == [
        {**node, "job": "fm-app", "hpc_job": "77", "instance_id": "i-0abc", "instance": f"i-0abc:{port}"}
        for port in (9300, 9301)
    ]


def test_scrape_config_keeps_the_instance_label_per_port() -> None:
    job = app_metrics_scrape_config({"cluster": "c", "instance": "i-1", "instance_id": "i-1"}, instance_id="i-1")
    assert yaml.safe_load(yaml.safe_dump(job)) == job
    assert [r["target_label"] for r in job["relabel_configs"]] == ["cluster", "instance_id", "instance"]  # type: ignore[attr-defined]


def test_reserved_ports_are_the_collectors_ports() -> None:
    unit = node_files(login_node=False)["/etc/systemd/system/fm-prometheus-agent.service"][0]
    agent_port = int(unit.split("--web.listen-address=127.0.0.1:", 1)[1].split()[0])
    assert set(RESERVED_PORTS) == {agent_port, collection.NODE_EXPORTER_PORT, collection.DCGM_EXPORTER_PORT}


# --- files for prolog.d / epilog.d -----------------------------------------------------------------------------------


def test_slurm_files_for_prolog_and_epilog_directories() -> None:
    spec = AppMetricsSpec()
    files = app_metrics_slurm_files(
        spec, prolog_dir="/opt/fmconstructs/slurm/prolog.d", epilog_dir="/opt/fmconstructs/slurm/epilog.d"
    )
    assert SCRIPT_NAME == "30-fm-app-metrics.sh"
    assert files == {
        "/opt/fmconstructs/slurm/prolog.d/30-fm-app-metrics.sh": (render_app_metrics_prolog(spec), 0o755),
        "/opt/fmconstructs/slurm/epilog.d/30-fm-app-metrics.sh": (render_app_metrics_epilog(spec), 0o755),
    }


@pytest.mark.parametrize(
    ("prolog_dir", "epilog_dir", "parameter"),
    [
        ("prolog.d", "/e", "prolog_dir"),
        ("/p", "/e/", "epilog_dir"),
        ("/p", "/x/../e", "epilog_dir"),
        ("/p", "/p", "epilog_dir"),
        ("/p", "${Token[TOKEN.9]}", "epilog_dir"),
    ],
)
def test_slurm_files_refuse_bad_directories(prolog_dir: str, epilog_dir: str, parameter: str) -> None:
    with pytest.raises(FmValidationError, match=parameter):
        app_metrics_slurm_files(AppMetricsSpec(), prolog_dir=prolog_dir, epilog_dir=epilog_dir)


# --- validation ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"sd_dir": "relative/dir"}, "sd_dir"),
        ({"sd_dir": "/"}, "sd_dir"),
        ({"sd_dir": "/var/run/"}, "sd_dir"),
        ({"sd_dir": "/var/../etc"}, "sd_dir"),
        ({"sd_dir": "/var/run/a b"}, "sd_dir"),
        ({"sd_dir": "/var/run/$(id)"}, "sd_dir"),
        ({"sd_dir": ""}, "sd_dir"),
        ({"sd_dir": "${Token[TOKEN.123]}"}, "sd_dir"),
        ({"sd_dir": 5}, "sd_dir"),
        ({"declaration_variables": ()}, "declaration_variables"),
        ({"declaration_variables": "SLURM_JOB_COMMENT"}, "declaration_variables"),
        ({"declaration_variables": ("SLURM_JOB_COMMENT",)}, "declaration_variables"),
        (
            {"declaration_variables": (DeclarationVariable.SLURM_JOB_EXTRA, DeclarationVariable.SLURM_JOB_EXTRA)},
            "declaration_variables",
        ),
        ({"declaration_key": ""}, "declaration_key"),
        ({"declaration_key": "1ports"}, "declaration_key"),
        ({"declaration_key": "fm.metrics"}, "declaration_key"),
        ({"declaration_key": "a=b"}, "declaration_key"),
        ({"declaration_key": "x" * 65}, "declaration_key"),
        ({"declaration_key": "${Token[TOKEN.1]}"}, "declaration_key"),
        ({"max_ports_per_job": 0}, "max_ports_per_job"),
        ({"max_ports_per_job": 65}, "max_ports_per_job"),
        ({"max_ports_per_job": 1.5}, "max_ports_per_job"),
        ({"max_ports_per_job": "8"}, "max_ports_per_job"),
        ({"max_ports_per_job": True}, "max_ports_per_job"),
    ],
)
def test_bad_spec(kwargs: dict[str, object], parameter: str) -> None:
    with pytest.raises((FmValidationError, FmTypeError), match=parameter):
        AppMetricsSpec(**kwargs)  # type: ignore[arg-type]


def test_defaults() -> None:
    spec = AppMetricsSpec()
    assert spec.sd_dir == "/var/run/fmconstructs/app-metrics-sd"
    assert spec.declaration_variables == (DeclarationVariable.SLURM_JOB_COMMENT, DeclarationVariable.SLURM_JOB_EXTRA)
    assert spec.declaration_key == "fm_metrics_ports"
    assert spec.max_ports_per_job == 8
    assert "sd_dir=/var/run/fmconstructs/app-metrics-sd\n" in render_app_metrics_epilog(spec)


@pytest.mark.parametrize("func", [render_app_metrics_prolog, render_app_metrics_epilog])
def test_renderers_refuse_a_non_spec(func: object) -> None:
    assert callable(func)
    with pytest.raises(FmValidationError, match="spec must be an AppMetricsSpec"):
        func("/var/run/x")


def test_module_does_not_import_aws_cdk() -> None:
    tree = ast.parse(Path(app_metrics.__file__).read_text())
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not any(name.startswith("aws_cdk") or name.split(".")[-1] == "collection" for name in imported)
    assert os.path.basename(app_metrics.__file__) == "app_metrics.py"
