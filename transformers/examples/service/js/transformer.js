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
 * number it parsed (JSON.parse would write 8080.0 as 8080 and round integers past 2^53).
 */
class JsonNumber {
  constructor(text) {
    this.text = text;
  }
}

/** Renders a component's Expose trait into a Service. */
export const transformer = {
  transform(json, context) {
    const component = parseComponent(json);
    const name = component.get('metadata').get('name');
    const spec = component.get('spec') ?? new Map();
    const expose = spec.get('expose');
    if (!(expose instanceof Map)) {
      throw TransformError.invalid(`component ${quote(name)} has no expose trait`);
    }
    const type = expose.get('type');
    const kind = typeof type === 'string' ? type : 'ClusterIP';
    if (!TYPES.includes(kind)) {
      throw TransformError.invalid(`expose.type ${quote(kind)} is not one of ${TYPES.join(', ')}`);
    }
    const containerPorts = objectOrNull(get(spec.get('container'), 'ports'));
    const declared = objectOrNull(expose.get('ports'));
    let ports;
    if (declared !== null && declared.size > 0) {
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
      const port = ports.find((p) => p.has('nodePort'));
      if (port !== undefined) {
        throw TransformError.invalid(
          `expose.ports.${port.get('name')}.nodePort needs expose.type NodePort or LoadBalancer`,
        );
      }
    }
    log('info', `rendering a ${kind} Service for ${name} with ${ports.length} port(s)`);

    const selector = new Map([
      ['app.kubernetes.io/instance', context.name],
      ['app.kubernetes.io/name', name],
    ]);
    const labels = new Map(context.labels);
    labels.set('app.kubernetes.io/instance', context.name);
    labels.set('app.kubernetes.io/name', name);
    const metadata = new Map([['name', name]]);
    if (context.namespace !== '') {
      metadata.set('namespace', context.namespace);
    }
    metadata.set('labels', sorted(labels));
    const annotations = component.get('metadata').get('annotations') ?? new Map();
    if (annotations.size > 0) {
      metadata.set('annotations', sorted(annotations));
    }
    const serviceSpec = new Map();
    if (kind === 'Headless') {
      serviceSpec.set('type', 'ClusterIP');
      serviceSpec.set('clusterIP', 'None');
    } else {
      serviceSpec.set('type', kind);
    }
    serviceSpec.set('selector', selector);
    serviceSpec.set('ports', ports);
    const service = new Map([
      ['apiVersion', 'v1'],
      ['kind', 'Service'],
      ['metadata', metadata],
      ['spec', serviceSpec],
    ]);
    return [stringify(service)];
  },
};

/** The Service ports of `expose.ports`, in name order. */
function declaredPorts(declared, containerPorts) {
  const names = containerPorts === null ? [] : [...containerPorts.keys()].sort(byCodePoint);
  const ports = [];
  for (const [name, port] of sorted(declared)) {
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
    const entry = new Map([
      ['name', name],
      ['port', number],
      ['targetPort', target],
    ]);
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
  return [...sorted(containerPorts)].map(([name, port]) => {
    const entry = new Map([
      ['name', name],
      ['port', get(port, 'containerPort') ?? null],
      ['targetPort', name],
    ]);
    copy(port, entry, 'protocol');
    return entry;
  });
}

/** Copies `from[key]` into `to` when it is there and not null. */
function copy(from, to, key) {
  const value = get(from, key);
  if (value !== undefined && value !== null) {
    to.set(key, value);
  }
}

/** `value[key]` when `value` is an object, else undefined (serde_json's `Value::get`). */
function get(value, key) {
  return value instanceof Map ? value.get(key) : undefined;
}

/** `value` when it is an object, else null. */
function objectOrNull(value) {
  return value instanceof Map ? value : null;
}

/** A copy of `map` with its keys in code-point order. */
function sorted(map) {
  return new Map([...map].sort(([a], [b]) => byCodePoint(a, b)));
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
 * `resources`, `traits` and `policies` lists of strings, `spec` and `defaults` objects.
 */
function parseComponent(json) {
  const fail = (why) => TransformError.invalid(`malformed component document: ${why}`);
  let doc;
  try {
    doc = parse(json);
  } catch (e) {
    if (e instanceof SyntaxError) {
      throw fail(e.message);
    }
    throw e;
  }
  const isStrings = (list) => Array.isArray(list) && list.every((s) => typeof s === 'string');
  const isStringMap = (map) =>
    map instanceof Map && [...map.values()].every((s) => typeof s === 'string');
  if (!(doc instanceof Map)) {
    throw fail('the document is not an object');
  }
  const metadata = doc.get('metadata');
  if (!(metadata instanceof Map)) {
    throw fail(metadata === undefined ? 'missing field `metadata`' : 'metadata is not an object');
  }
  if (typeof metadata.get('name') !== 'string') {
    throw fail(metadata.has('name') ? 'metadata.name is not a string' : 'missing field `name`');
  }
  for (const key of ['labels', 'annotations']) {
    if (metadata.has(key) && !isStringMap(metadata.get(key))) {
      throw fail(`metadata.${key} is not a map of strings`);
    }
  }
  for (const key of ['resources', 'traits', 'policies']) {
    if (doc.has(key) && !isStrings(doc.get(key))) {
      throw fail(`${key} is not a list of strings`);
    }
  }
  for (const key of ['spec', 'defaults']) {
    if (doc.has(key) && !(doc.get(key) instanceof Map)) {
      throw fail(`${key} is not an object`);
    }
  }
  return doc;
}

/**
 * Parses JSON text into `null`, booleans, strings, `JsonNumber`s, arrays and `Map`s (which keep
 * their keys in document order, a repeated key keeping its first place and its last value, as
 * Rust's map does; a plain object would put integer-like keys first). Throws a SyntaxError
 * saying why and where, in the words of the C twin's parser (../c/json.c).
 */
function parse(text) {
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

/** Writes a value of `parse` (or one built of the same kinds) as compact JSON text. */
function stringify(value) {
  if (value instanceof JsonNumber) {
    return value.text;
  }
  if (Array.isArray(value)) {
    return `[${value.map(stringify).join(',')}]`;
  }
  if (value instanceof Map) {
    const members = [...value].map(([k, v]) => `${JSON.stringify(k)}:${stringify(v)}`);
    return `{${members.join(',')}}`;
  }
  // null, booleans and strings.
  return JSON.stringify(value);
}
