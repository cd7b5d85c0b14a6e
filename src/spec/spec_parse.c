/* spec_parse.c - TOSA spec strings ("TOSA-1.0+INT+int16") and targets.
 *
 * Grammar (cli-contract.md): TOSA-<major>.<minor>[.<patch>] followed by
 * '+'-separated tokens in any order: profiles INT / FP (upper case), the
 * level 8k, the Ethos-U55 subset u55, and lower-case extension tokens.
 * Canonical form (docs/spec.md): version without a zero patch, profiles FP
 * then INT, extensions in CTOSA_EXT_LIST order, then 8k, then u55. */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <strings.h>
#include <stdio.h>
#include <string.h>

#include "ctosa/spec.h"
#include "spec/compliance.h"
#include "util/util.h"

static const char *const ext_tokens[CTOSA_EXT_COUNT] = {
#define CTOSA_X(e, tok, name) tok,
    CTOSA_EXT_LIST(CTOSA_X)
#undef CTOSA_X
};
static const char *const ext_names[CTOSA_EXT_COUNT] = {
#define CTOSA_X(e, tok, name) name,
    CTOSA_EXT_LIST(CTOSA_X)
#undef CTOSA_X
};

const char *ctosa_ext_token(ctosa_ext e) { return (unsigned)e < CTOSA_EXT_COUNT ? ext_tokens[e] : NULL; }
const char *ctosa_ext_spec_name(ctosa_ext e) { return (unsigned)e < CTOSA_EXT_COUNT ? ext_names[e] : NULL; }

/* Which profile an extension belongs to (spec <profile_supported>). */
enum { NEED_INT = 1, NEED_FP = 2, NEED_EITHER = 3 };

static int ext_profile(ctosa_ext e) {
    switch (e) {
    case CTOSA_EXT_INT16:
    case CTOSA_EXT_INT4:
    case CTOSA_EXT_DOUBLEROUND:
    case CTOSA_EXT_INEXACTROUND: return NEED_INT;
    case CTOSA_EXT_VARIABLE:
    case CTOSA_EXT_CONTROLFLOW:
    case CTOSA_EXT_DYNAMIC:
    case CTOSA_EXT_INT64:
    case CTOSA_EXT_SHAPE: return NEED_EITHER;
    default: return NEED_FP; /* bf16, fp8*, fft, every MX extension */
    }
}

/* Version key that introduced the extension. */
static int ext_version(ctosa_ext e) { return e >= CTOSA_EXT_INT64 ? 11 : 10; }

#define GRAMMAR "TOSA-<major>.<minor>[.<patch>]+<PROFILE>[+<PROFILE>][+<token>]..."

static ctosa_error *bad(const char *text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static ctosa_error *bad(const char *text, const char *fmt, ...) {
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "invalid spec string '%s': ", text);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    char *s = sb_take(&b);
    ctosa_error *e = ctosa_error_new(CTOSA_ERR_USAGE, "%s", s ? s : "invalid spec string");
    free(s);
    return e;
}

static bool ieq(const char *a, size_t an, const char *b) {
    size_t bn = strlen(b);
    if (an != bn) return false;
    for (size_t i = 0; i < an; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) return false;
    return true;
}

static bool eq(const char *a, size_t an, const char *b) { return strlen(b) == an && memcmp(a, b, an) == 0; }

/* Case-insensitive Levenshtein distance (short strings only). */
static size_t edit_distance(const char *a, size_t an, const char *b) {
    size_t bn = strlen(b);
    if (an > 63 || bn > 63) return 99;
    size_t prev[64], cur[64];
    for (size_t j = 0; j <= bn; j++) prev[j] = j;
    for (size_t i = 1; i <= an; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= bn; j++) {
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t v = prev[j - 1] + cost;
            if (prev[j] + 1 < v) v = prev[j] + 1;
            if (cur[j - 1] + 1 < v) v = cur[j - 1] + 1;
            cur[j] = v;
        }
        memcpy(prev, cur, (bn + 1) * sizeof prev[0]);
    }
    return prev[bn];
}

/* The tokens valid for a version, for suggestions and the "expected" list. */
static void valid_tokens(int vkey, const char **out, size_t *n) {
    size_t k = 0;
    out[k++] = "INT";
    out[k++] = "FP";
    out[k++] = "8k";
    out[k++] = "u55";
    for (int e = 0; e < CTOSA_EXT_COUNT; e++)
        if (ext_version((ctosa_ext)e) <= vkey) out[k++] = ext_tokens[e];
    *n = k;
}

