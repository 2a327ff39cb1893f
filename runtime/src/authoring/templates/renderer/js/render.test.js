// Native unit tests of render.js: `npm test` (node's own test runner).
import assert from "node:assert/strict";
import { test } from "node:test";

import { Unsupported, render } from "./render.js";

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
