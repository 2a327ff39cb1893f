// The example ServiceTransformer's logic: see service.h.

#include "service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// The Service types `expose.type` may name.
static const char *const TYPES[] = {"ClusterIP", "NodePort", "LoadBalancer", "Headless"};

/// How many there are.
#define TYPES_LEN (sizeof TYPES / sizeof TYPES[0])

/// Appends the NUL-terminated `text` to `out`.
static void put(json_buffer *out, const char *text) {
  json_buffer_puts(out, text);
}

/// Appends the string `text` to `out`.
static void put_text(json_buffer *out, const json_string *text) {
  json_buffer_append(out, text->ptr, text->len);
}

/// Appends `text` quoted as Rust's `{:?}` quotes a string: `"` and `\` escaped, `\0 \t \r \n`
/// by name, other control characters as `\u{hex}`. Other characters are written as they are, as
/// Rust writes printable ones.
static void put_quoted(json_buffer *out, const json_string *text) {
  put(out, "\"");
  for (size_t i = 0; i < text->len; i++) {
    unsigned char c = (unsigned char)text->ptr[i];
    char escape[12];
    if (c == '"' || c == '\\') {
      snprintf(escape, sizeof escape, "\\%c", c);
    } else if (c == '\0') {
      snprintf(escape, sizeof escape, "\\0");
    } else if (c == '\t') {
      snprintf(escape, sizeof escape, "\\t");
    } else if (c == '\r') {
      snprintf(escape, sizeof escape, "\\r");
    } else if (c == '\n') {
      snprintf(escape, sizeof escape, "\\n");
    } else if (c < 0x20 || c == 0x7F) {
      snprintf(escape, sizeof escape, "\\u{%x}", (unsigned)c);
    } else if (c == 0xC2 && i + 1 < text->len && (unsigned char)text->ptr[i + 1] >= 0x80 &&
               (unsigned char)text->ptr[i + 1] <= 0x9F) {
      // U+0080 to U+009F, the C1 control characters, are two bytes in UTF-8: C2 80 to C2 9F.
      snprintf(escape, sizeof escape, "\\u{%x}", (unsigned)(unsigned char)text->ptr[++i]);
    } else {
      json_buffer_append(out, text->ptr + i, 1);
      continue;
    }
    put(out, escape);
  }
  put(out, "\"");
}

/// Adds the member `key` (NUL-terminated), `value` to `object`, which takes the value over.
static void add(json_value *object, const char *key, json_value value) {
  json_object_add(object, key, strlen(key), value);
}

/// A string holding a copy of `text`.
static json_value string_of(const json_string *text) {
  return json_string_of(text->ptr, text->len);
}

/// A string holding a copy of the context's `text`.
static json_value string_of_context(service_text text) {
  return json_string_of(text.ptr, text.len);
}

/// Copies `from[key]` into `to` when it is there and not null.
static void copy(const json_value *from, json_value *to, const char *key) {
  const json_value *value = json_get(from, key);
  if (json_present(value)) {
    add(to, key, json_clone(value));
  }
}

