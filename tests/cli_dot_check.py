#!/usr/bin/env python3
"""cli_dot_check.py - a structural check of `ctosa dump --format dot` output
for machines without Graphviz (tests/cli_report.sh runs `dot` as well when
it is installed).

    cli_dot_check.py FILE.dot [--ops N] [--clusters N] [--lhead K]
                     [--label TEXT]...

Parses the DOT subset ctosa writes (strict tokenizer: quoted strings with
escapes, identifiers, numbers, { } [ ] ; , = ->): one digraph; statements
are subgraphs, graph/node/edge defaults, attribute assignments, node and
edge statements. Checks that every edge endpoint is a declared node, that
node ids are unique, that quoted strings decode (the only escapes are \\"
\\\\ \\n), and the expected number of operator nodes, clusters and lhead
(control-flow) edges; each --label TEXT must be some node's or edge's label.
Standard library only."""
import argparse
import re
import sys

TOKEN = re.compile(r'\s+|"(?:[^"\\\n]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*|-?[0-9.]+|->|[{}\[\];,=]')


def tokens(text):
    pos = 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise SystemExit("FAIL: bad token at %r" % text[pos:pos + 30])
        t = m.group(0)
        pos = m.end()
        if not t.isspace():
            yield t


def unquote(t):
    if not t.startswith('"'):
        return t
    body = t[1:-1]
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            n = body[i + 1]
            if n not in '"\\n':
                raise SystemExit("FAIL: unexpected escape \\%s in %s" % (n, t))
            out.append({"n": "\n"}.get(n, n))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Parser:
    def __init__(self, toks):
        self.t = list(toks)
        self.i = 0
        self.nodes, self.edges, self.clusters = {}, [], []

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self, want=None):
        t = self.peek()
        if t is None or (want is not None and t != want):
            raise SystemExit("FAIL: expected %r, got %r (token %d)" % (want, t, self.i))
        self.i += 1
        return t

    def attrs(self):
        a = {}
        self.take("[")
        while self.peek() != "]":
            k = unquote(self.take())
            self.take("=")
            a[k] = unquote(self.take())
            if self.peek() == ",":
                self.take(",")
        self.take("]")
        return a

    def stmts(self):
        while self.peek() != "}":
            t = self.take()
            if t == "subgraph":
                name = unquote(self.take())
                if name.startswith("cluster"):
                    self.clusters.append(name)
                self.take("{")
                self.stmts()
                self.take("}")
                continue
            if t in ("graph", "node", "edge"):
                self.attrs()
            elif self.peek() == "=":
                self.take("=")
                self.take()
            elif self.peek() == "->":
                self.take("->")
                dst = unquote(self.take())
                a = self.attrs() if self.peek() == "[" else {}
                self.edges.append((unquote(t), dst, a))
            else:
                nid = unquote(t)
                if nid in self.nodes:
                    raise SystemExit("FAIL: node %r declared twice" % nid)
                self.nodes[nid] = self.attrs() if self.peek() == "[" else {}
            self.take(";")

    def graph(self):
        self.take("digraph")
        self.take()
        self.take("{")
        self.stmts()
        self.take("}")
        if self.peek() is not None:
            raise SystemExit("FAIL: text after the graph")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--ops", type=int)
    ap.add_argument("--clusters", type=int)
    ap.add_argument("--lhead", type=int)
    ap.add_argument("--label", action="append", default=[])
    a = ap.parse_args()
    p = Parser(tokens(open(a.file, encoding="utf-8").read()))
    p.graph()
    for s, d, _ in p.edges:
        for n in (s, d):
            if n not in p.nodes:
                raise SystemExit("FAIL: edge %s -> %s: %r is not declared" % (s, d, n))
    ops = sum(1 for n in p.nodes if re.match(r"r\d+_b\d+_op\d+$", n))
    lhead = sum(1 for _, _, e in p.edges if "lhead" in e)
    if a.ops is not None and ops != a.ops:
        raise SystemExit("FAIL: %d operator nodes, expected %d" % (ops, a.ops))
    if a.clusters is not None and len(p.clusters) != a.clusters:
        raise SystemExit("FAIL: %d clusters, expected %d" % (len(p.clusters), a.clusters))
    if a.lhead is not None and lhead != a.lhead:
        raise SystemExit("FAIL: %d control-flow edges, expected %d" % (lhead, a.lhead))
    labels = [n.get("label", "") for n in p.nodes.values()] + [e.get("label", "") for _, _, e in p.edges]
    for want in a.label:
        if not any(want in lab for lab in labels):
            raise SystemExit("FAIL: no label contains %r" % want)
    print("ok: %s: %d nodes (%d operators), %d edges (%d control flow), %d clusters"
          % (a.file, len(p.nodes), ops, len(p.edges), lhead, len(p.clusters)))


if __name__ == "__main__":
    main()
