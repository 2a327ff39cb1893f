// The example ServiceTransformer in JavaScript, built with componentize-js: one `v1` Service from
// a component's Expose trait. The rules, which it follows to the byte like its Rust, Python and C
// twins, are in `../README.md`.
//
// componentize-js hands `transform` the component as a JSON string and the context as
// `{name, namespace, version, provider, timestamp, strict, labels}`, `labels` an array of
// `[key, value]` pairs. What it returns is the `ok` case; what it throws with a `payload`
// property is the `err` case, the payload being the `transform-error` variant
// (`{tag: 'invalid-component', val: message}`); any other Error traps, as a Rust panic does.

import { log } from 'opm:transformer/log@1.2.0';

/** The Service types `expose.type` may name. */
const TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer', 'Headless'];

/** The deepest nesting of arrays and objects a document may have, as in serde_json. */
const MAX_DEPTH = 127;

/** Why a transform failed: thrown, it becomes the `err` case of the export's result. */
class TransformError extends Error {
  /** The component lacks data this transformer needs, or has it malformed. */
  static invalid(message) {
    return new TransformError('invalid-component', message);
  }

  constructor(tag, message) {
    super(message);
    this.payload = { tag, val: message };
  }
}

/**
 * A JSON number, kept as its source text: written back as it was given, as Rust writes the
 * number it parsed (a double would write 8080.0 as 8080 and round integers past 2^53).
 * `JSON.stringify` writes it as that text (`JSON.rawJSON`).
 */
class JsonNumber {
  constructor(text) {
    this.text = text;
  }

  toJSON() {
    return JSON.rawJSON(this.text);
  }
}

/** Renders a component's Expose trait into a Service. */
export const transformer = {
  transform(json, context) {
    const { service, message } = render(json, context);
    log('info', message);
    return [service];
  },
};

/**
 * The Service of the component `json` in `context`, as JSON text, and the line to log; throws a
 * TransformError when the component cannot have one.
 */
function render(json, context) {
  const { doc: component, maps } = parseComponent(json);
  const name = get(get(component, 'metadata'), 'name');
  const spec = get(component, 'spec') ?? {};
  const expose = get(spec, 'expose');
  if (!isObject(expose)) {
    throw TransformError.invalid(`component ${quote(name)} has no expose trait`);
  }
  const type = get(expose, 'type');
  const kind = typeof type === 'string' ? type : 'ClusterIP';
  if (!TYPES.includes(kind)) {
    throw TransformError.invalid(`expose.type ${quote(kind)} is not one of ${TYPES.join(', ')}`);
  }
  const containerPorts = objectOrNull(get(get(spec, 'container'), 'ports'));
  const declared = objectOrNull(get(expose, 'ports'));
  let ports;
  if (declared !== null && keysOf(declared).length > 0) {
    ports = declaredPorts(declared, containerPorts);
  } else {
    ports = containerPorts === null ? [] : defaultPorts(containerPorts);
  }
  if (ports.length === 0) {
    throw TransformError.invalid(
      `component ${quote(name)} is exposed but names no ports: set expose.ports or ` +
        'container.ports',
    );
  }
  if (kind !== 'NodePort' && kind !== 'LoadBalancer') {
    const port = ports.find((p) => p.nodePort !== undefined);
    if (port !== undefined) {
      throw TransformError.invalid(
        `expose.ports.${port.name}.nodePort needs expose.type NodePort or LoadBalancer`,
      );
    }
  }

  const labels = new Map(context.labels);
  labels.set('app.kubernetes.io/instance', context.name);
  labels.set('app.kubernetes.io/name', name);
  const metadata = { name };
  if (context.namespace !== '') {
    metadata.namespace = context.namespace;
  }
  metadata.labels = sorted(labels);
  const annotations = get(get(component, 'metadata'), 'annotations');
  if (annotations !== undefined && keysOf(annotations).length > 0) {
    const entries = keysOf(annotations).map((key) => [key, get(annotations, key)]);
    metadata.annotations = sorted(new Map(entries));
  }
  const serviceSpec = {};
  if (kind === 'Headless') {
    serviceSpec.type = 'ClusterIP';
    serviceSpec.clusterIP = 'None';
  } else {
    serviceSpec.type = kind;
  }
  serviceSpec.selector = {
    'app.kubernetes.io/instance': context.name,
    'app.kubernetes.io/name': name,
  };
  serviceSpec.ports = ports;
  const service = { apiVersion: 'v1', kind: 'Service', metadata, spec: serviceSpec };
  return {
    service: maps ? stringifyInOrder(service) : stringify(service),
    message: `rendering a ${kind} Service for ${name} with ${ports.length} port(s)`,
  };
}

