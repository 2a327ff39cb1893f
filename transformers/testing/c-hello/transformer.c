// A transformer in C, built by tests/build.rs with clang against wasi-libc: a WASI preview1
// reactor, made a component with the preview1 adapter. It prints a line to stdout (through
// WASI) and returns a ConfigMap named after the component. The bindings (transformer_world.h)
// are generated from wit/ at build time.
//
// It parses no more JSON than it needs: the first "name" string after "metadata".

#define _GNU_SOURCE  // memmem

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transformer_world.h"

// Finds the component's name in its JSON; returns a malloc'd string, or NULL.
static char *component_name(const char *json, size_t len) {
  const char *end = json + len;
  const char *at = memmem(json, len, "\"metadata\"", strlen("\"metadata\""));
  if (at == NULL) {
    return NULL;
  }
  at = memmem(at, (size_t)(end - at), "\"name\"", strlen("\"name\""));
  if (at == NULL) {
    return NULL;
  }
  at += strlen("\"name\"");
  while (at < end && (*at == ' ' || *at == '\t' || *at == '\n' || *at == '\r' || *at == ':')) {
    at++;
  }
  if (at == end || *at != '"') {
    return NULL;
  }
  const char *start = ++at;
  while (at < end && *at != '"') {
    // A Kubernetes name needs no escapes; one that has them is not handled here.
    if (*at == '\\') {
      return NULL;
    }
    at++;
  }
  if (at == end) {
    return NULL;
  }
  return strndup(start, (size_t)(at - start));
}

static void fail(exports_opm_transformer_transformer_transform_error_t *err, const char *why) {
  err->tag = OPM_TRANSFORMER_TYPES_TRANSFORM_ERROR_INVALID_COMPONENT;
  transformer_world_string_dup(&err->val.invalid_component, why);
}

bool exports_opm_transformer_transformer_transform(
    exports_opm_transformer_transformer_json_t *component,
    exports_opm_transformer_transformer_context_t *context,
    exports_opm_transformer_transformer_list_json_t *ret,
    exports_opm_transformer_transformer_transform_error_t *err) {
  char *name = component_name((const char *)component->ptr, component->len);
  char *namespace_ = strndup((const char *)context->namespace_.ptr, context->namespace_.len);
  exports_opm_transformer_transformer_json_free(component);
  exports_opm_transformer_transformer_context_free(context);
  if (name == NULL || namespace_ == NULL) {
    free(name);
    free(namespace_);
    fail(err, "testing-c-hello: no metadata.name string in the component");
    return false;
  }

  printf("hello from testing-c-hello: rendering %s in %s\n", name, namespace_);
  fflush(stdout);

  const char *format =
      "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
      "\"data\":{\"language\":\"c\",\"namespace\":\"%s\"}}";
  int needed = snprintf(NULL, 0, format, name, namespace_);
  char *resource = needed < 0 ? NULL : malloc((size_t)needed + 1);
  if (resource != NULL) {
    snprintf(resource, (size_t)needed + 1, format, name, namespace_);
  }
  free(name);
  free(namespace_);
  if (resource == NULL) {
    err->tag = OPM_TRANSFORMER_TYPES_TRANSFORM_ERROR_FAILED;
    transformer_world_string_dup(&err->val.failed, "testing-c-hello: out of memory");
    return false;
  }

  ret->ptr = malloc(sizeof(exports_opm_transformer_transformer_json_t));
  if (ret->ptr == NULL) {
    free(resource);
    err->tag = OPM_TRANSFORMER_TYPES_TRANSFORM_ERROR_FAILED;
    transformer_world_string_dup(&err->val.failed, "testing-c-hello: out of memory");
    return false;
  }
  ret->len = 1;
  // The list and the string are freed by the bindings' post-return function.
  ret->ptr[0].ptr = (uint8_t *)resource;
  ret->ptr[0].len = strlen(resource);
  return true;
}
