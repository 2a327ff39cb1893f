// A small JSON library for opm transformers in C: see json.h.

#include "json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// The deepest nesting of arrays and objects a document may have, as in serde_json.
#define MAX_DEPTH 127

void *json_realloc(void *ptr, size_t size) {
  void *grown = realloc(ptr, size == 0 ? 1 : size);
  if (grown == NULL) {
    abort();
  }
  return grown;
}

/// Makes room for `more` items of `size` bytes after `len` in the array `*items` of `*cap`.
static void reserve(void **items, size_t *cap, size_t len, size_t more, size_t size) {
  if (len + more <= *cap) {
    return;
  }
  size_t grown = *cap < 8 ? 8 : *cap * 2;
  while (grown < len + more) {
    grown *= 2;
  }
  *items = json_realloc(*items, grown * size);
  *cap = grown;
}

void json_buffer_append(json_buffer *buffer, const char *ptr, size_t len) {
  void *data = buffer->ptr;
  reserve(&data, &buffer->cap, buffer->len, len + 1, 1);
  buffer->ptr = data;
  if (len > 0) {
    memcpy(buffer->ptr + buffer->len, ptr, len);
  }
  buffer->len += len;
  buffer->ptr[buffer->len] = '\0';
}

void json_buffer_puts(json_buffer *buffer, const char *text) {
  json_buffer_append(buffer, text, strlen(text));
}

/// Takes the text of `buffer` over as a string, leaving the buffer empty.
static json_string take_text(json_buffer *buffer) {
  json_buffer_append(buffer, "", 0);  // allocates the NUL of an empty text
  json_string text = {buffer->ptr, buffer->len};
  *buffer = (json_buffer){0};
  return text;
}

/// A copy of the `len` bytes at `ptr`, NUL-terminated.
static json_string copy_text(const char *ptr, size_t len) {
  json_buffer buffer = {0};
  json_buffer_append(&buffer, ptr, len);
  return take_text(&buffer);
}

json_value json_null(void) {
  return (json_value){.kind = JSON_NULL};
}

json_value json_string_of(const char *ptr, size_t len) {
  return (json_value){.kind = JSON_STRING, .as.text = copy_text(ptr, len)};
}

json_value json_array(void) {
  return (json_value){.kind = JSON_ARRAY};
}

json_value json_object(void) {
  return (json_value){.kind = JSON_OBJECT};
}

void json_destroy(json_value *value) {
  switch (value->kind) {
    case JSON_NUMBER:
    case JSON_STRING:
      free(value->as.text.ptr);
      break;
    case JSON_ARRAY:
      for (size_t i = 0; i < value->as.array.len; i++) {
        json_destroy(&value->as.array.items[i]);
      }
      free(value->as.array.items);
      break;
    case JSON_OBJECT:
      for (size_t i = 0; i < value->as.object.len; i++) {
        free(value->as.object.members[i].key.ptr);
        json_destroy(&value->as.object.members[i].value);
      }
      free(value->as.object.members);
      break;
    case JSON_NULL:
    case JSON_BOOL:
      break;
  }
  *value = json_null();
}

json_value json_clone(const json_value *value) {
  json_value copy = *value;
  switch (value->kind) {
    case JSON_NUMBER:
    case JSON_STRING:
      copy.as.text = copy_text(value->as.text.ptr, value->as.text.len);
      break;
    case JSON_ARRAY:
      copy = json_array();
      for (size_t i = 0; i < value->as.array.len; i++) {
        json_array_push(&copy, json_clone(&value->as.array.items[i]));
      }
      break;
    case JSON_OBJECT:
      copy = json_object();
      for (size_t i = 0; i < value->as.object.len; i++) {
        const json_member *member = &value->as.object.members[i];
        json_object_add(&copy, member->key.ptr, member->key.len, json_clone(&member->value));
      }
      break;
    case JSON_NULL:
    case JSON_BOOL:
      break;
  }
  return copy;
}

void json_array_push(json_value *array, json_value value) {
  void *items = array->as.array.items;
  reserve(&items, &array->as.array.cap, array->as.array.len, 1, sizeof(json_value));
  array->as.array.items = items;
  array->as.array.items[array->as.array.len++] = value;
}

