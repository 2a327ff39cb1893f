"""The transform itself, plain Python whose only import is the helpers (opm.py), so
`python3 -m unittest` runs it natively. One component serves two transformers of provider.yaml:
the host says which one it is calling in `context.transformer`, and `render` looks it up in
ROLES. A ConfigMap resource becomes a ConfigMap, a Secret resource a Secret, each named after
the component (and the instance, with `context.object_name`)."""

import json

from opm import Failed, InvalidComponent

CONFIG_MAP = "example.com/transformers/config@v1#{{pascal}}"
"""The FQN of provider.yaml's transformer of ConfigMap resources."""
SECRET = "example.com/transformers/secret@v1#{{pascal}}"
"""The FQN of provider.yaml's transformer of Secret resources."""


def render(component, context):
    """Renders `component` (an opm.Component) in `context` (an opm.Context) into a list of
    resources, as the transformer `context.transformer` names."""
    role = ROLES.get(context.transformer)
    if role is None:
        raise Failed(
            f"{{name}} serves {' and '.join(ROLES)}, not {json.dumps(context.transformer)}: "
            "name its component only in those entries of provider.yaml"
        )
    return [role(component, context)]


def config_map(component, context):
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(component, context),
        "data": data(component, "configMap"),
    }


def secret(component, context):
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(component, context),
        "type": "Opaque",
        "stringData": data(component, "secret"),
    }


ROLES = {CONFIG_MAP: config_map, SECRET: secret}
"""What each transformer this component serves renders, by its FQN."""


def metadata(component, context):
    """The object's name, namespace and labels: the render's, and the component's name."""
    labels = dict(context.labels)
    labels["app.kubernetes.io/name"] = component.name
    return {"name": context.object_name(component.name), "namespace": context.namespace, "labels": labels}


def data(component, field):
    """The `data` map of the spec field `field`, all of whose values are strings."""
    value = (component.field(field) or {}).get("data")
    if not isinstance(value, dict):
        raise InvalidComponent(f"component {json.dumps(component.name)} has no {field}.data map")
    return value
