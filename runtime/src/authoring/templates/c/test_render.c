// Native unit tests of render.c: `make test` builds and runs them with the host's C compiler.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"

static int failures = 0;

#define CHECK(condition)                                              \
  do {                                                                \
    if (!(condition)) {                                               \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #condition); \
      failures++;                                                     \
    }                                                                 \
  } while (0)

/// Parses the NUL-terminated `text`, aborting the test run if it is not JSON.
static json_value parse(const char *text) {
  json_value value;
  char error[JSON_ERROR_SIZE];
  if (!json_parse(text, strlen(text), &value, error)) {
    fprintf(stderr, "bad test JSON: %s\n", error);
    exit(2);
  }
  return value;
}

static void renders_the_data_into_a_config_map(void) {
  json_value component =
      parse("{\"metadata\": {\"name\": \"settings\"}, \"spec\": {\"configMap\": {\"data\": {\"mode\": \"fast\"}}}}");
  json_value labels = parse("{\"team\": \"web\"}");
  render_context context = {.namespace_ = "prod", .labels = &labels};
  json_value resources = json_array();
  char *error = NULL;
  CHECK(render(&component, &context, &resources, &error));
  json_buffer out = {0};
  json_write(&out, &resources);
  CHECK(strcmp(out.ptr,
                "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"settings\","
                "\"namespace\":\"prod\",\"labels\":{\"team\":\"web\",\"app.kubernetes.io/name\":"
                "\"settings\"}},\"data\":{\"mode\":\"fast\"}}]") == 0);
  free(out.ptr);
  json_destroy(&resources);
  json_destroy(&labels);
  json_destroy(&component);
}

static void a_component_without_data_is_invalid(void) {
  json_value component = parse("{\"metadata\": {\"name\": \"settings\"}, \"spec\": {}}");
  json_value labels = json_object();
  render_context context = {.namespace_ = "prod", .labels = &labels};
  json_value resources = json_array();
  char *error = NULL;
  CHECK(!render(&component, &context, &resources, &error));
  CHECK(error != NULL && strcmp(error, "component \"settings\" has no configMap.data map") == 0);
  free(error);
  json_destroy(&resources);
  json_destroy(&component);
}

int main(void) {
  renders_the_data_into_a_config_map();
  a_component_without_data_is_invalid();
  if (failures > 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("all tests passed\n");
  return 0;
}
