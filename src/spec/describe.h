/* describe.h - the text and JSON description of what a spec allows
 * (version, profiles, extensions, level limits, every allowed operator and
 * type signature): the body of ctosa_spec_describe() without the ONNX part
 * (src/pipeline/spec_describe.c), which needs the lowering registry. */
#ifndef CTOSA_SPEC_DESCRIBE_H
#define CTOSA_SPEC_DESCRIBE_H

#include "ctosa/spec.h"
#include "util/util.h"

/* Appends the description of s (canon = its canonical string) to b, as
 * text or as JSON; both end with a newline. */
void spec_describe_tosa(strbuf *b, const ctosa_spec *s, const char *canon, bool json);

#endif
