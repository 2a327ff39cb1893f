// What the one component renders for each of the four transformers of ../provider.yaml: the
// host names the transformer it calls in `context.transformer`, and `render` looks it up in
// ROLES. Plain JavaScript whose only import is the helpers (opm.js, the scaffold's, byte for
// byte), so `node --test` runs it natively.
//
// Every object is named after the component, with the instance's prefix (`objectName`), and
// carries the render's labels; pods are selected by the component's name and the instance.

import { Failed, InvalidComponent, WORKLOAD_TYPE_LABEL } from "./opm.js";

const PREFIX = "example.opm.dev/transformers/one@v1#";
/** Container → Deployment, StatefulSet, DaemonSet, Job or CronJob, by the workload type. */
export const WORKLOAD = `${PREFIX}WorkloadTransformer`;
/** Expose → Service. */
export const SERVICE = `${PREFIX}ServiceTransformer`;
/** Secret → Secret. */
export const SECRET = `${PREFIX}SecretTransformer`;
/** Ingress → Ingress. */
export const INGRESS = `${PREFIX}IngressTransformer`;

/** What each transformer this component serves renders, by its FQN. */
const ROLES = { [WORKLOAD]: workload, [SERVICE]: service, [SECRET]: secret, [INGRESS]: ingress };

/**
 * Renders `component` for the transformer `context.transformer` names.
 * @param {import("./opm.js").Component} component
 * @param {import("./opm.js").Context} context
 * @returns {object[]}
 */
export function render(component, context) {
  const role = ROLES[context.transformer];
  if (role === undefined) {
    throw new Failed(
      `this component serves ${Object.keys(ROLES).join(", ")}, not ${JSON.stringify(context.transformer)}`,
    );
  }
  return role(component, context);
}

function metadata(component, context, extra = {}) {
  return {
    name: context.objectName(component.name),
    namespace: context.namespace,
    labels: { ...context.labels, ...extra.labels, "app.kubernetes.io/name": component.name },
    ...(extra.annotations ? { annotations: extra.annotations } : {}),
  };
}

/** The labels that tie a component's pods to its workload and Service. */
function selector(component, context) {
  return { "app.kubernetes.io/name": component.name, "app.kubernetes.io/instance": context.name };
}

// --- workloads ------------------------------------------------------------------------------

function workload(component, context) {
  const type = component.label(WORKLOAD_TYPE_LABEL) ?? "stateless";
  const template = { metadata: { labels: selector(component, context) }, spec: pod(component, context, type) };
  const matchLabels = selector(component, context);
  const replicas = component.fieldOrDefault("replicas") ?? 1;
  const object = (apiVersion, kind, spec) => [
    { apiVersion, kind, metadata: metadata(component, context), spec },
  ];
  switch (type) {
    case "stateless":
      return object("apps/v1", "Deployment", { replicas, selector: { matchLabels }, template });
    case "stateful":
      return object("apps/v1", "StatefulSet", {
        replicas,
        serviceName: context.objectName(component.name),
        selector: { matchLabels },
        template,
        volumeClaimTemplates: claimTemplates(component),
      });
    case "daemon":
      return object("apps/v1", "DaemonSet", { selector: { matchLabels }, template });
    case "job":
      return object("batch/v1", "Job", { ...job(component), template });
    case "cronjob": {
      const { cron, ...schedule } = component.require("schedule");
      return object("batch/v1", "CronJob", {
        schedule: cron,
        ...schedule,
        jobTemplate: { spec: { ...job(component), template } },
      });
    }
    default:
      throw new InvalidComponent(
        `component ${JSON.stringify(component.name)} has workload type ${JSON.stringify(type)}, ` +
          "which this example does not render",
      );
  }
}

function job(component) {
  return { ...(component.field("jobConfig") ?? {}) };
}

function pod(component, context, type) {
  const spec = { containers: [container(component, context, type)] };
  if (type === "job" || type === "cronjob") {
    spec.restartPolicy = "OnFailure";
  }
  const securityContext = component.field("securityContext");
  if (securityContext !== undefined) {
    spec.securityContext = securityContext;
  }
  Object.assign(spec, component.field("podScheduling") ?? {});
  const volumes = Object.entries(component.field("volumes") ?? {})
    .sort(([a], [b]) => compare(a, b))
    .map(([name, source]) => volume(component, context, name, source));
  if (volumes.length > 0) {
    spec.volumes = volumes;
  }
  return spec;
}

/** The container's fields that are Kubernetes' as they are. */
const AS_IS = [
  "imagePullPolicy", "command", "args", "workingDir", "envFrom", "resources",
  "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "securityContext",
  "stdin", "stdinOnce", "tty",
];

function container(component, context, type) {
  const spec = component.require("container");
  const out = { name: spec.name ?? component.name, image: image(spec.image) };
  for (const [key, value] of Object.entries(spec)) {
    if (AS_IS.includes(key)) {
      out[key] = value;
    } else if (!["name", "image", "ports", "env", "volumeMounts"].includes(key)) {
      throw new InvalidComponent(
        `component ${JSON.stringify(component.name)}: container.${key} is not rendered by this example`,
      );
    }
  }
  const ports = sortedEntries(spec.ports).map(([name, port]) => ({ name, ...port }));
  if (ports.length > 0) {
    out.ports = ports;
  }
  const env = environment(spec.env);
  if (env.length > 0) {
    out.env = env;
  }
  const health = component.field("healthCheck") ?? {};
  for (const [probe, key] of [["liveness", "livenessProbe"], ["readiness", "readinessProbe"], ["startup", "startupProbe"]]) {
    if (health[probe] !== undefined) {
      out[key] = health[probe];
    }
  }
  const mounts = sortedEntries(spec.volumeMounts).flatMap(([name, mount]) =>
    (Array.isArray(mount) ? mount : [mount]).map((one) => ({ name, ...one })),
  );
  if (type === "stateful") {
    for (const [name, entry] of sortedEntries(component.field("persistentStorage"))) {
      if (entry.mountPath !== undefined) {
        mounts.push({ name, mountPath: entry.mountPath });
      }
    }
  }
  if (mounts.length > 0) {
    out.volumeMounts = mounts;
  }
  return out;
}

