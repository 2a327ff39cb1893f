// The one component of ../provider.yaml, made a component by componentize-js (build.mjs).
// This file connects render.js to the WIT contract (wit/transformer.wit): `transform` receives
// the component as JSON text and the render context, and returns each resource as JSON text.
// Throwing `{tag, val}` returns the contract's `transform-error`.

import { log } from "opm:transformer/log@1.2.0";

import { Component, Context, Failed, InvalidComponent, where } from "./opm.js";
import { render } from "./render.js";

export const transformer = {
  transform(componentJson, witContext) {
    const context = new Context(witContext);
    let resources;
    try {
      resources = render(Component.fromJson(componentJson), context);
    } catch (error) {
      if (error instanceof InvalidComponent) {
        throw { tag: "invalid-component", val: error.message };
      }
      if (error instanceof Failed) {
        throw { tag: "failed", val: error.message };
      }
      // Anything else is the transformer's own failure: say what and where in your files.
      throw { tag: "failed", val: `${error}${where(error)}` };
    }
    log("info", `rendered ${resources.length} resource(s) for module ${context.module || context.name}`);
    return resources.map((resource) => JSON.stringify(resource));
  },
};
