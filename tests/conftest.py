"""Shared fixtures. Unit tests synthesize with aws-cdk-lib's CloudFormation validation off and share stacks."""

from __future__ import annotations

import os

# Before aws_cdk starts the jsii runtime: silence the Node 20 banners.
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
for _var in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
    os.environ.pop(_var, None)
os.environ["AWS_ACCESS_KEY_ID"] = "testing"  # moto; nothing here may reach AWS
os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"

# Every cdk.App without an outdir synthesizes into a new os.tmpdir()/cdk.outXXXX that nobody deletes (about 95 MB for
# the example app); thousands of tests filled /tmp on a shared machine. The jsii runtime (Node) inherits TMPDIR when
# aws_cdk is first imported below, so each test process gets one private temporary directory, removed at its exit.
import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

_TEST_TMP = tempfile.mkdtemp(prefix="fmconstructs-tests-")
os.environ["TMPDIR"] = _TEST_TMP
tempfile.tempdir = None  # tempfile.gettempdir() reads TMPDIR again
atexit.register(shutil.rmtree, _TEST_TMP, True)

from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import aws_cdk as cdk  # noqa: E402
import pytest  # noqa: E402
from aws_cdk import aws_ec2 as ec2  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402

ENV = cdk.Environment(account="123456789012", region="us-east-1")


def new_app(**context: object) -> cdk.App:
    """An app with the built-in CloudFormation validation off (unit tests)."""
    return cdk.App(builtin_cloud_formation_validation=False, context=dict(context) or None)


@dataclass
class Scene:
    """A stack with an imported two-AZ VPC whose subnets have known zones (us-east-1a, us-east-1b)."""

    app: cdk.App
    stack: cdk.Stack
    vpc: ec2.IVpc

    @property
    def subnet_a(self) -> ec2.ISubnet:
        return self.vpc.private_subnets[0]

    @property
    def subnet_b(self) -> ec2.ISubnet:
        return self.vpc.private_subnets[1]

    def template(self) -> Template:
        return Template.from_stack(self.stack)


def new_scene(stack_id: str = "Test") -> Scene:
    app = new_app()
    stack = cdk.Stack(app, stack_id, env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1", "rtb-0bbbbbbbbbbbbbbb2"],
    )
    return Scene(app, stack, vpc)


@pytest.fixture
def scene() -> Scene:
    """A fresh stack per test (cheap: nothing is synthesized until a test asks)."""
    return new_scene()


@pytest.fixture(scope="session")
def example_stacks() -> dict[str, cdk.Stack]:
    """Every example stack, built once per session with validation off."""
    from examples.app import build

    app = new_app()
    return build(app)


@pytest.fixture(scope="session")
def example_templates(example_stacks: dict[str, cdk.Stack]) -> dict[str, dict[str, object]]:
    """Every example stack's synthesized template, by stack name (one synthesis of the shared example app)."""
    app = next(iter(example_stacks.values())).node.root
    assert isinstance(app, cdk.App)
    assembly = app.synth()
    return {name: assembly.get_stack_by_name(stack.stack_name).template for name, stack in example_stacks.items()}


@pytest.fixture(scope="session")
def example_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example app's cloud assembly with CloudFormation validation and cdk-nag on: one synthesis per test run,
    shared by every xdist worker (tests/support/shared_outputs.py). Read-only: copy it to change it."""
    from tests.support.shared_outputs import shared, synth_validated_example_app

    return shared(tmp_path_factory, "example-assembly", synth_validated_example_app)


@pytest.fixture(scope="session")
def example_lint(tmp_path_factory: pytest.TempPathFactory, example_assembly: Path) -> dict[str, list[dict[str, Any]]]:
    """cfn-lint's findings (every severity) on each template of ``example_assembly``, by file name: each template
    linted once per test run."""
    from tests.support.shared_outputs import lint_assembly, read_findings, shared

    return read_findings(shared(tmp_path_factory, "example-lint", lambda out: lint_assembly(example_assembly, out)))


@pytest.fixture(scope="session")
def release_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel built from it: ``make dist-check``'s under ``make test`` (FMCONSTRUCTS_DIST), else built
    once per test run and shared by the workers (tests/support/shared_outputs.py)."""
    from tests.support.shared_outputs import build_dist, made_by_make, shared

    made = made_by_make("FMCONSTRUCTS_DIST", "fmconstructs-*.tar.gz", "fmconstructs-*.whl")
    if made is not None:
        return made
    try:
        import build  # noqa: F401  (the dev extra's `build`, like `make dist-check`)
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("`build` is not installed (pip install -e '.[dev]')")
    return shared(tmp_path_factory, "dist", build_dist)


def embedded_files(text: str) -> dict[str, str]:
    """Files packed into user data by ``embedded_files_commands`` (every archive in ``text``), by path."""
    import base64
    import gzip
    import io
    import tarfile

    files: dict[str, str] = {}
    for block in text.split("<<'FMCONSTRUCTS_B64'\n")[1:]:
        payload = block.split("\nFMCONSTRUCTS_B64", 1)[0].replace("\n", "")
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(base64.b64decode(payload)))) as tar:
            for member in tar.getmembers():
                extracted = tar.extractfile(member)
                assert extracted is not None
                files["/" + member.name] = extracted.read().decode()
    return files


def require_tool(name: str, package: str) -> str:
    """The path of a validator tool, or skip the test with the reason (fail under CI=true, where it must exist).

    `make test` installs the Debian packages; a laptop without root or apt-get still runs every other test.
    """
    import shutil

    path = shutil.which(name)
    if path:
        return path
    reason = f"{name} is missing (Debian package {package}; `make test` installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """Stable ids for CDK tokens: their numbers depend on creation order, which differs between xdist workers (they
    must collect the same test ids)."""
    import re

    if isinstance(val, str) and "{Token[" in val:
        return re.sub(r"[$#]\{Token\[[^\]]*\]\}", "TOKEN", val)
    return None
