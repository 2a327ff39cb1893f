// The example ServiceTransformer in C: the glue between the wit-bindgen C bindings of
// `transformer-world` (transformer_world.h, generated from wit/ at build time) and the logic in
// service.c. Built with clang against wasi-libc as a WASI preview1 reactor, then made a
// component with the preview1 adapter.

#include <stdlib.h>

#include "service.h"
#include "transformer_world.h"

/// Logs a line at `info` through the host's `log` import.
static void log_info(const char *message, size_t len) {
  transformer_world_string_t text = {(uint8_t *)message, len};
  opm_transformer_log_log(OPM_TRANSFORMER_LOG_LEVEL_INFO, &text);
}

/// Text the bindings own, as the logic reads it.
static service_text text_of(const transformer_world_string_t *text) {
  return (service_text){(const char *)text->ptr, text->len};
}

bool exports_opm_transformer_transformer_transform(
    exports_opm_transformer_transformer_json_t *component,
    exports_opm_transformer_transformer_context_t *context,
    exports_opm_transformer_transformer_list_json_t *ret,
    exports_opm_transformer_transformer_transform_error_t *err) {
  size_t labels_len = context->labels.len;
  service_label *labels =
      labels_len == 0 ? NULL : json_realloc(NULL, labels_len * sizeof(service_label));
  for (size_t i = 0; i < labels_len; i++) {
    labels[i].key = text_of(&context->labels.ptr[i].f0);
    labels[i].value = text_of(&context->labels.ptr[i].f1);
  }
  service_context ctx = {
      .name = text_of(&context->name),
      .namespace_ = text_of(&context->namespace_),
      .version = text_of(&context->version),
      .provider = text_of(&context->provider),
      .timestamp = text_of(&context->timestamp),
      .strict = context->strict,
      .labels = labels,
      .labels_len = labels_len,
  };
  json_buffer out = {0};
  bool ok = service_transform((const char *)component->ptr, component->len, &ctx, log_info, &out);
  free(labels);
  exports_opm_transformer_transformer_json_free(component);
  exports_opm_transformer_transformer_context_free(context);

  // The bindings' post-return function frees the strings and the list handed back.
  transformer_world_string_t text = {(uint8_t *)out.ptr, out.len};
  if (!ok) {
    err->tag = OPM_TRANSFORMER_TYPES_TRANSFORM_ERROR_INVALID_COMPONENT;
    err->val.invalid_component = text;
    return false;
  }
  ret->ptr = json_realloc(NULL, sizeof(exports_opm_transformer_transformer_json_t));
  ret->len = 1;
  ret->ptr[0] = text;
  return true;
}
