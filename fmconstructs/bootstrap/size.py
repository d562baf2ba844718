"""How big user data will be once CloudFormation has resolved it, computed from the Python-side text.

EC2 accepts at most 16 KB of user data before base64 encoding (EC2 User Guide "user-data": "User data is limited to
16 KB, in raw form, before it is base64-encoded"). fmconstructs checks that at synthesis from the text the construct
assembled itself (shell lines, MIME parts, the loader), where each deploy-time value still appears as a CDK token
(``${Token[...]}``): nothing is resolved through jsii. A token counts as the longest value it can take when that is
known (pseudo parameters; values the caller bounds, such as an S3 bucket name), else as :data:`REFERENCE_BYTES`.

:func:`estimated_size_bytes` does the same for text already resolved to CloudFormation (``Fn::Join``/``Fn::Sub``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: EC2 User Guide "user-data": 16 KB before base64 encoding.
MAX_USER_DATA_BYTES = 16 * 1024

#: A reference (Ref/GetAtt/ImportValue, or a token of unknown length) counts as this many bytes: it covers the ARNs,
#: URLs, DNS names and ids of the resources fmconstructs references.
REFERENCE_BYTES = 160

#: The longest value of each pseudo parameter, in bytes. Region codes are at most 14 characters today
#: (``ap-southeast-5``, ``cn-northwest-1``, ``us-isob-east-1``; EC2 DescribeRegions) and account ids 12 digits
#: (Organizations API ``Account.Id``: ``^\d{12}$``); partitions are ``aws``, ``aws-cn``, ``aws-us-gov``, ``aws-iso``,
#: ``aws-iso-b``... and URL suffixes ``amazonaws.com``, ``amazonaws.com.cn``, ``c2s.ic.gov``, ``sc2s.sgov.gov``
#: (botocore ``data/partitions.json``); stack names at most 128 characters (CloudFormation ``CreateStack.StackName``).
#: A margin is added where new values may appear.
PSEUDO_PARAMETER_BYTES: Mapping[str, int] = {
    "AWS::Region": 20,
    "AWS::AccountId": 12,
    "AWS::Partition": 16,
    "AWS::URLSuffix": 20,
    "AWS::StackName": 128,
}
#: The longest value of resource attributes whose API bounds them tightly, by ``Fn::GetAtt`` attribute name: FSx
#: ``LustreMountName`` (FSx API LustreFileSystemMountName, ``^([A-Za-z0-9_-]{1,8})$``).
ATTRIBUTE_BYTES: Mapping[str, int] = {"LustreMountName": 8}
#: The last group of the UUID in ``AWS::StackId`` (``arn:...:stack/<name>/<uuid>``), resolved: 12 hex digits (a UUID's
#: last group, RFC 9562). The suffix of :class:`~fmconstructs.bootstrap.NodeBootstrapLogs`' log group name.
STACK_ID_SUFFIX: Mapping[str, object] = {
    "Fn::Select": [4, {"Fn::Split": ["-", {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]}]}]
}
STACK_ID_SUFFIX_BYTES = 12
# Token display names of the pseudo parameters (``Aws.REGION`` prints as ``${Token[AWS.Region.12]}``).
_PSEUDO_HINTS = {name.replace("::", "."): size for name, size in PSEUDO_PARAMETER_BYTES.items()}

#: A CDK string token: ``${Token[<display name>.<number>]}`` (aws-cdk-lib core/lib/private/encoding.ts,
#: ``BEGIN_STRING_TOKEN_MARKER`` ``${Token[``, key characters ``a-zA-Z0-9:._-``, ``END_TOKEN_MARKER`` ``]}``),
#: and a list token rendered into a string, ``#{Token[...]}``.
TOKEN_PATTERN = re.compile(r"[$#]\{Token\[[A-Za-z0-9:._-]+\]\}")


def token_bytes(token: str, known: Mapping[str, int] | None = None) -> int:
    """The most bytes ``token`` can resolve to: ``known[token]``, a pseudo parameter's bound, else
    :data:`REFERENCE_BYTES`."""
    if known and token in known:
        return known[token]
    name = token[len("${Token[") : -len("]}")].rsplit(".", 1)[0]
    return _PSEUDO_HINTS.get(name, REFERENCE_BYTES)


def text_size_bytes(text: str, known: Mapping[str, int] | None = None) -> int:
    """Bytes of ``text`` once CloudFormation has resolved its tokens (each counted by :func:`token_bytes`)."""
    size = 0
    position = 0
    for match in TOKEN_PATTERN.finditer(text):
        size += len(text[position : match.start()].encode()) + token_bytes(match.group(0), known)
        position = match.end()
    return size + len(text[position:].encode())


_SUB_VARIABLE = re.compile(r"\$\{([^}]+)\}")


def estimated_size_bytes(resolved: object) -> int:
    """Bytes of a resolved CloudFormation string (``Fn::Join`` of literals and references) once deployed."""
    if isinstance(resolved, str):
        return len(resolved.encode())
    if isinstance(resolved, dict):
        if "Fn::Join" in resolved:
            separator, parts = resolved["Fn::Join"]
            return len(str(separator).encode()) * max(len(parts) - 1, 0) + sum(estimated_size_bytes(p) for p in parts)
        if "Fn::Base64" in resolved:
            return estimated_size_bytes(resolved["Fn::Base64"])
        if resolved == STACK_ID_SUFFIX:
            return STACK_ID_SUFFIX_BYTES
        if set(resolved) == {"Ref"} and resolved["Ref"] in PSEUDO_PARAMETER_BYTES:
            return PSEUDO_PARAMETER_BYTES[resolved["Ref"]]
        attribute = resolved.get("Fn::GetAtt")
        if set(resolved) == {"Fn::GetAtt"} and isinstance(attribute, list) and len(attribute) == 2:
            return ATTRIBUTE_BYTES.get(str(attribute[1]), REFERENCE_BYTES)
        if set(resolved) == {"Fn::Sub"} and isinstance(resolved["Fn::Sub"], str):
            text = resolved["Fn::Sub"]
            variables = _SUB_VARIABLE.findall(text)
            literal = _SUB_VARIABLE.sub("", text)
            return len(literal.encode()) + sum(PSEUDO_PARAMETER_BYTES.get(v, REFERENCE_BYTES) for v in variables)
        return REFERENCE_BYTES
    if isinstance(resolved, list):
        return sum(estimated_size_bytes(p) for p in resolved)
    return len(str(resolved))


def check_user_data_size(resolved: object) -> list[str]:
    """Validation errors for resolved user data over EC2's 16 KB limit (for ``node.add_validation``)."""
    return size_errors(estimated_size_bytes(resolved))


def size_errors(size: int) -> list[str]:
    """The validation error for user data of ``size`` bytes, or none."""
    if size <= MAX_USER_DATA_BYTES:
        return []
    return [
        f"user data is about {size} bytes but EC2 accepts at most {MAX_USER_DATA_BYTES} bytes before base64 "
        "encoding (EC2 User Guide 'user-data'): deliver the node set-up as an S3 asset "
        "(bootstrap_delivery=BootstrapDelivery.ASSET), move large files to an AMI, or drop steps"
    ]
