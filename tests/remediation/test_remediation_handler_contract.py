"""The remediation handler's Lambda asset holds only its own folder: its copies of the package's names equal the
originals, and it imports nothing but the standard library, boto3/botocore and its sibling modules."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from fmconstructs.eks import health as eks_health
from fmconstructs.health import metric_names
from fmconstructs.pcs import NODE_GROUP_ID_TAG
from fmconstructs.remediation.handler import backends, faults, kube

HANDLER = Path(backends.__file__).parent
SIBLINGS = {p.stem for p in HANDLER.glob("*.py")}


def test_the_cordon_mark_equals_the_names_module():
    assert kube.CORDONED_BY_ANNOTATION == metric_names.CORDONED_BY_ANNOTATION
    assert kube.CORDONED_BY_REMEDIATION == metric_names.CORDONED_BY_REMEDIATION
    assert kube.REASON_ANNOTATION == metric_names.REMEDIATION_REASON_ANNOTATION


def test_the_node_checks_taint_and_label_equal_the_eks_gates():
    assert kube.NODE_CHECKS_TAINT_KEY == eks_health.NODE_CHECKS_TAINT_KEY
    assert kube.NODE_CHECKS_TAINT_VALUE == eks_health.NODE_CHECKS_TAINT_VALUE
    assert kube.NODE_CHECKS_GROUP_LABEL == eks_health.NODE_CHECKS_GROUP_LABEL


def test_the_reason_prefixes_equal_the_names_module():
    assert backends.OUR_REASON_PREFIX == faults.NODE_CHECK_REASON_PREFIX == metric_names.NODE_CHECK_REASON_PREFIX
    assert backends.REMEDIATION_REASON_PREFIX.startswith(metric_names.NODE_CHECK_REASON_PREFIX + " ")
    assert backends.PCS_NODE_GROUP_TAG == NODE_GROUP_ID_TAG


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            names |= {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return names


def test_the_asset_imports_only_the_standard_library_boto3_and_its_siblings():
    allowed = set(sys.stdlib_module_names) | {"boto3", "botocore", "__future__"} | SIBLINGS
    found = {path.name: _imports(path) - allowed for path in sorted(HANDLER.glob("*.py"))}
    assert {name: extra for name, extra in found.items() if extra} == {}
