"""What the library rendered, read back out of a synthesized template: nothing the twin runs is a hand-written copy.

- :func:`monitoring_artifacts`: the rule files of an ``AWS::APS::Workspace`` (the ``Data`` of every
  ``AWS::APS::RuleGroupsNamespace`` whose ``Workspace`` is that workspace, exactly what AMP would evaluate) and its
  Alertmanager configuration (``AlertManagerDefinition``: AMP nests the Alertmanager file under
  ``alertmanager_config``, :func:`fmconstructs.observability.workspace.alert_manager_definition`).
- :func:`remediation_artifacts`: the remediation handler's ``POLICY``, ``TARGET``, ``TOPIC_ARN`` and ``TABLE_NAME``
  (the ``AWS::Lambda::Function`` of :class:`fmconstructs.remediation.NodeRemediation`), its state table's key schema
  and its SNS subscription's ``FilterPolicy``.
- :func:`agent_config_from_user_data`: the Prometheus agent configuration a node's user data writes
  (``/etc/fmconstructs/prometheus-agent.yml``, :func:`fmconstructs.observability.collection.node_collection_commands`).

Deploy-time values are resolved by :class:`Resolver`: ``Ref``, ``Fn::GetAtt``, ``Fn::Join``, ``Fn::Sub``,
``Fn::Select``, ``Fn::Base64`` and the pseudo parameters (any other ``Fn::`` raises :class:`~.procs.TwinError`),
with made-up but stable values (a topic's ``Ref`` is ``arn:aws:sns:<region>:<account>:<logical id>``, what moto
returns for a topic of that name; anything else ``<logical id>`` or ``<logical id>.<attribute>``), or the values a
caller gives (``refs``: ``{"Logical": "value", "Logical.Attribute": "value"}``).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from .procs import TwinError

__all__ = [
    "MonitoringArtifacts",
    "RemediationArtifacts",
    "Resolver",
    "agent_config_from_user_data",
    "monitoring_artifacts",
    "remediation_artifacts",
]

WORKSPACE = "AWS::APS::Workspace"
RULES = "AWS::APS::RuleGroupsNamespace"
FUNCTION = "AWS::Lambda::Function"
TABLE = "AWS::DynamoDB::Table"
SUBSCRIPTION = "AWS::SNS::Subscription"
TOPIC = "AWS::SNS::Topic"
#: Where node_collection_commands writes the agent configuration (a heredoc ending in FMCONSTRUCTS_EOF).
AGENT_CONFIG_PATH = "/etc/fmconstructs/prometheus-agent.yml"
_HEREDOC = re.compile(rf"cat > {re.escape(AGENT_CONFIG_PATH)} <<'FMCONSTRUCTS_EOF'\n(.*?)\nFMCONSTRUCTS_EOF", re.DOTALL)
_SUB = re.compile(r"\$\{([^}!][^}]*)\}")


@dataclass
class Resolver:
    """Resolves CloudFormation intrinsic functions in one template (see the module docstring)."""

    template: Mapping[str, Any]
    region: str = "us-east-1"
    account: str = "123456789012"
    refs: Mapping[str, str] = field(default_factory=dict)

    def _resource(self, logical_id: str) -> Mapping[str, Any]:
        return (self.template.get("Resources") or {}).get(logical_id) or {}

    def ref(self, name: str) -> str:
        if name in self.refs:
            return self.refs[name]
        pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": self.account,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": "Twin",
            "AWS::NoValue": "",
        }
        if name in pseudo:
            return pseudo[name]
        if self._resource(name).get("Type") == TOPIC:
            return f"arn:aws:sns:{self.region}:{self.account}:{name}"
        return name

    def get_att(self, logical_id: str, attribute: str) -> str:
        key = f"{logical_id}.{attribute}"
        if key in self.refs:
            return self.refs[key]
        kind = str(self._resource(logical_id).get("Type") or "")
        if attribute == "Arn" and kind == WORKSPACE:
            return f"arn:aws:aps:{self.region}:{self.account}:workspace/ws-{logical_id.lower()}"
        if attribute == "Arn":
            service = kind.split("::")[1].lower() if kind.count("::") == 2 else "twin"
            return f"arn:aws:{service}:{self.region}:{self.account}:{logical_id}"
        return key

    def resolve(self, value: Any) -> Any:
        """``value`` with every intrinsic function replaced by its (made-up or given) value."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((name, argument),) = value.items()
            if name == "Ref":
                return self.ref(str(argument))
            if name == "Fn::GetAtt":
                parts = argument if isinstance(argument, list) else str(argument).split(".", 1)
                return self.get_att(str(parts[0]), str(parts[1]))
            if name == "Fn::Join":
                separator, items = argument
                return str(separator).join(str(self.resolve(item)) for item in self.resolve(items))
            if name == "Fn::Select":
                index, items = argument
                return self.resolve(items)[int(self.resolve(index))]
            if name == "Fn::Sub":
                return self._sub(argument)
            if name == "Fn::Base64":  # user data: decode it again to read what the node runs
                return base64.b64encode(str(self.resolve(argument)).encode()).decode()
            if name.startswith("Fn::"):
                raise TwinError(f"the twin cannot resolve {name} (add it to artifacts.Resolver)")
        return {key: self.resolve(item) for key, item in value.items()}

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else (argument[0], argument[1])

        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return str(self.resolve(variables[name]))
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return self.get_att(logical_id, attribute)
            return self.ref(name)

        return _SUB.sub(one, str(text))


