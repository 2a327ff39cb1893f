// {{name}}: an opm renderer in JavaScript, made a component by componentize-js (build.mjs).
// This file connects render.js to the WIT contract (wit/transformer.wit, renderer-world):
// `render` receives every resource of the render (each with its JSON text in `value`), the
// render context and the output options, and returns the files, their content as bytes.
// Throwing `{tag, val}` returns the contract's `render-error`.

import { log } from "opm:transformer/log@1.2.0";

import { where } from "./opm.js";
import { Refused, Unsupported, render } from "./render.js";

export const renderer = {
  render(resources, context, options) {
    let files;
    try {
      files = render(
        resources.map((resource) => resource.value),
        options.format,
        options.split,
      );
    } catch (error) {
      if (error instanceof Unsupported) {
        throw { tag: "failed", val: error.message };
      }
      if (error instanceof Refused) {
        // Each resource by its position in `resources`, and why: the host names the component
        // and transformer that returned it.
        throw { tag: "refused", val: error.refusals };
      }
      // Anything else is the renderer's own failure: say what and where in your files.
      throw { tag: "failed", val: `${error}${where(error)}` };
    }
    log("info", `wrote ${resources.length} resource(s) of module ${context.name}`);
    const encoder = new TextEncoder();
    return files.map(({ path, text }) => ({
      path,
      content: [{ tag: "bytes", val: encoder.encode(text) }],
      // "private" (0600) for a file that holds a Secret's data, "executable" (0755) for a script.
      mode: "regular",
    }));
  },
};
