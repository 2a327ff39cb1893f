// {{name}}: renders a component's `configMap.data` into a ConfigMap named after the component.

#include "render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// A malloc'd copy of the formatted message.
static char *message(const char *format, const char *name) {
  int needed = snprintf(NULL, 0, format, name);
  char *text = malloc((size_t)needed + 1);
  if (text != NULL) {
    snprintf(text, (size_t)needed + 1, format, name);
  }
  return text;
}

bool render(const json_value *component, const render_context *context, json_value *resources,
            char **error) {
  const json_value *name = json_get(json_get(component, "metadata"), "name");
  if (name == NULL || name->kind != JSON_STRING) {
    *error = message("%s", "the component has no metadata.name");
    return false;
  }
  const json_value *data = json_get(json_get(json_get(component, "spec"), "configMap"), "data");
  if (data == NULL || data->kind != JSON_OBJECT) {
    json_buffer quoted = {0};
    json_write_string(&quoted, name->as.text.ptr, name->as.text.len);
    *error = message("component %s has no configMap.data map", quoted.ptr);
    free(quoted.ptr);
    return false;
  }

  json_value labels = json_clone(context->labels);
  json_object_add(&labels, "app.kubernetes.io/name", strlen("app.kubernetes.io/name"),
                  json_clone(name));
  json_dedupe(&labels);
  json_value metadata = json_object();
  json_object_add(&metadata, "name", 4, json_clone(name));
  json_object_add(&metadata, "namespace", 9,
                  json_string_of(context->namespace_, strlen(context->namespace_)));
  json_object_add(&metadata, "labels", 6, labels);

  json_value config_map = json_object();
  json_object_add(&config_map, "apiVersion", 10, json_string_of("v1", 2));
  json_object_add(&config_map, "kind", 4, json_string_of("ConfigMap", 9));
  json_object_add(&config_map, "metadata", 8, metadata);
  json_object_add(&config_map, "data", 4, json_clone(data));
  json_array_push(resources, config_map);
  return true;
}
