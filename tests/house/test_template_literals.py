"""No hard-coded account, region, partition or zone in any template of the multi-account apps, and every template within
CloudFormation's quotas.

Both apps (examples/stackset_app.py and examples/pipeline_app.py) are synthesized in-process with the context the
CDK CLI passes (path metadata, asset metadata, version reporting), and every ``*.template.json`` of the cloud assembly,
nested stage assemblies included, is scanned: its text, and the node-side files packed into user data.

What each template may contain, and why:

- the replicated StackSet template and FmTrainingGrafana: nothing (environment-agnostic: ``${AWS::AccountId}``,
  ``${AWS::Region}``, ``${AWS::Partition}`` everywhere);
- FmTrainingStackSet (the administrator stack): the target accounts and regions, in the StackSet's
  ``StackInstancesGroup`` only: naming them is what the resource is for;
- a pipeline stage's stacks: that stage's own account id and region. They are environment-specific (a CDK Pipelines
  stage deploys to one account and region), and CDK writes ``Stack.account``/``Stack.region`` as literals there (key
  policies' account principal, ``aws:SourceAccount`` conditions, the Alertmanager's SigV4 region); any other account
  or region is a defect;
- FmTrainingPipeline and CDK Pipelines' cross-region support stacks: the pipeline's and the stages' accounts and
  regions (cross-account deploy roles, per-region artifact buckets: where the pipeline deploys);
- a partition literal (``arn:aws:``, ``arn:aws-cn:``...) or a zone (``us-east-1a``, ``use1-az4``): never.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns

import examples.pipeline_app as pipeline_app
import examples.stackset_app as stackset_app

from tests.conftest import embedded_files

# What the CDK CLI puts in the app's context (aws-cdk cx-api: PATH_METADATA_ENABLE_CONTEXT, ASSET_RESOURCE_METADATA_
# ENABLED_CONTEXT, ANALYTICS_REPORTING_ENABLED_CONTEXT) unless told otherwise.
CLI_CONTEXT = {
    "aws:cdk:enable-path-metadata": True,
    "aws:cdk:enable-asset-metadata": True,
    "aws:cdk:version-reporting": True,
}

LITERALS: dict[str, re.Pattern[str]] = {
    "account": re.compile(r"(?<![0-9A-Za-z])[0-9]{12}(?![0-9A-Za-z])"),
    "region": re.compile(r"(?<![0-9A-Za-z])[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-[0-9]+(?![0-9])"),
    "partition": re.compile(r"arn:aws(?:-[a-z]+)*:"),
    # Zone names (us-east-1a, Local Zones us-east-1-dfw-2a) and zone ids (use1-az4).
    "zone": re.compile(
        r"(?<![0-9A-Za-z])[a-z]{2}(?:-gov)?-[a-z]+-[0-9]+(?:-[a-z]+-[0-9]+)?[a-z](?![0-9A-Za-z])"
        r"|(?<![0-9A-Za-z])[a-z]{2,4}[0-9]+(?:-[a-z0-9]+)*-az[0-9]+(?![0-9])"
    ),
}

# CloudFormation quotas (CloudFormation User Guide "cloudformation-limits", awsdocs/aws-cloudformation-user-guide
# doc_source/cloudformation-limits.md): template body in an S3 object 1 MB (CDK deploys stacks and StackSets take
# their templates from S3; a body passed in the request may be 51,200 bytes), 500 resources, 200 parameters,
# 200 outputs.
MAX_TEMPLATE_BYTES_FROM_S3 = 1_000_000
MAX_RESOURCES = 500
MAX_PARAMETERS = 200
MAX_OUTPUTS = 200


@dataclass(frozen=True)
class Scanned:
    """One synthesized template: its file, its JSON and the literals it may contain."""

    path: Path
    body: dict[str, Any]
    allowed: frozenset[str]


def find_literals(text: str) -> dict[str, set[str]]:
    """Every account, region, partition and zone literal in ``text``, by kind."""
    found = {kind: {m.group(0) for m in pattern.finditer(text)} for kind, pattern in LITERALS.items()}
    return {kind: values for kind, values in found.items() if values}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def template_text(body: dict[str, Any]) -> str:
    """The template's JSON plus every node-side file packed into its user data (compressed there)."""
    texts = [json.dumps(body)]
    for text in _strings(body):
        if "FMCONSTRUCTS_B64" in text:
            texts.extend(embedded_files(text).values())
    return "\n".join(texts)