/** The Service ports of `expose.ports`, in name order. */
function declaredPorts(declared, containerPorts) {
  const names = containerPorts === null ? [] : sortedKeys(containerPorts);
  const ports = [];
  for (const name of sortedKeys(declared)) {
    const port = get(declared, name);
    const number = get(port, 'port');
    if (number === undefined || number === null) {
      throw TransformError.invalid(`expose.ports.${name}.port is required`);
    }
    let target = get(port, 'targetPort');
    if (typeof target === 'string') {
      if (!names.includes(target)) {
        throw TransformError.invalid(
          `expose.ports.${name}.targetPort ${quote(target)} is not a port of the container; ` +
            `it has ${names.length === 0 ? 'none' : names.join(', ')}`,
        );
      }
    } else if (target === undefined || target === null) {
      target = names.includes(name) ? name : number;
    }
    const entry = { name, port: number, targetPort: target };
    copy(port, entry, 'protocol');
    copy(port, entry, 'nodePort');
    ports.push(entry);
  }
  return ports;
}

/**
 * The Service ports of every container port, in name order, each targeting its container port
 * by name.
 */
function defaultPorts(containerPorts) {
  return sortedKeys(containerPorts).map((name) => {
      const port = get(containerPorts, name);
      const entry = { name, port: get(port, 'containerPort') ?? null, targetPort: name };
      copy(port, entry, 'protocol');
      return entry;
    });
}

/** Copies `from[key]` into `to` when it is there and not null. */
function copy(from, to, key) {
  const value = get(from, key);
  if (value !== undefined && value !== null) {
    to[key] = value;
  }
}

/**
 * Whether `value` is a JSON object: what `parseComponent` gives for one is a plain object when
 * `JSON.parse` read it and a `Map` when `parseText` did, never an array or a `JsonNumber`.
 */
function isObject(value) {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof JsonNumber)
  );
}

/**
 * `value[key]` when `value` is an object that has it, else undefined (serde_json's
 * `Value::get`): an own property only, so that `toString` is no key of every object.
 */
function get(value, key) {
  if (value instanceof Map) {
    return value.get(key);
  }
  return isObject(value) && Object.hasOwn(value, key) ? value[key] : undefined;
}

/** The keys of the object `value`. */
function keysOf(value) {
  return value instanceof Map ? [...value.keys()] : Object.keys(value);
}

/** `value` when it is an object, else null. */
function objectOrNull(value) {
  return isObject(value) ? value : null;
}

/**
 * A line of digits: in the keys joined by newlines, a key JavaScript puts before the others in
 * an object whatever the order it was added in (or a key with a newline, taken for one).
 */
const INDEX = /^(?:0|[1-9][0-9]*)$/m;

/**
 * The entries of `map` with their keys in code-point order: a plain object when no key is an
 * array index (whose members `JSON.stringify` writes in that order), else a `Map`, which keeps
 * an index in its place (see `stringify`).
 */
function sorted(map) {
  const keys = byCodePoints([...map.keys()]);
  if (INDEX.test(keys.join('\n'))) {
    return new Map(keys.map((key) => [key, map.get(key)]));
  }
  const object = {};
  for (const key of keys) {
    object[key] = map.get(key);
  }
  return object;
}

/** A UTF-16 surrogate: a string holding one has characters above U+FFFF. */
const SURROGATE = /[\uD800-\uDFFF]/;

/** The keys of the object `value`, in code-point order. */
function sortedKeys(value) {
  return byCodePoints(keysOf(value));
}

/**
 * `strings`, sorted in code-point order: by the engine's own comparison of UTF-16 code units
 * when none has a surrogate (each code unit is then a code point), natively, else by
 * `byCodePoint`.
 */
function byCodePoints(strings) {
  return SURROGATE.test(strings.join('')) ? strings.sort(byCodePoint) : strings.sort();
}

/**
 * Compares two strings by code point, as Rust compares them (by UTF-8 bytes); `<` compares
 * UTF-16 code units, which puts U+10000 and above before U+E000–U+FFFF.
 */
function byCodePoint(a, b) {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < x.length && i < y.length; i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d !== 0) {
      return d;
    }
  }
  return x.length - y.length;
}
/**
 * `text` quoted as Rust's `{:?}` quotes a string: `"` and `\` escaped, `\0 \t \r \n` by name,
 * other control characters as `\u{hex}`. Other characters are written as they are, as Rust
 * writes printable ones.
 */