def _resources(template: Mapping[str, Any], kind: str) -> dict[str, Mapping[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in (template.get("Resources") or {}).items()
        if resource.get("Type") == kind
    }


def _only(found: Mapping[str, Any], what: str, chosen: str | None) -> str:
    if chosen is not None:
        if chosen not in found:
            raise TwinError(f"no {what} {chosen!r} in the template (found {sorted(found)})")
        return chosen
    if len(found) != 1:
        raise TwinError(f"the template has {len(found)} {what}s ({sorted(found)}): name the one the twin runs")
    return next(iter(found))


@dataclass(frozen=True)
class MonitoringArtifacts:
    """A workspace's rule files (namespace name -> rule file YAML, as AMP gets it) and its Alertmanager file."""

    workspace: str
    rule_files: Mapping[str, str]
    alertmanager_config: Mapping[str, Any]


def monitoring_artifacts(
    template: Mapping[str, Any], *, workspace: str | None = None, refs: Mapping[str, str] | None = None
) -> MonitoringArtifacts:
    """The rule files and Alertmanager configuration of ``workspace`` (a logical id; default: the only one)."""
    resolver = Resolver(template, refs=dict(refs or {}))
    workspace_id = _only(_resources(template, WORKSPACE), "AWS::APS::Workspace", workspace)
    workspace_arn = resolver.get_att(workspace_id, "Arn")
    rule_files: dict[str, str] = {}
    for logical_id, resource in sorted(_resources(template, RULES).items()):
        properties = resolver.resolve(resource.get("Properties") or {})
        if properties.get("Workspace") != workspace_arn:
            continue
        rule_files[str(properties.get("Name") or logical_id)] = str(properties["Data"])
    if not rule_files:
        raise TwinError(f"no AWS::APS::RuleGroupsNamespace belongs to {workspace_id}")
    definition = resolver.resolve(_resources(template, WORKSPACE)[workspace_id]["Properties"]["AlertManagerDefinition"])
    nested = yaml.safe_load(str(definition)).get("alertmanager_config")
    config = yaml.safe_load(nested) if isinstance(nested, str) else nested
    if not isinstance(config, dict):
        raise TwinError(f"{workspace_id}'s AlertManagerDefinition has no alertmanager_config mapping")
    return MonitoringArtifacts(workspace=workspace_id, rule_files=rule_files, alertmanager_config=config)


@dataclass(frozen=True)
class RemediationArtifacts:
    """What the remediation handler runs with, as the template gives it to Lambda."""

    function: str
    policy: Mapping[str, Any]
    target: Mapping[str, Any]
    topic_arn: str
    table_name: str
    key_schema: list[dict[str, str]]
    attribute_definitions: list[dict[str, str]]
    filter_policy: Mapping[str, Any] | None
    environment: Mapping[str, str]


def _handler_functions(template: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found = {}
    for logical_id, resource in _resources(template, FUNCTION).items():
        variables = ((resource.get("Properties") or {}).get("Environment") or {}).get("Variables") or {}
        if {"POLICY", "TARGET", "TOPIC_ARN", "TABLE_NAME"} <= set(variables):
            found[logical_id] = resource
    return found


def _filter_policy(template: Mapping[str, Any], resolver: Resolver, function_arn: str) -> Mapping[str, Any] | None:
    for resource in _resources(template, SUBSCRIPTION).values():
        properties = resolver.resolve(resource.get("Properties") or {})
        if properties.get("Protocol") == "lambda" and properties.get("Endpoint") == function_arn:
            policy = properties.get("FilterPolicy")
            return json.loads(policy) if isinstance(policy, str) else policy
    return None


def remediation_artifacts(
    template: Mapping[str, Any], *, function: str | None = None, refs: Mapping[str, str] | None = None
) -> RemediationArtifacts:
    """The remediation handler of ``function`` (a logical id; default: the only NodeRemediation handler)."""
    resolver = Resolver(template, refs=dict(refs or {}))
    functions = _handler_functions(template)
    function_id = _only(functions, "remediation handler function", function)
    variables = resolver.resolve(functions[function_id]["Properties"]["Environment"]["Variables"])
    table_ref = functions[function_id]["Properties"]["Environment"]["Variables"]["TABLE_NAME"]
    table_id = table_ref.get("Ref") if isinstance(table_ref, dict) else None
    table = (template.get("Resources") or {}).get(table_id or "", {}).get("Properties") or {}
    if not table.get("KeySchema"):
        raise TwinError(f"{function_id}'s TABLE_NAME is not a table of this template: {table_ref!r}")
    return RemediationArtifacts(
        function=function_id,
        policy=json.loads(variables["POLICY"]),
        target=json.loads(variables["TARGET"]),
        topic_arn=str(variables["TOPIC_ARN"]),
        table_name=str(variables["TABLE_NAME"]),
        key_schema=[dict(k) for k in table["KeySchema"]],
        attribute_definitions=[dict(a) for a in table["AttributeDefinitions"]],
        filter_policy=_filter_policy(template, resolver, resolver.get_att(function_id, "Arn")),
        environment={str(k): str(v) for k, v in variables.items()},
    )


def agent_config_from_user_data(user_data: str) -> dict[str, Any]:
    """The agent configuration a node's (resolved, decoded) user data writes to ``/etc/fmconstructs/prometheus-
    agent.yml``; its instance id is still the placeholder the node's boot replaces."""
    match = _HEREDOC.search(user_data)
    if match is None:
        raise TwinError(f"no {AGENT_CONFIG_PATH} heredoc in the user data")
    config = yaml.safe_load(match.group(1))
    if not isinstance(config, dict):
        raise TwinError(f"{AGENT_CONFIG_PATH} in the user data is not a mapping")
    return config
