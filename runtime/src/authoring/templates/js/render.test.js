// Native unit tests of render.js: `npm test` (node's own test runner).
import assert from "node:assert/strict";
import { test } from "node:test";

import { InvalidComponent, render } from "./render.js";

test("renders the data into a config map", () => {
  const component = { metadata: { name: "settings" }, spec: { configMap: { data: { mode: "fast" } } } };
  const [configMap] = render(component, { namespace: "prod", labels: [["team", "web"]] });
  assert.equal(configMap.kind, "ConfigMap");
  assert.equal(configMap.metadata.namespace, "prod");
  assert.equal(configMap.metadata.labels.team, "web");
  assert.deepEqual(configMap.data, { mode: "fast" });
});

test("a component without data is invalid", () => {
  const component = { metadata: { name: "settings" }, spec: {} };
  assert.throws(() => render(component, { namespace: "prod", labels: [] }), InvalidComponent);
});
