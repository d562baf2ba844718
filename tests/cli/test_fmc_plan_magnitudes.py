"""`fmc plan` refuses absurd magnitudes with exit 2 and one line, never prints Infinity (fmconstructs.cli.magnitudes)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from fmconstructs.cli.main import cli

BASE = ["plan", "--instance-type", "p5.48xlarge", "--nodes", "4"]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["plan", "--instance-type", "p5.48xlarge", "--nodes", "1000000000000"], "1<=x<=100000"),
        ([*BASE, "--checkpoint-bytes", "1e300", "--checkpoint-seconds", "60"], "at most 1e+18 bytes"),
        ([*BASE, "--checkpoint-bytes", "1e12", "--checkpoint-seconds", "1e-300"], "at least 1 and at most"),
        ([*BASE, "--checkpoint-bytes", "nan", "--checkpoint-seconds", "60"], "a finite number"),
        ([*BASE, "--throughput-gbytes-per-s", "1e308"], "at most 1e+06 GB/s"),
        ([*BASE, "--throughput-gbytes-per-s", "inf"], "a finite number"),
        ([*BASE, "--price-per-hour", "1e300"], "from 0 to 100000 USD"),
        ([*BASE, "--kv-cache-fraction", "nan", "--model-params", "7e9"], "a finite number"),
    ],
)
def test_absurd_magnitudes_are_usage_errors(args: list[str], fragment: str) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert fragment in result.output
    assert "Traceback" not in result.output and "Infinity" not in result.output


def test_the_largest_accepted_values_give_finite_json() -> None:
    args = [*BASE, "--model-params", "1e15", "--tokens", "1e18", "--mfu", "0.001", "--price-per-hour", "1e5", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "Infinity" not in result.output and "NaN" not in result.output