/** A Kubernetes image reference from the catalog's string or {repository, tag, digest}. */
function image(reference) {
  if (typeof reference === "string") {
    return reference;
  }
  const tag = reference.tag ? `:${reference.tag}` : "";
  const digest = reference.digest ? `@${reference.digest}` : "";
  return `${reference.repository}${tag}${digest}`;
}

/** `env` as a list: a map in name order (a list as written), each value a string. */
function environment(env) {
  const entries = Array.isArray(env)
    ? env.map(({ name, ...source }) => [name, source])
    : sortedEntries(env);
  return entries.map(([name, source]) => {
    if (Object.hasOwn(source, "value")) {
      return { name, value: String(source.value) };
    }
    return { name, valueFrom: source };
  });
}

function volume(component, context, name, source) {
  const [kind, value] = Object.entries(source)[0];
  switch (kind) {
    case "emptyDir":
    case "hostPath":
      return { name, [kind]: value };
    case "configMap":
    case "secret": {
      const { name: object, ...rest } = typeof value === "string" ? { name: value } : value;
      const key = kind === "secret" ? "secretName" : "name";
      return { name, [kind]: { [key]: context.objectName(object), ...rest } };
    }
    default:
      throw new InvalidComponent(
        `component ${JSON.stringify(component.name)}: a ${kind} volume is not rendered by this example`,
      );
  }
}

function claimTemplates(component) {
  return sortedEntries(component.field("persistentStorage")).map(([name, entry]) => ({
    metadata: { name },
    spec: {
      accessModes: entry.accessModes ?? ["ReadWriteOnce"],
      ...(entry.storageClass ? { storageClassName: entry.storageClass } : {}),
      resources: { requests: { storage: entry.size } },
    },
  }));
}

// --- Service, Secret, Ingress ---------------------------------------------------------------

/** The Service's ports: Expose's, else one per container port, by name. */
function servicePorts(component) {
  const expose = component.fieldOrDefault("expose") ?? {};
  if (expose.ports !== undefined) {
    return sortedEntries(expose.ports).map(([name, port]) => ({ name, ...port }));
  }
  return sortedEntries(component.require("container").ports).map(([name, port]) => ({
    name,
    port: port.containerPort,
    targetPort: name,
    ...(port.protocol ? { protocol: port.protocol } : {}),
  }));
}

function service(component, context) {
  const { type = "ClusterIP", name, ports: _, labels, annotations, ...rest } =
    component.fieldOrDefault("expose") ?? {};
  const ports = servicePorts(component);
  if (ports.length === 0) {
    throw new InvalidComponent(
      `component ${JSON.stringify(component.name)} exposes no port: name one in expose.ports or container.ports`,
    );
  }
  const spec = {
    ...(type === "Headless" ? { clusterIP: "None" } : { type }),
    selector: selector(component, context),
    ports,
    ...rest,
  };
  const meta = metadata(component, context, { labels, annotations });
  if (name !== undefined) {
    meta.name = context.objectName(name);
  }
  return [{ apiVersion: "v1", kind: "Service", metadata: meta, spec }];
}

function secret(component, context) {
  const { name, type, stringData, data, immutable, labels, annotations } = component.require("secret");
  const meta = metadata(component, context, { labels, annotations });
  if (name !== undefined) {
    meta.name = name; // the object's name exactly, as the catalog says
  }
  const object = { apiVersion: "v1", kind: "Secret", metadata: meta, type: type ?? "Opaque" };
  if (immutable !== undefined) {
    object.immutable = immutable;
  }
  if (data !== undefined && Object.keys(data).length > 0) {
    object.data = data;
  }
  if (stringData !== undefined && Object.keys(stringData).length > 0) {
    object.stringData = stringData;
  }
  return [object];
}

function ingress(component, context) {
  const spec = component.require("ingress");
  const serviceName = context.objectName((component.fieldOrDefault("expose") ?? {}).name ?? component.name);
  const firstPort = servicePorts(component)[0]?.name;
  const path = (one) => ({
    path: one.path ?? "/",
    pathType: one.pathType ?? "Prefix",
    backend: { service: { name: serviceName, port: { name: one.port ?? firstPort } } },
  });
  const rules = (spec.rules ?? [{ host: spec.host, paths: [spec] }]).map((rule) => ({
    ...(rule.host ? { host: rule.host } : {}),
    http: { paths: rule.paths.map(path) },
  }));
  const out = { rules };
  if (spec.className !== undefined) {
    out.ingressClassName = spec.className;
  }
  if (spec.tls !== undefined) {
    out.tls = (Array.isArray(spec.tls) ? spec.tls : [spec.tls]).map((tls) => ({
      hosts: tls.hosts ?? [spec.host],
      ...(tls.secretName ? { secretName: tls.secretName } : {}),
    }));
  }
  const meta = metadata(component, context, { labels: spec.labels, annotations: spec.annotations });
  return [{ apiVersion: "networking.k8s.io/v1", kind: "Ingress", metadata: meta, spec: out }];
}

// --- order ----------------------------------------------------------------------------------

/** A map's entries in the order of its keys' UTF-16 code units, whatever order it came in. */
function sortedEntries(map) {
  return Object.entries(map ?? {}).sort(([a], [b]) => compare(a, b));
}

function compare(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}
