// {{name}}: an opm transformer in JavaScript, made a component by componentize-js (build.mjs).
// This file connects render.js to the WIT contract (wit/transformer.wit): `transform` receives
// the component as JSON text and the render context, and returns each resource as JSON text.
// Throwing `{tag, val}` returns the contract's `transform-error`.

import { log } from "opm:transformer/log@1.1.0";

import { InvalidComponent, render } from "./render.js";

export const transformer = {
  transform(componentJson, context) {
    let resources;
    try {
      resources = render(JSON.parse(componentJson), context);
    } catch (error) {
      if (error instanceof InvalidComponent || error instanceof SyntaxError) {
        throw { tag: "invalid-component", val: error.message };
      }
      // Anything else is the transformer's own failure: say what and where.
      throw { tag: "failed", val: `${error}${where(error)}` };
    }
    log("info", `rendered ${resources.length} resource(s) for module ${context.name}`);
    return resources.map((resource) => JSON.stringify(resource));
  },
};

/** ` (at render@render.js:12:9)`: the first frame of `error`'s stack in this project's files. */
function where(error) {
  const frame = String(error?.stack ?? "")
    .split("\n")
    .find((line) => line.includes(".js:") && !line.includes("/initializer.js:"));
  return frame ? ` (at ${frame.trim()})` : "";
}
