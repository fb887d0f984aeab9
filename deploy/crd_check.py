"""Check the custom resources in a manifest against a CustomResourceDefinition's schema, as the
Kubernetes API server does under `kubectl apply`'s default strict field validation: an unknown
field, a wrong type, a value outside an enum or pattern, a missing required field is an error,
named by its path.

    python deploy/crd_check.py --crd ray.io_rayservices.yaml deploy/kuberay-rayservice.yaml

The CRD is the operator's own (KubeRay's `config/crd/bases/ray.io_rayservices.yaml` of a
release, or `kubectl get crd rayservices.ray.io -o yaml` on a cluster running it); nothing of it
is kept in this repository. The schema is checked with `jsonschema` after Kubernetes' structural
rules are made explicit: an object schema admits only its `properties` unless it has
`additionalProperties` or `x-kubernetes-preserve-unknown-fields`, `nullable` admits null,
`x-kubernetes-int-or-string` admits an integer or a string. CEL rules (`x-kubernetes-validations`)
on fields the manifest sets are not evaluated but listed, and the object's own `metadata` is
checked for the ObjectMeta fields a manifest writes (the API server checks it, not the CRD)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import yaml

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
# what a manifest writes in metadata; the server sets the rest (uid, resourceVersion, ...)
OBJECT_META = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "generateName": {"type": "string"},
                   "namespace": {"type": "string"}, "labels": STRING_MAP,
                   "annotations": STRING_MAP,
                   "finalizers": {"type": "array", "items": {"type": "string"}}},
}


@dataclass
class Report:
    """What one manifest's check found, object by object."""
    checked: list[str] = field(default_factory=list)     # "RayService finrag (ray.io/v1)"
    skipped: list[str] = field(default_factory=list)     # documents of other kinds
    errors: list[str] = field(default_factory=list)      # "RayService finrag: spec.x: ..."
    unevaluated: list[str] = field(default_factory=list)  # CEL rules on fields that are set
    values: int = 0                                       # fields and items checked

    @property
    def ok(self) -> bool:
        return bool(self.checked) and not self.errors


def structural(node: dict) -> dict:
    """A JSON Schema with the same meaning the API server gives a CRD's OpenAPI v3 schema."""
    out = {k: v for k, v in node.items()
           if k not in ("properties", "items", "additionalProperties", "anyOf", "allOf",
                        "oneOf", "not", "nullable")}
    if "properties" in node:
        out["properties"] = {k: structural(v) for k, v in node["properties"].items()}
    if isinstance(node.get("items"), dict):
        out["items"] = structural(node["items"])
    for key in ("anyOf", "allOf", "oneOf"):
        if key in node:
            out[key] = [structural(v) for v in node[key]]
    if "not" in node:
        out["not"] = structural(node["not"])
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out["additionalProperties"] = structural(extra)
    elif extra is not None:
        out["additionalProperties"] = extra
    elif node.get("type") == "object" and not node.get("x-kubernetes-preserve-unknown-fields"):
        # a structural schema prunes what it does not name; strict validation rejects it
        out["additionalProperties"] = False
        props = out.setdefault("properties", {})
        if node.get("x-kubernetes-embedded-resource"):
            for key in ("apiVersion", "kind", "metadata"):
                props.setdefault(key, {})
    if node.get("x-kubernetes-int-or-string") and "anyOf" not in node:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("type") == "integer" and node.get("format") in ("int32", "int64"):
        low, high = INT32 if node["format"] == "int32" else INT64
        out.setdefault("minimum", low)
        out.setdefault("maximum", high)
    if node.get("nullable"):
        return {"anyOf": [{"type": "null"}, out], "nullable": True}  # the mark for messages()
    return out


def served_schemas(crd: dict) -> dict[str, dict]:
    """apiVersion -> the object schema, for every version the CRD serves."""
    if crd.get("kind") != "CustomResourceDefinition":
        raise ValueError(f"not a CustomResourceDefinition: kind {crd.get('kind')!r}")
    group = crd["spec"]["group"]
    out = {}
    for version in crd["spec"]["versions"]:
        if version.get("served", True):
            schema = structural(version["schema"]["openAPIV3Schema"])
            schema.setdefault("properties", {})["metadata"] = OBJECT_META
            out[f"{group}/{version['name']}"] = schema
    return out