def forbidden(scanned: Scanned) -> dict[str, set[str]]:
    body = json.loads(json.dumps(scanned.body))
    for resource in body.get("Resources", {}).values():
        if resource["Type"] == "AWS::CloudFormation::StackSet":
            resource["Properties"].pop("StackInstancesGroup", None)  # the targets: what a StackSet names
    found = find_literals(template_text(body))
    return {k: v - scanned.allowed for k, v in found.items() if v - scanned.allowed}


def _synth(build: Callable[[cdk.App], Any], create_app: Callable[..., cdk.App], outdir: Path) -> None:
    app = create_app(outdir=str(outdir), builtin_cloud_formation_validation=False, context=CLI_CONTEXT)
    build(app)
    app.synth()


def scan_stackset_app(outdir: Path) -> list[Scanned]:
    _synth(stackset_app.build, stackset_app.create_app, outdir)
    return [Scanned(p, json.loads(p.read_text()), frozenset()) for p in sorted(outdir.glob("*.template.json"))]


def scan_pipeline_app(outdir: Path) -> list[Scanned]:
    _synth(pipeline_app.build, pipeline_app.create_app, outdir)
    config = pipeline_app.load_config(pipeline_app.DEFAULT_CONFIG)
    targets = frozenset({config.account, config.region} | {v for s in config.stages for v in (s.account, s.region)})
    stage_envs = {s.name: frozenset({s.account, s.region}) for s in config.stages}
    scanned = []
    for path in sorted(outdir.rglob("*.template.json")):
        stage = next((name for name in stage_envs if path.parent.name.endswith(f"-{name}")), None)
        allowed = stage_envs[stage] if stage is not None else targets
        scanned.append(Scanned(path, json.loads(path.read_text()), allowed))
    return scanned


APPS = {
    "stackset": pytest.param(scan_stackset_app),
    "pipeline": pytest.param(scan_pipeline_app),
}


@pytest.mark.parametrize("scan", list(APPS.values()), ids=list(APPS))
def test_no_account_region_partition_or_zone_literal(scan, tmp_path):
    scanned = scan(tmp_path)
    assert len(scanned) >= 3
    found = {s.path.name: forbidden(s) for s in scanned}
    assert found == {name: {} for name in found}


def asset_texts(outdir: Path) -> dict[str, str]:
    """Every node-side file shipped as a file asset (PCS/EKS node groups deliver their set-up that way), by name."""
    import tarfile

    texts: dict[str, str] = {}
    for archive in sorted(outdir.rglob("asset.*")):
        if archive.is_file() and archive.name.endswith((".tgz", ".tar.gz")):
            with tarfile.open(archive) as tar:
                for member in tar.getmembers():
                    extracted = tar.extractfile(member)
                    if extracted is not None:
                        texts[f"{archive.name}:{member.name}"] = extracted.read().decode(errors="replace")
    return texts


@pytest.mark.parametrize("scan", list(APPS.values()), ids=list(APPS))
def test_node_scripts_in_file_assets_have_no_literal_either(scan, tmp_path):
    """The node set-up archives are as portable as the templates: what varies per account or region reaches the
    node at deploy time (the loader substitutes it), never as a literal in the archive."""
    scanned = scan(tmp_path)
    allowed = frozenset().union(*(s.allowed for s in scanned))
    texts = asset_texts(tmp_path)
    if scan is scan_pipeline_app:
        assert texts, "the pipeline stages deliver their node set-up as file assets"
    found = {
        name: {k: v - allowed for k, v in find_literals(text).items() if v - allowed} for name, text in texts.items()
    }
    assert found == {name: {} for name in found}


