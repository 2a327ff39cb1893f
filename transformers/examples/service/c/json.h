// A small JSON library for opm transformers in C: the example ServiceTransformer uses it, and
// `opm transformer new --lang c` copies it into every C project. A DOM parser and a writer.
//
// The parser keeps what the Rust SDK's serde_json keeps, so that what the C transformer copies
// from a component reads back the same once the host re-parses it:
// - a number as its source text (8080.0 stays 8080.0, 12345678901234567890 stays exact);
// - an object's members in document order, a repeated key keeping its first place and its last
//   value, as Rust's order-preserving map does;
// - a string unescaped to UTF-8, `\u` escapes and surrogate pairs included (a lone surrogate is
//   an error, as in Rust, whose strings cannot hold one). The input must be UTF-8, which the
//   component model guarantees of a WIT string.
// It refuses what serde_json refuses: nesting deeper than 127, numbers too large for a double.
//
// Running out of memory aborts, as Rust's allocator does; the host reports the trap.

#ifndef OPM_TRANSFORMER_JSON_H
#define OPM_TRANSFORMER_JSON_H

#include <stdbool.h>
#include <stddef.h>

/// The kinds of JSON value.
typedef enum json_kind {
  JSON_NULL,
  JSON_BOOL,
  JSON_NUMBER,
  JSON_STRING,
  JSON_ARRAY,
  JSON_OBJECT,
} json_kind;

/// UTF-8 text, `len` bytes long and NUL-terminated after them (it may hold NULs of its own).
typedef struct json_string {
  char *ptr;
  size_t len;
} json_string;

typedef struct json_value json_value;
typedef struct json_member json_member;

/// A JSON value. It owns what it points to; `json_destroy` frees it.
struct json_value {
  json_kind kind;
  union {
    /// JSON_BOOL.
    bool boolean;
    /// JSON_NUMBER: its source text; JSON_STRING: its value.
    json_string text;
    /// JSON_ARRAY.
    struct {
      json_value *items;
      size_t len, cap;
    } array;
    /// JSON_OBJECT, its members in order.
    struct {
      json_member *members;
      size_t len, cap;
    } object;
  } as;
};

/// One member of an object.
struct json_member {
  json_string key;
  json_value value;
};

/// A growable buffer of text; `ptr` is malloc'd (NULL while empty) and NUL-terminated.
typedef struct json_buffer {
  char *ptr;
  size_t len, cap;
} json_buffer;

/// The size of the buffer `json_parse` writes an error message into.
#define JSON_ERROR_SIZE 160

/// Parses the JSON document `text` (`len` bytes) into `*out`. On failure returns false and
/// writes why, with the line and column, into `error`.
bool json_parse(const char *text, size_t len, json_value *out, char error[JSON_ERROR_SIZE]);

/// Frees what `value` owns and makes it null.
void json_destroy(json_value *value);

/// A null.
json_value json_null(void);

/// A string holding a copy of the `len` bytes at `ptr`.
json_value json_string_of(const char *ptr, size_t len);

/// An empty array.
json_value json_array(void);

/// An empty object.
json_value json_object(void);

/// A deep copy of `value`.
json_value json_clone(const json_value *value);

/// Appends `value` to the array `array`, which takes it over.
void json_array_push(json_value *array, json_value value);

/// Appends the member `key` (`key_len` bytes), `value` to the object `object`, which takes the
/// value over. It does not look for `key` among the members already there: `json_dedupe` does.
void json_object_add(json_value *object, const char *key, size_t key_len, json_value value);

/// Leaves one member per key in `object`: where a key is repeated, the first member's place with
/// the last member's value.
void json_dedupe(json_value *object);

/// Sorts the members of `object` by key, in code-point order. Its keys must be unique.
void json_sort_keys(json_value *object);

/// The members of `object`, sorted by key in code-point order, as a malloc'd array of pointers
/// into it (NULL when it has none); its keys must be unique.
const json_member **json_sorted_members(const json_value *object);

/// Compares two strings by code point (UTF-8 bytes, then length), as strcmp does.
int json_compare_strings(const json_string *a, const json_string *b);

/// Whether `a` holds exactly the NUL-terminated `b`.
bool json_string_is(const json_string *a, const char *b);

/// The value of `key` when `value` is an object that has it, else NULL (`value` may be NULL).
const json_value *json_get(const json_value *value, const char *key);

/// Whether `value` is there and not null.
bool json_present(const json_value *value);

/// Writes `value` as compact JSON text to `buffer`.
void json_write(json_buffer *buffer, const json_value *value);

/// Writes the `len` bytes of UTF-8 at `ptr` as a JSON string to `buffer`.
void json_write_string(json_buffer *buffer, const char *ptr, size_t len);

/// Appends the `len` bytes at `ptr` to `buffer`.
void json_buffer_append(json_buffer *buffer, const char *ptr, size_t len);

/// Appends the NUL-terminated `text` to `buffer`.
void json_buffer_puts(json_buffer *buffer, const char *text);

/// realloc that aborts when memory runs out.
void *json_realloc(void *ptr, size_t size);

#endif