def path_text(path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(the object)"


def messages(error: jsonschema.ValidationError) -> list[str]:
    """One line per problem, each naming the field as `kubectl` would (spec.a.b[0].c)."""
    where = path_text(error.absolute_path)
    if error.validator == "additionalProperties" and error.validator_value is False:
        known = set(error.schema.get("properties", {}))
        return [f"{path_text([*error.absolute_path, k])}: unknown field"
                for k in sorted(set(error.instance) - known)]
    if error.validator == "anyOf" and error.schema.get("nullable"):
        # a nullable field that is not null: the reason is in the other branch
        inner = [e for e in error.context if e.schema_path and e.schema_path[0] == 1]
        return [m for e in inner for m in messages(e)] or [f"{where}: {error.message}"]
    if error.validator == "anyOf":
        kinds = sorted(s.get("type") for s in error.validator_value if set(s) == {"type"})
        if kinds == ["integer", "string"]:
            return [f"{where}: must be an integer or a string, got {error.instance!r}"]
    return [f"{where}: {error.message}"]


def cel_rules(schema: dict, value, path=()) -> list[str]:
    """The CEL rules of the CRD's schema on fields the value sets (listed, not evaluated)."""
    found = [f"{path_text(path)}: {r.get('rule')}"
             for r in schema.get("x-kubernetes-validations", [])]
    props = schema.get("properties", {})
    if isinstance(value, dict):
        for key, sub in value.items():
            if key in props:
                found += cel_rules(props[key], sub, (*path, key))
            elif isinstance(schema.get("additionalProperties"), dict):
                found += cel_rules(schema["additionalProperties"], sub, (*path, key))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            found += cel_rules(schema["items"], item, (*path, i))
    return found


def count_values(value) -> int:
    if isinstance(value, dict):
        return sum(1 + count_values(v) for v in value.values())
    if isinstance(value, list):
        return sum(1 + count_values(v) for v in value)
    return 0


def check_documents(crd: dict, documents: list) -> Report:
    kind = crd["spec"]["names"]["kind"]
    group = crd["spec"]["group"]
    raw = {f"{group}/{v['name']}": v["schema"]["openAPIV3Schema"]
           for v in crd["spec"]["versions"] if v.get("served", True)}
    schemas = served_schemas(crd)
    report = Report()
    for doc in documents:
        if not isinstance(doc, dict):
            continue
        api = str(doc.get("apiVersion", ""))
        if doc.get("kind") != kind or api.split("/")[0] != group:
            report.skipped.append(f"{doc.get('kind')} ({api})")
            continue
        name = f"{kind} {(doc.get('metadata') or {}).get('name', '?')}"
        if api not in schemas:
            report.errors.append(f"{name}: apiVersion {api} is not served by this CRD "
                                 f"(served: {', '.join(sorted(schemas))})")
            continue
        report.checked.append(f"{name} ({api})")
        report.values += count_values(doc)
        validator = jsonschema.Draft7Validator(schemas[api])
        for error in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            report.errors += [f"{name}: {m}" for m in messages(error)]
        report.unevaluated += [f"{name}: {r}" for r in cel_rules(raw[api], doc)]
    return report


def load_crd(path: Path) -> dict:
    """A CRD file (about 1 MB for KubeRay's: libyaml's loader, when there, reads it 4x faster)."""
    return yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crd", required=True, type=Path,
                        help="the CustomResourceDefinition (YAML)")
    parser.add_argument("manifest", type=Path)
    args = parser.parse_args(argv)
    crd = load_crd(args.crd)
    report = check_documents(crd, list(yaml.safe_load_all(args.manifest.read_text())))
    print(f"{args.manifest}: against {crd['metadata']['name']} from {args.crd}")
    for line in report.checked:
        print(f"  checked {line}")
    for line in report.skipped:
        print(f"  not this CRD's kind: {line}")
    print(f"  {report.values} fields and list items, {len(report.errors)} errors")
    for line in report.errors:
        print(f"  error: {line}")
    for line in report.unevaluated:
        print(f"  CEL rule not evaluated: {line}")
    if not report.checked:
        print(f"  error: no {crd['spec']['names']['kind']} in the manifest")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
