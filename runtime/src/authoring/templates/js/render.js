// The transform itself, plain JavaScript with no imports, so `node --test` runs it natively:
// renders a component's `configMap.data` into a ConfigMap named after the component.

/** Thrown for a component this transformer cannot render. */
export class InvalidComponent extends Error {}

/**
 * Renders `component` (the parsed JSON the host passes) in `context` ({namespace, labels} with
 * labels as [key, value] pairs) into a list of resources.
 */
export function render(component, context) {
  const name = component?.metadata?.name;
  if (typeof name !== "string") {
    throw new InvalidComponent("the component has no metadata.name");
  }
  const data = component?.spec?.configMap?.data;
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new InvalidComponent(`component ${JSON.stringify(name)} has no configMap.data map`);
  }
  const labels = {};
  for (const [key, value] of context.labels) {
    labels[key] = value;
  }
  labels["app.kubernetes.io/name"] = name;
  return [
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: context.namespace, labels },
      data,
    },
  ];
}
