"""The node checks export their results as a node exporter textfile (checked by ``promtool check metrics``), and every
side of the health loop speaks the names of :mod:`fmconstructs.health.metric_names`."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from fmconstructs.errors import FmValidationError
from fmconstructs.health import CheckMode, CheckName, NodeCheckSpec, metric_names, render_node_checks
from fmconstructs.health.slurm_gate import REASON_PREFIX

from tests.conftest import require_tool
from tests.support.health_checks import Sandbox, p5_spec

TEXTFILE_DIR = "/var/lib/node_exporter/textfile"
SAMPLE = re.compile(r"^(?P<name>[a-z_]+)\{(?P<labels>.*)\} (?P<value>\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def _textfile(sandbox: Sandbox, mode: CheckMode) -> Path:
    return sandbox.root / TEXTFILE_DIR.lstrip("/") / f"fm_node_checks_{mode.value}.prom"


def _with_textfile_dir(sandbox: Sandbox) -> Path:
    directory = sandbox.root / TEXTFILE_DIR.lstrip("/")
    directory.mkdir(parents=True)
    return directory


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], str]:
    samples = {}
    for line in text.splitlines():
        if match := SAMPLE.match(line):
            labels = tuple(sorted(LABEL.findall(match.group("labels"))))
            samples[(match.group("name"), labels)] = match.group("value")
    return samples


def _promtool_check_metrics(text: str) -> None:
    promtool = require_tool("promtool", "prometheus")
    proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- the textfile ---------------------------------------------------------------------------------------------------


def test_passing_boot_checks_write_status_duration_and_last_run(sandbox: Sandbox) -> None:
    # GIVEN a node with node exporter's textfile directory and healthy stubs
    directory = _with_textfile_dir(sandbox)
    # WHEN the boot checks run
    run = sandbox.run(render_node_checks(p5_spec(), CheckMode.BOOT))
    # THEN one status 1 and one duration per check, the last run of mode boot, no failure info, promtool-valid
    assert run.rc == 0, run.out
    text = _textfile(sandbox, CheckMode.BOOT).read_text()
    _promtool_check_metrics(text)
    samples = _samples(text)
    for check in p5_spec().checks(CheckMode.BOOT):
        key = (("check", check.value), ("mode", "boot"))
        assert samples[(metric_names.NODE_CHECK_STATUS, key)] == "1"
        assert int(samples[(metric_names.NODE_CHECK_DURATION, key)]) >= 0
    last_run = samples[(metric_names.NODE_CHECK_LAST_RUN, (("mode", "boot"),))]
    assert int(last_run) > 1_700_000_000
    assert metric_names.NODE_CHECK_FAILURE_INFO not in text
    # written through a temporary file renamed into place: nothing else left behind, readable by node exporter
    assert [p.name for p in directory.iterdir()] == ["fm_node_checks_boot.prom"]
    assert _textfile(sandbox, CheckMode.BOOT).stat().st_mode & 0o777 == 0o644


def test_failing_check_writes_status_0_and_its_reason(sandbox: Sandbox) -> None:
    _with_textfile_dir(sandbox)
    run = sandbox.run(render_node_checks(p5_spec(), CheckMode.BOOT), FAKE_EFA_COUNT="16")
    assert run.rc == 1
    text = _textfile(sandbox, CheckMode.BOOT).read_text()
    _promtool_check_metrics(text)
    samples = _samples(text)
    efa = (("check", "efa-devices"), ("mode", "boot"))
    assert samples[(metric_names.NODE_CHECK_STATUS, efa)] == "0"
    assert samples[(metric_names.NODE_CHECK_STATUS, (("check", "gpu-count"), ("mode", "boot")))] == "1"
    info = [(k, v) for k, v in samples.items() if k[0] == metric_names.NODE_CHECK_FAILURE_INFO]
    assert info == [
        (
            (
                metric_names.NODE_CHECK_FAILURE_INFO,
                (("check", "efa-devices"), ("mode", "boot"), ("reason", "16 EFA devices, expected 32")),
            ),
            "1",
        )
    ]


def test_reason_label_is_bounded_printable_and_escaped(sandbox: Sandbox) -> None:
    # GIVEN a DCGM failure line with quotes, a backslash, non-ASCII text and far more than the bound
    _with_textfile_dir(sandbox)
    nasty = 'Fail "bad row" C:\\gpu0 \u00e9t\u00e9 ' + "x" * 400
    run = sandbox.run(render_node_checks(p5_spec(), CheckMode.BOOT), FAKE_DCGM_RESULT=nasty)
    assert run.rc == 1, run.out
    text = _textfile(sandbox, CheckMode.BOOT).read_text()
    # THEN promtool accepts the file, and the reason is escaped per the exposition format and bounded
    _promtool_check_metrics(text)
    line = next(x for x in text.splitlines() if x.startswith(metric_names.NODE_CHECK_FAILURE_INFO + "{"))
    reason = re.search(r'reason="((?:[^"\\]|\\.)*)"', line)
    assert reason is not None, line
    raw = reason.group(1)
    assert '\\"bad row\\"' in raw and "C:\\\\gpu0" in raw
    assert raw.isascii() and "\n" not in raw
    unescaped = raw.replace('\\"', '"').replace("\\\\", "\\")
    assert len(unescaped) <= metric_names.NODE_CHECK_REASON_MAX_CHARS
    assert unescaped.startswith("dcgmi diag -r 1: Memory Fail")


def test_prolog_writes_its_own_file_and_keeps_the_boot_results(sandbox: Sandbox) -> None:
    _with_textfile_dir(sandbox)
    sandbox.run(render_node_checks(p5_spec(), CheckMode.BOOT), FAKE_LUSTRE_RC="1")
    sandbox.run(render_node_checks(p5_spec(), CheckMode.PROLOG))
    boot = _samples(_textfile(sandbox, CheckMode.BOOT).read_text())
    prolog_text = _textfile(sandbox, CheckMode.PROLOG).read_text()
    prolog = _samples(prolog_text)
    assert boot[(metric_names.NODE_CHECK_STATUS, (("check", "lustre-mount"), ("mode", "boot")))] == "0"
    assert prolog[(metric_names.NODE_CHECK_STATUS, (("check", "lustre-mount"), ("mode", "prolog")))] == "1"
    assert (metric_names.NODE_CHECK_STATUS, (("check", "dcgm-diag"), ("mode", "prolog"))) not in prolog
    # node exporter merges the two files: the same series in both, or two HELP texts for one metric, would fail the
    # scrape; mode keeps the series apart and the HELP lines are the same
    boot_text = _textfile(sandbox, CheckMode.BOOT).read_text()
    _promtool_check_metrics(prolog_text)
    assert not set(boot) & set(prolog)
    prolog_help = {x for x in prolog_text.splitlines() if x.startswith("# ")}
    assert prolog_help <= {x for x in boot_text.splitlines() if x.startswith("# ")}


def test_no_textfile_directory_means_no_metrics_and_same_verdict(sandbox: Sandbox) -> None:
    # GIVEN a node without node exporter's textfile directory
    run = sandbox.run(render_node_checks(p5_spec(), CheckMode.BOOT))
    # THEN the checks pass as before and nothing is created
    assert run.rc == 0, run.out
    assert not (sandbox.root / "var").exists()


def test_textfile_dir_none_turns_metrics_off(sandbox: Sandbox) -> None:
    _with_textfile_dir(sandbox)
    run = sandbox.run(render_node_checks(p5_spec(textfile_dir=None), CheckMode.BOOT))
    assert run.rc == 0, run.out
    assert not _textfile(sandbox, CheckMode.BOOT).exists()


def test_textfile_dir_is_a_spec_field(sandbox: Sandbox) -> None:
    assert p5_spec().textfile_dir == TEXTFILE_DIR
    (sandbox.root / "srv" / "prom").mkdir(parents=True)
    sandbox.run(render_node_checks(p5_spec(textfile_dir="/srv/prom"), CheckMode.PROLOG))
    assert (sandbox.root / "srv" / "prom" / "fm_node_checks_prolog.prom").is_file()


@pytest.mark.parametrize("mode", list(CheckMode))
def test_scripts_with_metrics_pass_shellcheck(tmp_path: Path, mode: CheckMode) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    path = tmp_path / "checks.sh"
    path.write_text(render_node_checks(p5_spec(), mode))
    proc = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("var/lib/node_exporter", r"textfile_dir must be an absolute path"),
        ("/var/lib/node_exporter/", r"textfile_dir must be an absolute path"),
        ("/var/lib/my dir", r"textfile_dir must be an absolute path"),
        ("", r"textfile_dir must be an absolute path"),
    ],
)
def test_bad_textfile_dir_is_refused(value: str, message: str) -> None:
    with pytest.raises(FmValidationError, match=message):
        NodeCheckSpec.for_instance_type("p5.48xlarge", textfile_dir=value)


def test_textfile_dir_token_is_refused() -> None:
    import aws_cdk as cdk

    with pytest.raises(FmValidationError, match=r"textfile_dir must be a literal value"):
        NodeCheckSpec.for_instance_type("p5.48xlarge", textfile_dir=cdk.Token.as_string(cdk.Aws.REGION))


# --- one name per concept -------------------------------------------------------------------------------------------


def test_nccl_report_copy_equals_the_names_module() -> None:
    from fmconstructs.health import nccl_metrics_server, nccl_report

    # every NCCL_<X> of the names module is the report's <X> (the report is shipped alone, with a copy)
    copies = {
        key: getattr(nccl_report, key.removeprefix("NCCL_"))
        for key in dir(metric_names)
        if key.startswith("NCCL_")
        and key
        not in ("NCCL_PREFIX", "NCCL_METRICS", "NCCL_REPORT_METRICS", "NCCL_QUEUE_METRICS", "NCCL_QUEUE_TEXTFILE")
    }
    assert copies == {key: getattr(metric_names, key) for key in copies}
    assert nccl_report.METRICS == metric_names.NCCL_REPORT_METRICS
    assert nccl_report.QUEUE_METRICS == metric_names.NCCL_QUEUE_METRICS
    # the EKS metrics server serves the same three queue-probe gauges
    server = nccl_metrics_server
    assert {server.CHECK_DEFERRED, server.QUEUE_PROBE_TIME, server.QUEUE_PROBE_SUCCESS} == nccl_report.QUEUE_METRICS
    assert server.render_probe(True, 5.0) == nccl_report.render_probe(True, 5.0)
    assert server.render_probe(None, 5.0) == nccl_report.render_probe(None, 5.0)


def test_remediation_handler_copy_equals_the_names_module() -> None:
    from fmconstructs.remediation.handler import faults

    assert faults.TRIGGER_LABEL == metric_names.TRIGGER_LABEL
    assert faults.NODE_CHECK_REASON_PREFIX == metric_names.NODE_CHECK_REASON_PREFIX == REASON_PREFIX
    assert faults.NODE_CHECK_FAILED_TRIGGER == metric_names.TRIGGER_NODE_CHECK_FAILED


def test_every_side_uses_the_same_names() -> None:
    from fmconstructs.cli import health_queries
    from fmconstructs.health import nccl
    from fmconstructs.observability import collection
    from fmconstructs.observability.metrics import ALL_METRICS
    from fmconstructs.remediation.policy import DEFAULT_ALERT_TRIGGERS, Trigger

    assert collection.TEXTFILE_DIR == nccl.TEXTFILE_DIR == metric_names.NODE_EXPORTER_TEXTFILE_DIR == TEXTFILE_DIR
    assert health_queries.NODE_CHECK_STATUS == metric_names.NODE_CHECK_STATUS == "fm_node_check_status"
    assert health_queries.NODE_CHECK_LAST_RUN == "fm_node_check_last_run_timestamp_seconds"
    assert health_queries.NCCL_BUSBW == metric_names.NCCL_MAX_SIZE_BUSBW
    assert health_queries.NCCL_BASELINE == metric_names.NCCL_BASELINE_BUSBW
    assert metric_names.NODE_CHECK_METRICS <= ALL_METRICS
    assert DEFAULT_ALERT_TRIGGERS[metric_names.ALERT_NODE_CHECK_FAILED] is Trigger.NODE_CHECK_FAILED
    assert DEFAULT_ALERT_TRIGGERS[metric_names.ALERT_NCCL_OUTLIER] is Trigger.NCCL_OUTLIER
    assert Trigger(metric_names.TRIGGER_NODE_CHECK_FAILED) is Trigger.NODE_CHECK_FAILED
    assert Trigger(metric_names.TRIGGER_NCCL_OUTLIER) is Trigger.NCCL_OUTLIER
    # the cluster-wide NCCL drop is published by the login node: it must never remediate that node
    assert metric_names.ALERT_NCCL_BELOW_BASELINE not in DEFAULT_ALERT_TRIGGERS


def test_check_names_are_valid_label_values() -> None:
    for check in CheckName:
        assert re.fullmatch(r"[a-z-]+", check.value)


def test_names_module_is_standard_library_only() -> None:
    source = Path(metric_names.__file__).read_text()
    imports = [line for line in source.splitlines() if re.match(r"\s*(from|import) ", line)]
    assert imports == ["from __future__ import annotations"]
