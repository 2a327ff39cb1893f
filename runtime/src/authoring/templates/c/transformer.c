// {{name}}: an opm transformer in C. This file connects render.c to the WIT contract
// (wit/transformer.wit) through the bindings wit-bindgen-c generated in bindings/: `transform`
// receives the component as JSON text and the render context, and returns each resource as JSON
// text, or a transform-error. clang builds a WASI preview1 reactor module against wasi-libc;
// `opm transformer build` makes it a component.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "transformer_world.h"

/// Sets `err` to an invalid-component error with `message`, which it takes over.
static bool invalid(exports_opm_transformer_transformer_transform_error_t *err, char *message) {
  err->tag = OPM_TRANSFORMER_TYPES_TRANSFORM_ERROR_INVALID_COMPONENT;
  err->val.invalid_component.ptr = (uint8_t *)message;
  err->val.invalid_component.len = strlen(message);
  return false;
}

/// A malloc'd, NUL-terminated copy of a WIT string.
static char *text(const transformer_world_string_t *string) {
  char *copy = malloc(string->len + 1);
  if (copy != NULL) {
    memcpy(copy, string->ptr, string->len);
    copy[string->len] = '\0';
  }
  return copy;
}

bool exports_opm_transformer_transformer_transform(
    exports_opm_transformer_transformer_json_t *component,
    exports_opm_transformer_transformer_context_t *context,
    exports_opm_transformer_transformer_list_json_t *ret,
    exports_opm_transformer_transformer_transform_error_t *err) {
  json_value document;
  char why[JSON_ERROR_SIZE];
  if (!json_parse((const char *)component->ptr, component->len, &document, why)) {
    char *message = malloc(strlen("malformed component: ") + strlen(why) + 1);
    strcpy(message, "malformed component: ");
    strcat(message, why);
    return invalid(err, message);
  }
  json_value labels = json_object();
  for (size_t i = 0; i < context->labels.len; i++) {
    const transformer_world_tuple2_string_string_t *label = &context->labels.ptr[i];
    json_object_add(&labels, (const char *)label->f0.ptr, label->f0.len,
                    json_string_of((const char *)label->f1.ptr, label->f1.len));
  }
  char *namespace_ = text(&context->namespace_);
  render_context render_context = {.namespace_ = namespace_, .labels = &labels};
  json_value resources = json_array();
  char *error = NULL;
  bool ok = render(&document, &render_context, &resources, &error);
  if (ok) {
    size_t count = resources.as.array.len;
    ret->len = count;
    ret->ptr = malloc(count * sizeof *ret->ptr);
    for (size_t i = 0; i < count; i++) {
      json_buffer out = {0};
      json_write(&out, &resources.as.array.items[i]);
      ret->ptr[i].ptr = (uint8_t *)out.ptr;
      ret->ptr[i].len = out.len;
    }
    char line[128];
    snprintf(line, sizeof line, "rendered %zu resource(s)", count);
    transformer_world_string_t message = {(uint8_t *)line, strlen(line)};
    opm_transformer_log_log(OPM_TRANSFORMER_LOG_LEVEL_INFO, &message);
  }
  json_destroy(&resources);
  json_destroy(&labels);
  json_destroy(&document);
  free(namespace_);
  exports_opm_transformer_transformer_json_free(component);
  exports_opm_transformer_transformer_context_free(context);
  return ok ? true : invalid(err, error);
}
