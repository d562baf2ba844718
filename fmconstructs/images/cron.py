"""Image Builder schedule expressions, checked at construction.

Image Builder takes "a cron expression, or a rate expression such as ``rate(1 day)``" (botocore imagebuilder
``Schedule.scheduleExpression``, 1-1,024 characters). Its cron page (EC2 Image Builder User Guide, "Use cron
expressions in Image Builder") gives the same six fields, ranges and wildcards as EventBridge's "Cron expressions
reference"; both are checked by the library's one AWS cron checker, :func:`fmconstructs._validate_schedule.
check_aws_cron`, and rate expressions by :func:`~fmconstructs._validate_schedule.check_aws_rate` (EventBridge's rate
rules; that Image Builder applies the singular/plural rule is UNCONFIRMED).
"""

from __future__ import annotations

from .._validate_schedule import AWS_CRON_FIELDS, check_aws_schedule

__all__ = ["AWS_CRON_FIELDS", "MAX_EXPRESSION_LENGTH", "check_schedule_expression"]

# Image Builder API Reference "Schedule": scheduleExpression, length 1-1024.
MAX_EXPRESSION_LENGTH = 1024
FIELDS = AWS_CRON_FIELDS


def check_schedule_expression(parameter: str, expression: object) -> str:
    """``expression`` when it is a valid Image Builder ``cron(...)`` or ``rate(...)`` expression;
    :class:`~fmconstructs.errors.FmValidationError` naming ``parameter`` and the failing field otherwise."""
    return check_aws_schedule(parameter, expression, service="Image Builder", max_length=MAX_EXPRESSION_LENGTH)