static void put_expected(strbuf *b, int vkey) {
    sb_puts(b, "expected a profile INT or FP, the level 8k, u55 or an extension: ");
    bool first = true;
    for (int e = 0; e < CTOSA_EXT_COUNT; e++) {
        if (ext_version((ctosa_ext)e) > vkey) continue;
        sb_printf(b, "%s%s", first ? "" : " ", ext_tokens[e]);
        first = false;
    }
    if (vkey < 11) sb_puts(b, "; int64 and shape need TOSA 1.1");
}

/* Closest candidate: a candidate the word is a prefix of (case-insensitive)
 * wins, else the smallest edit distance within a small bound. */
static const char *closest(const char *w, size_t n, const char *const *cand, size_t nc) {
    for (size_t i = 0; i < nc; i++)
        if (n >= 2 && strlen(cand[i]) > n && strncasecmp(cand[i], w, n) == 0) return cand[i];
    const char *best = NULL;
    size_t best_d = 99, limit = n <= 3 ? 1 : n <= 8 ? 2 : 3;
    for (size_t i = 0; i < nc; i++) {
        size_t d = edit_distance(w, n, cand[i]);
        if (d < best_d) {
            best_d = d;
            best = cand[i];
        }
    }
    return best_d <= limit ? best : NULL;
}

static ctosa_error *unknown_token(const char *text, const char *tok, size_t n, int vkey) {
    const char *valid[CTOSA_EXT_COUNT + 4];
    size_t nv;
    valid_tokens(11, valid, &nv); /* suggest 1.1 tokens too: a later message says why */
    const char *best = closest(tok, n, valid, nv);
    strbuf b;
    sb_init(&b);
    if (best) sb_printf(&b, ": did you mean %s?", best);
    if (eq(tok, n, "random") || eq(tok, n, "mxfp") || eq(tok, n, "blockscale_ue5m3"))
        sb_puts(&b, ": an ExecuTorch 1.1 token that ctosa does not support");
    sb_puts(&b, " (");
    put_expected(&b, vkey);
    sb_putc(&b, ')');
    char *s = sb_take(&b);
    ctosa_error *e = bad(text, "unknown token '%.*s'%s", (int)n, tok, s ? s : "");
    free(s);
    return e;
}

static ctosa_error *parse_version(const char *text, const char *v, size_t n, ctosa_version *out) {
    long part[3] = {0, 0, 0};
    int np = 0;
    size_t i = 0;
    while (i < n) {
        if (np == 3) break;
        if (!isdigit((unsigned char)v[i])) break;
        long x = 0;
        while (i < n && isdigit((unsigned char)v[i])) {
            x = x * 10 + (v[i] - '0');
            if (x > 1000) x = 1000;
            i++;
        }
        part[np++] = x;
        if (i < n && v[i] == '.') {
            i++;
            if (i == n) {
                np = 0; /* trailing dot */
                break;
            }
        } else {
            break;
        }
    }
    if (i != n || np < 2)
        return bad(text, "bad version '%.*s': expected <major>.<minor>[.<patch>], e.g. TOSA-1.0+INT", (int)n,
                   v);
    if (part[0] != 1 || part[1] > 1) {
        if (part[0] == 0)
            return bad(text,
                       "TOSA %ld.%ld is a pre-1.0 version; ctosa supports TOSA 1.0 and the "
                       "1.1 draft (e.g. TOSA-1.0+INT)",
                       part[0], part[1]);
        return bad(text, "unsupported TOSA version %ld.%ld: ctosa supports 1.0 and 1.1 (draft)", part[0],
                   part[1]);
    }
    if (part[2] > 255) return bad(text, "bad version '%.*s': patch must be at most 255", (int)n, v);
    out->major = 1;
    out->minor = (int32_t)part[1];
    out->patch = (int32_t)part[2];
    out->draft = part[1] == 1; /* 1.1 is a draft specification */
    return NULL;
}

