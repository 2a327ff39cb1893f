// Checks every cert-manager.io/v1 Certificate of a render (`opm mod build -o json`, a v1 List, on
// stdin) against cert-manager's own schema, as packaged by @kubernetes-models/cert-manager (the
// version package-lock.json pins): types, required fields and enums by the package's validator,
// and, as a strict API server would, no field the schema does not declare in the spec, its
// issuerRef and its privateKey. Prints one line per problem and exits 1 if there is any.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

import { Certificate } from "@kubernetes-models/cert-manager/cert-manager.io/v1/Certificate";

const require = createRequire(import.meta.url);
const models = dirname(require.resolve("@kubernetes-models/cert-manager/package.json"));

/** The property names the TypeScript declaration `file` (of the package) declares. */
function declared(file) {
  const text = readFileSync(join(models, file), "utf8");
  return new Set([...text.matchAll(/^\s+"(\w+)"\??:/gm)].map((m) => m[1]));
}

const strict = [
  ["spec", "cert-manager.io/v1/CertificateSpec.d.ts"],
  ["spec.issuerRef", "github.com/cert-manager/cert-manager/pkg/apis/meta/v1/IssuerReference.d.ts"],
  ["spec.privateKey", "cert-manager.io/v1/CertificatePrivateKey.d.ts"],
].map(([path, file]) => [path, declared(file)]);

const list = JSON.parse(readFileSync(0, "utf8"));
const certificates = list.items.filter(
  (item) => item.apiVersion === "cert-manager.io/v1" && item.kind === "Certificate",
);
const problems = [];
for (const item of certificates) {
  const name = `Certificate ${item.metadata?.namespace}/${item.metadata?.name}`;
  try {
    new Certificate(item).validate();
  } catch (error) {
    problems.push(`${name}: ${error.message}`);
  }
  for (const [path, fields] of strict) {
    const value = path.split(".").reduce((object, key) => object?.[key], item);
    for (const key of Object.keys(value ?? {})) {
      if (!fields.has(key)) {
        problems.push(`${name}: ${path}.${key} is not a field of the schema`);
      }
    }
  }
}
for (const problem of problems) {
  console.log(problem);
}
console.log(`${certificates.length} Certificates, ${problems.length} problems`);
process.exit(problems.length === 0 && certificates.length > 0 ? 0 : 1);