/// Appends the member `key`, `value` to `object`, which takes both over.
static void add_member(json_value *object, json_string key, json_value value) {
  void *members = object->as.object.members;
  reserve(&members, &object->as.object.cap, object->as.object.len, 1, sizeof(json_member));
  object->as.object.members = members;
  object->as.object.members[object->as.object.len++] = (json_member){key, value};
}

void json_object_add(json_value *object, const char *key, size_t key_len, json_value value) {
  add_member(object, copy_text(key, key_len), value);
}

int json_compare_strings(const json_string *a, const json_string *b) {
  int order = memcmp(a->ptr, b->ptr, a->len < b->len ? a->len : b->len);
  if (order != 0) {
    return order;
  }
  return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}

bool json_string_is(const json_string *a, const char *b) {
  return a->len == strlen(b) && memcmp(a->ptr, b, a->len) == 0;
}

/// qsort order of members by key.
static int by_key(const void *a, const void *b) {
  return json_compare_strings(&((const json_member *)a)->key, &((const json_member *)b)->key);
}

/// qsort order of pointers to members by key.
static int by_key_of_pointer(const void *a, const void *b) {
  const json_member *x = *(const json_member *const *)a;
  const json_member *y = *(const json_member *const *)b;
  return json_compare_strings(&x->key, &y->key);
}

/// qsort order of pointers to the members of one object by key, then by place.
static int by_key_then_place(const void *a, const void *b) {
  const json_member *x = *(const json_member *const *)a;
  const json_member *y = *(const json_member *const *)b;
  int order = json_compare_strings(&x->key, &y->key);
  return order != 0 ? order : x < y ? -1 : x > y ? 1 : 0;
}

void json_dedupe(json_value *object) {
  size_t len = object->as.object.len;
  json_member *members = object->as.object.members;
  if (len < 2) {
    return;
  }
  // Sorting pointers by key then place puts each key's members together, first place first.
  json_member **order = json_realloc(NULL, len * sizeof *order);
  for (size_t i = 0; i < len; i++) {
    order[i] = &members[i];
  }
  qsort(order, len, sizeof *order, by_key_then_place);
  bool repeated = false;
  for (size_t i = 0; i < len;) {
    size_t end = i + 1;
    while (end < len && json_compare_strings(&order[end]->key, &order[i]->key) == 0) {
      end++;
    }
    if (end - i > 1) {
      // The first member takes the last one's value; the others are dropped (key freed).
      json_destroy(&order[i]->value);
      order[i]->value = order[end - 1]->value;
      order[end - 1]->value = json_null();
      for (size_t k = i + 1; k < end; k++) {
        json_destroy(&order[k]->value);
        free(order[k]->key.ptr);
        order[k]->key.ptr = NULL;
      }
      repeated = true;
    }
    i = end;
  }
  free(order);
  if (repeated) {
    size_t kept = 0;
    for (size_t i = 0; i < len; i++) {
      if (members[i].key.ptr != NULL) {
        members[kept++] = members[i];
      }
    }
    object->as.object.len = kept;
  }
}

void json_sort_keys(json_value *object) {
  if (object->as.object.len > 1) {
    qsort(object->as.object.members, object->as.object.len, sizeof(json_member), by_key);
  }
}

const json_member **json_sorted_members(const json_value *object) {
  size_t len = object->as.object.len;
  if (len == 0) {
    return NULL;
  }
  const json_member **sorted = json_realloc(NULL, len * sizeof *sorted);
  for (size_t i = 0; i < len; i++) {
    sorted[i] = &object->as.object.members[i];
  }
  qsort(sorted, len, sizeof *sorted, by_key_of_pointer);
  return sorted;
}

const json_value *json_get(const json_value *value, const char *key) {
  if (value == NULL || value->kind != JSON_OBJECT) {
    return NULL;
  }
  for (size_t i = 0; i < value->as.object.len; i++) {
    if (json_string_is(&value->as.object.members[i].key, key)) {
      return &value->as.object.members[i].value;
    }
  }
  return NULL;
}

bool json_present(const json_value *value) {
  return value != NULL && value->kind != JSON_NULL;
}

// ---- Parsing ----

/// Where a parse is, and the first error it met.
typedef struct parser {
  const char *text;
  size_t len;
  size_t at;
  char *error;
} parser;

