"""``fmc plan`` answers model questions from the catalog: compute per precision (per group and in total), "does this
model fit for serving" (``--model-params --dtype --instance-type [--nodes]``) and "how long does this training run
take" (``--tokens --mfu``), with bad input ending as one line and exit code 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fmconstructs.cli.main import cli

from tests.support.fmc_gate_plan import _template, _write

H100_BF16_PF = 0.9895  # NVIDIA H100 SXM: 1,979 TFLOPS BF16 with sparsity -> 989.5 dense
H200_FP8_PF = 1.979


def _json(args: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["plan", *args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_instance_plan_shows_dense_pflops_per_precision() -> None:
    data = _json(["--instance-type", "p5.48xlarge", "--nodes", "2"])
    (group,) = data["node_groups"]
    assert group["dense_pflops_per_node"]["bf16"] == pytest.approx(8 * H100_BF16_PF)
    assert group["dense_pflops_total"]["fp8"] == pytest.approx(16 * 1.979)
    assert "fp4" not in group["dense_pflops_total"]  # Hopper has no FP4 tensor path
    assert group["efa_generation"] == 2
    assert data["compute_total"]["gpus"] == 16
    assert data["compute_total"]["gpu_memory_gib"] == pytest.approx(16 * 80)


def test_assembly_plan_totals_compute_over_groups(tmp_path: Path) -> None:
    """The gate template: 2 x p5.48xlarge (16 H100) and 3 x p5en.48xlarge (24 H200)."""
    out = _write(tmp_path, _template())
    data = _json([str(out)])
    total = data["compute_total"]
    assert total["gpus"] == 40
    assert total["dense_pflops"]["fp8"] == pytest.approx(40 * H200_FP8_PF)
    assert total["gpu_memory_gib"] == pytest.approx(16 * 80 + 24 * 141)
    text = CliRunner().invoke(cli, ["plan", str(out)]).output
    assert "Compute (peak dense tensor PFLOPS" in text and "BF16 PF" in text and "Total" in text


def test_serving_fit_without_nodes_picks_the_smallest_layout() -> None:
    """405e9 bf16 on p5 (80 GiB H100): 754.4 GiB weights need 2 nodes (see tests/serving/test_serving_sizing.py)."""
    data = _json(["--model-params", "405e9", "--dtype", "bf16", "--instance-type", "p5.48xlarge"])
    serving = data["serving"]
    assert serving["fits"] is True and serving["nodes"] == 2
    assert (serving["layout"]["tensor_parallel"], serving["layout"]["pipeline_parallel"]) == (8, 2)
    assert data["node_groups"][0]["max_nodes"] == 2


def test_serving_fit_at_given_nodes_says_no_and_the_smallest_layout() -> None:
    result = CliRunner().invoke(
        cli, ["plan", "--model-params", "405e9", "--instance-type", "p5.48xlarge", "--nodes", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "do NOT fit on 1 x p5.48xlarge" in result.output
    assert "smallest layout that fits: 2 x p5.48xlarge, TP=8 x PP=2" in result.output
    data = _json(["--model-params", "405e9", "--instance-type", "p5.48xlarge", "--nodes", "1"])
    assert data["serving"]["fits"] is False and data["serving"]["smallest"]["nodes"] == 2


def test_the_issue_example_fits_on_one_p5en_node() -> None:
    result = CliRunner().invoke(
        cli, ["plan", "--model-params", "70e9", "--dtype", "bf16", "--instance-type", "p5en.48xlarge"]
    )
    assert result.exit_code == 0, result.output
    assert "70B parameters in bf16 fit for serving on 1 x p5en.48xlarge, TP=8 x PP=1" in result.output
    assert "gpu-memory-utilization" in result.output


def test_training_time_and_cost_follow_the_stated_formula() -> None:
    """6 x 70e9 x 15e12 = 6.3e24 FLOPs; 16 p5 nodes = 128 H100 x 0.9895 PF = 126.656 PF; at MFU 0.4:
    6.3e24 / (126.656e15 x 0.4) = 1.2435e8 s = 34,542 h; at 55.04 USD/node-hour x 16 nodes = 880.64 USD/h."""
    args = ["--model-params", "70e9", "--tokens", "15e12", "--mfu", "0.4", "--instance-type", "p5.48xlarge"]
    args += ["--nodes", "16", "--price-per-hour", "55.04"]
    training = _json(args)["training"]
    hours = 6 * 70e9 * 15e12 / (128 * H100_BF16_PF * 1e15 * 0.4) / 3600
    assert training["hours"] == pytest.approx(hours)
    assert training["hours"] == pytest.approx(34542.4, rel=1e-4)
    assert training["cost_usd"] == pytest.approx(hours * 16 * 55.04)
    assert training["formula"].startswith("time = 6 x parameters x tokens / (GPUs x peak dense BF16")
    assert "MFU is your assumption" in training["note"]
    text = CliRunner().invoke(cli, ["plan", *args]).output
    assert "time = 6 x parameters x tokens" in text and "34,542.4 hours" in text and "MFU is your assumption" in text


def test_training_time_on_an_assembly_without_prices(tmp_path: Path) -> None:
    out = _write(tmp_path, _template())
    training = _json([str(out), "--model-params", "7e9", "--tokens", "1e12", "--mfu", "0.5"])["training"]
    peak = 16 * H100_BF16_PF + 24 * H100_BF16_PF  # H200 has H100's compute
    assert training["peak_dense_bf16_pflops"] == pytest.approx(peak)
    assert training["hours"] == pytest.approx(6 * 7e9 * 1e12 / (peak * 1e15 * 0.5) / 3600)
    assert training["cost_usd"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mfu", "0", "--tokens", "1e12", "--model-params", "7e9"], "Invalid value for '--mfu'"),
        (["--mfu", "1.5", "--tokens", "1e12", "--model-params", "7e9"], "Invalid value for '--mfu'"),
        (["--mfu", "-0.2", "--tokens", "1e12", "--model-params", "7e9"], "Invalid value for '--mfu'"),
        (["--mfu", "nan", "--tokens", "1e12", "--model-params", "7e9"], "Invalid value for '--mfu'"),
        (["--mfu", "0.4", "--tokens", "0", "--model-params", "7e9"], "Invalid value for '--tokens'"),
        (["--mfu", "0.4", "--tokens", "-1e12", "--model-params", "7e9"], "Invalid value for '--tokens'"),
        (["--mfu", "0.4", "--model-params", "7e9"], "--tokens and --mfu go together"),
        (["--tokens", "1e12", "--mfu", "0.4"], "--tokens/--mfu need --model-params"),
        (["--model-params", "0", "--instance-type", "p5.48xlarge"], "Invalid value for '--model-params'"),
        (["--model-params", "inf", "--instance-type", "p5.48xlarge"], "Invalid value for '--model-params'"),
        (["--model-params", "abc", "--instance-type", "p5.48xlarge"], "'abc' is not a number"),
        (["--model-params", "7e9"], "--model-params answers the serving fit with --instance-type"),
        # absurd magnitudes (fmconstructs.cli.magnitudes): never Infinity in the output
        (["--model-params", "1e300", "--tokens", "1e12", "--mfu", "0.4"], "at most 1e+15"),
        (["--model-params", "7e9", "--tokens", "1e300", "--mfu", "0.4"], "at most 1e+18"),
        (["--model-params", "7e9", "--tokens", "1e12", "--mfu", "1e-300"], "at least 0.001"),
        (["--model-params", "7e9", "--instance-type", "p9.48xlarge"], "instance_type must be one of the catalog"),
        (["--model-params", "7e9", "--instance-type", "p5.48xlarge", "--dtype", "bf17"], "'bf17' is not one of"),
        (
            ["--model-params", "7e9", "--instance-type", "p5.48xlarge", "--kv-cache-fraction", "1"],
            "--kv-cache-fraction must be in [0, 1)",
        ),
    ],
)
def test_bad_model_options_end_with_exit_code_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["plan", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    as_json = CliRunner().invoke(cli, ["plan", *args, "--json"])
    assert as_json.exit_code == 2
    if "not a valid float" not in message and "is not one of" not in message:
        assert json.loads(as_json.stdout)["error"]["kind"] == "usage"
