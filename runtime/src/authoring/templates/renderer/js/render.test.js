// Native unit tests of render.js: `npm test` (node's own test runner).
import assert from "node:assert/strict";
import { test } from "node:test";

import { Refused, Unsupported, render } from "./render.js";

test("writes one compact line per resource, in order", () => {
  const resources = ['{"kind": "Service",\n "metadata": {"name": "api"}}', '{"kind":"ConfigMap"}'];
  assert.deepEqual(render(resources, "yaml", false), [
    { path: "resources.jsonl", text: '{"kind":"Service","metadata":{"name":"api"}}\n{"kind":"ConfigMap"}\n' },
  ]);
});

test("split and other formats are refused", () => {
  assert.throws(() => render([], "yaml", true), Unsupported);
  assert.throws(() => render([], "toml", false), Unsupported);
});

test("a resource that is the same object as one before it is refused, by its position", () => {
  const settings = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"}}';
  const other = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}';
  assert.throws(() => render([settings, other, settings], "yaml", false), (error) => {
    assert.ok(error instanceof Refused);
    assert.deepEqual(error.refusals, [[2, 'the same object as resource 0, ConfigMap "settings"']]);
    return true;
  });
});
