"""{{name}}: an opm transformer in Python, made a component by componentize-py. This module
connects render.py to the WIT contract (wit/transformer.wit): `transform` receives the component
as JSON text and the render context, and returns each resource as JSON text. Raising
`Err(TransformError_...)` returns the contract's `transform-error`."""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log, types

from opm import Component, Context, Failed, InvalidComponent, where
from render import render


class Transformer(exports.Transformer):
    def transform(self, component, context):
        context = Context.from_wit(context)
        try:
            resources = render(Component.from_json(component), context)
        except InvalidComponent as error:
            raise Err(types.TransformError_InvalidComponent(str(error)))
        except Failed as error:
            raise Err(types.TransformError_Failed(str(error)))
        except Exception as error:  # anything else is the transformer's own failure
            raise Err(types.TransformError_Failed(f"{type(error).__name__}: {error}{where(error)}"))
        log.log(log.Level.INFO, f"rendered {len(resources)} resource(s) for module {context.module or context.name}")
        return [json.dumps(resource) for resource in resources]
