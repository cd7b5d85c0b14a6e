#!/bin/sh
# check_generated.sh - fails when a committed generated file is stale.
# Re-runs tools/gen_compliance.py into a temporary file and compares it with
# src/spec/compliance_gen.h, and tools/gen_html_assets.py (the HTML report's
# page, styles and script) with src/cli/report_html/report_html_gen.h.
# Skips (exit 0, with a message) when Debian's /usr/bin/python3 or, for the
# compliance table, the shared reference directory (../shared) is missing.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${CTOSA_SHARED_DIR:-$here/../shared}
py=/usr/bin/python3
if [ ! -x "$py" ]; then
    echo "check_generated: skipped: $py not found"
    exit 0
fi
html=$(mktemp "${TMPDIR:-/tmp}/report_html_gen.XXXXXX") || exit 2
if ! "$py" "$here/tools/gen_html_assets.py" -o "$html"; then
    rm -f "$html"
    echo "check_generated: tools/gen_html_assets.py failed"
    exit 1
fi
if ! diff -u "$here/src/cli/report_html/report_html_gen.h" "$html" >"$html.diff"; then
    head -40 "$html.diff"
    rm -f "$html" "$html.diff"
    echo "check_generated: src/cli/report_html/report_html_gen.h is stale: run tools/gen_html_assets.py"
    exit 1
fi
rm -f "$html" "$html.diff"
echo "check_generated: src/cli/report_html/report_html_gen.h is up to date"
if [ ! -f "$shared/reference/tosa/spec/tosa-1.0.0.xml" ]; then
    echo "check_generated: skipped: $shared/reference/tosa not found"
    exit 0
fi
tmp=$(mktemp "${TMPDIR:-/tmp}/compliance_gen.XXXXXX") || exit 2
trap 'rm -f "$tmp"' EXIT
if ! "$py" "$here/tools/gen_compliance.py" --shared "$shared" -o "$tmp"; then
    echo "check_generated: tools/gen_compliance.py failed"
    exit 1
fi
if ! diff -u "$here/src/spec/compliance_gen.h" "$tmp" >"$tmp.diff"; then
    head -40 "$tmp.diff"
    rm -f "$tmp.diff"
    echo "check_generated: src/spec/compliance_gen.h is stale: run tools/gen_compliance.py"
    exit 1
fi
rm -f "$tmp.diff"
echo "check_generated: src/spec/compliance_gen.h is up to date"
