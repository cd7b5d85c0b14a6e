/* json_parse.c - strict JSON parser (see json_parse.h). Recursive descent
 * with an explicit depth limit; every error names line and column. */
#include "util/json_parse.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct jp {
    const unsigned char *p, *end;
    const char *name;
    arena *a;
    uint32_t line, col;
    ctosa_error *err;
} jp;

static bool jp_fail(jp *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool jp_fail(jp *j, const char *fmt, ...) {
    if (j->err) return false;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    j->err = ctosa_error_new(CTOSA_ERR_FORMAT, "%s:%u:%u: %s", j->name, j->line, j->col, msg);
    return false;
}

/* Advances one byte, keeping line and column (columns count characters:
 * UTF-8 continuation bytes do not move the column). */
static void adv(jp *j) {
    unsigned char c = *j->p++;
    if (c == '\n') {
        j->line++;
        j->col = 1;
    } else if ((c & 0xC0) != 0x80) {
        j->col++;
    }
}

static void skip_ws(jp *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) adv(j);
}

static const char *describe(jp *j, char *buf, size_t cap) {
    if (j->p >= j->end) return "end of input";
    unsigned char c = *j->p;
    if (c >= 0x20 && c < 0x7f) snprintf(buf, cap, "'%c'", c);
    else snprintf(buf, cap, "byte 0x%02x", c);
    return buf;
}

static bool parse_value(jp *j, json_value *v, uint32_t depth);

static bool lit(jp *j, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0) {
        char b[32];
        return jp_fail(j, "unexpected %s (expected a JSON value)", describe(j, b, sizeof b));
    }
    for (size_t i = 0; i < n; i++) adv(j);
    if (j->p < j->end && ((*j->p >= 'a' && *j->p <= 'z') || (*j->p >= '0' && *j->p <= '9')))
        return jp_fail(j, "unexpected characters after '%s'", word);
    return true;
}

