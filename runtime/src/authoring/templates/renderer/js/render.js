// The renderer itself, plain JavaScript with no imports, so `node --test` runs it natively:
// writes every resource as one JSON-lines file, `resources.jsonl`, one compact JSON object per
// line, in the order the host gives them.

/** The file this renderer writes. */
export const FILE = "resources.jsonl";

/** Thrown for output this renderer cannot write: the contract's `failed`. */
export class Unsupported extends Error {}

/**
 * Thrown for resources this renderer will not write, each by its position in the list and why:
 * the contract's `refused`, which the host reports as a failure of the transformer that
 * returned each one.
 */
export class Refused extends Error {
  /** @param {Array<[number, string]>} refusals */
  constructor(refusals) {
    super(refusals.map(([index, reason]) => `resource ${index}: ${reason}`).join("; "));
    this.refusals = refusals;
  }
}

/**
 * Writes `resources` (each one resource's JSON text, as the host passes it) as files, each
 * `{path, text}`. `format` is what `-o` asks for and `split` is `--split`.
 */
export function render(resources, format, split) {
  // `yaml` is what the host asks for when the user asked for nothing in particular.
  if (format !== "yaml" && format !== "json") {
    throw new Unsupported(`{{name}} writes JSON lines, not ${JSON.stringify(format)}`);
  }
  if (split) {
    throw new Unsupported(`{{name}} writes one file, ${FILE}: leave out --split`);
  }
  const objects = resources.map((text) => JSON.parse(text));
  const refusals = sameObjects(objects);
  if (refusals.length > 0) {
    throw new Refused(refusals);
  }
  // Written again, so that each resource is one line whatever its layout.
  const lines = objects.map((object) => JSON.stringify(object) + "\n");
  return [{ path: FILE, text: lines.join("") }];
}

/**
 * `[index, reason]` for each resource that is the same object as one before it (the same
 * apiVersion, kind, namespace and name): the file would hold one object twice, and which of
 * them a platform keeps is not this renderer's to guess.
 */
function sameObjects(objects) {
  const first = new Map();
  const refusals = [];
  objects.forEach((object, index) => {
    const { name, namespace = "" } = object?.metadata ?? {};
    const key = JSON.stringify([object?.apiVersion, object?.kind, namespace, name]);
    if (first.has(key)) {
      refusals.push([index, `the same object as resource ${first.get(key)}, ${object.kind} ${JSON.stringify(name)}`]);
    } else {
      first.set(key, index);
    }
  });
  return refusals;
}