/// Whether `name` is the key of one of the `len` members of `sorted` (sorted by key).
static bool has_name(const json_member **sorted, size_t len, const json_string *name) {
  size_t low = 0;
  size_t high = len;
  while (low < high) {
    size_t middle = low + (high - low) / 2;
    int order = json_compare_strings(&sorted[middle]->key, name);
    if (order == 0) {
      return true;
    }
    if (order < 0) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return false;
}

/// Whether `value`, when present, is an object whose values are all strings.
static bool is_string_map(const json_value *value) {
  if (value == NULL) {
    return true;
  }
  if (value->kind != JSON_OBJECT) {
    return false;
  }
  for (size_t i = 0; i < value->as.object.len; i++) {
    if (value->as.object.members[i].value.kind != JSON_STRING) {
      return false;
    }
  }
  return true;
}

/// Whether `value`, when present, is an object.
static bool is_object(const json_value *value) {
  return value == NULL || value->kind == JSON_OBJECT;
}

/// Whether `value`, when present, is an array of strings.
static bool is_string_list(const json_value *value) {
  if (value == NULL) {
    return true;
  }
  if (value->kind != JSON_ARRAY) {
    return false;
  }
  for (size_t i = 0; i < value->as.array.len; i++) {
    if (value->as.array.items[i].kind != JSON_STRING) {
      return false;
    }
  }
  return true;
}

/// Parses the component document into `*component` and checks its shape as the Rust SDK does:
/// an object with `metadata.name` a string, `metadata.labels` and `metadata.annotations` maps of
/// strings, `resources`, `traits` and `policies` lists of strings, `spec` and `defaults` objects.
/// On failure writes why to `why`.
static bool parse_component(const char *text, size_t len, json_value *component,
                            json_buffer *why) {
  char error[JSON_ERROR_SIZE];
  if (!json_parse(text, len, component, error)) {
    put(why, "malformed component document: ");
    put(why, error);
    return false;
  }
  const json_value *metadata = json_get(component, "metadata");
  const json_value *name = json_get(metadata, "name");
  const char *wrong = NULL;
  if (component->kind != JSON_OBJECT) {
    wrong = "the document is not an object";
  } else if (metadata == NULL) {
    wrong = "missing field `metadata`";
  } else if (metadata->kind != JSON_OBJECT) {
    wrong = "metadata is not an object";
  } else if (name == NULL) {
    wrong = "missing field `name`";
  } else if (name->kind != JSON_STRING) {
    wrong = "metadata.name is not a string";
  } else if (!is_string_map(json_get(metadata, "labels"))) {
    wrong = "metadata.labels is not a map of strings";
  } else if (!is_string_map(json_get(metadata, "annotations"))) {
    wrong = "metadata.annotations is not a map of strings";
  } else if (!is_string_list(json_get(component, "resources"))) {
    wrong = "resources is not a list of strings";
  } else if (!is_string_list(json_get(component, "traits"))) {
    wrong = "traits is not a list of strings";
  } else if (!is_string_list(json_get(component, "policies"))) {
    wrong = "policies is not a list of strings";
  } else if (!is_object(json_get(component, "spec"))) {
    wrong = "spec is not an object";
  } else if (!is_object(json_get(component, "defaults"))) {
    wrong = "defaults is not an object";
  }
  if (wrong != NULL) {
    put(why, "malformed component document: ");
    put(why, wrong);
    json_destroy(component);
    return false;
  }
  return true;
}

/// Appends the Service ports of `expose.ports` (`declared`), in name order, to `ports`. On
/// failure writes why to `why`.
static bool declared_ports(const json_value *declared, const json_value *container_ports,
                           json_value *ports, json_buffer *why) {
  size_t names_len = container_ports == NULL ? 0 : container_ports->as.object.len;
  const json_member **names =
      container_ports == NULL ? NULL : json_sorted_members(container_ports);
  const json_member **entries = json_sorted_members(declared);
  bool ok = true;
  for (size_t i = 0; ok && i < declared->as.object.len; i++) {
    const json_string *name = &entries[i]->key;
    const json_value *port = &entries[i]->value;
    const json_value *number = json_get(port, "port");
    const json_value *target = json_get(port, "targetPort");
    json_value target_value;
    if (!json_present(number)) {
      put(why, "expose.ports.");
      put_text(why, name);
      put(why, ".port is required");
      ok = false;
      break;
    }
    if (json_present(target) && target->kind == JSON_STRING) {
      if (!has_name(names, names_len, &target->as.text)) {
        put(why, "expose.ports.");
        put_text(why, name);
        put(why, ".targetPort ");
        put_quoted(why, &target->as.text);
        put(why, " is not a port of the container; it has ");
        for (size_t n = 0; n < names_len; n++) {
          put(why, n == 0 ? "" : ", ");
          put_text(why, &names[n]->key);
        }
        put(why, names_len == 0 ? "none" : "");
        ok = false;
        break;
      }
      target_value = json_clone(target);
    } else if (json_present(target)) {
      target_value = json_clone(target);
    } else if (has_name(names, names_len, name)) {
      target_value = string_of(name);
    } else {
      target_value = json_clone(number);
    }
    json_value entry = json_object();
    add(&entry, "name", string_of(name));
    add(&entry, "port", json_clone(number));
    add(&entry, "targetPort", target_value);
    copy(port, &entry, "protocol");
    copy(port, &entry, "nodePort");
    json_array_push(ports, entry);
  }
  free(names);
  free(entries);
  return ok;
}

/// Appends the Service ports of every container port, in name order, each targeting its
/// container port by name, to `ports`.
static void default_ports(const json_value *container_ports, json_value *ports) {
  const json_member **entries = json_sorted_members(container_ports);
  for (size_t i = 0; i < container_ports->as.object.len; i++) {
    const json_value *number = json_get(&entries[i]->value, "containerPort");
    json_value entry = json_object();
    add(&entry, "name", string_of(&entries[i]->key));
    add(&entry, "port", number == NULL ? json_null() : json_clone(number));
    add(&entry, "targetPort", string_of(&entries[i]->key));
    copy(&entries[i]->value, &entry, "protocol");
    json_array_push(ports, entry);
  }
  free(entries);
}

/// `value` when it is an object, else NULL.
static const json_value *object_or_null(const json_value *value) {
  return value != NULL && value->kind == JSON_OBJECT ? value : NULL;
}

bool service_transform(const char *text, size_t len, const service_context *context,
                       service_log_fn *log_info, json_buffer *out) {
  json_value component;
  if (!parse_component(text, len, &component, out)) {
    return false;
  }
  json_value ports = json_array();
  json_value service = json_null();
  bool ok = false;

  const json_value *metadata = json_get(&component, "metadata");
  const json_string *name = &json_get(metadata, "name")->as.text;
  const json_value *spec = json_get(&component, "spec");
  const json_value *expose = object_or_null(json_get(spec, "expose"));
  if (expose == NULL) {
    put(out, "component ");
    put_quoted(out, name);
    put(out, " has no expose trait");
    goto done;
  }
  const json_value *type = json_get(expose, "type");
  json_string kind = {"ClusterIP", strlen("ClusterIP")};
  if (type != NULL && type->kind == JSON_STRING) {
    kind = type->as.text;
  }
  bool known = false;
  for (size_t i = 0; i < TYPES_LEN; i++) {
    known = known || json_string_is(&kind, TYPES[i]);
  }
  if (!known) {
    put(out, "expose.type ");
    put_quoted(out, &kind);
    put(out, " is not one of ");
    for (size_t i = 0; i < TYPES_LEN; i++) {
      put(out, i == 0 ? "" : ", ");
      put(out, TYPES[i]);
    }
    goto done;
  }
  const json_value *container_ports =
      object_or_null(json_get(json_get(spec, "container"), "ports"));
  const json_value *declared = object_or_null(json_get(expose, "ports"));
  if (declared != NULL && declared->as.object.len > 0) {
    if (!declared_ports(declared, container_ports, &ports, out)) {
      goto done;
    }
  } else if (container_ports != NULL) {
    default_ports(container_ports, &ports);
  }
  if (ports.as.array.len == 0) {
    put(out, "component ");
    put_quoted(out, name);
    put(out, " is exposed but names no ports: set expose.ports or container.ports");
    goto done;
  }
  if (!json_string_is(&kind, "NodePort") && !json_string_is(&kind, "LoadBalancer")) {
    for (size_t i = 0; i < ports.as.array.len; i++) {
      const json_value *port = &ports.as.array.items[i];
      if (json_get(port, "nodePort") != NULL) {
        put(out, "expose.ports.");
        put_text(out, &json_get(port, "name")->as.text);
        put(out, ".nodePort needs expose.type NodePort or LoadBalancer");
        goto done;
      }
    }
  }
  char count[32];
  snprintf(count, sizeof count, "%zu", ports.as.array.len);
  json_buffer line = {0};
  put(&line, "rendering a ");
  put_text(&line, &kind);
  put(&line, " Service for ");
  put_text(&line, name);
  put(&line, " with ");
  put(&line, count);
  put(&line, " port(s)");
  log_info(line.ptr, line.len);
  free(line.ptr);

  json_value selector = json_object();
  add(&selector, "app.kubernetes.io/instance", string_of_context(context->name));
  add(&selector, "app.kubernetes.io/name", string_of(name));
  json_value labels = json_object();
  for (size_t i = 0; i < context->labels_len; i++) {
    const service_label *label = &context->labels[i];
    json_object_add(&labels, label->key.ptr, label->key.len, string_of_context(label->value));
  }
  add(&labels, "app.kubernetes.io/instance", string_of_context(context->name));
  add(&labels, "app.kubernetes.io/name", string_of(name));
  json_dedupe(&labels);  // a later label of a repeated key wins
  json_sort_keys(&labels);
  json_value meta = json_object();
  add(&meta, "name", string_of(name));
  if (context->namespace_.len > 0) {
    add(&meta, "namespace", string_of_context(context->namespace_));
  }
  add(&meta, "labels", labels);
  const json_value *annotations = json_get(metadata, "annotations");
  if (annotations != NULL && annotations->as.object.len > 0) {
    json_value sorted = json_clone(annotations);
    json_sort_keys(&sorted);
    add(&meta, "annotations", sorted);
  }
  json_value service_spec = json_object();
  if (json_string_is(&kind, "Headless")) {
    add(&service_spec, "type", json_string_of("ClusterIP", strlen("ClusterIP")));
    add(&service_spec, "clusterIP", json_string_of("None", strlen("None")));
  } else {
    add(&service_spec, "type", string_of(&kind));
  }
  add(&service_spec, "selector", selector);
  add(&service_spec, "ports", ports);
  ports = json_null();  // the spec has it now
  service = json_object();
  add(&service, "apiVersion", json_string_of("v1", 2));
  add(&service, "kind", json_string_of("Service", strlen("Service")));
  add(&service, "metadata", meta);
  add(&service, "spec", service_spec);
  json_write(out, &service);
  ok = true;

done:
  json_destroy(&service);
  json_destroy(&ports);
  json_destroy(&component);
  return ok;
}
