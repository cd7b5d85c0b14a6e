/* report.js - the ctosa HTML partition report (embedded in report.html by
 * tools/gen_html_assets.py; `ctosa report` / `ctosa lower --html`).
 *
 * Reads the report JSON from <script id="report-data">, builds the model
 * graph from its "graph" section, lays it out with a small layered
 * (Sugiyama-style) layout written here, and renders it as SVG:
 *   1. units: every node, or one box per collapsed chain (a linear run of
 *      >= MIN_CHAIN nodes with the same partition / fallback code), plus
 *      the graph inputs and outputs;
 *   2. layering: longest path from the sources, then every source moved
 *      down next to its first consumer (ONNX Constant nodes and graph
 *      inputs would otherwise sit at layer 0 with edges across the page);
 *   3. edges spanning several layers get dummy vertices (up to a budget;
 *      beyond it they are drawn directly, dashed);
 *   4. crossing reduction: barycenter sweeps down and up, keeping the order
 *      with the fewest crossings (counted with a Fenwick tree);
 *   5. coordinates: per layer, the positions closest (least squares) to the
 *      mean of the neighbours' positions that keep the boxes apart, solved
 *      exactly by pool-adjacent-violators; alternating down and up passes.
 * Everything is drawn with one innerHTML string per layer group, which is
 * what keeps 5,000 nodes fast. Nodes carry data-node / data-status
 * attributes and #app carries data-rendered etc. (the browser test reads
 * them). No network access of any kind. */
