"""deploy/crd_check.py gives a CRD's schema the API server's meaning, on a small CRD written
here in KubeRay's shapes (int-or-string quantities, string maps, enums, int32 counts)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from deploy import crd_check

ROOT = Path(__file__).resolve().parents[2]

CRD = yaml.safe_load("""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: pools.example.org}
spec:
  group: example.org
  names: {kind: Pool, plural: pools}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              required: [size]
              properties:
                size: {type: integer, format: int32, minimum: 0}
                mode: {type: string, enum: [fast, safe]}
                owner: {type: string, x-kubernetes-validations: [{rule: "self != ''"}]}
                memory:
                  anyOf: [{type: integer}, {type: string}]
                  pattern: '^[0-9]+(Ki|Mi|Gi)?$'
                  x-kubernetes-int-or-string: true
                params: {type: object, additionalProperties: {type: string}}
                note: {type: string, nullable: true}
                free: {type: object, x-kubernetes-preserve-unknown-fields: true}
                shape: {type: object}
                items:
                  type: array
                  items:
                    type: object
                    properties:
                      name: {type: string}
    - name: v1alpha1
      served: false
      storage: false
      schema:
        openAPIV3Schema: {type: object}
""")

GOOD = {"apiVersion": "example.org/v1", "kind": "Pool",
        "metadata": {"name": "p", "labels": {"app": "x"}},
        "spec": {"size": 3, "mode": "safe", "memory": "16Gi", "params": {"a": "1"},
                 "note": None, "free": {"any": {"thing": [1, 2]}},
                 "items": [{"name": "one"}]}}


def errors_of(change) -> list[str]:
    doc = copy.deepcopy(GOOD)
    change(doc)
    report = crd_check.check_documents(CRD, [doc])
    assert report.checked == ["Pool p (example.org/v1)"]
    return report.errors


def test_a_valid_object_passes_and_other_kinds_are_left_alone():
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    report = crd_check.check_documents(CRD, [other, GOOD, None])
    assert report.ok and report.errors == []
    assert report.checked == ["Pool p (example.org/v1)"] and report.skipped == ["ConfigMap (v1)"]
    assert report.values == crd_check.count_values(GOOD) > 15
    assert report.unevaluated == []


@pytest.mark.parametrize("change, error", [
    (lambda d: d["spec"].update(sise=3), "spec.sise: unknown field"),
    (lambda d: d["spec"]["items"][0].update(nmae="x"), "spec.items[0].nmae: unknown field"),
    (lambda d: d["spec"].update(shape={"x": 1}), "spec.shape.x: unknown field"),
    (lambda d: d.update(status={}), "status: unknown field"),
    (lambda d: d["spec"].update(size="3"), "spec.size: '3' is not of type 'integer'"),
    (lambda d: d["spec"].update(size=2**31), "spec.size: 2147483648 is greater than the maximum"),
    (lambda d: d["spec"].update(mode="slow"), "spec.mode: 'slow' is not one of ['fast', 'safe']"),
    (lambda d: d["spec"].update(memory=1.5), "spec.memory: must be an integer or a string"),
    (lambda d: d["spec"].update(memory="16 Gi"), "spec.memory: '16 Gi' does not match"),
    (lambda d: d["spec"]["params"].update(b=2), "spec.params.b: 2 is not of type 'string'"),
    (lambda d: d["spec"].update(note=5), "spec.note: 5 is not of type 'string'"),
    (lambda d: d["spec"].pop("size"), "spec: 'size' is a required property"),
    (lambda d: d["metadata"]["labels"].update(n=1), "metadata.labels.n: 1 is not of type"),
])
def test_each_problem_is_named_by_its_path(change, error):
    errors = errors_of(change)
    assert len(errors) == 1 and errors[0].startswith(f"Pool p: {error}"), errors


def test_int_or_string_takes_both_and_null_only_where_nullable():
    assert errors_of(lambda d: d["spec"].update(memory=1024)) == []
    errors = errors_of(lambda d: d["spec"].update(mode=None))
    assert "Pool p: spec.mode: None is not of type 'string'" in errors
    assert all(e.startswith("Pool p: spec.mode: ") for e in errors), errors


def test_unserved_version_and_missing_kind_fail():
    doc = dict(copy.deepcopy(GOOD), apiVersion="example.org/v1alpha1")
    report = crd_check.check_documents(CRD, [doc])
    assert not report.ok and "apiVersion example.org/v1alpha1 is not served" in report.errors[0]
    assert not crd_check.check_documents(CRD, []).ok, "a manifest without the kind is no pass"


def test_cel_rules_on_set_fields_are_listed_not_evaluated():
    doc = copy.deepcopy(GOOD)
    doc["spec"]["owner"] = ""
    report = crd_check.check_documents(CRD, [doc])
    assert report.errors == [] and report.unevaluated == ["Pool p: spec.owner: self != ''"]


def test_command_line_exit_status_and_output(tmp_path):
    crd = tmp_path / "crd.yaml"
    crd.write_text(yaml.safe_dump(CRD))
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(yaml.safe_dump(GOOD))
    broken = copy.deepcopy(GOOD)
    broken["spec"]["sise"] = 1
    bad.write_text(yaml.safe_dump(broken))

    def run(path):
        return subprocess.run([sys.executable, str(ROOT / "deploy" / "crd_check.py"), "--crd",
                               str(crd), str(path)], capture_output=True, text=True, timeout=60)

    ok, failed = run(good), run(bad)
    assert ok.returncode == 0 and "checked Pool p (example.org/v1)" in ok.stdout, ok.stdout
    assert "0 errors" in ok.stdout
    assert failed.returncode == 1 and "error: Pool p: spec.sise: unknown field" in failed.stdout
