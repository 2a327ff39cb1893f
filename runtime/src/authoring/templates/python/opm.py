"""Typed helpers for an opm transformer in Python, as the Rust SDK (opm-guest) has them:
`Component`, the component the host passes, with accessors for its metadata, attachments and
spec; `Context`, where it is rendered, with `object_name` for a second instance; the labels opm
puts on what it renders; and `where`, which says where an exception was raised in your files.
Plain Python with no imports from the bindings, so `python3 -m unittest` runs it natively."""

import json
from dataclasses import dataclass, field

INSTANCE_LABEL = "module.opmodel.dev/instance"
"""The tracking label the host adds when the instance is not the module's own name."""
MODULE_NAME_LABEL = "module.opmodel.dev/name"
"""The tracking label with the module's name."""
MODULE_VERSION_LABEL = "module.opmodel.dev/version"
"""The tracking label with the module's version."""
COMPONENT_NAME_LABEL = "component.opmodel.dev/name"
"""The tracking label with the name of the component a resource was rendered from."""
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
"""The tracking label that says opm rendered a resource (`open-platform-model`)."""
WORKLOAD_TYPE_LABEL = "core.opm.dev/workload-type"
"""The label of a component's workload type: stateless, stateful, daemon, job or cronjob."""


class InvalidComponent(Exception):
    """Raised for a component this transformer cannot render: the contract's
    `invalid-component`."""


class Failed(Exception):
    """Raised for any other failure whose message says all: the contract's `failed`."""


@dataclass(frozen=True)
class Component:
    """One component of a module, as the host flattens it to JSON (`docs/module-format.md`,
    "What a transformer receives"): its name, effective labels, attachments, spec and
    defaults."""

    name: str
    """The component's name, unique in its module."""
    labels: dict[str, str] = field(default_factory=dict)
    """Effective labels: those of every attached definition, overlaid by the component's own."""
    annotations: dict[str, str] = field(default_factory=dict)
    resources: list[str] = field(default_factory=list)
    """FQNs of the attached resources."""
    traits: list[str] = field(default_factory=list)
    """FQNs of the attached traits."""
    policies: list[str] = field(default_factory=list)
    """FQNs of the attached policies."""
    spec: dict = field(default_factory=dict)
    """Every attached definition's value, keyed by its spec field (`container`, `expose`, …)."""
    defaults: dict = field(default_factory=dict)
    """Defaults of the transformer's optional definitions that the component does not attach."""

    @classmethod
    def from_json(cls, text):
        """Parses the JSON text the host passes to `transform`."""
        try:
            document = json.loads(text)
        except ValueError as error:
            raise InvalidComponent(f"malformed component document: {error}") from None
        return cls.from_value(document)

    @classmethod
    def from_value(cls, document):
        """Builds a component from the parsed JSON, as a unit test does."""
        metadata = document.get("metadata") if isinstance(document, dict) else None
        if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
            raise InvalidComponent("malformed component document: no metadata.name")
        return cls(
            name=metadata["name"],
            labels=metadata.get("labels") or {},
            annotations=metadata.get("annotations") or {},
            resources=document.get("resources") or [],
            traits=document.get("traits") or [],
            policies=document.get("policies") or [],
            spec=document.get("spec") or {},
            defaults=document.get("defaults") or {},
        )

    def label(self, key):
        """One effective label, or None."""
        return self.labels.get(key)

    def attaches(self, fqn):
        """Whether the component attaches the resource, trait or policy `fqn`."""
        return fqn in self.resources or fqn in self.traits or fqn in self.policies

    def field(self, name):
        """The spec field `name`, or None when the component does not have it."""
        return self.spec.get(name)

    def require(self, name):
        """The spec field `name`; raises InvalidComponent when it is missing."""
        if name not in self.spec:
            raise InvalidComponent(f"component {json.dumps(self.name)} has no spec.{name}")
        return self.spec[name]

    def field_or_default(self, name):
        """The spec field `name`, else the transformer's default for it, else None."""
        if name in self.spec:
            return self.spec[name]
        return self.defaults.get(name)


@dataclass(frozen=True)
class Context:
    """Where a component is being rendered: the WIT `context`, its labels as a dict."""

    name: str
    """The instance's name: the module's, unless the render names another (`--instance`)."""
    namespace: str = ""
    version: str = ""
    """The module's version."""
    provider: str = ""
    """The name of the provider doing the rendering."""
    timestamp: str = ""
    """The render time, RFC 3339."""
    strict: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    """The module's labels and opm's tracking labels, to put on every resource."""
    module: str = ""
    """The module's name (`name` is the instance's). Since contract 1.1.0."""
    platform: str = ""
    """The platform the render is for (`kubernetes`, `compose`, `quadlet`), or "". Since 1.1.0."""
    provider_version: str = ""
    """The version of the provider that holds this component. Since 1.1.0."""
    transformer: str = ""
    """The FQN of the transformer called, so that a component several transformers name knows
    which it serves; "" in a renderer. Since 1.1.0."""

    @classmethod
    def from_wit(cls, context):
        """The context `transform` (or a renderer's `render`) is given, whose `labels` are
        (key, value) pairs."""
        return cls(
            name=context.name,
            namespace=context.namespace,
            version=context.version,
            provider=context.provider,
            timestamp=context.timestamp,
            strict=context.strict,
            labels=dict(context.labels),
            module=getattr(context, "module", ""),
            platform=getattr(context, "platform", ""),
            provider_version=getattr(context, "provider_version", ""),
            transformer=getattr(context, "transformer", ""),
        )

    def name_prefix(self):
        """What goes before the names of the objects rendered for this instance: nothing for
        the module's own instance, else the instance's name and `-` (the Rust SDK's rule)."""
        return f"{self.name}-" if INSTANCE_LABEL in self.labels else ""

    def object_name(self, name):
        """The name of the object `name` for this instance."""
        return self.name_prefix() + name


GLUE = ("app.py", "opm.py")
"""The scaffold's own files: a frame in one of them is not where your code went wrong."""


def where(error):
    """` (render.py, line 12, in render)`: the innermost frame of `error`'s traceback in your
    own files, and the innermost of all when it is elsewhere (the standard library, a package,
    these helpers): ` (render.py, line 12, in render; raised in json/encoder.py, line 180, in
    default)`. Read from the traceback itself: the traceback module would bundle more of the
    standard library."""
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    if not frames:
        return ""
    own = [frame for frame in frames if _is_own(frame[0].co_filename)]
    innermost = frames[-1]
    if not own:
        return f" ({_frame(innermost)})"
    if own[-1] is innermost:
        return f" ({_frame(innermost)})"
    return f" ({_frame(own[-1])}; raised in {_frame(innermost)})"


_LIBRARY = json.__file__.rsplit("/", 2)[0] + "/"
"""The standard library's directory: `/usr/lib/python3.11/` natively, `/python/` in a
componentize-py component."""


def _is_own(path):
    """Whether `path` is the author's: not the standard library's or a package's, frozen, or
    the glue's."""
    return not (
        path.startswith("<")
        or path.startswith(_LIBRARY)
        or "-packages/" in path
        or path.rsplit("/", 1)[-1] in GLUE
    )


def _frame(frame):
    code, line = frame
    path = code.co_filename
    if "-packages/" in path:
        path = path.split("-packages/", 1)[1]  # `yaml/parser.py`, in its package
    elif path.startswith(_LIBRARY):
        path = path.removeprefix(_LIBRARY)  # `json/encoder.py`, in the standard library
    else:
        path = path.rsplit("/", 1)[-1]
    return f"{path}, line {line}, in {code.co_name}"
