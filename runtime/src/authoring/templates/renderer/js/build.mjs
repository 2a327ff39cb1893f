// Builds {{name}}.wasm: componentize-js bundles renderer.js with a JavaScript engine into a
// WebAssembly component of the renderer world in wit/. HTTP support is left out: the opm
// sandbox offers no network, and a component that imports it would be refused.
import { writeFile } from "node:fs/promises";
import { componentize } from "@bytecodealliance/componentize-js";

const { component } = await componentize({
  sourcePath: "renderer.js",
  witPath: "wit",
  worldName: "renderer-world",
  disableFeatures: ["http", "fetch-event"],
});
await writeFile(process.argv[2] ?? "{{name}}.wasm", component);