/// Records why the parse failed, at the current place; returns false.
static bool fail(parser *p, const char *why) {
  size_t line = 1;
  size_t column = 1;
  for (size_t i = 0; i < p->at && i < p->len; i++) {
    if (p->text[i] == '\n') {
      line++;
      column = 1;
    } else {
      column++;
    }
  }
  snprintf(p->error, JSON_ERROR_SIZE, "%s at line %zu column %zu", why, line, column);
  return false;
}

/// Skips whitespace.
static void skip_space(parser *p) {
  while (p->at < p->len && (p->text[p->at] == ' ' || p->text[p->at] == '\t' ||
                            p->text[p->at] == '\n' || p->text[p->at] == '\r')) {
    p->at++;
  }
}

/// Whether the next byte is `c`; consumes it when it is.
static bool eat(parser *p, char c) {
  if (p->at < p->len && p->text[p->at] == c) {
    p->at++;
    return true;
  }
  return false;
}

/// Whether the next byte is an ASCII digit.
static bool at_digit(const parser *p) {
  return p->at < p->len && p->text[p->at] >= '0' && p->text[p->at] <= '9';
}

/// Reads the four hex digits of a `\u` escape.
static bool hex4(parser *p, uint32_t *out) {
  if (p->len - p->at < 4) {
    return fail(p, "EOF while parsing a string");
  }
  uint32_t code = 0;
  for (int i = 0; i < 4; i++) {
    char c = p->text[p->at++];
    uint32_t digit;
    if (c >= '0' && c <= '9') {
      digit = (uint32_t)(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = (uint32_t)(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = (uint32_t)(c - 'A' + 10);
    } else {
      return fail(p, "invalid escape");
    }
    code = code * 16 + digit;
  }
  *out = code;
  return true;
}

/// Appends the code point `code` to `buffer` as UTF-8.
static void append_utf8(json_buffer *buffer, uint32_t code) {
  char bytes[4];
  size_t len;
  if (code < 0x80) {
    bytes[0] = (char)code;
    len = 1;
  } else if (code < 0x800) {
    bytes[0] = (char)(0xC0 | (code >> 6));
    bytes[1] = (char)(0x80 | (code & 0x3F));
    len = 2;
  } else if (code < 0x10000) {
    bytes[0] = (char)(0xE0 | (code >> 12));
    bytes[1] = (char)(0x80 | ((code >> 6) & 0x3F));
    bytes[2] = (char)(0x80 | (code & 0x3F));
    len = 3;
  } else {
    bytes[0] = (char)(0xF0 | (code >> 18));
    bytes[1] = (char)(0x80 | ((code >> 12) & 0x3F));
    bytes[2] = (char)(0x80 | ((code >> 6) & 0x3F));
    bytes[3] = (char)(0x80 | (code & 0x3F));
    len = 4;
  }
  json_buffer_append(buffer, bytes, len);
}

/// Reads the escape after a backslash into `buffer`.
static bool parse_escape(parser *p, json_buffer *buffer) {
  if (p->at == p->len) {
    return fail(p, "EOF while parsing a string");
  }
  char c = p->text[p->at++];
  const char *simple = NULL;
  switch (c) {
    case '"': simple = "\""; break;
    case '\\': simple = "\\"; break;
    case '/': simple = "/"; break;
    case 'b': simple = "\b"; break;
    case 'f': simple = "\f"; break;
    case 'n': simple = "\n"; break;
    case 'r': simple = "\r"; break;
    case 't': simple = "\t"; break;
    case 'u': break;
    default: return fail(p, "invalid escape");
  }
  if (simple != NULL) {
    json_buffer_append(buffer, simple, 1);
    return true;
  }
  uint32_t code;
  if (!hex4(p, &code)) {
    return false;
  }
  if (code >= 0xDC00 && code <= 0xDFFF) {
    return fail(p, "lone trailing surrogate in hex escape");
  }
  if (code >= 0xD800 && code <= 0xDBFF) {
    // A leading surrogate must be followed by the escape of a trailing one.
    uint32_t low;
    if (!eat(p, '\\') || !eat(p, 'u')) {
      return fail(p, "lone leading surrogate in hex escape");
    }
    if (!hex4(p, &low)) {
      return false;
    }
    if (low < 0xDC00 || low > 0xDFFF) {
      return fail(p, "lone leading surrogate in hex escape");
    }
    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
  }
  append_utf8(buffer, code);
  return true;
}

/// Reads a string, its opening quote next, into `*out`.
static bool parse_string(parser *p, json_string *out) {
  json_buffer buffer = {0};
  p->at++;  // the opening quote
  for (;;) {
    // Copy the run of plain bytes up to the next quote, backslash or control character.
    size_t start = p->at;
    while (p->at < p->len && p->text[p->at] != '"' && p->text[p->at] != '\\' &&
           (unsigned char)p->text[p->at] >= 0x20) {
      p->at++;
    }
    json_buffer_append(&buffer, p->text + start, p->at - start);
    if (p->at == p->len) {
      free(buffer.ptr);
      return fail(p, "EOF while parsing a string");
    }
    char c = p->text[p->at++];
    if (c == '"') {
      *out = take_text(&buffer);
      return true;
    }
    if (c != '\\') {
      free(buffer.ptr);
      return fail(p, "control character (\\u0000-\\u001F) found while parsing a string");
    }
    if (!parse_escape(p, &buffer)) {
      free(buffer.ptr);
      return false;
    }
  }
}

/// Reads a number into `*out`, kept as its source text.
static bool parse_number(parser *p, json_value *out) {
  size_t start = p->at;
  eat(p, '-');
  if (!eat(p, '0')) {
    if (!at_digit(p)) {
      return fail(p, "invalid number");
    }
    while (at_digit(p)) {
      p->at++;
    }
  }
  if (eat(p, '.')) {
    if (!at_digit(p)) {
      return fail(p, "invalid number");
    }
    while (at_digit(p)) {
      p->at++;
    }
  }
  if (eat(p, 'e') || eat(p, 'E')) {
    if (!eat(p, '+')) {
      eat(p, '-');
    }
    if (!at_digit(p)) {
      return fail(p, "invalid number");
    }
    while (at_digit(p)) {
      p->at++;
    }
  }
  json_string text = copy_text(p->text + start, p->at - start);
  if (isinf(strtod(text.ptr, NULL))) {
    free(text.ptr);
    return fail(p, "number out of range");
  }
  *out = (json_value){.kind = JSON_NUMBER, .as.text = text};
  return true;
}

/// Reads `word` (true, false, null) into `*out`.
static bool parse_word(parser *p, const char *word, json_value value, json_value *out) {
  size_t len = strlen(word);
  if (p->len - p->at < len || memcmp(p->text + p->at, word, len) != 0) {
    return fail(p, "expected value");
  }
  p->at += len;
  *out = value;
  return true;
}

static bool parse_value(parser *p, json_value *out, int depth);

/// Reads an array, its `[` next, into `*out`.
static bool parse_array(parser *p, json_value *out, int depth) {
  *out = json_array();
  p->at++;
  skip_space(p);
  if (eat(p, ']')) {
    return true;
  }
  for (;;) {
    json_value item;
    if (!parse_value(p, &item, depth + 1)) {
      json_destroy(out);
      return false;
    }
    json_array_push(out, item);
    skip_space(p);
    if (eat(p, ']')) {
      return true;
    }
    if (!eat(p, ',')) {
      json_destroy(out);
      return fail(p, p->at == p->len ? "EOF while parsing a list" : "expected `,` or `]`");
    }
  }
}

/// Reads an object, its `{` next, into `*out`.
static bool parse_object(parser *p, json_value *out, int depth) {
  *out = json_object();
  p->at++;
  skip_space(p);
  if (eat(p, '}')) {
    return true;
  }
  for (;;) {
    skip_space(p);
    const char *why = NULL;
    if (p->at == p->len) {
      why = "EOF while parsing an object";
    } else if (p->text[p->at] != '"') {
      why = "key must be a string";
    }
    json_string key;
    if (why != NULL || !parse_string(p, &key)) {
      json_destroy(out);
      return why != NULL ? fail(p, why) : false;
    }
    skip_space(p);
    json_value value;
    if (!eat(p, ':')) {
      free(key.ptr);
      json_destroy(out);
      return fail(p, p->at == p->len ? "EOF while parsing an object" : "expected `:`");
    }
    if (!parse_value(p, &value, depth + 1)) {
      free(key.ptr);
      json_destroy(out);
      return false;
    }
    add_member(out, key, value);
    skip_space(p);
    if (eat(p, '}')) {
      json_dedupe(out);
      return true;
    }
    if (!eat(p, ',')) {
      json_destroy(out);
      return fail(p, p->at == p->len ? "EOF while parsing an object" : "expected `,` or `}`");
    }
  }
}

/// Reads any value into `*out`; `depth` is the number of arrays and objects it is inside. On
/// failure `*out` holds nothing to free.
static bool parse_value(parser *p, json_value *out, int depth) {
  *out = json_null();
  skip_space(p);
  if (p->at == p->len) {
    return fail(p, "EOF while parsing a value");
  }
  char c = p->text[p->at];
  if ((c == '[' || c == '{') && depth >= MAX_DEPTH) {
    return fail(p, "recursion limit exceeded");
  }
  switch (c) {
    case '[':
      return parse_array(p, out, depth);
    case '{':
      return parse_object(p, out, depth);
    case '"':
      out->kind = JSON_STRING;
      if (!parse_string(p, &out->as.text)) {
        *out = json_null();
        return false;
      }
      return true;
    case 't':
      return parse_word(p, "true", (json_value){.kind = JSON_BOOL, .as.boolean = true}, out);
    case 'f':
      return parse_word(p, "false", (json_value){.kind = JSON_BOOL, .as.boolean = false}, out);
    case 'n':
      return parse_word(p, "null", json_null(), out);
    default:
      if (c == '-' || (c >= '0' && c <= '9')) {
        return parse_number(p, out);
      }
      return fail(p, "expected value");
  }
}

bool json_parse(const char *text, size_t len, json_value *out, char error[JSON_ERROR_SIZE]) {
  parser p = {text, len, 0, error};
  if (!parse_value(&p, out, 0)) {
    return false;
  }
  skip_space(&p);
  if (p.at != p.len) {
    json_destroy(out);
    return fail(&p, "trailing characters");
  }
  return true;
}

// ---- Writing ----

void json_write_string(json_buffer *buffer, const char *ptr, size_t len) {
  json_buffer_append(buffer, "\"", 1);
  size_t start = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)ptr[i];
    const char *escape = NULL;
    char hex[7];
    switch (c) {
      case '"': escape = "\\\""; break;
      case '\\': escape = "\\\\"; break;
      case '\b': escape = "\\b"; break;
      case '\f': escape = "\\f"; break;
      case '\n': escape = "\\n"; break;
      case '\r': escape = "\\r"; break;
      case '\t': escape = "\\t"; break;
      default:
        if (c < 0x20) {
          snprintf(hex, sizeof hex, "\\u%04x", c);
          escape = hex;
        }
    }
    if (escape != NULL) {
      json_buffer_append(buffer, ptr + start, i - start);
      json_buffer_puts(buffer, escape);
      start = i + 1;
    }
  }
  json_buffer_append(buffer, ptr + start, len - start);
  json_buffer_append(buffer, "\"", 1);
}

