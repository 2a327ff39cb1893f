// Builds transformer.js into a WebAssembly component of `transformer-world` (the repository's
// wit/), written to the path given as the first argument, by default kubernetes.wasm beside
// this script, where ../provider.yaml names it: `npm run build` or `node build.mjs OUT`.

import { writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { componentize } from "@bytecodealliance/componentize-js";

const here = dirname(fileURLToPath(import.meta.url));
const output = resolve(process.argv[2] ?? resolve(here, "kubernetes.wasm"));

const { component } = await componentize({
  sourcePath: resolve(here, "transformer.js"),
  witPath: resolve(here, "../../../../wit"),
  worldName: "transformer-world",
  disableFeatures: ["http", "fetch-event"],
});
await writeFile(output, component);
