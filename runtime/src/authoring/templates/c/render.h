// The transform of {{name}}, plain C with no bindings, so `make test` runs it natively.

#ifndef RENDER_H
#define RENDER_H

#include <stdbool.h>

#include "json.h"

/// What a transform needs of the render context.
typedef struct render_context {
  /// The target namespace, NUL-terminated.
  const char *namespace_;
  /// The render's labels, a JSON object of strings.
  const json_value *labels;
} render_context;

/// Renders `component` (the parsed JSON the host passes) into resources appended to the array
/// `resources`. On failure returns false and sets `*error` to a malloc'd message saying why the
/// component is invalid.
bool render(const json_value *component, const render_context *context, json_value *resources,
            char **error);

#endif