void json_write(json_buffer *buffer, const json_value *value) {
  switch (value->kind) {
    case JSON_NULL:
      json_buffer_puts(buffer, "null");
      break;
    case JSON_BOOL:
      json_buffer_puts(buffer, value->as.boolean ? "true" : "false");
      break;
    case JSON_NUMBER:
      json_buffer_append(buffer, value->as.text.ptr, value->as.text.len);
      break;
    case JSON_STRING:
      json_write_string(buffer, value->as.text.ptr, value->as.text.len);
      break;
    case JSON_ARRAY:
      json_buffer_append(buffer, "[", 1);
      for (size_t i = 0; i < value->as.array.len; i++) {
        if (i > 0) {
          json_buffer_append(buffer, ",", 1);
        }
        json_write(buffer, &value->as.array.items[i]);
      }
      json_buffer_append(buffer, "]", 1);
      break;
    case JSON_OBJECT:
      json_buffer_append(buffer, "{", 1);
      for (size_t i = 0; i < value->as.object.len; i++) {
        const json_member *member = &value->as.object.members[i];
        if (i > 0) {
          json_buffer_append(buffer, ",", 1);
        }
        json_write_string(buffer, member->key.ptr, member->key.len);
        json_buffer_append(buffer, ":", 1);
        json_write(buffer, &member->value);
      }
      json_buffer_append(buffer, "}", 1);
      break;
  }
}