ctosa_error *ctosa_spec_parse(const char *text, ctosa_spec *out) {
    if (!text || !*text)
        return ctosa_error_new(CTOSA_ERR_USAGE, "empty spec string: expected " GRAMMAR ", e.g. TOSA-1.0+INT");
    ctosa_spec s;
    memset(&s, 0, sizeof s);
    if (strncmp(text, "TOSA-", 5) != 0) {
        if (strncasecmp(text, "TOSA-", 5) == 0)
            return bad(text, "must start with upper-case \"TOSA-\": did you mean TOSA-%s?", text + 5);
        ctosa_spec t;
        ctosa_error *te = ctosa_spec_from_target(text, &t);
        if (!te) {
            char buf[128];
            ctosa_spec_format(&t, buf, sizeof buf);
            return bad(text,
                       "this is a target name, not a spec string: use --target %s, or the "
                       "spec string %s",
                       text, buf);
        }
        ctosa_error_free(te);
        return bad(text, "expected " GRAMMAR ", e.g. TOSA-1.0+INT or TOSA-1.0+INT+int16");
    }
    const char *v = text + 5;
    const char *plus = strchr(v, '+');
    size_t vlen = plus ? (size_t)(plus - v) : strlen(v);
    ctosa_error *err = parse_version(text, v, vlen, &s.version);
    if (err) return err;
    int vkey = s.version.minor == 1 ? 11 : 10;
    if (!plus)
        return bad(text, "no profile: expected +INT and/or +FP after the version, e.g. TOSA-%d.%d+INT",
                   s.version.major, s.version.minor);
    bool have_level = false;
    const char *p = plus + 1;
    for (;;) {
        const char *end = strchr(p, '+');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 0) return bad(text, "empty token (two '+' in a row, or a '+' at the end)");
        uint32_t pro = eq(p, n, "INT") ? CTOSA_PRO_INT : eq(p, n, "FP") ? CTOSA_PRO_FP : 0;
        int ext = -1;
        for (int e = 0; e < CTOSA_EXT_COUNT; e++)
            if (eq(p, n, ext_tokens[e])) ext = e;
        if (pro) {
            if (s.profiles & pro) return bad(text, "duplicate profile '%.*s'", (int)n, p);
            s.profiles |= pro;
        } else if (eq(p, n, "8k")) {
            if (have_level) return bad(text, "duplicate level token '8k'");
            have_level = true;
            s.level = CTOSA_LEVEL_8K;
        } else if (eq(p, n, "u55")) {
            if (s.u55) return bad(text, "duplicate token 'u55'");
            s.u55 = true;
        } else if (ext >= 0) {
            if (ext_version((ctosa_ext)ext) > vkey)
                return bad(text, "%s needs TOSA 1.1 (e.g. TOSA-1.1+%s+%s)", ext_tokens[ext],
                           ext_profile((ctosa_ext)ext) == NEED_INT ? "INT" : "FP", ext_tokens[ext]);
            if (s.extensions & (1ull << ext)) return bad(text, "duplicate extension '%s'", ext_tokens[ext]);
            s.extensions |= 1ull << ext;
        } else if (ieq(p, n, "INT") || ieq(p, n, "FP")) {
            return bad(text, "profiles are upper case: did you mean %s?", ieq(p, n, "INT") ? "INT" : "FP");
        } else if (ieq(p, n, "8k") || ieq(p, n, "u55")) {
            return bad(text,
                       "unknown token '%.*s': the level and u55 tokens are lower case: did "
                       "you mean %s?",
                       (int)n, p, ieq(p, n, "8k") ? "8k" : "u55");
        } else {
            int ci = -1;
            for (int e = 0; e < CTOSA_EXT_COUNT; e++)
                if (ieq(p, n, ext_tokens[e])) ci = e;
            if (ci >= 0)
                return bad(text,
                           "unknown token '%.*s': extension tokens are lower case: did you "
                           "mean %s?",
                           (int)n, p, ext_tokens[ci]);
            if (eq(p, n, "BI") || eq(p, n, "MI") || eq(p, n, "MT"))
                return bad(text,
                           "profile '%.*s' is from TOSA 0.x; TOSA 1.x profiles are INT "
                           "and FP",
                           (int)n, p);
            return unknown_token(text, p, n, vkey);
        }
        if (!end) break;
        p = end + 1;
    }
    if (!s.profiles)
        return bad(text, "no profile: add +INT and/or +FP after the version, e.g. TOSA-%d.%d+INT",
                   s.version.major, s.version.minor);
    for (int e = 0; e < CTOSA_EXT_COUNT; e++) {
        if (!(s.extensions & (1ull << e))) continue;
        int need = ext_profile((ctosa_ext)e);
        if (need == NEED_FP && !(s.profiles & CTOSA_PRO_FP))
            return bad(text, "extension %s (%s) belongs to the FP profile: add +FP", ext_tokens[e],
                       ext_names[e]);
        if (need == NEED_INT && !(s.profiles & CTOSA_PRO_INT))
            return bad(text, "extension %s (%s) belongs to the INT profile: add +INT", ext_tokens[e],
                       ext_names[e]);
    }
    if (s.u55 && !(s.profiles & CTOSA_PRO_INT))
        return bad(text, "u55 (the Ethos-U55 subset) needs the INT profile: add +INT");
    *out = s;
    return NULL;
}

