#!/usr/bin/env python3
"""Flux's post-build variable substitution, re-implemented from Flux's documentation of
Kustomization `spec.postBuild.substitute` (and the envsubst rules it cites), for
runtime/tests/delivery.rs: reads a Kubernetes `v1` List as JSON on stdin, applies the
substitution to every object Flux would apply it to, and prints the List.

The rules, as Flux documents them:
- an object whose labels or annotations hold `kustomize.toolkit.fluxcd.io/substitute: disabled`
  is left as it is;
- `${var}` is replaced by the variable's value, `${var:=default}`, `${var=default}`,
  `${var:-default}` and `${var-default}` by the default when the variable is not set;
- `$$` is an escaped `$` (`$${var}` is the text `${var}`); a `$` before anything else is kept;
- a variable that is not set and has no default becomes the empty string, or, in strict mode
  (kustomize-controller's feature gate StrictPostBuildSubstitutions), fails the whole apply.

Usage: flux-substitute.py [--strict] NAME=VALUE... < list.json > substituted.json
Exit 1, with the reason on stderr, where Flux's apply would fail.
"""
import json
import re
import sys

MARK = "kustomize.toolkit.fluxcd.io/substitute"
NAME = re.compile(r"[_A-Za-z][_A-Za-z0-9]*")


def substitute(text, variables, strict):
    out = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("${", i):
            end = text.find("}", i)
            if end < 0:
                raise ValueError(f"unterminated variable at {text[i:i + 20]!r}")
            expression = text[i + 2:end]
            name = NAME.match(expression)
            if not name:
                raise ValueError(f"bad substitution: ${{{expression}}}")
            rest = expression[name.end():]
            value = variables.get(name.group())
            default = None
            for operator in (":=", ":-", "=", "-"):
                if rest.startswith(operator):
                    default = rest[len(operator):]
                    break
            if value is None:
                if default is None and strict:
                    raise ValueError(f'variable not set (strict mode): "{name.group()}"')
                value = default or ""
            out.append(value)
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def disabled(item):
    metadata = item.get("metadata", {})
    return any(
        (metadata.get(field) or {}).get(MARK) == "disabled" for field in ("labels", "annotations")
    )


def main():
    strict = "--strict" in sys.argv[1:]
    variables = dict(arg.split("=", 1) for arg in sys.argv[1:] if arg != "--strict")
    document = json.load(sys.stdin)
    items = []
    for item in document["items"]:
        if disabled(item) or not variables:
            items.append(item)
            continue
        try:
            items.append(json.loads(substitute(json.dumps(item), variables, strict)))
        except ValueError as error:
            print(f"{item['kind']}/{item['metadata']['name']}: {error}", file=sys.stderr)
            sys.exit(1)
    document["items"] = items
    json.dump(document, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
