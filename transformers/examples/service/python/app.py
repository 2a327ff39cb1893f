"""The example ServiceTransformer in Python, built with componentize-py: one `v1` Service from a
component's Expose trait. The rules, which it follows to the byte like its Rust, JavaScript and C
twins, are in `../README.md`.

componentize-py hands `transform` the component as a JSON string and the context as a
`types.Context` (its `labels` a list of `(key, value)` tuples). What it returns is the `ok` case;
raising `Err(TransformError_InvalidComponent(message))` returns the `err` case. Any other
exception traps, as a Rust panic does.
"""

import json
import math
import re

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log
from wit_world.imports.types import Context, TransformError_InvalidComponent

# The Service types `expose.type` may name.
TYPES = ["ClusterIP", "NodePort", "LoadBalancer", "Headless"]

# The deepest nesting of arrays and objects a document may have, as in serde_json.
MAX_DEPTH = 127


class Transformer(exports.Transformer):
    """Renders a component's Expose trait into a Service."""

    def transform(self, component: str, context: Context) -> list[str]:
        doc = parse_component(component)
        name = doc["metadata"]["name"]
        spec = doc.get("spec", {})
        expose = spec.get("expose")
        if not isinstance(expose, dict):
            raise invalid(f"component {quote(name)} has no expose trait")
        kind = expose.get("type")
        if not isinstance(kind, str):
            kind = "ClusterIP"
        if kind not in TYPES:
            raise invalid(f"expose.type {quote(kind)} is not one of {', '.join(TYPES)}")
        container_ports = object_or_none(get(spec.get("container"), "ports"))
        declared = object_or_none(expose.get("ports"))
        if declared:
            ports = declared_ports(declared, container_ports)
        else:
            ports = default_ports(container_ports) if container_ports is not None else []
        if not ports:
            raise invalid(
                f"component {quote(name)} is exposed but names no ports: set expose.ports or "
                "container.ports"
            )
        if kind not in ("NodePort", "LoadBalancer"):
            port = next((p for p in ports if "nodePort" in p), None)
            if port is not None:
                raise invalid(
                    f"expose.ports.{port['name']}.nodePort needs expose.type NodePort or "
                    "LoadBalancer"
                )
        log.log(
            log.Level.INFO, f"rendering a {kind} Service for {name} with {len(ports)} port(s)"
        )

        selector = {
            "app.kubernetes.io/instance": context.name,
            "app.kubernetes.io/name": name,
        }
        labels = dict(context.labels)
        labels["app.kubernetes.io/instance"] = context.name
        labels["app.kubernetes.io/name"] = name
        metadata = {"name": name}
        if context.namespace:
            metadata["namespace"] = context.namespace
        metadata["labels"] = sorted_by_key(labels)
        annotations = doc["metadata"].get("annotations", {})
        if annotations:
            metadata["annotations"] = sorted_by_key(annotations)
        service_spec = {}
        if kind == "Headless":
            service_spec["type"] = "ClusterIP"
            service_spec["clusterIP"] = "None"
        else:
            service_spec["type"] = kind
        service_spec["selector"] = selector
        service_spec["ports"] = ports
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata,
            "spec": service_spec,
        }
        return [json.dumps(service, ensure_ascii=False, separators=(",", ":"))]


def declared_ports(declared: dict, container_ports: dict | None) -> list[dict]:
    """The Service ports of `expose.ports`, in name order."""
    names = sorted(container_ports) if container_ports is not None else []
    ports = []
    for name, port in sorted(declared.items()):
        number = get(port, "port")
        if number is None:
            raise invalid(f"expose.ports.{name}.port is required")
        target = get(port, "targetPort")
        if isinstance(target, str):
            if target not in names:
                known = ", ".join(names) if names else "none"
                raise invalid(
                    f"expose.ports.{name}.targetPort {quote(target)} is not a port of the "
                    f"container; it has {known}"
                )
        elif target is None:
            target = name if name in names else number
        entry = {"name": name, "port": number, "targetPort": target}
        copy(port, entry, "protocol")
        copy(port, entry, "nodePort")
        ports.append(entry)
    return ports


def default_ports(container_ports: dict) -> list[dict]:
    """The Service ports of every container port, in name order, each targeting its container
    port by name."""
    ports = []
    for name, port in sorted(container_ports.items()):
        entry = {"name": name, "port": get(port, "containerPort"), "targetPort": name}
        copy(port, entry, "protocol")
        ports.append(entry)
    return ports


def copy(source, to: dict, key: str) -> None:
    """Copies `source[key]` into `to` when it is there and not null."""
    value = get(source, key)
    if value is not None:
        to[key] = value


