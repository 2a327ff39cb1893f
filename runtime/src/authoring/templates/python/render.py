"""The transform itself, plain Python with no imports from the bindings, so
`python3 -m unittest` runs it natively: renders a component's `configMap.data` into a ConfigMap
named after the component."""

import json


class InvalidComponent(Exception):
    """Raised for a component this transformer cannot render."""


def render(component, namespace, labels):
    """Renders `component` (the parsed JSON the host passes) into a list of resources.

    `labels` are the render's labels as (key, value) pairs."""
    name = (component.get("metadata") or {}).get("name")
    if not isinstance(name, str):
        raise InvalidComponent("the component has no metadata.name")
    data = ((component.get("spec") or {}).get("configMap") or {}).get("data")
    if not isinstance(data, dict):
        raise InvalidComponent(f"component {json.dumps(name)} has no configMap.data map")
    resource_labels = dict(labels)
    resource_labels["app.kubernetes.io/name"] = name
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": resource_labels},
            "data": data,
        }
    ]
