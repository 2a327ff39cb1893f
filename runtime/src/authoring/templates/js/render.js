// The transform itself, plain JavaScript whose only import is the helpers (opm.js), so
// `node --test` runs it natively. One component serves two transformers of provider.yaml:
// the host says which one it is calling in `context.transformer`, and `render` looks it up in
// ROLES. A ConfigMap resource becomes a ConfigMap, a Secret resource a Secret, each named after
// the component (and the instance, with `context.objectName`).

import { Failed, InvalidComponent } from "./opm.js";

/** The FQN of provider.yaml's transformer of ConfigMap resources. */
export const CONFIG_MAP = "example.com/transformers/config@v1#{{pascal}}";
/** The FQN of provider.yaml's transformer of Secret resources. */
export const SECRET = "example.com/transformers/secret@v1#{{pascal}}";

/** What each transformer this component serves renders, by its FQN. */
const ROLES = {
  [CONFIG_MAP]: (component, context) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: metadata(component, context),
    data: data(component, "configMap"),
  }),
  [SECRET]: (component, context) => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: metadata(component, context),
    type: "Opaque",
    stringData: data(component, "secret"),
  }),
};

/**
 * Renders `component` (a `Component` of opm.js) in `context` (a `Context`) into a list of
 * resources, as the transformer `context.transformer` names.
 * @param {import("./opm.js").Component} component
 * @param {import("./opm.js").Context} context
 * @returns {object[]}
 */
export function render(component, context) {
  const role = ROLES[context.transformer];
  if (role === undefined) {
    throw new Failed(
      `{{name}} serves ${Object.keys(ROLES).join(" and ")}, not ${JSON.stringify(context.transformer)}: ` +
        "name its component only in those entries of provider.yaml",
    );
  }
  return [role(component, context)];
}

/** The object's name, namespace and labels: the render's, and the component's name. */
function metadata(component, context) {
  const labels = { ...context.labels, "app.kubernetes.io/name": component.name };
  return { name: context.objectName(component.name), namespace: context.namespace, labels };
}

/** The `data` map of the spec field `field`, all of whose values are strings. */
function data(component, field) {
  const value = component.field(field)?.data;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new InvalidComponent(`component ${JSON.stringify(component.name)} has no ${field}.data map`);
  }
  return value;
}