function quote(text) {
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0);
    if (ch === '"' || ch === '\\') {
      out += '\\' + ch;
    } else if (ch === '\0') {
      out += '\\0';
    } else if (ch === '\t') {
      out += '\\t';
    } else if (ch === '\r') {
      out += '\\r';
    } else if (ch === '\n') {
      out += '\\n';
    } else if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) {
      out += `\\u{${code.toString(16)}}`;
    } else {
      out += ch;
    }
  }
  return out + '"';
}

/**
 * Parses the component document and checks its shape as the Rust SDK does: an object with
 * `metadata.name` a string, `metadata.labels` and `metadata.annotations` maps of strings,
 * `resources`, `traits` and `policies` lists of strings, `spec` and `defaults` objects. Returns
 * the document and whether its objects are `Map`s (`parseText`'s) rather than plain objects
 * (`parseFast`'s).
 */
function parseComponent(json) {
  const fail = (why) => TransformError.invalid(`malformed component document: ${why}`);
  const maps = !readsAlike(json);
  let doc;
  try {
    doc = maps ? parseText(json) : parseFast(json);
  } catch (e) {
    if (e instanceof SyntaxError) {
      throw fail(e.message);
    }
    throw e;
  }
  const why = shapeError(doc);
  if (why !== null) {
    throw fail(why);
  }
  return { doc, maps };
}

/**
 * Why `doc` is not a component document, or null when it is. Plain loops: the interpreter runs
 * `for…of`, `every` and their callbacks in JavaScript, at a cost a call notices.
 */
function shapeError(doc) {
  if (!isObject(doc)) {
    return 'the document is not an object';
  }
  const metadata = get(doc, 'metadata');
  if (!isObject(metadata)) {
    return metadata === undefined ? 'missing field `metadata`' : 'metadata is not an object';
  }
  const name = get(metadata, 'name');
  if (typeof name !== 'string') {
    return name === undefined ? 'missing field `name`' : 'metadata.name is not a string';
  }
  for (let i = 0; i < STRING_MAPS.length; i++) {
    const value = get(metadata, STRING_MAPS[i]);
    if (value !== undefined && !(isObject(value) && allStrings(valuesOf(value)))) {
      return `metadata.${STRING_MAPS[i]} is not a map of strings`;
    }
  }
  for (let i = 0; i < STRING_LISTS.length; i++) {
    const value = get(doc, STRING_LISTS[i]);
    if (value !== undefined && !(Array.isArray(value) && allStrings(value))) {
      return `${STRING_LISTS[i]} is not a list of strings`;
    }
  }
  for (let i = 0; i < OBJECTS.length; i++) {
    const value = get(doc, OBJECTS[i]);
    if (value !== undefined && !isObject(value)) {
      return `${OBJECTS[i]} is not an object`;
    }
  }
  return null;
}

/** The members of a component's metadata that are maps of strings. */
const STRING_MAPS = ['labels', 'annotations'];
/** The members of a component document that are lists of strings. */
const STRING_LISTS = ['resources', 'traits', 'policies'];
/** The members of a component document that are objects. */
const OBJECTS = ['spec', 'defaults'];

/** Whether every item of the array `items` is a string. */
function allStrings(items) {
  for (let i = 0; i < items.length; i++) {
    if (typeof items[i] !== 'string') {
      return false;
    }
  }
  return true;
}

/** The values of the object `value`. */
function valuesOf(value) {
  return value instanceof Map ? [...value.values()] : Object.values(value);
}

/**
 * Parses JSON text as `parseText` does, but into plain objects rather than `Map`s, with the
 * engine's own `JSON.parse`, natively, keeping each number's source text: for text that
 * `readsAlike` passed. What `JSON.parse` refuses, `parseText` reads, to say why and where.
 */
function parseFast(text) {
  try {
    return JSON.parse(text, keepNumber);
  } catch {
    return parseText(text);
  }
}

/**
 * `JSON.parse`'s reviver: a number as its source text, as `parseText` keeps it; one too large
 * for a double is refused, as in Rust.
 */
function keepNumber(key, value, context) {
  if (typeof value !== 'number') {
    return value;
  }
  if (!Number.isFinite(value)) {
    throw new RangeError('number out of range');
  }
  return new JsonNumber(context.source);
}

