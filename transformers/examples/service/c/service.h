// The example ServiceTransformer's logic, free of the WIT bindings so that it builds and is
// tested natively too: one `v1` Service from a component's Expose trait. The rules, which it
// follows to the byte like its Rust, JavaScript and Python twins, are in `../README.md`.

#ifndef OPM_EXAMPLE_SERVICE_SERVICE_H
#define OPM_EXAMPLE_SERVICE_SERVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "json.h"

/// UTF-8 text the caller owns, `len` bytes long, not NUL-terminated.
typedef struct service_text {
  const char *ptr;
  size_t len;
} service_text;

/// One label of the render context.
typedef struct service_label {
  service_text key;
  service_text value;
} service_label;

/// Where a component is being rendered (the WIT `context` record).
typedef struct service_context {
  /// Module name.
  service_text name;
  /// Target namespace.
  service_text namespace_;
  /// Module version.
  service_text version;
  /// Name of the provider doing the rendering.
  service_text provider;
  /// Render time, RFC 3339.
  service_text timestamp;
  /// Whether the render runs in strict mode.
  bool strict;
  /// Module labels plus the tracking labels, in the order given; a later one of a repeated key
  /// wins.
  const service_label *labels;
  size_t labels_len;
} service_context;

/// Where the transformer's log lines go (the WIT `log` import at level `info`).
typedef void service_log_fn(const char *message, size_t len);

/// Renders the component document `component` (`len` bytes of JSON) in `context` into one
/// Service. Returns true with the Service's JSON text in `out`, or false when the component is
/// invalid, with why in `out`. Logs one line through `log_info` when it renders.
bool service_transform(const char *component, size_t len, const service_context *context,
                       service_log_fn *log_info, json_buffer *out);

#endif
