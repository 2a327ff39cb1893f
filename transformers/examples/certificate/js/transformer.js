// The CertificateTransformer in JavaScript, built with componentize-js (build.mjs): one
// cert-manager.io/v1 Certificate from a component's Certificate trait. What it renders is in
// ../README.md.
//
// componentize-js hands `transform` the component as JSON text and the context as
// `{name, namespace, version, provider, timestamp, strict, labels}` (`labels` a list of
// `[key, value]` pairs), and returns each resource as JSON text. A thrown `{tag, val}` is the
// contract's `transform-error`: `invalid-component` for what the module got wrong, `failed` for
// the transformer's own bugs, with the file and line they were raised at.

import { log } from "opm:transformer/log@1.2.0";

/** Set on resources when the render is another instance than the module's own. */
const INSTANCE_LABEL = "module.opmodel.dev/instance";

/** What the module got wrong: the `invalid-component` case of the contract's error. */
class InvalidComponent extends Error {}

export const transformer = {
  transform(componentJson, context) {
    try {
      const certificate = render(JSON.parse(componentJson), context);
      log("info", `rendering Certificate ${certificate.metadata.name} for ${certificate.spec.dnsNames.join(", ")}`);
      return [JSON.stringify(certificate)];
    } catch (error) {
      if (error instanceof InvalidComponent || error instanceof SyntaxError) {
        throw { tag: "invalid-component", val: error.message };
      }
      throw { tag: "failed", val: `${error}${where(error)}` };
    }
  },
};

/** The Certificate of `component`. */
function render(component, context) {
  const name = component.metadata.name;
  const spec = component.spec ?? {};
  const certificate = spec.certificate;
  if (typeof certificate !== "object" || certificate === null) {
    throw new InvalidComponent(`component "${name}" has no certificate trait`);
  }
  const ingress = spec.ingress ?? {};
  const dnsNames = certificate.dnsNames ?? (ingress.host ? [ingress.host] : []);
  if (dnsNames.length === 0) {
    throw new InvalidComponent(
      `component "${name}": a Certificate needs DNS names: set certificate.dnsNames, or attach ` +
        "the Ingress trait with a host",
    );
  }
  const labels = Object.fromEntries(context.labels);
  // Named as the standard provider names its objects: prefixed by the instance when the render
  // is of another instance than the module's own.
  const objectName = INSTANCE_LABEL in labels ? `${context.name}-${name}` : name;
  labels["app.kubernetes.io/name"] = name;
  labels["app.kubernetes.io/instance"] = context.name;

  const certificateSpec = {
    secretName: certificate.secretName ?? ingress.tls?.secretName ?? `${objectName}-tls`,
    issuerRef: {
      name: certificate.issuer.name,
      kind: certificate.issuer.kind ?? "ClusterIssuer",
      group: "cert-manager.io",
    },
    dnsNames,
  };
  for (const key of ["duration", "renewBefore", "privateKey"]) {
    if (certificate[key] !== undefined) {
      certificateSpec[key] = certificate[key];
    }
  }
  const metadata = { name: objectName };
  if (context.namespace !== "") {
    metadata.namespace = context.namespace;
  }
  metadata.labels = labels;
  return {
    apiVersion: "cert-manager.io/v1",
    kind: "Certificate",
    metadata,
    spec: certificateSpec,
  };
}

/** ` (at render@transformer.js:12:9)`: the first frame of `error`'s stack in this file. */
function where(error) {
  const frame = String(error?.stack ?? "")
    .split("\n")
    .find((line) => line.includes(".js:") && !line.includes("/initializer.js:"));
  return frame ? ` (at ${frame.trim()})` : "";
}