static bool parse_number(jp *j, json_value *v) {
    const unsigned char *s = j->p;
    bool frac = false;
    if (j->p < j->end && *j->p == '-') adv(j);
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return jp_fail(j, "a number needs digits");
    if (*j->p == '0') {
        adv(j);
        if (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            return jp_fail(j, "numbers must not have leading zeros");
    } else {
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') adv(j);
    }
    if (j->p < j->end && *j->p == '.') {
        frac = true;
        adv(j);
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return jp_fail(j, "digits expected after '.'");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') adv(j);
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        frac = true;
        adv(j);
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) adv(j);
        if (j->p >= j->end || *j->p < '0' || *j->p > '9')
            return jp_fail(j, "digits expected in the exponent");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') adv(j);
    }
    size_t n = (size_t)(j->p - s);
    char buf[64];
    char *tmp = n < sizeof buf ? buf : malloc(n + 1);
    if (!tmp) return jp_fail(j, "out of memory");
    memcpy(tmp, s, n);
    tmp[n] = 0;
    v->kind = JSON_NUMBER;
    v->num = strtod(tmp, NULL);
    if (!frac) {
        errno = 0;
        long long x = strtoll(tmp, NULL, 10);
        if (errno == 0) {
            v->is_int = true;
            v->i = x;
        }
    }
    if (tmp != buf) free(tmp);
    if (!isfinite(v->num)) return jp_fail(j, "number out of range");
    return true;
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool read_u4(jp *j, uint32_t *out) {
    uint32_t x = 0;
    for (int k = 0; k < 4; k++) {
        int h = j->p < j->end ? hexval(*j->p) : -1;
        if (h < 0) return jp_fail(j, "\\u needs four hex digits");
        x = x * 16 + (uint32_t)h;
        adv(j);
    }
    *out = x;
    return true;
}

static void put_utf8(strbuf *b, uint32_t cp) {
    if (cp < 0x80) {
        sb_putc(b, (char)cp);
    } else if (cp < 0x800) {
        sb_putc(b, (char)(0xC0 | (cp >> 6)));
        sb_putc(b, (char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        sb_putc(b, (char)(0xE0 | (cp >> 12)));
        sb_putc(b, (char)(0x80 | ((cp >> 6) & 0x3F)));
        sb_putc(b, (char)(0x80 | (cp & 0x3F)));
    } else {
        sb_putc(b, (char)(0xF0 | (cp >> 18)));
        sb_putc(b, (char)(0x80 | ((cp >> 12) & 0x3F)));
        sb_putc(b, (char)(0x80 | ((cp >> 6) & 0x3F)));
        sb_putc(b, (char)(0x80 | (cp & 0x3F)));
    }
}

/* Length of the valid UTF-8 sequence at p (0 if invalid). */
static size_t utf8_len(const unsigned char *p, const unsigned char *end) {
    unsigned char c = p[0];
    size_t n;
    uint32_t cp, min;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07, min = 0x10000;
    else return 0;
    if ((size_t)(end - p) < n) return 0;
    for (size_t k = 1; k < n; k++) {
        if ((p[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

static bool parse_string(jp *j, const char **out, size_t *out_len) {
    adv(j); /* opening quote */
    strbuf b;
    sb_init(&b);
    for (;;) {
        if (j->p >= j->end) {
            sb_free(&b);
            return jp_fail(j, "unterminated string");
        }
        unsigned char c = *j->p;
        if (c == '"') {
            adv(j);
            break;
        }
        if (c < 0x20) {
            sb_free(&b);
            return jp_fail(j, "control character 0x%02x in a string (escape it)", c);
        }
        if (c == '\\') {
            adv(j);
            if (j->p >= j->end) {
                sb_free(&b);
                return jp_fail(j, "unterminated string");
            }
            unsigned char e = *j->p;
            const char *simple = NULL;
            switch (e) {
            case '"': simple = "\""; break;
            case '\\': simple = "\\"; break;
            case '/': simple = "/"; break;
            case 'b': simple = "\b"; break;
            case 'f': simple = "\f"; break;
            case 'n': simple = "\n"; break;
            case 'r': simple = "\r"; break;
            case 't': simple = "\t"; break;
            default: break;
            }
            if (simple) {
                sb_putc(&b, simple[0]);
                adv(j);
                continue;
            }
            if (e != 'u') {
                sb_free(&b);
                return jp_fail(j, "invalid escape '\\%c'", e >= 0x20 && e < 0x7f ? e : '?');
            }
            adv(j);
            uint32_t cp = 0;
            if (!read_u4(j, &cp)) {
                sb_free(&b);
                return false;
            }
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                sb_free(&b);
                return jp_fail(j, "lone low surrogate \\u%04X", cp);
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo = 0;
                if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u') {
                    sb_free(&b);
                    return jp_fail(j, "high surrogate \\u%04X not followed by a low surrogate", cp);
                }
                adv(j);
                adv(j);
                if (!read_u4(j, &lo)) {
                    sb_free(&b);
                    return false;
                }
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    sb_free(&b);
                    return jp_fail(j, "high surrogate \\u%04X not followed by a low surrogate", cp);
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            put_utf8(&b, cp);
            continue;
        }
        size_t n = utf8_len(j->p, j->end);
        if (!n) {
            sb_free(&b);
            return jp_fail(j, "invalid UTF-8 in a string");
        }
        sb_putn(&b, (const char *)j->p, n);
        for (size_t k = 0; k < n; k++) adv(j);
    }
    if (b.failed) {
        sb_free(&b);
        return jp_fail(j, "out of memory");
    }
    *out_len = b.len;
    *out = arena_memdup(j->a, b.s ? b.s : "", b.len + 1);
    if (*out && !b.s) ((char *)*out)[0] = 0;
    sb_free(&b);
    if (!*out) return jp_fail(j, "out of memory");
    return true;
}

/* Growable temporary arrays for elements while an array/object is read. */
typedef struct vec {
    json_value *v;
    const char **k;
    size_t *kl;
    uint32_t n, cap;
} vec;

static bool vec_push(jp *j, vec *x, bool keys) {
    if (x->n == x->cap) {
        uint32_t cap = x->cap ? x->cap * 2 : 8;
        json_value *nv = realloc(x->v, cap * sizeof *nv);
        if (!nv) return jp_fail(j, "out of memory");
        x->v = nv;
        if (keys) {
            const char **nk = realloc(x->k, cap * sizeof *nk);
            if (!nk) return jp_fail(j, "out of memory");
            x->k = nk;
            size_t *nl = realloc(x->kl, cap * sizeof *nl);
            if (!nl) return jp_fail(j, "out of memory");
            x->kl = nl;
        }
        x->cap = cap;
    }
    memset(&x->v[x->n], 0, sizeof x->v[x->n]);
    x->n++;
    return true;
}

static void vec_free(vec *x) {
    free(x->v);
    free(x->k);
    free(x->kl);
}

/* Copies n elements of size sz into the arena (a non-NULL pointer even
 * when n is 0). */
static void *arena_copy(arena *a, const void *p, size_t n, size_t sz) {
    void *d = arena_alloc(a, n * sz + 1);
    if (d && n) memcpy(d, p, n * sz);
    return d;
}

static bool vec_finish(jp *j, vec *x, json_value *v, bool keys) {
    v->n = x->n;
    v->items = arena_copy(j->a, x->v, x->n, sizeof *x->v);
    if (!v->items) return jp_fail(j, "out of memory");
    if (keys) {
        v->keys = arena_copy(j->a, x->k, x->n, sizeof *x->k);
        v->key_lens = arena_copy(j->a, x->kl, x->n, sizeof *x->kl);
        if (!v->keys || !v->key_lens) return jp_fail(j, "out of memory");
    }
    return true;
}

static bool parse_array(jp *j, json_value *v, uint32_t depth) {
    adv(j);
    v->kind = JSON_ARRAY;
    vec x = {0};
    bool ok = true;
    skip_ws(j);
    if (j->p < j->end && *j->p == ']') {
        adv(j);
    } else {
        for (;;) {
            if (!(ok = vec_push(j, &x, false))) break;
            skip_ws(j);
            if (!(ok = parse_value(j, &x.v[x.n - 1], depth + 1))) break;
            skip_ws(j);
            if (j->p < j->end && *j->p == ',') {
                adv(j);
                skip_ws(j);
                if (j->p < j->end && *j->p == ']') {
                    ok = jp_fail(j, "trailing comma before ']'");
                    break;
                }
                continue;
            }
            if (j->p < j->end && *j->p == ']') {
                adv(j);
                break;
            }
            char b[32];
            ok = jp_fail(j, "expected ',' or ']' in an array, found %s", describe(j, b, sizeof b));
            break;
        }
    }
    if (ok) ok = vec_finish(j, &x, v, false);
    vec_free(&x);
    return ok;
}

static bool parse_object(jp *j, json_value *v, uint32_t depth) {
    adv(j);
    v->kind = JSON_OBJECT;
    vec x = {0};
    bool ok = true;
    strmap seen;
    strmap_init(&seen);
    skip_ws(j);
    if (j->p < j->end && *j->p == '}') {
        adv(j);
    } else {
        for (;;) {
            skip_ws(j);
            if (j->p >= j->end || *j->p != '"') {
                char b[32];
                ok = jp_fail(j, "expected a string key in an object, found %s", describe(j, b, sizeof b));
                break;
            }
            uint32_t kl = j->line, kc = j->col;
            const char *key;
            size_t klen;
            if (!(ok = parse_string(j, &key, &klen))) break;
            if (strlen(key) == klen && strmap_has(&seen, key)) {
                j->line = kl;
                j->col = kc;
                ok = jp_fail(j, "duplicate key \"%s\"", key);
                break;
            }
            if (strlen(key) == klen && !strmap_put(&seen, key, (void *)key)) {
                ok = jp_fail(j, "out of memory");
                break;
            }
            skip_ws(j);
            if (j->p >= j->end || *j->p != ':') {
                char b[32];
                ok = jp_fail(j, "expected ':' after an object key, found %s", describe(j, b, sizeof b));
                break;
            }
            adv(j);
            skip_ws(j);
            if (!(ok = vec_push(j, &x, true))) break;
            x.k[x.n - 1] = key;
            x.kl[x.n - 1] = klen;
            if (!(ok = parse_value(j, &x.v[x.n - 1], depth + 1))) break;
            skip_ws(j);
            if (j->p < j->end && *j->p == ',') {
                adv(j);
                skip_ws(j);
                if (j->p < j->end && *j->p == '}') {
                    ok = jp_fail(j, "trailing comma before '}'");
                    break;
                }
                continue;
            }
            if (j->p < j->end && *j->p == '}') {
                adv(j);
                break;
            }
            char b[32];
            ok = jp_fail(j, "expected ',' or '}' in an object, found %s", describe(j, b, sizeof b));
            break;
        }
    }
    if (ok) ok = vec_finish(j, &x, v, true);
    vec_free(&x);
    strmap_free(&seen);
    return ok;
}

static bool parse_value(jp *j, json_value *v, uint32_t depth) {
    memset(v, 0, sizeof *v);
    v->line = j->line;
    v->col = j->col;
    if (depth > JSON_MAX_DEPTH) return jp_fail(j, "nesting deeper than %d", JSON_MAX_DEPTH);
    if (j->p >= j->end) return jp_fail(j, "unexpected end of input (expected a JSON value)");
    switch (*j->p) {
    case '{': return parse_object(j, v, depth);
    case '[': return parse_array(j, v, depth);
    case '"': v->kind = JSON_STRING; return parse_string(j, &v->str, &v->len);
    case 't':
        v->kind = JSON_BOOL;
        v->b = true;
        return lit(j, "true");
    case 'f': v->kind = JSON_BOOL; return lit(j, "false");
    case 'n': v->kind = JSON_NULL; return lit(j, "null");
    default:
        if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9')) return parse_number(j, v);
        {
            char b[32];
            return jp_fail(j, "unexpected %s (expected a JSON value)", describe(j, b, sizeof b));
        }
    }
}

ctosa_error *json_parse(const char *text, size_t len, const char *name, arena *a, json_value **out) {
    jp j = {(const unsigned char *)text,
            (const unsigned char *)text + len,
            name ? name : "<json>",
            a,
            1,
            1,
            NULL};
    *out = NULL;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) j.p += 3;
    json_value *v = arena_zalloc(a, sizeof *v);
    if (!v) return ctosa_error_nomem();
    skip_ws(&j);
    if (parse_value(&j, v, 0)) {
        skip_ws(&j);
        if (j.p < j.end) {
            char b[32];
            jp_fail(&j, "unexpected %s after the JSON value", describe(&j, b, sizeof b));
        }
    }
    if (j.err) return j.err;
    *out = v;
    return NULL;
}

const json_value *json_get(const json_value *obj, const char *key) {
    if (!obj || obj->kind != JSON_OBJECT) return NULL;
    for (uint32_t i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0 && strlen(key) == obj->key_lens[i]) return &obj->items[i];
    return NULL;
}
