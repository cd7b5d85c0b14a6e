#!/usr/bin/env python3
"""cli_html_dom.py - reads a DOM dumped by headless Chromium from a ctosa HTML
report (tests/cli_html.sh) and checks it against the report JSON.

    cli_html_dom.py DOM.html REPORT.json [--all-nodes] [--collapsed]
                    [--fallback-visible] [--selftest] [--max-ms MS] [--label NAME]

Checks: the page finished (#app data-state="ready"); data-nodes equals the
report's node count; every rendered node box names a node of the report and
carries the status the report gives it (partition:N / fallback:CODE); every
fallback node is on the page unless it is hidden in a collapsed chain or
folded box (--fallback-visible: every one, always); rendered + hidden + folded == nodes. --all-nodes: every node has
its own box. --collapsed: at least one collapsed chain is shown and the
summary line says so. --max-ms: the page's own layout+drawing time is under
MS (a generous bound: it only catches a layout gone quadratic). No page
may record a script error (data-error); --selftest: the page was opened
with #selftest and its user-interaction self test passed.
Prints one summary line with the page's timings. Standard library only."""
import argparse
import json
import sys
from html.parser import HTMLParser


class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.app = None
        self.nodes = []      # (name, status)
        self.chains = 0
        self.ios = 0
        self.stats = None
        self._in_stats = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") == "app":
            self.app = a
        if a.get("id") == "stats":
            self._in_stats = True
            self.stats = ""
        if tag == "g" and "data-node" in a:
            self.nodes.append((a["data-node"], a.get("data-status")))
        if tag == "g" and "data-chain" in a:
            self.chains += 1
        if tag == "g" and "data-io" in a:
            self.ios += 1

    def handle_endtag(self, tag):
        if tag == "span":
            self._in_stats = False

    def handle_data(self, data):
        if self._in_stats:
            self.stats += data


def fail(label, msg):
    print("FAIL [%s]: %s" % (label, msg))
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dom")
    ap.add_argument("report")
    ap.add_argument("--all-nodes", action="store_true")
    ap.add_argument("--collapsed", action="store_true")
    ap.add_argument("--fallback-visible", action="store_true")
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("--max-ms", type=float, default=0)
    ap.add_argument("--label", default="report")
    a = ap.parse_args()
    lab = a.label
    with open(a.report, encoding="utf-8") as f:
        rep = json.load(f)
    d = Dom()
    with open(a.dom, encoding="utf-8") as f:
        d.feed(f.read())
    if not d.app:
        fail(lab, "no #app element in the DOM")
    if d.app.get("data-state") != "ready":
        fail(lab, "page did not finish: data-state=%r" % d.app.get("data-state"))
    if "data-error" in d.app:
        fail(lab, "script error in the page: %s" % d.app["data-error"])
    if a.selftest and not d.app.get("data-selftest", "").startswith("ok"):
        fail(lab, "#selftest: %r" % d.app.get("data-selftest"))
    total = rep["nodes_total"]
    status = {}
    for p in rep["partitions"]:
        for n in p["nodes"]:
            status[n] = "partition:%d" % p["id"]
    for fb in rep["fallback"]:
        status[fb["node"]] = "fallback:" + fb["code"]
    if len(status) != total:
        fail(lab, "report itself: %d distinct nodes, nodes_total %d" % (len(status), total))
    if int(d.app.get("data-nodes", -1)) != total:
        fail(lab, "data-nodes=%s, report has %d nodes" % (d.app.get("data-nodes"), total))
    rendered = int(d.app.get("data-rendered", -1))
    if rendered != len(d.nodes):
        fail(lab, "data-rendered=%d but %d node boxes in the DOM" % (rendered, len(d.nodes)))
    seen = set()
    for name, st in d.nodes:
        if name not in status:
            fail(lab, "box for unknown node %r" % name)
        if st != status[name]:
            fail(lab, "node %r shown as %r, report says %r" % (name, st, status[name]))
        if name in seen:
            fail(lab, "node %r drawn twice" % name)
        seen.add(name)
    hidden = int(d.app.get("data-hidden", 0))
    folded = int(d.app.get("data-folded", 0))
    if rendered + hidden + folded != total:
        fail(lab, "rendered %d + in chains %d + folded %d != %d nodes" % (rendered, hidden, folded, total))
    if a.all_nodes and rendered != total:
        fail(lab, "%d of %d nodes have a box of their own" % (rendered, total))
    if a.fallback_visible or (not hidden and not folded):
        missing = [fb["node"] for fb in rep["fallback"] if fb["node"] not in seen]
        if missing:
            fail(lab, "fallback nodes not on the page: %s" % missing[:5])
    if a.collapsed:
        collapsed = int(d.app.get("data-collapsed", 0))
        if collapsed < 1 or d.chains != collapsed:
            fail(lab, "data-collapsed=%d, %d chain boxes in the DOM" % (collapsed, d.chains))
        if not d.stats or "collapsed chain" not in d.stats:
            fail(lab, "summary line does not mention the collapsed chains: %r" % d.stats)
    ms = float(d.app.get("data-layout-ms", 0)) + float(d.app.get("data-render-ms", 0))
    if a.max_ms and ms > a.max_ms:
        fail(lab, "layout + drawing took %.0f ms (bound %.0f ms)" % (ms, a.max_ms))
    fb_shown = sum(1 for _, st in d.nodes if st and st.startswith("fallback:"))
    if a.selftest:
        print("ok [%s]: interaction self test: %s" % (lab, d.app["data-selftest"]))
    print("ok [%s]: %d nodes, %d boxes (%d node boxes, %d chains holding %d, %d folded, %d fallback shown), "
          "layout %s ms, drawing %s ms, total %s ms in Chromium"
          % (lab, total, int(d.app.get("data-units", 0)), rendered, d.chains, hidden, folded, fb_shown,
             d.app.get("data-layout-ms"), d.app.get("data-render-ms"), d.app.get("data-total-ms")))


if __name__ == "__main__":
    main()
