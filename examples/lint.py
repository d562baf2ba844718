"""Acknowledging a cfn-lint rule on one resource, with the reason recorded next to it."""

from __future__ import annotations

from aws_cdk import Acknowledgment, CfnResource, Validations
from constructs import IConstruct


def acknowledge_cfn_lint(construct: IConstruct, rule_id: str, reason: str) -> None:
    """Add ``Metadata.cfn-lint.config.ignore_checks`` for ``rule_id`` to the construct's resource.

    The reason is stored beside it (``fmconstructs:cfn-lint-acknowledgements``) so that every acknowledgement is
    justified in the template itself, like cdk-nag acknowledgements.
    """
    resource = construct if isinstance(construct, CfnResource) else construct.node.default_child
    if not isinstance(resource, CfnResource):
        raise TypeError(f"{construct.node.path} has no CloudFormation resource to annotate")
    existing = resource.get_metadata("cfn-lint") or {"config": {"ignore_checks": []}}
    existing["config"]["ignore_checks"] = sorted({*existing["config"]["ignore_checks"], rule_id})
    resource.add_metadata("cfn-lint", existing)
    reasons = resource.get_metadata("fmconstructs:cfn-lint-acknowledgements") or {}
    reasons[rule_id] = reason
    resource.add_metadata("fmconstructs:cfn-lint-acknowledgements", reasons)


def acknowledge_nag(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one cdk-nag (3.x) finding on ``scope`` with its reason (``Validations.of(...).acknowledge``)."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))
