// {{name}}: an opm transformer in JavaScript, made a component by componentize-js (build.mjs).
// This file connects render.js to the WIT contract (wit/transformer.wit): `transform` receives
// the component as JSON text and the render context, and returns each resource as JSON text.
// Throwing `{tag, val}` returns the contract's `transform-error`.

import { log } from "opm:transformer/log@1.0.0";

import { InvalidComponent, render } from "./render.js";

export const transformer = {
  transform(componentJson, context) {
    let resources;
    try {
      resources = render(JSON.parse(componentJson), context);
    } catch (error) {
      const tag = error instanceof InvalidComponent || error instanceof SyntaxError
        ? "invalid-component"
        : "failed";
      throw { tag, val: error.message };
    }
    log("info", `rendered ${resources.length} resource(s) for module ${context.name}`);
    return resources.map((resource) => JSON.stringify(resource));
  },
};
