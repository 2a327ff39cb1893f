"""The objects of a rendered multi-document YAML stream, for the benchmarks that check that two
renderers emit the same ones (benches/e2e.sh against helm and opm-native, benches/real.sh against
helm): `objects` loads a stream's objects keyed by API group, kind, namespace and name, and
`first_difference` finds where two of them differ. The scripts import it with benches/ on
PYTHONPATH (and PYTHONDONTWRITEBYTECODE set, so that no __pycache__ is left in the tree).
"""
import sys

import yaml

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def objects(path, namespace=None, noun=None):
    """The objects of the YAML stream at `path` by (API group, kind, namespace, name); an object
    without a namespace is keyed under `namespace`. Exits with `PATH: [NOUN ]KEY appears twice`
    when two objects have one key."""
    found = {}
    with open(path) as f:
        for doc in yaml.load_all(f, Loader=Loader):
            if doc is None:
                continue
            api, meta = doc.get("apiVersion", ""), doc.get("metadata") or {}
            group = api.rsplit("/", 1)[0] if "/" in api else ""
            ns = meta.get("namespace")
            if namespace is not None:
                ns = ns or namespace
            key = (group, doc.get("kind"), ns, meta.get("name"))
            if key in found:
                sys.exit(f"{path}: {noun + ' ' if noun else ''}{key} appears twice")
            found[key] = doc
    return found


def first_difference(a, b, at="$", name_side=False):
    """The first place where the values `a` and `b` differ, as `PATH: what`, or None when they
    are equal. Where a mapping has a key on one side only, the text says which side holds it
    (`PATH.KEY: only in the first`) with `name_side`, else what is on each side
    (`PATH.KEY: VALUE vs missing`)."""
    if type(a) is not type(b):
        return f"{at}: {a!r} vs {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                if name_side:
                    return f"{at}.{k}: only in {'the second' if k not in a else 'the first'}"
                return (f"{at}.{k}: {'missing' if k not in a else repr(a[k])} vs "
                        f"{'missing' if k not in b else repr(b[k])}")
            d = first_difference(a[k], b[k], f"{at}.{k}", name_side)
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{at}: {len(a)} items vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{at}[{i}]", name_side)
            if d:
                return d
        return None
    return None if a == b else f"{at}: {a!r} vs {b!r}"
