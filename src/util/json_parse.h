/* json_parse.h - a small strict JSON (RFC 8259) parser into an arena.
 *
 * Strict means: no comments, no trailing commas, no single quotes, no
 * NaN/Infinity, no leading zeros or '+', no control characters in strings,
 * valid UTF-8 only (no lone surrogates in \u escapes), no duplicate keys in
 * one object, nothing but whitespace after the value. A UTF-8 byte order
 * mark at the start is skipped. Nesting is limited to JSON_MAX_DEPTH.
 *
 * Errors are CTOSA_ERR_FORMAT with "NAME:LINE:COLUMN: what" (1-based;
 * columns count characters, not bytes). */
#ifndef CTOSA_JSON_PARSE_H
#define CTOSA_JSON_PARSE_H

#include "util/util.h"

#define JSON_MAX_DEPTH 128

typedef enum json_kind { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_kind;

typedef struct json_value {
    json_kind kind;
    uint32_t line, col;       /* where the value starts */
    bool b;                   /* BOOL */
    double num;               /* NUMBER */
    bool is_int;              /* NUMBER written without fraction/exponent and fits int64 */
    int64_t i;                /* NUMBER when is_int */
    const char *str;          /* STRING: NUL-terminated copy (may contain \u0000) */
    size_t len;               /* STRING: bytes */
    uint32_t n;               /* ARRAY / OBJECT: number of elements / members */
    struct json_value *items; /* ARRAY elements, OBJECT member values */
    const char **keys;        /* OBJECT keys (NUL-terminated) */
    size_t *key_lens;
} json_value;

/* Parses text[0..len) (need not be NUL-terminated). Memory is from a. */
ctosa_error *json_parse(const char *text, size_t len, const char *name, arena *a, json_value **out);

/* Member of an object by key, or NULL (also when obj is not an object). */
const json_value *json_get(const json_value *obj, const char *key);

#endif
