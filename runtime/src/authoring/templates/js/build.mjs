// Builds {{name}}.wasm: componentize-js bundles transformer.js with a JavaScript engine into a
// WebAssembly component of the world in wit/. HTTP support is left out: the opm sandbox offers
// no network, and a component that imports it would be refused.
import { writeFile } from "node:fs/promises";
import { componentize } from "@bytecodealliance/componentize-js";

const { component } = await componentize({
  sourcePath: "transformer.js",
  witPath: "wit",
  worldName: "transformer-world",
  disableFeatures: ["http", "fetch-event"],
});
await writeFile(process.argv[2] ?? "{{name}}.wasm", component);