/**
 * Whether `JSON.parse` into plain objects reads `text` as `parseText` does, but for the range of
 * numbers, which `keepNumber` checks: when no key is an integer (which a plain object moves to
 * the front, out of document order) nor has a `\u` escape of a digit (which could make one),
 * when there is no `\u` escape of a surrogate (Rust refuses a lone one), and when there are
 * fewer opening brackets than MAX_DEPTH + 1 (so that it cannot nest deeper than Rust allows).
 * The checks run natively, in the regular-expression engine, and may refuse what would be
 * fine: then `parseText` reads it.
 */
function readsAlike(text) {
  return (
    !INTEGER_KEY.test(text) && !(text.includes('\\u') && ESCAPE.test(text)) && !DEEP.test(text)
  );
}

/** A string of digits followed by a colon: an integer key, or text inside a string. */
const INTEGER_KEY = /"(?:0|[1-9][0-9]*)"\s*:/;

/** A `\u` escape of a UTF-16 surrogate or of a digit. */
const ESCAPE = /\\u(?:[dD][89a-fA-F]|003[0-9])/;

/** Text with more opening brackets than MAX_DEPTH (in strings or not). */
const DEEP = new RegExp(`^(?:[^[{]*[[{]){${MAX_DEPTH + 1}}`);

/**
 * Parses JSON text into `null`, booleans, strings, `JsonNumber`s, arrays and `Map`s (which keep
 * their keys in document order, a repeated key keeping its first place and its last value, as
 * Rust's map does; a plain object would put integer-like keys first). Throws a SyntaxError
 * saying why and where, in the words of the C twin's parser (../c/json.c). Written in
 * JavaScript, it runs in the interpreter at thousands of WebAssembly instructions a character:
 * `parseFast` reads what it can.
 */
function parseText(text) {
  let at = 0;
  const ESCAPES = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

  /** A SyntaxError saying why the parse failed, at the current line and column (in bytes). */
  const fail = (why) => {
    let line = 1;
    let column = 1;
    for (const ch of text.slice(0, at)) {
      const code = ch.codePointAt(0);
      if (ch === '\n') {
        line++;
        column = 1;
      } else {
        column += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
      }
    }
    return new SyntaxError(`${why} at line ${line} column ${column}`);
  };
  /** Skips whitespace. */
  const skipSpace = () => {
    while (at < text.length && ' \t\n\r'.includes(text[at])) {
      at++;
    }
  };
  /** Whether the next character is `ch`; consumes it when it is. */
  const eat = (ch) => {
    if (text[at] === ch) {
      at++;
      return true;
    }
    return false;
  };
  /** Whether the next character is an ASCII digit. */
  const atDigit = () => at < text.length && text[at] >= '0' && text[at] <= '9';
  /** Reads the four hex digits of a `\u` escape. */
  const hex4 = () => {
    if (text.length - at < 4) {
      throw fail('EOF while parsing a string');
    }
    let code = 0;
    for (let i = 0; i < 4; i++) {
      const digit = parseInt(text[at++], 16);
      if (Number.isNaN(digit)) {
        throw fail('invalid escape');
      }
      code = code * 16 + digit;
    }
    return code;
  };
  /** Reads the escape after a backslash. */
  const escape = () => {
    if (at === text.length) {
      throw fail('EOF while parsing a string');
    }
    const ch = text[at++];
    if (Object.hasOwn(ESCAPES, ch)) {
      return ESCAPES[ch];
    }
    if (ch !== 'u') {
      throw fail('invalid escape');
    }
    let code = hex4();
    if (code >= 0xdc00 && code <= 0xdfff) {
      throw fail('lone trailing surrogate in hex escape');
    }
    if (code >= 0xd800 && code <= 0xdbff) {
      // A leading surrogate must be followed by the escape of a trailing one.
      if (!eat('\\') || !eat('u')) {
        throw fail('lone leading surrogate in hex escape');
      }
      const low = hex4();
      if (low < 0xdc00 || low > 0xdfff) {
        throw fail('lone leading surrogate in hex escape');
      }
      code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
    }
    return String.fromCodePoint(code);
  };
  /** Reads a string, its opening quote next. */
  const string = () => {
    let out = '';
    at++;
    for (;;) {
      if (at === text.length) {
        throw fail('EOF while parsing a string');
      }
      const ch = text[at++];
      if (ch === '"') {
        return out;
      } else if (ch === '\\') {
        out += escape();
      } else if (ch < ' ') {
        throw fail('control character (\\u0000-\\u001F) found while parsing a string');
      } else {
        out += ch;
      }
    }
  };
  /** Reads a number, kept as its source text. */
  const number = () => {
    const start = at;
    const digits = () => {
      if (!atDigit()) {
        throw fail('invalid number');
      }
      while (atDigit()) {
        at++;
      }
    };
    eat('-');
    if (!eat('0')) {
      digits();
    }
    if (eat('.')) {
      digits();
    }
    if (eat('e') || eat('E')) {
      if (!eat('+')) {
        eat('-');
      }
      digits();
    }
    const source = text.slice(start, at);
    if (!Number.isFinite(Number(source))) {
      throw fail('number out of range');
    }
    return new JsonNumber(source);
  };
  /** Reads `word` (true, false, null) as `literal`. */
  const word = (word, literal) => {
    if (!text.startsWith(word, at)) {
      throw fail('expected value');
    }
    at += word.length;
    return literal;
  };
  /** Reads an array, its `[` next. */
  const array = (depth) => {
    const items = [];
    at++;
    skipSpace();
    if (eat(']')) {
      return items;
    }
    for (;;) {
      items.push(value(depth + 1));
      skipSpace();
      if (eat(']')) {
        return items;
      }
      if (!eat(',')) {
        throw fail(at === text.length ? 'EOF while parsing a list' : 'expected `,` or `]`');
      }
    }
  };
  /** Reads an object, its `{` next. */
  const object = (depth) => {
    const members = new Map();
    at++;
    skipSpace();
    if (eat('}')) {
      return members;
    }
    for (;;) {
      skipSpace();
      if (at === text.length) {
        throw fail('EOF while parsing an object');
      }
      if (text[at] !== '"') {
        throw fail('key must be a string');
      }
      const key = string();
      skipSpace();
      if (!eat(':')) {
        throw fail(at === text.length ? 'EOF while parsing an object' : 'expected `:`');
      }
      members.set(key, value(depth + 1));
      skipSpace();
      if (eat('}')) {
        return members;
      }
      if (!eat(',')) {
        throw fail(at === text.length ? 'EOF while parsing an object' : 'expected `,` or `}`');
      }
    }
  };
  /** Reads any value; `depth` is the number of arrays and objects it is inside. */
  const value = (depth) => {
    skipSpace();
    if (at === text.length) {
      throw fail('EOF while parsing a value');
    }
    const ch = text[at];
    if ((ch === '[' || ch === '{') && depth >= MAX_DEPTH) {
      throw fail('recursion limit exceeded');
    }
    switch (ch) {
      case '[':
        return array(depth);
      case '{':
        return object(depth);
      case '"':
        return string();
      case 't':
        return word('true', true);
      case 'f':
        return word('false', false);
      case 'n':
        return word('null', null);
      default:
        if (ch === '-' || (ch >= '0' && ch <= '9')) {
          return number();
        }
        throw fail('expected value');
    }
  };

  const doc = value(0);
  skipSpace();
  if (at !== text.length) {
    throw fail('trailing characters');
  }
  return doc;
}

