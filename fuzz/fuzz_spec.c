/* fuzz_spec.c - the spec-string parser (ctosa_spec_parse) and target
 * names (ctosa_spec_from_target). Invariant: a parsed spec formats to a
 * canonical string that parses again to the same spec. */
#include <string.h>

#include "ctosa/spec.h"
#include "fuzz_common.h"

FUZZ_ENTRY(spec) {
    if (size > 4096) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    ctosa_spec s, s2;
    ctosa_error *e = ctosa_spec_parse(text, &s);
    if (!e) {
        char buf[512];
        size_t n = ctosa_spec_format(&s, buf, sizeof buf);
        if (n >= sizeof buf) fuzz_fail("canonical spec string too long", NULL);
        ctosa_error *e2 = ctosa_spec_parse(buf, &s2);
        if (e2) fuzz_fail("canonical spec string does not parse", e2);
        if (s.profiles != s2.profiles || s.extensions != s2.extensions || s.level != s2.level ||
            s.u55 != s2.u55 || s.version.major != s2.version.major || s.version.minor != s2.version.minor)
            fuzz_fail("canonical spec string parses to another spec", NULL);
    }
    fuzz_drop(e);
    fuzz_drop(ctosa_spec_from_target(text, &s));
    free(text);
    return 0;
}
