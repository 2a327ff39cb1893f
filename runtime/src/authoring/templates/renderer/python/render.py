"""The renderer itself, plain Python with no imports from the bindings, so
`python3 -m unittest` runs it natively: writes every resource as one JSON-lines file,
`resources.jsonl`, one compact JSON object per line, in the order the host gives them."""

import json

FILE = "resources.jsonl"
"""The file this renderer writes."""


class Unsupported(Exception):
    """Raised for output this renderer cannot write: the contract's `failed`."""


class Refused(Exception):
    """Raised for resources this renderer will not write, each by its position in the list and
    why: the contract's `refused`, which the host reports as a failure of the transformer that
    returned each one."""

    def __init__(self, refusals):
        super().__init__("; ".join(f"resource {index}: {reason}" for index, reason in refusals))
        self.refusals = refusals


def render(resources, output_format, split):
    """Writes `resources` (each one resource's JSON text, as the host passes it) as a list of
    (path, bytes) files. `output_format` is what `-o` asks for and `split` is `--split`."""
    # `yaml` is what the host asks for when the user asked for nothing in particular.
    if output_format not in ("yaml", "json"):
        raise Unsupported(f"{{name}} writes JSON lines, not {json.dumps(output_format)}")
    if split:
        raise Unsupported(f"{{name}} writes one file, {FILE}: leave out --split")
    objects = [json.loads(text) for text in resources]
    refusals = same_objects(objects)
    if refusals:
        raise Refused(refusals)
    # Written again, so that each resource is one line whatever its layout.
    lines = [json.dumps(o, separators=(",", ":"), ensure_ascii=False) + "\n" for o in objects]
    return [(FILE, "".join(lines).encode())]


def same_objects(objects):
    """(index, reason) for each resource that is the same object as one before it (the same
    apiVersion, kind, namespace and name): the file would hold one object twice, and which of
    them a platform keeps is not this renderer's to guess."""
    first = {}
    refusals = []
    for index, obj in enumerate(objects):
        metadata = obj.get("metadata") or {}
        key = (obj.get("apiVersion"), obj.get("kind"), metadata.get("namespace", ""), metadata.get("name"))
        if key in first:
            refusals.append((index, f"the same object as resource {first[key]}, {obj.get('kind')} {json.dumps(metadata.get('name'))}"))
        else:
            first[key] = index
    return refusals