(function () {
  'use strict';

  var MIN_CHAIN = 3;           // shortest run that collapses
  var COLLAPSE_ABOVE = 200;    // collapse chains by default above this many nodes
  var NODE_H = 34, CHAIN_H = 40, IO_H = 22, LAYER_GAP = 34, NODE_GAP = 18, DUMMY_GAP = 8;
  var SWEEPS = 6, XPASSES = 8;
  var FALLBACK_COLORS = ['#f4a3a3', '#f7c873', '#e3a6d9', '#cfcfcf', '#f2956b', '#d9bf8c', '#ffb3b3', '#c3aee8',
                         '#f5d76e', '#e8a0a0'];

  var app = document.getElementById('app');
  var svg = document.getElementById('graph');
  var vp = document.getElementById('vp');
  var gEdges = document.getElementById('edges');
  var gNodes = document.getElementById('nodes');
  var details = document.getElementById('details');

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;';
    });
  }
  function fmtShape(sh) {
    if (!sh) return '?';
    return '[' + sh.map(function (d) { return d < 0 ? '?' : d; }).join('\u00d7') + ']';
  }
  function plural(n, w) { return n + ' ' + w + (n === 1 ? '' : 's'); }
  function now() { return (window.performance && performance.now) ? performance.now() : Date.now(); }

  /* Any uncaught error is recorded on #app (the browser test checks it). */
  window.addEventListener('error', function (ev) {
    app.setAttribute('data-error', String(ev.message || ev.error || 'error'));
  });

  var t0 = now();
  var R;
  try {
    R = JSON.parse(document.getElementById('report-data').textContent);
  } catch (e) {
    details.innerHTML = '<p class="code">The embedded report is not valid JSON: ' + esc(e.message) + '</p>';
    app.setAttribute('data-state', 'error');
    return;
  }

  /* ------------------------------------------------------------ model */
  var nodes = [];          // {id, name, op, domain, inputs, outputs, attrs, part, code, reason, input, key}
  var byName = new Map();
  var tensors = new Map(); // name -> {dtype, shape, initializer, constant, scale, zero_point}
  var fbByName = new Map();
  var partitions = Array.isArray(R.partitions) ? R.partitions : [];
  var fallback = Array.isArray(R.fallback) ? R.fallback : [];
  fallback.forEach(function (f) { fbByName.set(f.node, f); });
  var G = R.graph && Array.isArray(R.graph.nodes) ? R.graph : null;

  function addNode(o) {
    o.id = nodes.length;
    var f = fbByName.get(o.name);
    if (o.part < 0 && f) { o.code = f.code; o.reason = f.reason; o.input = f.input; }
    if (o.part < 0 && !o.code) o.code = 'unknown';
    o.key = o.part >= 0 ? 'partition:' + o.part : 'fallback:' + o.code;
    nodes.push(o);
    if (!byName.has(o.name)) byName.set(o.name, o);
  }
  if (G) {
    G.nodes.forEach(function (n) {
      addNode({ name: String(n.name), op: n.op_type || '?', domain: n.domain || '',
                inputs: n.inputs || [], outputs: n.outputs || [], attrs: n.attributes || null,
                omitted: n.attributes_omitted || 0,
                part: typeof n.partition === 'number' ? n.partition : -1, code: n.fallback || null });
    });
    (G.tensors || []).forEach(function (t) { tensors.set(t.name, t); });
  } else {
    /* An older report: no edges, no attributes; nodes from the lists. */
    partitions.forEach(function (p) {
      (p.nodes || []).forEach(function (nm) {
        addNode({ name: String(nm), op: '', domain: '', inputs: [], outputs: [], attrs: null, part: p.id, code: null });
      });
    });
    fallback.forEach(function (f) {
      addNode({ name: String(f.node), op: f.op_type || '', domain: f.domain || '', inputs: [], outputs: [],
                attrs: null, part: -1, code: f.code });
    });
  }
  var partById = new Map();
  partitions.forEach(function (p) { partById.set(p.id, p); });

  /* Status keys: partitions in id order, then fallback codes by name. */
  var keyCount = new Map();
  nodes.forEach(function (n) { keyCount.set(n.key, (keyCount.get(n.key) || 0) + 1); });
  var partKeys = [], fbKeys = [];
  keyCount.forEach(function (c, k) { (k.indexOf('partition:') === 0 ? partKeys : fbKeys).push(k); });
  partKeys.sort(function (a, b) { return +a.slice(10) - +b.slice(10); });
  fbKeys.sort();
  var color = new Map();
  partKeys.forEach(function (k, i) {
    /* Golden-angle steps through green..blue..violet (reds and oranges
     * are the fallback colours), lightness alternating. */
    var h = 80 + (150 + i * 137.508) % 240;
    color.set(k, 'hsl(' + h.toFixed(0) + ',' + (i % 3 === 2 ? 45 : 60) + '%,' + (i % 2 ? 70 : 80) + '%)');
  });
  fbKeys.forEach(function (k, i) { color.set(k, FALLBACK_COLORS[i % FALLBACK_COLORS.length]); });

  /* Edges between nodes, through tensor names. */
  var producer = new Map();
  nodes.forEach(function (n) { n.outputs.forEach(function (t) { if (t) producer.set(t, n.id); }); });
  var consumers = new Map();
  var succ = nodes.map(function () { return []; });
  var pred = nodes.map(function () { return []; });
  var nodeEdges = [];  // {u, v, t}
  nodes.forEach(function (n) {
    n.inputs.forEach(function (t) {
      if (!t) return;
      if (!consumers.has(t)) consumers.set(t, []);
      consumers.get(t).push(n.id);
      var p = producer.get(t);
      if (p === undefined || p === n.id) return;
      nodeEdges.push({ u: p, v: n.id, t: t });
      if (succ[p].indexOf(n.id) < 0) succ[p].push(n.id);
      if (pred[n.id].indexOf(p) < 0) pred[n.id].push(p);
    });
  });
  var graphInputs = G ? (G.inputs || []).filter(function (t) {
    var ti = tensors.get(t);
    return !(ti && ti.initializer) && consumers.has(t);
  }) : [];
  var graphOutputs = G ? (G.outputs || []) : [];

  /* Node order: topological (Kahn, ties by index; a cycle is released at
   * its first node), so one pass sees every predecessor first. */
  var topo = (function () {
    var indeg = new Int32Array(nodes.length), q = [], order = [], done = new Uint8Array(nodes.length), i, qi = 0, start = 0;
    nodes.forEach(function (n) { indeg[n.id] = pred[n.id].length; });
    for (i = 0; i < nodes.length; i++) if (!indeg[i]) q.push(i);
    while (order.length < nodes.length) {
      if (qi === q.length) { while (done[start]) start++; q.push(start); }
      var v = q[qi++];
      if (done[v]) continue;
      done[v] = 1; order.push(v);
      succ[v].forEach(function (w) { if (--indeg[w] === 0 && !done[w]) q.push(w); });
    }
    return order;
  })();
  /* Floating nodes: no graph input upstream (Constant nodes, weight
   * DequantizeLinear, shape arithmetic). They are laid out as late as
   * possible, and when collapsing, a floating node whose only consumer has
   * the same status is folded into that consumer's box. */
  var inputSet = new Set(graphInputs);
  var floating = new Uint8Array(nodes.length), host = new Int32Array(nodes.length);
  topo.forEach(function (v) {
    var n = nodes[v], reach = n.inputs.some(function (t) { return inputSet.has(t); }) ||
        pred[v].some(function (p) { return !floating[p]; });
    floating[v] = reach || !G ? 0 : 1;
  });
  for (var ti = topo.length - 1; ti >= 0; ti--) {
    var fv = topo[ti];
    host[fv] = fv;
    if (floating[fv] && succ[fv].length === 1 && nodes[succ[fv][0]].key === nodes[fv].key &&
        graphOutputs.indexOf(nodes[fv].outputs[0]) < 0) host[fv] = host[succ[fv][0]];
  }
  var folded = nodes.map(function () { return null; });   // host -> folded node ids
  nodes.forEach(function (n) { if (host[n.id] !== n.id) (folded[host[n.id]] || (folded[host[n.id]] = [])).push(n.id); });

  /* Chains: u -> v linked when u's only successor is v, v's only
   * predecessor (folded nodes aside) is u, and both have the same status. */
  var next = new Int32Array(nodes.length).fill(-1), hasPrev = new Uint8Array(nodes.length);
  nodes.forEach(function (n) {
    if (host[n.id] !== n.id || succ[n.id].length !== 1) return;
    var v = succ[n.id][0];
    var pv = pred[v].filter(function (p) { return host[p] === p; });
    if (pv.length === 1 && nodes[v].key === n.key) { next[n.id] = v; hasPrev[v] = 1; }
  });
  var chains = [];                        // {id, members: [node ids], key, collapsed}
  var chainOf = new Int32Array(nodes.length).fill(-1);
  nodes.forEach(function (n) {
    if (hasPrev[n.id] || next[n.id] < 0 || host[n.id] !== n.id) return;
    var m = [];
    for (var v = n.id; v >= 0; v = next[v]) m.push(v);
    if (m.length < MIN_CHAIN) return;
    var c = { id: chains.length, members: m, key: n.key, collapsed: true };
    m.forEach(function (v) { chainOf[v] = c.id; });
    chains.push(c);
  });
  var collapseBox = document.getElementById('collapse');
  var noCollapse = /(^#|&)nocollapse(&|$)/.test(location.hash);
  collapseBox.checked = !noCollapse && nodes.length > COLLAPSE_ABOVE;
  chains.forEach(function (c) { c.collapsed = collapseBox.checked; });

  /* --------------------------------------------------------- layout */
  var L = null;     // current layout: {units, edges, width, height, ...}

  function textW(s, px) { return Math.min(260, s.length * px); }

  function buildUnits() {
    var units = [];     // {kind: 'node'|'chain'|'in'|'out', ref, w, h, label, sub}
    var unitOfNode = new Int32Array(nodes.length);
    var chainUnit = new Map(), fold = collapseBox.checked;
    nodes.forEach(function (n) {
      if (fold && host[n.id] !== n.id) return;   // placed with its host below
      var c = chainOf[n.id];
      if (c >= 0 && chains[c].collapsed) {
        if (!chainUnit.has(c)) {
          var ch = chains[c], ops = [];
          for (var i = 0; i < ch.members.length && ops.length < 4; i++) ops.push(nodes[ch.members[i]].op);
          var u = { kind: 'chain', ref: c, h: CHAIN_H, label: ch.members.length + ' nodes', floating: floating[ch.members[0]],
                    sub: ops.slice(0, 3).join(' \u2192 ') + (ch.members.length > 3 ? ' \u2192 \u2026' : '') };
          u.w = Math.max(90, textW(u.sub, 5.6) + 20);
          chainUnit.set(c, units.length);
          units.push(u);
        }
        unitOfNode[n.id] = chainUnit.get(c);
        return;
      }
      var lab = n.op || n.name, nf = fold && folded[n.id] ? folded[n.id].length : 0;
      if (nf) lab += ' (+' + nf + ')';
      var u2 = { kind: 'node', ref: n.id, h: NODE_H, label: lab, sub: n.op ? n.name : '', floating: floating[n.id] };
      u2.w = Math.max(60, Math.max(textW(lab, 8), textW(u2.sub, 5.6)) + 16);
      unitOfNode[n.id] = units.length;
      units.push(u2);
    });
    if (fold) nodes.forEach(function (n) { if (host[n.id] !== n.id) unitOfNode[n.id] = unitOfNode[host[n.id]]; });
    var edges = [], seen = new Map();
    function addEdge(a, b, t, cross) {
      if (a === b) return;
      var k = a * 1048576 + b;   // units < 2^20
      var e = seen.get(k);
      if (e) { if (e.t.length < 8) e.t.push(t); e.cross = e.cross || cross; return; }
      e = { a: a, b: b, t: [t], cross: cross };
      seen.set(k, e);
      edges.push(e);
    }
    nodeEdges.forEach(function (e) {
      addEdge(unitOfNode[e.u], unitOfNode[e.v], e.t, nodes[e.u].key !== nodes[e.v].key);
    });
    graphInputs.forEach(function (t) {
      var u = units.length;
      units.push({ kind: 'in', ref: t, h: IO_H, label: t, sub: '', w: Math.max(50, textW(t, 8) + 16) });
      consumers.get(t).forEach(function (c) { addEdge(u, unitOfNode[c], t, false); });
    });
    graphOutputs.forEach(function (t) {
      var p = producer.get(t);
      if (p === undefined) return;
      var u = units.length;
      units.push({ kind: 'out', ref: t, h: IO_H, label: t, sub: '', w: Math.max(50, textW(t, 8) + 16), floating: floating[p] });
      addEdge(unitOfNode[p], u, t, false);
    });
    return { units: units, edges: edges, unitOfNode: unitOfNode };
  }

  /* Layer assignment: topological order (Kahn; edges that close a cycle
   * are ignored for layering), longest path, sources pulled down. */
  function assignLayers(units, edges, noEdges) {
    var n = units.length;
    var layer = new Int32Array(n);
    if (noEdges) { for (var i = 0; i < n; i++) layer[i] = Math.floor(i / 16); return layer; }
    var out = [], indeg = new Int32Array(n);
    for (i = 0; i < n; i++) out.push([]);
    edges.forEach(function (e) { out[e.a].push(e.b); indeg[e.b]++; });
    var order = [], q = [], done = new Uint8Array(n);
    for (i = 0; i < n; i++) if (!indeg[i]) q.push(i);
    var qi = 0, nextStart = 0;
    while (order.length < n) {
      if (qi === q.length) {   // a cycle: release the first unfinished vertex
        while (done[nextStart]) nextStart++;
        q.push(nextStart); indeg[nextStart] = 0;
      }
      var v = q[qi++];
      if (done[v]) continue;
      done[v] = 1; order.push(v);
      for (var k = 0; k < out[v].length; k++) { var w = out[v][k]; if (--indeg[w] === 0 && !done[w]) q.push(w); }
    }
    var pos = new Int32Array(n);
    order.forEach(function (v, idx) { pos[v] = idx; });
    order.forEach(function (v) {
      for (var k = 0; k < out[v].length; k++) {
        var w = out[v][k];
        if (pos[w] > pos[v] && layer[w] < layer[v] + 1) layer[w] = layer[v] + 1;
      }
    });
    /* Floating vertices (nothing from a graph input upstream) as late as
     * possible: just above their first consumer. */
    for (i = n - 1; i >= 0; i--) {
      v = order[i];
      if (!units[v].floating || !out[v].length) continue;
      var m = Infinity;
      for (k = 0; k < out[v].length; k++) if (pos[out[v][k]] > pos[v]) m = Math.min(m, layer[out[v][k]]);
      if (m !== Infinity && m - 1 > layer[v]) layer[v] = m - 1;
    }
    return layer;
  }

  /* Crossings between two adjacent layers (Fenwick tree over positions). */
  function crossings(upper, lowerLen, down, pos) {
    var pairs = [];
    for (var i = 0; i < upper.length; i++) {
      var d = down[upper[i]];
      for (var k = 0; k < d.length; k++) pairs.push(i * 1048576 + pos[d[k]]);
    }
    if (pairs.length < 2) return 0;
    pairs.sort(function (a, b) { return a - b; });
    var tree = new Int32Array(lowerLen + 1), c = 0;
    for (var j = pairs.length - 1; j >= 0; j--) {   // count pairs with a later upper and smaller lower
      var p = pairs[j] % 1048576;
      for (var x = p; x > 0; x -= x & -x) c += tree[x];
      for (x = p + 1; x <= lowerLen; x += x & -x) tree[x]++;
    }
    return c;
  }

  function layout() {
    var ta = now();
    var B = buildUnits();
    var units = B.units, n = units.length;
    var layer = assignLayers(units, B.edges, !G);
    /* Vertices: units then dummies. up/down: neighbours in adjacent layers. */
    var V = units.map(function (u, i) {   // chain boxes: room for the stacked look
      return { w: u.w + (u.kind === 'chain' ? 12 : 0), h: u.h, layer: layer[i], dummy: false };
    });
    var up = [], down = [];
    for (var i = 0; i < n; i++) { up.push([]); down.push([]); }
    var dummyBudget = Math.max(20000, 4 * n);
    B.edges.forEach(function (e) {
      var la = layer[e.a], lb = layer[e.b];
      e.path = null;
      if (lb <= la) { e.back = true; return; }       // from a cycle: drawn directly
      var span = lb - la;
      if (span > 1 && span - 1 > dummyBudget) { e.long = true; return; }
      var prev = e.a;
      e.path = [];
      for (var l = la + 1; l < lb; l++) {
        var d = V.length;
        V.push({ w: 0, h: 0, layer: l, dummy: true });
        up.push([prev]); down.push([]);
        down[prev].push(d);
        e.path.push(d);
        prev = d;
        dummyBudget--;
      }
      down[prev].push(e.b); up[e.b].push(prev);
    });
    var nv = V.length, nl = 0;
    for (i = 0; i < nv; i++) nl = Math.max(nl, V[i].layer + 1);
    var layers = [];
    for (i = 0; i < nl; i++) layers.push([]);
    for (i = 0; i < nv; i++) layers[V[i].layer].push(i);
    var pos = new Int32Array(nv);
    function setPos() { layers.forEach(function (ly) { for (var k = 0; k < ly.length; k++) pos[ly[k]] = k; }); }
    /* Initial order: depth-first from the sources, so related vertices start close. */
    var seenV = new Uint8Array(nv), stampV = new Float64Array(nv), stamp = 0;
    function dfs(s) {
      var st = [s];
      while (st.length) {
        var v = st.pop();
        if (seenV[v]) continue;
        seenV[v] = 1; stampV[v] = stamp++;
        for (var k = down[v].length - 1; k >= 0; k--) if (!seenV[down[v][k]]) st.push(down[v][k]);
      }
    }
    for (i = 0; i < nv; i++) if (!up[i].length) dfs(i);
    for (i = 0; i < nv; i++) if (!seenV[i]) dfs(i);
    layers.forEach(function (ly) { ly.sort(function (a, b) { return stampV[a] - stampV[b]; }); });
    setPos();
    function totalCrossings() {
      var c = 0;
      for (var l = 0; l + 1 < nl; l++) c += crossings(layers[l], layers[l + 1].length, down, pos);
      return c;
    }
    var best = layers.map(function (ly) { return ly.slice(); }), bestC = totalCrossings();
    var bary = new Float64Array(nv);
    function sweep(l, nb) {
      var ly = layers[l];
      for (var k = 0; k < ly.length; k++) {
        var v = ly[k], a = nb[v];
        if (!a.length) { bary[v] = k; continue; }
        var s = 0;
        for (var j = 0; j < a.length; j++) s += pos[a[j]];
        bary[v] = s / a.length;
      }
      ly.sort(function (a2, b2) { return bary[a2] - bary[b2] || pos[a2] - pos[b2]; });
      for (k = 0; k < ly.length; k++) pos[ly[k]] = k;
    }
    for (var it = 0; it < SWEEPS && bestC > 0; it++) {
      if (it % 2 === 0) for (var l2 = 1; l2 < nl; l2++) sweep(l2, up);
      else for (l2 = nl - 2; l2 >= 0; l2--) sweep(l2, down);
      var c2 = totalCrossings();
      if (c2 < bestC) { bestC = c2; best = layers.map(function (ly) { return ly.slice(); }); }
    }
    layers = best;
    setPos();
    /* x: least-squares closest to the neighbours' mean, boxes kept apart. */
    var x = new Float64Array(nv);
    layers.forEach(function (ly) {
      var cx = 0;
      for (var k = 0; k < ly.length; k++) {
        var w = V[ly[k]].w;
        if (k) cx += (V[ly[k - 1]].w + w) / 2 + (V[ly[k - 1]].dummy || V[ly[k]].dummy ? DUMMY_GAP : NODE_GAP);
        x[ly[k]] = cx;
      }
    });
    function place(ly, nbA, nbB) {
      var m = ly.length;
      if (!m) return;
      var off = new Float64Array(m), target = new Float64Array(m), wt = new Float64Array(m);
      for (var k = 0; k < m; k++) {
        var v = ly[k];
        if (k) off[k] = off[k - 1] + (V[ly[k - 1]].w + V[v].w) / 2 + (V[ly[k - 1]].dummy || V[v].dummy ? DUMMY_GAP : NODE_GAP);
        var s = 0, c = 0, j;
        for (j = 0; j < nbA[v].length; j++) { s += x[nbA[v][j]]; c++; }
        if (nbB) for (j = 0; j < nbB[v].length; j++) { s += x[nbB[v][j]]; c++; }
        target[k] = (c ? s / c : x[v]) - off[k];
        wt[k] = c ? 1 : 0.05;
      }
      /* Pool adjacent violators: nondecreasing y closest to target. */
      var bs = [], bw = [], bn = [];
      for (k = 0; k < m; k++) {
        var sw = wt[k] * target[k], ww = wt[k], nn = 1;
        while (bs.length && bs[bs.length - 1] / bw[bw.length - 1] > sw / ww) {
          sw += bs.pop(); ww += bw.pop(); nn += bn.pop();
        }
        bs.push(sw); bw.push(ww); bn.push(nn);
      }
      var idx = 0;
      for (var b = 0; b < bs.length; b++) {
        var mean = bs[b] / bw[b];
        for (var q = 0; q < bn[b]; q++, idx++) x[ly[idx]] = mean + off[idx];
      }
    }
    for (it = 0; it < XPASSES; it++) {
      if (it % 2 === 0) for (l2 = 1; l2 < nl; l2++) place(layers[l2], up, it === XPASSES - 2 ? down : null);
      else for (l2 = nl - 2; l2 >= 0; l2--) place(layers[l2], down, it === XPASSES - 1 ? up : null);
    }
    /* y per layer; normalise x. */
    var y = new Float64Array(nv), ly0 = 20, minX = Infinity, maxX = -Infinity;
    layers.forEach(function (ly) {
      var h = 0;
      for (var k = 0; k < ly.length; k++) h = Math.max(h, V[ly[k]].h);
      for (k = 0; k < ly.length; k++) y[ly[k]] = ly0 + h / 2;
      ly0 += h + LAYER_GAP;
    });
    for (i = 0; i < nv; i++) { minX = Math.min(minX, x[i] - V[i].w / 2); maxX = Math.max(maxX, x[i] + V[i].w / 2); }
    if (!isFinite(minX)) { minX = 0; maxX = 0; }
    for (i = 0; i < nv; i++) x[i] += 20 - minX;
    var tb = now();
    return { units: units, edges: B.edges, unitOfNode: B.unitOfNode, x: x, y: y, V: V,
             width: maxX - minX + 40, height: ly0, layers: nl, crossings: bestC, dummies: nv - n, ms: tb - ta };
  }

  /* --------------------------------------------------------- render */
  function edgePath(L2, e) {
    var U = L2.units, x = L2.x, y = L2.y;
    var pts = [[x[e.a], y[e.a] + U[e.a].h / 2]];
    (e.path || []).forEach(function (d) { pts.push([x[d], y[d]]); });
    pts.push([x[e.b], y[e.b] - U[e.b].h / 2]);
    var s = 'M' + pts[0][0].toFixed(1) + ',' + pts[0][1].toFixed(1);
    for (var i = 1; i < pts.length; i++) {
      var p = pts[i - 1], q = pts[i], my = (q[1] - p[1]) / 2;
      s += 'C' + p[0].toFixed(1) + ',' + (p[1] + my).toFixed(1) + ' ' + q[0].toFixed(1) + ',' +
           (q[1] - my).toFixed(1) + ' ' + q[0].toFixed(1) + ',' + q[1].toFixed(1);
    }
    return s;
  }

  function unitStatus(u) {
    if (u.kind === 'node') return nodes[u.ref].key;
    if (u.kind === 'chain') return chains[u.ref].key;
    return 'io';
  }

  var stats = { rendered: 0 };
  function render() {
    var ta = now();
    var eh = [], nh = [];
    L.edges.forEach(function (e, i) {
      var cls = e.cross ? 'x' : '';
      if (!e.path) cls += (cls ? ' ' : '') + 'long';
      eh.push('<path data-e="' + i + '"' + (cls ? ' class="' + cls + '"' : '') + ' d="' + edgePath(L, e) +
              '" marker-end="url(#arrow)"><title>' + esc(e.t.join(', ')) + '</title></path>');
    });
    var rendered = 0;
    L.units.forEach(function (u, i) {
      var x = L.x[i] - u.w / 2, y = L.y[i] - u.h / 2, st = unitStatus(u);
      var fill = color.get(st) || '#fff';
      var attrs, body = '';
      if (u.kind === 'node') {
        var nd = nodes[u.ref];
        rendered++;
        attrs = 'class="n" data-node="' + esc(nd.name) + '" data-op="' + esc(nd.op) + '"';
        body = '<title>' + esc(nd.name) + '</title>';
      } else if (u.kind === 'chain') {
        var ch = chains[u.ref];
        attrs = 'class="n chain" data-chain="' + u.ref + '" data-count="' + ch.members.length + '" data-first="' +
                esc(nodes[ch.members[0]].name) + '"';
        body = '<title>' + esc(ch.members.length + ' nodes: ' + nodes[ch.members[0]].name + ' \u2026 ' +
                               nodes[ch.members[ch.members.length - 1]].name + ' (click to expand)') + '</title>' +
               '<rect class="shadow" x="6" y="-6" width="' + u.w.toFixed(1) + '" height="' + u.h + '" rx="4"></rect>' +
               '<rect class="shadow" x="3" y="-3" width="' + u.w.toFixed(1) + '" height="' + u.h + '" rx="4"></rect>';
      } else {
        attrs = 'class="n io" data-io="' + u.kind + '" data-tensor="' + esc(u.ref) + '"';
        fill = '#fff';
      }
      body += '<rect class="b" width="' + u.w.toFixed(1) + '" height="' + u.h + '" rx="' + (u.kind === 'in' || u.kind === 'out' ? 11 : 4) +
              '" fill="' + fill + '"></rect>';
      var lab = u.label.length > 31 ? u.label.slice(0, 30) + '\u2026' : u.label;
      if (u.sub) {
        var sub = u.sub.length > 44 ? '\u2026' + u.sub.slice(u.sub.length - 42) : u.sub;
        body += '<text class="op" x="8" y="14">' + esc(lab) + '</text><text class="sub" x="8" y="' + (u.h - 7) + '">' + esc(sub) + '</text>';
      } else {
        body += '<text class="op" x="8" y="' + (u.h / 2 + 4) + '">' + esc(lab) + '</text>';
      }
      nh.push('<g ' + attrs + ' data-u="' + i + '" data-status="' + esc(st) + '" transform="translate(' +
              x.toFixed(1) + ',' + y.toFixed(1) + ')">' + body + '</g>');
    });
    gEdges.innerHTML = eh.join('');
    gNodes.innerHTML = nh.join('');
    unitEls = gNodes.children;
    var collapsedChains = 0, hidden = 0, nFolded = 0;
    chains.forEach(function (c) { if (c.collapsed) { collapsedChains++; hidden += c.members.length; } });
    if (collapseBox.checked) nodes.forEach(function (n) { if (host[n.id] !== n.id) nFolded++; });
    var tb = now();
    stats = { rendered: rendered, units: L.units.length, collapsed: collapsedChains, hidden: hidden,
              layoutMs: L.ms, renderMs: tb - ta };
    app.setAttribute('data-nodes', nodes.length);
    app.setAttribute('data-units', L.units.length);
    app.setAttribute('data-collapsed', collapsedChains);
    app.setAttribute('data-hidden', hidden);
    app.setAttribute('data-folded', nFolded);
    app.setAttribute('data-edges', L.edges.length);
    app.setAttribute('data-crossings', L.crossings);
    app.setAttribute('data-layout-ms', L.ms.toFixed(1));
    app.setAttribute('data-render-ms', (tb - ta).toFixed(1));
    app.setAttribute('data-rendered', rendered);
    document.getElementById('stats').textContent =
      plural(nodes.length, 'node') + ' \u00b7 ' + plural(L.units.length, 'box') .replace('boxs', 'boxes') +
      (collapsedChains ? ' \u00b7 ' + plural(collapsedChains, 'collapsed chain') + ' holding ' + plural(hidden, 'node') : '') +
      (nFolded ? ' \u00b7 ' + plural(nFolded, 'constant node') + ' folded into consumers' : '') +
      ' \u00b7 ' + L.layers + ' layers \u00b7 ' + plural(L.crossings, 'crossing') +
      ' \u00b7 layout ' + L.ms.toFixed(0) + ' ms, drawing ' + (tb - ta).toFixed(0) + ' ms';
    applyHighlights();
  }
  var unitEls = [];

  /* ----------------------------------------------------- pan & zoom */
  var view = { k: 1, tx: 0, ty: 0 };
  function applyView() {
    vp.setAttribute('transform', 'translate(' + view.tx.toFixed(2) + ',' + view.ty.toFixed(2) + ') scale(' + view.k.toFixed(5) + ')');
    svg.classList.toggle('far', view.k < 0.35);
  }
  function fit() {
    var r = svg.getBoundingClientRect(), W = r.width || 800, H = r.height || 600;
    var k = Math.min(W / L.width, H / L.height, 1.5);
    /* A graph far taller than the view: readable width, from the top. */
    if (k < 0.3) k = Math.min(1, Math.max(k, W / L.width));
    k = Math.max(k, 0.02);
    view.k = k;
    view.tx = (W - L.width * k) / 2;
    view.ty = Math.max(0, (H - L.height * k) / 2);
    applyView();
  }
  function centreOnUnit(i, minK) {
    var r = svg.getBoundingClientRect(), W = r.width || 800, H = r.height || 600;
    view.k = Math.max(view.k, minK || 0.9);
    view.tx = W / 2 - L.x[i] * view.k;
    view.ty = H / 2 - L.y[i] * view.k;
    applyView();
  }
  svg.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var r = svg.getBoundingClientRect(), mx = ev.clientX - r.left, my = ev.clientY - r.top;
    var f = Math.exp(-ev.deltaY * (ev.deltaMode === 1 ? 0.05 : 0.0015));
    var k = Math.min(4, Math.max(0.01, view.k * f));
    view.tx = mx - (mx - view.tx) * (k / view.k);
    view.ty = my - (my - view.ty) * (k / view.k);
    view.k = k;
    applyView();
  }, { passive: false });
  var drag = null;
  svg.addEventListener('pointerdown', function (ev) {
    if (ev.button !== 0) return;
    drag = { x: ev.clientX, y: ev.clientY, tx: view.tx, ty: view.ty, moved: false };
    try { svg.setPointerCapture(ev.pointerId); } catch (e) { /* synthetic event: no capture needed */ }
  });
  svg.addEventListener('pointermove', function (ev) {
    if (!drag) return;
    var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
    drag.moved = true;
    svg.classList.add('dragging');
    view.tx = drag.tx + dx;
    view.ty = drag.ty + dy;
    applyView();
  });
  function endDrag(ev) {
    if (!drag) return;
    var d = drag;
    drag = null;
    svg.classList.remove('dragging');
    if (!d.moved && ev.type === 'pointerup') clickAt(ev);
  }
  svg.addEventListener('pointerup', endDrag);
  svg.addEventListener('pointercancel', endDrag);

  function clickAt(ev) {
    var el = document.elementFromPoint(ev.clientX, ev.clientY);
    var g = el && el.closest ? el.closest('#nodes .n') : null;
    if (!g) return;
    var u = L.units[+g.getAttribute('data-u')];
    if (u.kind === 'chain') expandChain(u.ref);
    else if (u.kind === 'node') select(u.ref, false);
    else showTensor(u.ref);
  }

  /* ------------------------------------------------------- relayout */
  function relayout(focusNode) {
    L = layout();
    render();
    if (focusNode !== undefined && focusNode !== null) centreOnUnit(L.unitOfNode[focusNode]);
    else fit();
  }
  function expandChain(c) {
    chains[c].collapsed = false;
    var first = chains[c].members[0];
    relayout(first);
    showChain(c);
  }
  function collapseChain(c) {
    chains[c].collapsed = true;
    relayout(chains[c].members[0]);
    showChain(c);
  }
  collapseBox.addEventListener('change', function () {
    chains.forEach(function (c) { c.collapsed = collapseBox.checked; });
    relayout(selected >= 0 ? selected : null);
  });
  document.getElementById('fit').addEventListener('click', fit);

  /* ----------------------------------------------- highlight & select */
  var selected = -1, hits = [], hitSet = new Set(), litKey = null;
  function applyHighlights() {
    /* A node hidden in a chain or folded into a box lights up that box. */
    var hitUnits = new Set(), selUnit = selected >= 0 ? L.unitOfNode[selected] : -1;
    hits.forEach(function (id) { hitUnits.add(L.unitOfNode[id]); });
    for (var i = 0; i < unitEls.length; i++) {
      var el = unitEls[i], u = L.units[i];
      el.classList.toggle('hit', hitUnits.has(i));
      el.classList.toggle('sel', i === selUnit);
      el.classList.toggle('lit', litKey !== null && unitStatus(u) === litKey);
    }
    gNodes.classList.toggle('dim', litKey !== null);
  }
  function locate(id) {
    var c = chainOf[id];
    if (c >= 0 && chains[c].collapsed) {
      chains[c].collapsed = false;
      L = layout();
      render();
    }
    centreOnUnit(L.unitOfNode[id]);
  }
  function select(id, centre) {
    selected = id;
    if (centre) locate(id);
    applyHighlights();
    showNode(id);
  }

  /* search */
  var search = document.getElementById('search'), searchInfo = document.getElementById('search-info'), hitIdx = -1;
  function runSearch() {
    var q = search.value.trim().toLowerCase();
    hits = [];
    hitIdx = -1;
    if (q) nodes.forEach(function (n) {
      if (n.name.toLowerCase() === q) hits.unshift(n.id);   // an exact name first
      else if (n.name.toLowerCase().indexOf(q) >= 0 || n.op.toLowerCase().indexOf(q) >= 0) hits.push(n.id);
    });
    hitSet = new Set(hits);
    searchInfo.textContent = q ? plural(hits.length, 'match').replace('matchs', 'matches') : '';
    applyHighlights();
  }
  search.addEventListener('input', runSearch);
  search.addEventListener('keydown', function (ev) {
    if (ev.key !== 'Enter' || !hits.length) return;
    hitIdx = (hitIdx + (ev.shiftKey ? hits.length - 1 : 1)) % hits.length;
    select(hits[hitIdx], true);
    searchInfo.textContent = (hitIdx + 1) + ' / ' + plural(hits.length, 'match').replace('matchs', 'matches');
  });
  document.addEventListener('keydown', function (ev) {
    if (ev.key === '/' && document.activeElement !== search) { ev.preventDefault(); search.focus(); }
  });

  /* ------------------------------------------------------ side panels */
  function dtypeShape(t) {
    var ti = tensors.get(t);
    if (!ti) return '<span class="muted">type unknown</span>';
    var s = esc(ti.dtype) + ' ' + esc(fmtShape(ti.shape));
    if (ti.scale !== undefined) s += ' <span class="muted">scale ' + esc(ti.scale) + ', zp ' + esc(ti.zero_point) + '</span>';
    if (ti.initializer) s += ' <span class="muted">(initializer)</span>';
    else if (ti.constant) s += ' <span class="muted">(constant)</span>';
    return s;
  }
  function nodeLink(id) {
    return '<a class="jump" data-jump="' + id + '">' + esc(nodes[id].name) + '</a>';
  }
  function statusHtml(n) {
    if (n.part >= 0) {
      var p = partById.get(n.part);
      return '<span class="sw" style="background:' + color.get(n.key) + '"></span>partition ' + n.part +
             (p ? ' <code>' + esc(p.file) + '</code>' : '');
    }
    var s = '<span class="sw fb" style="background:' + color.get(n.key) + '"></span>CPU fallback: <span class="code">' +
            esc(n.code) + '</span>';
    if (n.reason) s += '<div class="reason">' + esc(n.reason) + '</div>';
    if (n.input) s += '<div>input to bind: <code>' + esc(n.input) + '</code> (<code>--bind ' + esc(n.input) + '=FILE</code>)</div>';
    return s;
  }
  function attrHtml(v) {
    if (v === null || typeof v !== 'object') return '<code>' + esc(JSON.stringify(v)) + '</code>';
    if (Array.isArray(v)) return '<code>[' + esc(v.map(function (x) { return JSON.stringify(x); }).join(', ')) + ']</code>';
    if (v.tensor) return 'tensor ' + esc(v.tensor.dtype) + ' ' + esc(fmtShape(v.tensor.shape));
    if (v.first) return '<code>[' + esc(v.first.map(function (x) { return JSON.stringify(x); }).join(', ')) + ', \u2026]</code> <span class="muted">(' + v.count + ' values)</span>';
    if (v.graph !== undefined) return 'graph <code>' + esc(v.graph) + '</code> (' + plural(v.nodes, 'node') + ')';
    return '<code>' + esc(JSON.stringify(v)) + '</code>';
  }
  function showNode(id) {
    var n = nodes[id], h = [];
    h.push('<h3>' + esc(n.name) + '</h3>');
    h.push('<table><tr><th>op</th><td><code>' + esc((n.domain ? n.domain + '::' : '') + (n.op || '?')) + '</code></td></tr>');
    h.push('<tr><th>where</th><td>' + statusHtml(n) + '</td></tr></table>');
    if (chainOf[id] >= 0) {
      var c = chains[chainOf[id]];
      h.push('<p>In a chain of ' + c.members.length + ' nodes. <button type="button" data-collapse="' + c.id + '">collapse chain</button></p>');
    }
    if (folded[id]) {
      h.push('<p>Constant inputs' + (collapseBox.checked ? ' folded into this box' : '') + ': ' +
             folded[id].slice(0, 20).map(nodeLink).join(', ') + (folded[id].length > 20 ? ', \u2026' : '') + '</p>');
    }
    if (host[id] !== id) h.push('<p>Computes a constant for ' + nodeLink(host[id]) + (collapseBox.checked ? ', whose box it is folded into' : '') + '.</p>');
    h.push('<h2>Attributes</h2>');
    if (n.attrs && Object.keys(n.attrs).length) {
      h.push('<table>');
      Object.keys(n.attrs).forEach(function (k) { h.push('<tr><th>' + esc(k) + '</th><td>' + attrHtml(n.attrs[k]) + '</td></tr>'); });
      h.push('</table>');
      if (n.omitted) h.push('<p class="muted">' + n.omitted + ' more not in the report</p>');
    } else h.push('<p class="muted">' + (G ? 'none' : 'not in this report') + '</p>');
    h.push('<h2>Inputs</h2><table>');
    n.inputs.forEach(function (t, i) {
      if (!t) { h.push('<tr><td class="muted">#' + i + '</td><td class="muted">(omitted)</td></tr>'); return; }
      var p = producer.get(t);
      h.push('<tr><td><code>' + esc(t) + '</code><br>' + dtypeShape(t) + '</td><td>' + (p !== undefined ? 'from ' + nodeLink(p) : '') + '</td></tr>');
    });
    h.push('</table><h2>Outputs</h2><table>');
    n.outputs.forEach(function (t) {
      if (!t) return;
      var cs = (consumers.get(t) || []).slice(0, 12).map(nodeLink).join(', ');
      var more = (consumers.get(t) || []).length > 12 ? ', \u2026' : '';
      h.push('<tr><td><code>' + esc(t) + '</code><br>' + dtypeShape(t) + '</td><td>' + (cs ? 'to ' + cs + more : '') +
             (graphOutputs.indexOf(t) >= 0 ? ' <b>graph output</b>' : '') + '</td></tr>');
    });
    h.push('</table>');
    details.innerHTML = h.join('');
    details.setAttribute('data-node', n.name);
  }
  function showChain(c) {
    var ch = chains[c], h = [];
    h.push('<h3>Chain of ' + ch.members.length + ' nodes</h3><p>' + statusHtml(nodes[ch.members[0]]) + '</p>');
    h.push('<p><button type="button" data-' + (ch.collapsed ? 'expand' : 'collapse') + '="' + c + '">' +
           (ch.collapsed ? 'expand' : 'collapse') + ' chain</button></p><ol>');
    ch.members.forEach(function (m) { h.push('<li>' + nodeLink(m) + ' <span class="muted">' + esc(nodes[m].op) + '</span></li>'); });
    h.push('</ol>');
    details.innerHTML = h.join('');
    details.removeAttribute('data-node');
  }
  function showTensor(t) {
    var h = ['<h3>' + esc(t) + '</h3><p>' + (graphInputs.indexOf(t) >= 0 ? 'graph input' : 'graph output') + ': ' + dtypeShape(t) + '</p>'];
    var p = producer.get(t);
    if (p !== undefined) h.push('<p>from ' + nodeLink(p) + '</p>');
    var cs = consumers.get(t) || [];
    if (cs.length) h.push('<p>to ' + cs.slice(0, 30).map(nodeLink).join(', ') + (cs.length > 30 ? ', \u2026' : '') + '</p>');
    details.innerHTML = h.join('');
  }
  function onPanelClick(ev) {
    var a = ev.target.closest('[data-jump],[data-expand],[data-collapse],[data-key]');
    if (!a) return;
    if (a.hasAttribute('data-jump')) select(+a.getAttribute('data-jump'), true);
    else if (a.hasAttribute('data-expand')) expandChain(+a.getAttribute('data-expand'));
    else if (a.hasAttribute('data-collapse')) collapseChain(+a.getAttribute('data-collapse'));
    else {
      var k = a.getAttribute('data-key');
      litKey = litKey === k ? null : k;
      Array.prototype.forEach.call(document.querySelectorAll('.legend-row'), function (r) {
        r.classList.toggle('on', r.getAttribute('data-key') === litKey);
      });
      applyHighlights();
    }
  }
  details.addEventListener('click', onPanelClick);
  document.getElementById('side').addEventListener('click', onPanelClick);

  function ioTable(list) {
    if (!list || !list.length) return '<p class="muted">none</p>';
    var h = ['<table>'];
    list.forEach(function (io) {
      h.push('<tr><td><code>' + esc(io.name) + '</code><br>' + esc(io.dtype) + ' ' + esc(fmtShape(io.shape)) +
             (io.scale !== undefined ? ' <span class="muted">scale</span> ' + esc(io.scale) + ' <span class="muted">zero point</span> ' +
              esc(io.zero_point) : '') + '</td></tr>');
    });
    h.push('</table>');
    return h.join('');
  }
  function sidePanels() {
    var del = R.nodes_delegated, tot = R.nodes_total;
    var pct = tot ? (100 * del / tot).toFixed(1) : '100.0';
    document.getElementById('summary').innerHTML =
      '<code>' + esc(R.model || '?') + '</code> \u2192 <b>' + esc(R.spec || '?') + '</b>: <b>' + esc(del) + '</b> of <b>' + esc(tot) +
      '</b> nodes delegated (' + pct + '%) in ' + plural(partitions.length, 'partition') + ', ' + plural(fallback.length, 'fallback node') +
      ' <span class="muted">\u00b7 ' + esc(R.tool || 'ctosa') + ' ' + esc(R.version || '') + '</span>';
    var lg = [];
    partKeys.concat(fbKeys).forEach(function (k) {
      var isFb = k.indexOf('fallback:') === 0;
      lg.push('<div class="legend-row" data-key="' + esc(k) + '"><span class="sw' + (isFb ? ' fb' : '') + '" style="background:' +
              color.get(k) + '"></span>' + (isFb ? 'CPU: <b>' + esc(k.slice(9)) + '</b>' : 'partition ' + esc(k.slice(10))) +
              ' <span class="muted">(' + plural(keyCount.get(k), 'node') + ')</span></div>');
    });
    lg.push('<div class="muted">Fallback boxes have a dashed red border; red edges cross a partition boundary. Click a row to highlight.</div>');
    document.getElementById('legend').innerHTML = lg.join('');
    var ph = [];
    partitions.forEach(function (p, i) {
      var ops = p.tosa_ops || {}, opn = Object.keys(ops), nops = 0;
      opn.forEach(function (o) { nops += ops[o]; });
      var first = p.nodes && p.nodes.length ? byName.get(p.nodes[0]) : null;
      ph.push('<details class="part"' + (i < 3 ? ' open' : '') + '><summary><span class="sw" style="background:' + color.get('partition:' + p.id) +
              '"></span><b>partition ' + esc(p.id) + '</b> <code>' + esc(p.file) + '</code> \u2014 ' + plural((p.nodes || []).length, 'node') + ', ' +
              plural(nops, 'TOSA op') + '</summary>' + (first ? '<p>first node: ' + nodeLink(first.id) + '</p>' : ''));
      ph.push('<b>TOSA operators</b><table>');
      opn.sort(function (a, b) { return ops[b] - ops[a] || (a < b ? -1 : 1); }).forEach(function (o) {
        ph.push('<tr><td><code>' + esc(o) + '</code></td><td class="num">' + esc(ops[o]) + '</td></tr>');
      });
      ph.push('</table><b>Inputs</b>' + ioTable(p.inputs) + '<b>Outputs</b>' + ioTable(p.outputs));
      var pn = (p.nodes || []).slice(0, 300).map(function (nm) {
        var nd = byName.get(nm);
        return nd ? nodeLink(nd.id) : esc(nm);
      });
      ph.push('<details><summary>' + plural((p.nodes || []).length, 'node') + '</summary><div class="mono">' + pn.join(', ') +
              ((p.nodes || []).length > 300 ? ', \u2026' : '') + '</div></details></details>');
    });
    document.getElementById('partitions').innerHTML = ph.length ? ph.join('') : '<p class="muted">none: nothing was delegated</p>';
    var fh = [];
    if (fallback.length) {
      fh.push('<table><tr><th>node</th><th>op</th><th>code</th></tr>');
      fallback.slice(0, 500).forEach(function (f) {
        var n = byName.get(f.node);
        fh.push('<tr title="' + esc(f.reason) + '"><td>' + (n ? nodeLink(n.id) : esc(f.node)) + '</td><td><code>' + esc((f.domain ? f.domain + '::' : '') + f.op_type) +
                '</code></td><td class="code">' + esc(f.code) + '</td></tr>');
      });
      fh.push('</table>');
      if (fallback.length > 500) fh.push('<p class="muted">\u2026 and ' + (fallback.length - 500) + ' more (use the search box)</p>');
    } else fh.push('<p class="muted">none: every node is delegated</p>');
    document.getElementById('fallback').innerHTML = fh.join('');
    if (!G) {
      var nt = document.getElementById('notice');
      nt.hidden = false;
      nt.textContent = 'This report has no "graph" section (it was written by an older ctosa), so nodes are shown without edges, ' +
                       'attributes or shapes. Lower the model again to get the full graph.';
    }
  }

  /* ----------------------------------------------------------- start */
  sidePanels();
  L = layout();
  render();
  fit();
  /* #search=TEXT: search and go to the first match (links, tests). */
  var hm = /(?:^#|&)search=([^&]*)/.exec(location.hash);
  if (hm) {
    try { search.value = decodeURIComponent(hm[1]); } catch (e) { search.value = hm[1]; }
    runSearch();
    if (hits.length) {
      hitIdx = 0;
      select(hits[0], true);
      searchInfo.textContent = '1 / ' + plural(hits.length, 'match').replace('matchs', 'matches');
    }
  }
  app.setAttribute('data-total-ms', (now() - t0).toFixed(1));
  if (/(^#|&)selftest(&|$)/.test(location.hash)) selfTest();
  app.setAttribute('data-state', 'ready');
  /* #selftest: drives the page the way a user would (chain expand and
   * collapse, the checkbox, legend, links, a click on a box, wheel zoom, a
   * drag) and records "ok" or the first failure in #app data-selftest. */
  function selfTest() {
    function must(c, what) { if (!c) throw new Error(what); }
    function fire(el, type, init) {
      var E = type === 'wheel' ? WheelEvent : type.indexOf('pointer') === 0 && window.PointerEvent ? PointerEvent : MouseEvent;
      el.dispatchEvent(new E(type, Object.assign({ bubbles: true, cancelable: true, button: 0 }, init || {})));
    }
    var steps = [];
    try {
      var c = chains.filter(function (ch) { return ch.collapsed; })[0];
      if (c) {
        var before = L.units.length;
        expandChain(c.id);
        must(!c.collapsed && L.units.length === before + c.members.length - 1, 'expanding a chain');
        must(details.textContent.indexOf('Chain of ' + c.members.length) >= 0, 'chain details');
        collapseChain(c.id);
        must(c.collapsed && L.units.length === before, 'collapsing a chain');
        steps.push('chain');
      }
      var was = collapseBox.checked;
      collapseBox.checked = !was; collapseBox.dispatchEvent(new Event('change'));
      must(L.units.length >= 1, 'toggling collapse');
      collapseBox.checked = was; collapseBox.dispatchEvent(new Event('change'));
      steps.push('toggle');
      var row = document.querySelector('.legend-row');
      if (row) {
        row.click();
        must(litKey === row.getAttribute('data-key') && gNodes.classList.contains('dim'), 'legend highlight');
        row.click();
        must(litKey === null, 'legend highlight off');
        steps.push('legend');
      }
      /* A real click on a node box, through hit testing. */
      var el = gNodes.querySelector('.n[data-node]');
      if (el) {
        var u = L.units[+el.getAttribute('data-u')];
        centreOnUnit(+el.getAttribute('data-u'), 1);
        var r = el.querySelector('rect.b').getBoundingClientRect();
        var at = { clientX: r.left + r.width / 2, clientY: r.top + r.height / 2, pointerId: 1 };
        fire(svg, 'pointerdown', at); fire(svg, 'pointerup', at);
        must(selected === u.ref && details.getAttribute('data-node') === nodes[u.ref].name, 'clicking a node');
        var link = details.querySelector('[data-jump]');
        if (link) { link.click(); must(selected === +link.getAttribute('data-jump'), 'following a link'); }
        steps.push('click');
      }
      var k0 = view.k, rr = svg.getBoundingClientRect();
      fire(svg, 'wheel', { deltaY: -200, clientX: rr.left + 50, clientY: rr.top + 50 });
      must(view.k > k0, 'wheel zoom');
      var tx0 = view.tx;
      fire(svg, 'pointerdown', { clientX: rr.left + 5, clientY: rr.top + 5, pointerId: 2 });
      fire(svg, 'pointermove', { clientX: rr.left + 105, clientY: rr.top + 45, pointerId: 2 });
      fire(svg, 'pointerup', { clientX: rr.left + 105, clientY: rr.top + 45, pointerId: 2 });
      must(Math.abs(view.tx - tx0 - 100) < 0.5, 'dragging');
      steps.push('zoom', 'drag');
      if (graphInputs.length) { showTensor(graphInputs[0]); must(details.textContent.indexOf('graph input') >= 0, 'tensor details'); }
      fit();
      app.setAttribute('data-selftest', 'ok: ' + steps.join(' '));
    } catch (e) {
      app.setAttribute('data-selftest', 'fail: ' + e.message);
    }
  }

  /* For debugging from the console (and the tests' harness). */
  window.ctosaReport = { nodes: nodes, chains: chains, layout: function () { return L; }, relayout: relayout };
})();
