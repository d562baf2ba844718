"""The ``.pcluster.yaml`` written into the cloud assembly is a review artifact: the ``ClusterConfiguration`` as
CloudFormation deploys it, where deploy-time values (a subnet, security group or file system created in the stack, an
AMI read from SSM, a bootstrap bucket) are CloudFormation references (``Ref``, ``Fn::GetAtt``, ``Fn::Join`` ...) that
only CloudFormation resolves. Its header says so and lists every such value by its ``add_override`` path, so that a
reader of ``cdk.out`` (or a ``pcluster`` CLI user) knows what to replace before ``pcluster create-cluster``."""

from __future__ import annotations

from typing import Any

#: The first line of every ``.pcluster.yaml`` fmconstructs writes.
REVIEW_HEADER_TITLE = "# fmconstructs review artifact: not an input for `pcluster create-cluster` as it is"


def _intrinsic(value: Any) -> str | None:
    """The function name when ``value`` is a CloudFormation intrinsic (a one-key mapping ``Ref`` / ``Fn::*``)."""
    if isinstance(value, dict) and len(value) == 1:
        (key,) = value
        if key == "Ref" or (isinstance(key, str) and key.startswith("Fn::")):
            return str(key)
    return None


def cloudformation_references(config: Any, path: str = "") -> list[tuple[str, str]]:
    """(dot path, intrinsic function) of every CloudFormation reference in a resolved configuration; list items by
    index, as :meth:`ParallelCluster.add_override` takes them."""
    function = _intrinsic(config)
    if function is not None:
        return [(path, function)]
    items: list[tuple[str, Any]] = []
    if isinstance(config, dict):
        items = [(str(key), value) for key, value in config.items()]
    elif isinstance(config, list):
        items = [(str(index), value) for index, value in enumerate(config)]
    out: list[tuple[str, str]] = []
    for key, value in items:
        out += cloudformation_references(value, f"{path}.{key}" if path else key)
    return out


def review_header(construct_path: str, config: Any) -> str:
    """The comment block opening the YAML file of the cluster at ``construct_path``."""
    references = cloudformation_references(config)
    lines = [
        REVIEW_HEADER_TITLE,
        f"# The ClusterConfiguration of {construct_path} as its Custom::PclusterCluster resource deploys it,",
        "# written at synthesis for review and diffs. CloudFormation resolves its references before ParallelCluster",
        "# reads it.",
    ]
    if references:
        lines.append(
            f"# {len(references)} value(s) below are CloudFormation references resolved only at deploy time; replace"
        )
        lines.append("# each with its deployed value before using this file with the pcluster CLI:")
        lines += [f"#   {path}: {function}" for path, function in references]
    else:
        lines.append("# It holds no CloudFormation reference: every value is the one CloudFormation deploys.")
    return "\n".join(lines) + "\n"
