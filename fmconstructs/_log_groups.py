"""Every CloudWatch Logs group the library creates, encrypted the same way: one helper, one key per stack.

CloudWatch Logs User Guide "Encrypt log data in CloudWatch Logs using AWS KMS" (encrypt-log-data-kms): the key
policy lets the service principal ``logs.<region>.amazonaws.com`` use the key (``kms:Encrypt*``, ``kms:Decrypt*``,
``kms:ReEncrypt*``, ``kms:GenerateDataKey*``, ``kms:Describe*``) under the condition ``ArnLike``
``kms:EncryptionContext:aws:logs:arn`` on this account's log groups; callers of ``PutLogEvents`` need no KMS
permission (CloudWatch Logs encrypts with the key itself). The key exists before the group (``KmsKeyId`` is the key's
``Fn::GetAtt`` Arn, an implicit dependency): CloudWatch Logs checks the key when the group is created.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Aws, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct

#: The id of the stack's shared log key, at the stack's root.
LOG_KEY_ID = "FmLogsKey"


def log_key(scope: IConstruct) -> kms.IKey:
    """The stack's KMS key for the library's log groups (created on first use, rotation on, RETAIN: logs kept after
    ``cdk destroy`` stay readable)."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(LOG_KEY_ID)
    if isinstance(existing, kms.Key):
        return existing
    key = kms.Key(
        stack,
        LOG_KEY_ID,
        enable_key_rotation=True,
        description="fmconstructs: CloudWatch Logs groups of this stack",
        removal_policy=RemovalPolicy.RETAIN,
    )
    allow_cloudwatch_logs(key, stack.format_arn(service="logs", resource="log-group", resource_name="*",
                                                arn_format=ArnFormat.COLON_RESOURCE_NAME))  # fmt: skip
    return key


def allow_cloudwatch_logs(
    key: kms.IKey, log_group_arn: str, *, exact: bool = False, sid: str = "CloudWatchLogsForFmconstructsLogGroups"
) -> None:
    """Let CloudWatch Logs in this Region use ``key`` for ``log_group_arn`` (``exact``: ``ArnEquals``, else
    ``ArnLike``, so ``log_group_arn`` may end in ``*``)."""
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid=sid,
            principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.{Aws.URL_SUFFIX}")],
            actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
            resources=["*"],  # in a key policy, "*" is this key
            conditions={("ArnEquals" if exact else "ArnLike"): {"kms:EncryptionContext:aws:logs:arn": log_group_arn}},
        )
    )


def encrypted_log_group(
    scope: Construct,
    id: str,
    *,
    retention: logs.RetentionDays,
    removal_policy: RemovalPolicy,
    log_group_name: str | None = None,
    encryption_key: kms.IKey | None = None,
) -> logs.LogGroup:
    """A log group encrypted with ``encryption_key`` (default: the stack's :func:`log_key`)."""
    key = encryption_key or log_key(scope)
    group = logs.LogGroup(
        scope,
        id,
        log_group_name=log_group_name,
        retention=retention,
        encryption_key=key,
        removal_policy=removal_policy,
    )
    return group
