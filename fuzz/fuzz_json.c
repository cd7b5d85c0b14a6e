/* fuzz_json.c - the strict JSON parser (src/util/json_parse.c) used for
 * custom-operator descriptions. For documents that parse, every value is
 * walked and object members are looked up by their own keys. */
#include <string.h>

#include "fuzz_common.h"
#include "util/json_parse.h"

static void walk(const json_value *v, unsigned depth) {
    if (depth > JSON_MAX_DEPTH + 1) fuzz_fail("JSON nesting above JSON_MAX_DEPTH", NULL);
    if (v->kind == JSON_STRING && strlen(v->str) > v->len)
        fuzz_fail("JSON string longer than its length", NULL);
    if (v->kind != JSON_ARRAY && v->kind != JSON_OBJECT) return;
    for (uint32_t i = 0; i < v->n; i++) {
        if (v->kind == JSON_OBJECT && !memchr(v->keys[i], 0, v->key_lens[i]) &&
            json_get(v, v->keys[i]) != &v->items[i])
            fuzz_fail("json_get does not find a member by its key", NULL);
        walk(&v->items[i], depth + 1);
    }
}

FUZZ_ENTRY(json) {
    arena a;
    arena_init(&a, 0);
    json_value *v = NULL;
    ctosa_error *e = json_parse((const char *)data, size, "fuzz.json", &a, &v);
    if (!e) walk(v, 0);
    fuzz_drop(e);
    arena_free(&a);
    return 0;
}
