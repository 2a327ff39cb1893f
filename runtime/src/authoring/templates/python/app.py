"""{{name}}: an opm transformer in Python, made a component by componentize-py. This module
connects render.py to the WIT contract (wit/transformer.wit): `transform` receives the component
as JSON text and the render context, and returns each resource as JSON text. Raising
`Err(TransformError_...)` returns the contract's `transform-error`."""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log, types

from render import InvalidComponent, render


class Transformer(exports.Transformer):
    def transform(self, component, context):
        try:
            resources = render(json.loads(component), context.namespace, context.labels)
        except (InvalidComponent, ValueError) as error:
            raise Err(types.TransformError_InvalidComponent(str(error)))
        except Exception as error:  # anything else is the transformer's own failure
            raise Err(types.TransformError_Failed(f"{type(error).__name__}: {error}{where(error)}"))
        log.log(log.Level.INFO, f"rendered {len(resources)} resource(s) for module {context.name}")
        return [json.dumps(resource) for resource in resources]


def where(error):
    """` (render.py, line 12, in render)`: where `error` was raised, for the message (read from
    the traceback itself: the traceback module would bundle more of the standard library)."""
    tb = error.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return f" ({code.co_filename.rsplit('/', 1)[-1]}, line {tb.tb_lineno}, in {code.co_name})"