@pytest.mark.parametrize("scan", list(APPS.values()), ids=list(APPS))
def test_templates_within_cloudformation_quotas(scan, tmp_path):
    for scanned in scan(tmp_path):
        size = len(scanned.path.read_bytes())
        assert size <= MAX_TEMPLATE_BYTES_FROM_S3, f"{scanned.path.name}: {size} bytes"
        assert len(scanned.body.get("Resources", {})) <= MAX_RESOURCES, scanned.path.name
        assert len(scanned.body.get("Parameters", {})) <= MAX_PARAMETERS, scanned.path.name
        assert len(scanned.body.get("Outputs", {})) <= MAX_OUTPUTS, scanned.path.name


def test_stackset_replicated_template_is_scanned_without_any_allowance(tmp_path):
    # The replicated template must be among the scanned files and allowed nothing (guards the glob and the rules).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stackset_app, "TrainingCluster", _StubTraining)
        scanned = scan_stackset_app(tmp_path)
    by_name = {s.path.name: s for s in scanned}
    (replicated,) = [s for name, s in by_name.items() if name.endswith(".stackset.template.json")]
    assert replicated.allowed == frozenset()
    assert set(by_name) == {replicated.path.name, "FmTrainingStackSet.template.json", "FmTrainingGrafana.template.json"}
    assert {name: forbidden(s) for name, s in by_name.items()} == {name: {} for name in by_name}


class _StubTraining(sns.Topic):
    """Stands in for TrainingCluster (whose constructs cannot take deploy-time values yet)."""

    def __init__(self, scope: Any, id: str, **_: Any) -> None:
        super().__init__(scope, id)


# --- the scanner itself -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('"Principal": "arn:aws:iam::123456789012:root"', "account"),
        ('"Principal": "arn:aws:iam::123456789012:root"', "partition"),
        ("arn:aws-us-gov:s3:::bucket", "partition"),
        ("arn:aws-cn:s3:::bucket", "partition"),
        ("https://s3.us-east-1.amazonaws.com/x", "region"),
        ("us-gov-west-1", "region"),
        ("eu-central-2", "region"),
        ("ap-southeast-5", "region"),
        ('"AvailabilityZone": "us-east-1a"', "zone"),
        ("us-east-1-dfw-2a", "zone"),
        ("use1-az4", "zone"),
        ("usw2-az2", "zone"),
        ("cdk-hnb659fds-deploy-role-222222222222-us-west-2", "account"),
    ],
)
def test_scanner_finds_literals(text, kind):
    assert kind in find_literals(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}',
        '{"Ref": "AWS::Region"}',
        "vpc-0123456789abcdef0",
        "subnet-02222222222222222",
        "cr-0a1b2c3d4e5f60718",
        "ami-01111111111111111",
        "p6e-gb200.36xlarge",
        "nvidia-smi",
        "2026-11-30",
        "lnet-efa-1",
    ],
)
def test_scanner_ignores_pseudo_parameters_and_resource_ids(text):
    assert find_literals(text) == {}


def test_scanner_reads_files_packed_into_user_data():
    import base64
    import gzip
    import io
    import tarfile

    data = b"aws s3 cp s3://bucket/x . --region us-west-2\n"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("opt/x.sh")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    payload = base64.b64encode(gzip.compress(buffer.getvalue())).decode()
    user_data = f"base64 -d <<'FMCONSTRUCTS_B64'\n{payload}\nFMCONSTRUCTS_B64\n"
    assert find_literals(template_text({"Resources": {"L": {"Properties": {"UserData": user_data}}}})) == {
        "region": {"us-west-2"}
    }
