// The renderer itself, plain JavaScript with no imports, so `node --test` runs it natively:
// writes every resource as one JSON-lines file, `resources.jsonl`, one compact JSON object per
// line, in the order the host gives them.

/** The file this renderer writes. */
export const FILE = "resources.jsonl";

/** Thrown for output this renderer cannot write. */
export class Unsupported extends Error {}

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
  // Parsed and written again, so that each resource is one line whatever its layout.
  const lines = resources.map((text) => JSON.stringify(JSON.parse(text)) + "\n");
  return [{ path: FILE, text: lines.join("") }];
}
