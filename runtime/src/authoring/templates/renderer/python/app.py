"""{{name}}: an opm renderer in Python, made a component by componentize-py. This module
connects render.py to the WIT contract (wit/transformer.wit, renderer-world): `render` receives
every resource of the render (each with its JSON text in `value`), the render context and the
output options, and returns the files, their content as bytes. Raising
`Err(RenderError_Failed(...))` returns the contract's `render-error`."""

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import renderer
from wit_world.imports import log

from opm import where
from render import Refused, Unsupported, render


class Renderer(exports.Renderer):
    def render(self, resources, context, options):
        try:
            files = render([r.value for r in resources], options.format, options.split)
        except Unsupported as error:
            raise Err(renderer.RenderError_Failed(str(error)))
        except Refused as error:
            # Each resource by its position in `resources`, and why: the host names the
            # component and transformer that returned it.
            raise Err(renderer.RenderError_Refused(error.refusals))
        except Exception as error:  # anything else is the renderer's own failure
            raise Err(renderer.RenderError_Failed(f"{type(error).__name__}: {error}{where(error)}"))
        log.log(log.Level.INFO, f"wrote {len(resources)} resource(s) of module {context.name}")
        # Mode.PRIVATE (0600) for a file that holds a Secret's data, Mode.EXECUTABLE (0755) for
        # a script.
        return [
            renderer.File(path, [renderer.Chunk_Bytes(content)], renderer.Mode.REGULAR)
            for path, content in files
        ]