def get(value, key: str):
    """`value[key]` when `value` is an object, else None (serde_json's `Value::get`); a null
    value is None too, which is all the callers need."""
    return value.get(key) if isinstance(value, dict) else None


def object_or_none(value) -> dict | None:
    """`value` when it is an object, else None."""
    return value if isinstance(value, dict) else None


def sorted_by_key(mapping: dict) -> dict:
    """A copy of `mapping` with its keys in code-point order (as Python compares strings)."""
    return dict(sorted(mapping.items()))


def invalid(message: str) -> Err:
    """The component lacks data this transformer needs, or has it malformed."""
    return Err(TransformError_InvalidComponent(message))


def quote(text: str) -> str:
    """`text` quoted as Rust's `{:?}` quotes a string: `"` and `\\` escaped, `\\0 \\t \\r \\n` by
    name, other control characters as `\\u{hex}`. Other characters are written as they are, as
    Rust writes printable ones."""
    named = {'"': '\\"', "\\": "\\\\", "\0": "\\0", "\t": "\\t", "\r": "\\r", "\n": "\\n"}
    out = []
    for ch in text:
        code = ord(ch)
        if ch in named:
            out.append(named[ch])
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append(f"\\u{{{code:x}}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def parse_component(text: str) -> dict:
    """Parses the component document and checks its shape as the Rust SDK does: an object with
    `metadata.name` a string, `metadata.labels` and `metadata.annotations` maps of strings,
    `resources`, `traits` and `policies` lists of strings, `spec` and `defaults` objects."""

    def fail(why: str) -> Err:
        return invalid(f"malformed component document: {why}")

    # The hook for integers is a call per integer: only when one may be read otherwise than by
    # int (see parse_int); json calls the others only for what Rust refuses or reads as a float.
    hooks = {"parse_float": parse_float, "parse_constant": parse_constant}
    if "-0" in text or LONG_INTEGER.search(text):
        hooks["parse_int"] = parse_int
    try:
        doc = json.loads(text, **hooks)
    except RecursionError:
        raise fail("recursion limit exceeded") from None
    except ValueError as e:  # json.JSONDecodeError, or a number out of range
        raise fail(str(e)) from None
    # Only a \u escape makes a lone surrogate (the text itself is Unicode), and only as many
    # opening brackets as MAX_DEPTH nest that deep: the walk, in Python, is left out when
    # neither can be.
    if "\\u" in text or text.count("[") + text.count("{") > MAX_DEPTH:
        why = check_strings_and_depth(doc)
        if why is not None:
            raise fail(why)
    if not isinstance(doc, dict):
        raise fail("the document is not an object")
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        raise fail("missing field `metadata`" if metadata is None and "metadata" not in doc
                   else "metadata is not an object")
    if not isinstance(metadata.get("name"), str):
        raise fail("metadata.name is not a string" if "name" in metadata
                   else "missing field `name`")
    for key in ("labels", "annotations"):
        value = metadata.get(key, {})
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise fail(f"metadata.{key} is not a map of strings")
    for key in ("resources", "traits", "policies"):
        value = doc.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise fail(f"{key} is not a list of strings")
    for key in ("spec", "defaults"):
        if not isinstance(doc.get(key, {}), dict):
            raise fail(f"{key} is not an object")
    return doc


# An integer of 19 digits or more, which may be past i64 or u64, where Rust reads a float.
LONG_INTEGER = re.compile(r"[0-9]{19}")


def parse_int(text: str):
    """A JSON integer as serde_json reads it: an int when it fits u64 or i64, else a float;
    `-0` is the float -0.0."""
    if text == "-0":
        return -0.0
    if len(text) <= 20:
        number = int(text)
        if -(2**63) <= number < 2**64:
            return number
    return parse_float(text)


def parse_float(text: str) -> float:
    """A JSON number with a fraction or exponent; one too large for a float is an error, as in
    serde_json."""
    number = float(text)
    if math.isinf(number):
        raise ValueError("number out of range")
    return number


def parse_constant(text: str):
    """NaN and Infinity, which Python's json accepts and JSON does not."""
    raise ValueError(f"expected value, found {text}")


def check_strings_and_depth(doc) -> str | None:
    """Why a parsed document is one serde_json refuses: nested deeper than MAX_DEPTH, or holding
    a lone surrogate escape (a string that is not Unicode); None when it is fine."""
    stack = [(doc, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            depth += 1
            if depth > MAX_DEPTH:
                return "recursion limit exceeded"
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    stack.append((key, depth))
                stack.append((item, depth))
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return "lone surrogate in hex escape"
    return None
