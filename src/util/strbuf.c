/* strbuf.c - growable strings and JSON string/number formatting. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void sb_init(strbuf *b) { memset(b, 0, sizeof *b); }
void sb_free(strbuf *b) {
    free(b->s);
    sb_init(b);
}

static bool sb_reserve(strbuf *b, size_t extra) {
    if (b->failed) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            b->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *s = realloc(b->s, cap);
    if (!s) {
        b->failed = true;
        return false;
    }
    b->s = s;
    b->cap = cap;
    return true;
}

void sb_putn(strbuf *b, const char *s, size_t n) {
    if (!sb_reserve(b, n)) return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}
void sb_putc(strbuf *b, char c) { sb_putn(b, &c, 1); }
void sb_puts(strbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

void sb_vprintf(strbuf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap2);
    va_end(ap2);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        sb_putn(b, tmp, (size_t)n);
        return;
    }
    if (!sb_reserve(b, (size_t)n)) return;
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void sb_printf(strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

/* Length of a valid UTF-8 sequence starting at s (0 if invalid). */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) {
        len = 2;
        min = 0x80;
        c &= 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3;
        min = 0x800;
        c &= 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4;
        min = 0x10000;
        c &= 0x07;
    } else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    return len;
}

void sb_json_strn(strbuf *b, const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    sb_putc(b, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            sb_putc(b, '\\');
            sb_putc(b, (char)c);
            i++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': sb_puts(b, "\\n"); break;
            case '\t': sb_puts(b, "\\t"); break;
            case '\r': sb_puts(b, "\\r"); break;
            default: sb_printf(b, "\\u%04x", c);
            }
            i++;
        } else if (c < 0x80) {
            sb_putc(b, (char)c);
            i++;
        } else {
            size_t l = utf8_len(s + i, n - i);
            if (l == 0) {
                sb_puts(b, "\\ufffd");
                i++;
            } else {
                sb_putn(b, (const char *)s + i, l);
                i += l;
            }
        }
    }
    sb_putc(b, '"');
}

void sb_json_str(strbuf *b, const char *s) {
    if (!s) {
        sb_puts(b, "null");
        return;
    }
    sb_json_strn(b, s, strlen(s));
}

void sb_json_double(strbuf *b, double v) {
    if (isnan(v)) {
        sb_puts(b, "\"nan\"");
        return;
    }
    if (isinf(v)) {
        sb_puts(b, v > 0 ? "\"inf\"" : "\"-inf\"");
        return;
    }
    if (fabs(v) < 1e15 && v == (double)(int64_t)v) { /* range first: the cast of a larger value is UB */
        sb_printf(b, "%lld", (long long)v);
        return;
    }
    char tmp[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    sb_puts(b, tmp);
}

char *sb_take(strbuf *b) {
    char *s = b->s;
    if (!s) {
        s = malloc(1);
        if (s) s[0] = 0;
    }
    sb_init(b);
    return s;
}