size_t ctosa_spec_format(const ctosa_spec *spec, char *buf, size_t size) {
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "TOSA-%d.%d", (int)spec->version.major, (int)spec->version.minor);
    if (spec->version.patch) sb_printf(&b, ".%d", (int)spec->version.patch);
    if (spec->profiles & CTOSA_PRO_FP) sb_puts(&b, "+FP");
    if (spec->profiles & CTOSA_PRO_INT) sb_puts(&b, "+INT");
    for (int e = 0; e < CTOSA_EXT_COUNT; e++)
        if (spec->extensions & (1ull << e)) sb_printf(&b, "+%s", ext_tokens[e]);
    if (spec->level == CTOSA_LEVEL_8K) sb_puts(&b, "+8k");
    if (spec->u55) sb_puts(&b, "+u55");
    size_t n = b.len;
    if (size) {
        size_t c = n < size - 1 ? n : size - 1;
        if (b.s) memcpy(buf, b.s, c);
        buf[c] = 0;
    }
    sb_free(&b);
    return n;
}

/* ------------------------------------------------------------- targets */

static const struct {
    const char *name;
    const char *spec;
} targets[] = {
    {"ethos-u55-32", "TOSA-1.0+INT+int16+int4+u55"},
    {"ethos-u55-64", "TOSA-1.0+INT+int16+int4+u55"},
    {"ethos-u55-128", "TOSA-1.0+INT+int16+int4+u55"},
    {"ethos-u55-256", "TOSA-1.0+INT+int16+int4+u55"},
    /* ExecuTorch gives U65 the U55 subset as well. */
    {"ethos-u65-256", "TOSA-1.0+INT+int16+int4+u55"},
    {"ethos-u65-512", "TOSA-1.0+INT+int16+int4+u55"},
    {"ethos-u85-128", "TOSA-1.0+INT+int16+int4+cf"},
    {"ethos-u85-256", "TOSA-1.0+INT+int16+int4+cf"},
    {"ethos-u85-512", "TOSA-1.0+INT+int16+int4+cf"},
    {"ethos-u85-1024", "TOSA-1.0+INT+int16+int4+cf"},
    {"ethos-u85-2048", "TOSA-1.0+INT+int16+int4+cf"},
    {"vgf", "TOSA-1.0+FP+INT+int16+int4"},
};

ctosa_error *ctosa_spec_from_target(const char *target, ctosa_spec *out) {
    if (target && strncmp(target, "TOSA-", 5) == 0) return ctosa_spec_parse(target, out);
    if (target)
        for (size_t i = 0; i < CTOSA_ARRAY_LEN(targets); i++)
            if (strcmp(target, targets[i].name) == 0) return ctosa_spec_parse(targets[i].spec, out);
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "unknown target '%s'", target ? target : "");
    const char *names[CTOSA_ARRAY_LEN(targets)];
    for (size_t i = 0; i < CTOSA_ARRAY_LEN(targets); i++) names[i] = targets[i].name;
    const char *best = target ? closest(target, strlen(target), names, CTOSA_ARRAY_LEN(names)) : NULL;
    if (best) sb_printf(&b, ": did you mean %s?", best);
    sb_puts(&b, " (valid targets:");
    for (size_t i = 0; i < CTOSA_ARRAY_LEN(targets); i++) sb_printf(&b, " %s", targets[i].name);
    sb_puts(&b, ", or a spec string such as TOSA-1.0+INT)");
    char *s = sb_take(&b);
    ctosa_error *e = ctosa_error_new(CTOSA_ERR_USAGE, "%s", s ? s : "unknown target");
    free(s);
    return e;
}

/* The target table, for `ctosa spec --list-targets`. Returns NULL past the end. */
const char *spec_target_name(uint32_t i, const char **spec) {
    if (i >= CTOSA_ARRAY_LEN(targets)) return NULL;
    if (spec) *spec = targets[i].spec;
    return targets[i].name;
}
