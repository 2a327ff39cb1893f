// Typed helpers for an opm transformer in JavaScript, as the Rust SDK (opm-guest) has them:
// `Component`, the component the host passes, with accessors for its metadata, attachments and
// spec; `Context`, where it is rendered, with `objectName` for a second instance; the labels
// opm puts on what it renders; and `where`, which says where an error was raised in your files.
// Plain JavaScript with no imports, so `node --test` runs it natively.

/** The tracking label the host adds when the instance is not the module's own name. */
export const INSTANCE_LABEL = "module.opmodel.dev/instance";
/** The tracking label with the module's name. */
export const MODULE_NAME_LABEL = "module.opmodel.dev/name";
/** The tracking label with the module's version. */
export const MODULE_VERSION_LABEL = "module.opmodel.dev/version";
/** The tracking label with the name of the component a resource was rendered from. */
export const COMPONENT_NAME_LABEL = "component.opmodel.dev/name";
/** The tracking label that says opm rendered a resource (`open-platform-model`). */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
/** The label of a component's workload type: stateless, stateful, daemon, job or cronjob. */
export const WORKLOAD_TYPE_LABEL = "core.opm.dev/workload-type";

/** Thrown for a component this transformer cannot render: the contract's `invalid-component`. */
export class InvalidComponent extends Error {}

/** Thrown for any other failure whose message says all: the contract's `failed`. */
export class Failed extends Error {}

/**
 * The component as the host flattens it to JSON (`docs/module-format.md`, "What a transformer
 * receives").
 * @typedef {object} ComponentDocument
 * @property {Metadata} metadata
 * @property {string[]} [resources] FQNs of the attached resources
 * @property {string[]} [traits] FQNs of the attached traits
 * @property {string[]} [policies] FQNs of the attached policies
 * @property {Object<string, *>} [spec] each attached definition's value, keyed by its field
 * @property {Object<string, *>} [defaults] defaults of the optional definitions it lacks
 */

/**
 * A component's name, effective labels and annotations.
 * @typedef {object} Metadata
 * @property {string} name
 * @property {Object<string, string>} [labels]
 * @property {Object<string, string>} [annotations]
 */

/**
 * The context as componentize-js passes it (the WIT record `context`, fields in camelCase,
 * `labels` as `[key, value]` pairs).
 * @typedef {object} WitContext
 * @property {string} name the instance's name
 * @property {string} namespace
 * @property {string} version the module's version
 * @property {string} provider
 * @property {string} timestamp RFC 3339
 * @property {boolean} strict
 * @property {Array<[string, string]>} labels
 * @property {string} [module] since contract 1.1.0
 * @property {string} [platform] since contract 1.1.0
 * @property {string} [providerVersion] since contract 1.1.0
 * @property {string} [transformer] since contract 1.1.0: the FQN of the transformer called
 */

/** One component of a module: its name, effective labels, attachments, spec and defaults. */
export class Component {
  /**
   * Parses the JSON text the host passes to `transform`.
   * @param {string} text
   * @returns {Component}
   */
  static fromJson(text) {
    let document;
    try {
      document = JSON.parse(text);
    } catch (error) {
      throw new InvalidComponent(`malformed component document: ${error.message}`);
    }
    return new Component(document);
  }

  /** @param {ComponentDocument} document the parsed JSON, as a unit test builds it */
  constructor(document) {
    const metadata = document?.metadata;
    if (typeof metadata?.name !== "string") {
      throw new InvalidComponent("malformed component document: no metadata.name");
    }
    /** @type {ComponentDocument} */
    this.document = document;
  }

  /** @returns {string} the component's name, unique in its module */
  get name() {
    return this.document.metadata.name;
  }

  /** @returns {Object<string, string>} effective labels: its definitions', overlaid by its own */
  get labels() {
    return this.document.metadata.labels ?? {};
  }

  /** @returns {Object<string, string>} the component's annotations */
  get annotations() {
    return this.document.metadata.annotations ?? {};
  }

  /** @returns {string[]} FQNs of the attached resources */
  get resources() {
    return this.document.resources ?? [];
  }

  /** @returns {string[]} FQNs of the attached traits */
  get traits() {
    return this.document.traits ?? [];
  }

  /** @returns {string[]} FQNs of the attached policies */
  get policies() {
    return this.document.policies ?? [];
  }

  /** @returns {Object<string, *>} every attached definition's value, keyed by its spec field */
  get spec() {
    return this.document.spec ?? {};
  }

  /** @returns {Object<string, *>} defaults of the transformer's optional definitions it lacks */
  get defaults() {
    return this.document.defaults ?? {};
  }

  /**
   * @param {string} key
   * @returns {string | undefined} one effective label
   */
  label(key) {
    return Object.hasOwn(this.labels, key) ? this.labels[key] : undefined;
  }

  /**
   * @param {string} fqn
   * @returns {boolean} whether the component attaches the resource, trait or policy `fqn`
   */
  attaches(fqn) {
    return [this.resources, this.traits, this.policies].some((list) => list.includes(fqn));
  }

