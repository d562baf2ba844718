"""A JSON Schema for EC2 Image Builder (AWSTOE) component documents, ``schemaVersion`` 1.0.

Written from the Image Builder User Guide, "Use the AWSTOE component document framework for custom components"
(toe-use-documents), section "Document schema and definitions":

- document: ``name`` (string, optional), ``description`` (string, optional), ``schemaVersion`` (string, required,
  "currently 1.0"; the guide's own examples write it unquoted, ``schemaVersion: 1.0``, which YAML reads as a number),
  ``phases`` (list, required);
- phase: ``name`` (string, required), ``steps`` (list, required); "You must include at least one of the following
  phases in your document: build, validate, test"; phase names are unique within a document and step names unique
  within a phase (uniqueness is not expressible in JSON Schema: :func:`document_problems` checks it);
- step: ``name`` and ``action`` (strings), ``timeoutSeconds`` (integer, default 7,200; "-1 ... indicates infinite
  timeout. 0 and other negative values are not allowed"), ``onFailure`` (``Abort`` | ``Continue`` | ``Ignore``,
  default Abort), ``maxAttempts`` (integer, default 1), ``inputs`` (required; a dict, or a list for modules such as
  S3Download in the guide's examples);
- the guide's sub-pages add ``parameters`` and ``constants`` (toe-user-defined-variables) and the step keys ``if``
  (toe-conditional-constructs) and ``loop`` (toe-looping-constructs); they are allowed, not further checked.

Image Builder runs the ``build`` and ``validate`` phases in its build stage and ``test`` in its test stage (same
page, "Phases"); ``container-host-test`` only applies to container images, so AMI components here use the first
three. An ``ExecuteBash`` step takes ``inputs.commands``, a list of strings (toe-action-modules, ExecuteBash).

The schema is plain data: the library does not need ``jsonschema`` at run time; the tests validate every document
the library renders with it (``jsonschema`` Draft 2020-12).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Image Builder phases of an AMI component, in the order Image Builder runs them.
AMI_PHASES: tuple[str, ...] = ("build", "validate", "test")

_VARIABLE_DEFINITION: dict[str, Any] = {
    "type": "object",
    "minProperties": 1,
    "maxProperties": 1,
    "additionalProperties": {
        "type": "object",
        "required": ["type"],
        "properties": {
            "type": {"const": "string"},
            "default": {"type": "string"},
            "value": {"type": "string"},
            "description": {"type": "string"},
        },
        "additionalProperties": False,
    },
}

COMPONENT_DOCUMENT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "EC2 Image Builder component document (AWSTOE schemaVersion 1.0, AMI phases)",
    "type": "object",
    "required": ["schemaVersion", "phases"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string", "minLength": 1},
        "schemaVersion": {"enum": ["1.0", 1.0]},
        "parameters": {"type": "array", "items": _VARIABLE_DEFINITION},
        "constants": {"type": "array", "items": _VARIABLE_DEFINITION},
        "phases": {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": "#/$defs/phase"},
        },
    },
    "$defs": {
        "phase": {
            "type": "object",
            "required": ["name", "steps"],
            "additionalProperties": False,
            "properties": {
                "name": {"enum": list(AMI_PHASES)},
                "steps": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/step"}},
            },
        },
        "step": {
            "type": "object",
            "required": ["name", "action", "inputs"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "action": {"type": "string", "pattern": "^[A-Z][A-Za-z0-9]*$"},
                "timeoutSeconds": {"type": "integer", "anyOf": [{"const": -1}, {"minimum": 1}]},
                "onFailure": {"enum": ["Abort", "Continue", "Ignore"]},
                "maxAttempts": {"type": "integer", "minimum": 1},
                "inputs": {"type": ["object", "array"]},
                "if": {"type": "object"},
                "loop": {"type": "object"},
            },
            "allOf": [
                {
                    "if": {"properties": {"action": {"const": "ExecuteBash"}}, "required": ["action"]},
                    "then": {
                        "properties": {
                            "inputs": {
                                "type": "object",
                                "required": ["commands"],
                                "properties": {
                                    "commands": {
                                        "type": "array",
                                        "minItems": 1,
                                        "items": {"type": "string", "minLength": 1},
                                    },
                                },
                            }
                        }
                    },
                }
            ],
        },
    },
}


def document_problems(document: Mapping[str, Any]) -> list[str]:
    """The rules of the guide that JSON Schema cannot state: at least one of build/validate/test, phase names unique
    in the document, step names unique in each phase. An empty list means none."""
    problems: list[str] = []
    phases = document.get("phases") or []
    names = [phase.get("name") for phase in phases if isinstance(phase, Mapping)]
    if not set(names) & set(AMI_PHASES):
        problems.append("the document has none of the phases build, validate, test")
    if len(names) != len(set(names)):
        problems.append(f"phase names repeat: {names}")
    for phase in phases:
        if not isinstance(phase, Mapping):
            continue
        steps = [step.get("name") for step in phase.get("steps") or [] if isinstance(step, Mapping)]
        if len(steps) != len(set(steps)):
            problems.append(f"step names repeat in phase {phase.get('name')}: {steps}")
    return problems