/**
 * Writes the Service as compact JSON text: `JSON.stringify`, natively, which writes a
 * `JsonNumber` as its text; members in the order they were added, but for a label or annotation
 * whose key is an array index (see `sorted`), which are written by `stringifyInOrder`.
 */
function stringify(service) {
  const { labels, annotations } = service.metadata;
  if (labels instanceof Map || annotations instanceof Map) {
    return stringifyInOrder(service);
  }
  return JSON.stringify(service);
}

/** Writes a value of `parseText` or `render`, with `Map`s, in JavaScript. */
function stringifyInOrder(value) {
  if (value instanceof JsonNumber) {
    return value.text;
  }
  if (Array.isArray(value)) {
    return `[${value.map(stringifyInOrder).join(',')}]`;
  }
  if (value instanceof Map || isObject(value)) {
    const entries = value instanceof Map ? [...value] : Object.entries(value);
    const members = entries.map(([k, v]) => `${JSON.stringify(k)}:${stringifyInOrder(v)}`);
    return `{${members.join(',')}}`;
  }
  // null, booleans and strings.
  return JSON.stringify(value);
}

// componentize-js makes the component from a snapshot of the engine taken after this module's
// top-level code ran. Rendering a Service here puts in the snapshot what the first render would
// otherwise do in every call, each in a fresh instance: compile the regular expressions and
// the functions' bytecode.
render(
  '{"metadata":{"name":"api","annotations":{"b":"1","a":"2"}},"spec":{"container":' +
    '{"ports":{"http":{"containerPort":8080},"metrics":{"containerPort":9090}}},' +
    '"expose":{"type":"NodePort",' +
    '"ports":{"web":{"port":80,"targetPort":"http","nodePort":30080}}}}}',
  { name: 'warm', namespace: 'warm', labels: [['b', '1']] },
);