  /**
   * @param {string} field
   * @returns {*} the spec field `field`, or `undefined` when the component does not have it
   */
  field(field) {
    return Object.hasOwn(this.spec, field) ? this.spec[field] : undefined;
  }

  /**
   * @param {string} field
   * @returns {*} the spec field `field`; throws `InvalidComponent` when it is missing
   */
  require(field) {
    const value = this.field(field);
    if (value === undefined) {
      throw new InvalidComponent(`component ${JSON.stringify(this.name)} has no spec.${field}`);
    }
    return value;
  }

  /**
   * @param {string} field
   * @returns {*} the spec field `field`, else the transformer's default for it, else `undefined`
   */
  fieldOrDefault(field) {
    const value = this.field(field);
    if (value !== undefined) {
      return value;
    }
    return Object.hasOwn(this.defaults, field) ? this.defaults[field] : undefined;
  }
}

/** Where a component is being rendered: the WIT `context`, its labels as an object. */
export class Context {
  /** @param {WitContext} context what `transform` (or a renderer's `render`) is given */
  constructor(context) {
    /** The instance's name: the module's, unless the render names another (`--instance`). */
    this.name = context.name;
    /** The target namespace. */
    this.namespace = context.namespace;
    /** The module's version. */
    this.version = context.version;
    /** The name of the provider doing the rendering. */
    this.provider = context.provider;
    /** The render time, RFC 3339. */
    this.timestamp = context.timestamp;
    /** Whether the render runs in strict mode. */
    this.strict = context.strict;
    /**
     * The module's labels and opm's tracking labels, to put on every resource.
     * @type {Object<string, string>}
     */
    this.labels = Array.isArray(context.labels)
      ? Object.fromEntries(context.labels)
      : { ...(context.labels ?? {}) };
    /** The module's name (`name` is the instance's). Since contract 1.1.0. */
    this.module = context.module ?? "";
    /** The platform the render is for (`kubernetes`, `compose`, `quadlet`), or "". Since 1.1.0. */
    this.platform = context.platform ?? "";
    /** The version of the provider that holds this component. Since 1.1.0. */
    this.providerVersion = context.providerVersion ?? "";
    /**
     * The FQN of the transformer called, so that a component several transformers name knows
     * which it serves; "" in a renderer. Since 1.1.0.
     */
    this.transformer = context.transformer ?? "";
  }

  /**
   * What goes before the names of the objects rendered for this instance: nothing for the
   * module's own instance, else the instance's name and `-` (the Rust SDK's rule).
   * @returns {string}
   */
  namePrefix() {
    return Object.hasOwn(this.labels, INSTANCE_LABEL) ? `${this.name}-` : "";
  }

  /**
   * @param {string} name
   * @returns {string} the name of the object `name` for this instance
   */
  objectName(name) {
    return this.namePrefix() + name;
  }
}

/** The scaffold's own files: a frame in one of them is not where your code went wrong. */
const GLUE = ["opm.js", "transformer.js", "renderer.js"];

/**
 * ` (at render@render.js:12:9)`: the innermost frame of `error`'s stack in your own files, and
 * the innermost frame of all when it is elsewhere (a library, these helpers):
 * ` (at render@render.js:12:9; raised at parse@node_modules/lib/index.js:3:9)`. Reads the
 * stacks of StarlingMonkey (componentize-js) and of Node.js.
 * @param {*} error
 * @returns {string}
 */
export function where(error) {
  const frames = String(error?.stack ?? "")
    .split("\n")
    .map(frame)
    .filter((f) => f !== null);
  if (frames.length === 0) {
    return "";
  }
  const own = frames.find((f) => isOwn(f.file));
  if (own === undefined) {
    return ` (at ${frames[0].text})`;
  }
  return own === frames[0] ? ` (at ${own.text})` : ` (at ${own.text}; raised at ${frames[0].text})`;
}

/** One line of a stack as `{file, text}`; `null` for a line that names no file and line. */
function frame(line) {
  const trimmed = line.trim();
  // StarlingMonkey and SpiderMonkey: `function@file:line:column`.
  let match = /^([^@\s]*)@(.+):(\d+):(\d+)$/.exec(trimmed);
  if (match === null) {
    // V8: `at function (file:line:column)` or `at file:line:column`.
    match = /^at (?:(.+) \()?(.+):(\d+):(\d+)\)?$/.exec(trimmed);
  }
  if (match === null) {
    return null;
  }
  const [, name, location, lineNumber, column] = match;
  const file = location.replace(/^file:\/\//, "");
  const shown = location.startsWith("file://") ? file.slice(file.lastIndexOf("/") + 1) : file;
  return { file, text: `${name ?? ""}@${shown}:${lineNumber}:${column}` };
}

/** Whether `file` is the author's: not the engine's, a library's, or the scaffold's glue. */
function isOwn(file) {
  const base = file.slice(file.lastIndexOf("/") + 1);
  return !(
    file === "self-hosted" ||
    file.startsWith("node:") ||
    file.includes("node_modules/") ||
    base === "initializer.js" ||
    GLUE.includes(base)
  );
}
