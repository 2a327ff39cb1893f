"""The renderer itself, plain Python with no imports from the bindings, so
`python3 -m unittest` runs it natively: writes every resource as one JSON-lines file,
`resources.jsonl`, one compact JSON object per line, in the order the host gives them."""

import json

FILE = "resources.jsonl"
"""The file this renderer writes."""


class Unsupported(Exception):
    """Raised for output this renderer cannot write."""


def render(resources, output_format, split):
    """Writes `resources` (each one resource's JSON text, as the host passes it) as a list of
    (path, bytes) files. `output_format` is what `-o` asks for and `split` is `--split`."""
    # `yaml` is what the host asks for when the user asked for nothing in particular.
    if output_format not in ("yaml", "json"):
        raise Unsupported(f"{{name}} writes JSON lines, not {json.dumps(output_format)}")
    if split:
        raise Unsupported(f"{{name}} writes one file, {FILE}: leave out --split")
    # Parsed and written again, so that each resource is one line whatever its layout.
    lines = [
        json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False) + "\n"
        for text in resources
    ]
    return [(FILE, "".join(lines).encode())]
