// Native unit tests of render.js and the helpers of opm.js: `npm test` (node's own test runner).
import assert from "node:assert/strict";
import { test } from "node:test";

import { Component, Context, Failed, INSTANCE_LABEL, InvalidComponent, where } from "./opm.js";
import { CONFIG_MAP, SECRET, render } from "./render.js";

/** A context as the host gives it, calling the transformer `transformer`. */
function context(transformer, labels = [["team", "web"]]) {
  return new Context({ name: "shop", namespace: "prod", labels, module: "shop", transformer });
}

const settings = new Component({
  metadata: { name: "settings" },
  resources: ["example.com/resources/config@v1#ConfigMap"],
  spec: { configMap: { data: { mode: "fast" } } },
});

test("renders the data into a config map", () => {
  const [configMap] = render(settings, context(CONFIG_MAP));
  assert.equal(configMap.kind, "ConfigMap");
  assert.equal(configMap.metadata.name, "settings");
  assert.equal(configMap.metadata.namespace, "prod");
  assert.equal(configMap.metadata.labels.team, "web");
  assert.deepEqual(configMap.data, { mode: "fast" });
});

test("the same component renders a secret when the secret transformer calls it", () => {
  const credentials = new Component({ metadata: { name: "db" }, spec: { secret: { data: { password: "s3cret" } } } });
  const [secret] = render(credentials, context(SECRET));
  assert.equal(secret.kind, "Secret");
  assert.deepEqual(secret.stringData, { password: "s3cret" });
  assert.throws(() => render(credentials, context(CONFIG_MAP)), InvalidComponent);
});

test("a transformer it does not serve fails naming the ones it does", () => {
  assert.throws(() => render(settings, context("example.com/transformers/other@v1#Other")), (error) => {
    assert.ok(error instanceof Failed);
    assert.ok(error.message.includes(CONFIG_MAP) && error.message.includes(SECRET), error.message);
    return true;
  });
});

test("a component without data is invalid", () => {
  const component = new Component({ metadata: { name: "settings" }, spec: {} });
  assert.throws(() => render(component, context(CONFIG_MAP)), InvalidComponent);
});

test("a second instance prefixes the names, the module's own does not", () => {
  const own = context(CONFIG_MAP);
  assert.equal(own.objectName("settings"), "settings");
  const labels = [[INSTANCE_LABEL, "shop-eu"]];
  const second = new Context({ name: "shop-eu", namespace: "prod", labels, transformer: CONFIG_MAP });
  assert.equal(second.namePrefix(), "shop-eu-");
  assert.equal(second.objectName("settings"), "shop-eu-settings");
  assert.equal(new Context({ name: "shop", labels }).transformer, "", "contract 1.0.0 has none");
  const [configMap] = render(settings, second);
  assert.equal(configMap.metadata.name, "shop-eu-settings");
});

test("the component's accessors read what the host flattened", () => {
  const api = Component.fromJson(
    JSON.stringify({
      metadata: { name: "api", labels: { "core.opm.dev/workload-type": "stateless" } },
      resources: ["opm.dev/resources/workload@v1#Container"],
      traits: ["opm.dev/traits/scaling@v1#Replicas"],
      spec: { container: { image: "nginx:1.27" }, replicas: 3 },
      defaults: { restartPolicy: { policy: "Always" } },
    }),
  );
  assert.equal(api.name, "api");
  assert.equal(api.label("core.opm.dev/workload-type"), "stateless");
  assert.equal(api.label("missing"), undefined);
  assert.ok(api.attaches("opm.dev/traits/scaling@v1#Replicas"));
  assert.ok(!api.attaches("opm.dev/traits/network@v1#Expose"));
  assert.deepEqual(api.policies, []);
  assert.equal(api.field("replicas"), 3);
  assert.equal(api.field("missing"), undefined);
  assert.deepEqual(api.fieldOrDefault("restartPolicy"), { policy: "Always" });
  assert.throws(() => api.require("expose"), { message: 'component "api" has no spec.expose' });
  assert.throws(() => Component.fromJson("{"), InvalidComponent);
  assert.throws(() => Component.fromJson("{}"), InvalidComponent);
});

test("an error names the innermost frame in the author's files, then where it was raised", () => {
  const inLibrary = new TypeError("x is undefined");
  inLibrary.stack = [
    "parse@node_modules/lib/index.js:3:9",
    "map@self-hosted:221:14",
    "require@opm.js:150:13",
    "render@render.js:12:9",
    "transform@transformer.js:14:19",
    "export_transformer$transform@/tmp/06b1e996/sources/initializer.js:174:29",
    "",
  ].join("\n");
  assert.equal(where(inLibrary), " (at render@render.js:12:9; raised at parse@node_modules/lib/index.js:3:9)");

  // A real one, from Node.js: raised by JSON.stringify, which has no frame, in this file.
  let error;
  try {
    JSON.stringify({ big: 1n });
  } catch (caught) {
    error = caught;
  }
  assert.match(where(error), /^ \(at .*@render\.test\.js:\d+:\d+\)$/);
  assert.equal(where({}), "");
});
