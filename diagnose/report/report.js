// The report page's charts: Vega specifications built from the run's data (the JSON in
// #run-data, aggregated by twinscale before it was written). Each chart has axes with
// units, a legend, tooltips (hover: the browser shows them) and, where a dimension can be
// long (ranks, DP replicas, time), zoom with the wheel, pan by dragging, double-click to
// reset. Once every view has run, the body's data-rendered attribute is ok; each chart's element gets
// data-axes / data-legends counted in Vega's scene graph (the page's tests read them).
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('run-data').textContent);
  var pending = [], views = {};

  function el(id) { return document.getElementById(id); }
  function add(parent, tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    parent.appendChild(e);
    return e;
  }
  function pct(x) { return (100 * x).toFixed(1) + ' %'; }
  // Seconds with 4 digits in s, ms or µs.
  function shortTime(x) {
    var f = function (v) { return Number(v.toPrecision(4)).toString(); };
    return x === 0 ? '0 s' : Math.abs(x) >= 1 ? f(x) + ' s' : Math.abs(x) >= 1e-3 ? f(x * 1e3) + ' ms' : f(x * 1e6) + ' µs';
  }
  function grouped(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ','); }

  // Slowness against peers: blue faster, white at the median, red slower (±10 % and beyond).
  var SLOW = { type: 'linear', domain: [-0.1, 0, 0.1], range: ['#2166ac', '#f7f7f7', '#b2182b'], clamp: true };

  function countRoles(mark, roles) {
    if (!mark) return;
    if (mark.role) roles[mark.role] = (roles[mark.role] || 0) + 1;
    (mark.items || []).forEach(function (item) { (item.items || []).forEach(function (m) { countRoles(m, roles); }); });
  }

  // Draws `spec` into a new element under `parent`; SVG unless there are many marks.
  function draw(parent, spec, renderer) {
    var box = add(parent, 'div', undefined, 'vega-chart');
    spec.padding = spec.padding || 6;
    spec.config = { axis: { labelFontSize: 11, titleFontSize: 12 }, legend: { labelFontSize: 11, titleFontSize: 12 },
                    title: { fontSize: 13, subtitleFontSize: 11, anchor: 'start', subtitleColor: '#555' } };
    var view = new vega.View(vega.parse(spec), { renderer: renderer || 'svg', container: box, hover: true });
    views[parent.id] = view;
    pending.push(view.runAsync().then(function () {
      var roles = {};
      countRoles(view.scenegraph().root, roles);
      var a = (roles.axis || 0) + Number(parent.getAttribute('data-axes') || 0);
      var l = (roles.legend || 0) + Number(parent.getAttribute('data-legends') || 0);
      parent.setAttribute('data-axes', a);
      parent.setAttribute('data-legends', l);
      parent.setAttribute('data-renderer', renderer || 'svg');
    }));
    return view;
  }

  // Wheel zoom, drag pan and double-click reset of one dimension ('x' or 'y') of scale
  // `scale` over [lo, hi]; the scale's domain is the signal `dim + 'dom'`.
  function zoomSignals(dim, scale, lo, hi) {
    var pos = dim === 'x' ? 'x()' : 'y()', size = dim === 'x' ? 'width' : 'height', i = dim === 'x' ? 0 : 1;
    var d = dim + 'dom', full = '[' + lo + ',' + hi + ']';
    return [
      { name: dim + 'down', value: null, on: [{ events: 'mousedown', update: '[x(), y()]' }, { events: 'window:mouseup', update: 'null' }] },
      { name: dim + 'cur', value: null, on: [{ events: 'mousedown', update: 'slice(' + d + ')' }] },
      { name: dim + 'delta', value: 0, on: [{
        events: [{ source: 'window', type: 'mousemove', consume: true, between: [{ type: 'mousedown' }, { source: 'window', type: 'mouseup' }] }],
        update: dim + 'down ? ' + dim + 'down[' + i + '] - ' + pos + ' : 0' }] },
      { name: dim + 'anchor', value: 0, on: [{ events: 'wheel', update: "invert('" + scale + "', " + pos + ')' }] },
      { name: dim + 'zoom', value: 1, on: [{ events: 'wheel!', force: true, update: 'pow(1.001, event.deltaY * pow(16, event.deltaMode))' }] },
      { name: d, value: [lo, hi], on: [
        { events: { signal: dim + 'delta' }, update: dim + 'cur ? [' + dim + 'cur[0] + span(' + dim + 'cur) * ' + dim + 'delta / ' + size + ', ' +
          dim + 'cur[1] + span(' + dim + 'cur) * ' + dim + 'delta / ' + size + '] : ' + d },
        { events: { signal: dim + 'zoom' }, update: '[' + dim + 'anchor + (' + d + '[0] - ' + dim + 'anchor) * ' + dim + 'zoom, ' +
          dim + 'anchor + (' + d + '[1] - ' + dim + 'anchor) * ' + dim + 'zoom]' },
        { events: 'dblclick', update: full }] }
    ];
  }

  function summary() {
    var s = el('summary');
    add(s, 'p', D.summary, 'headline' + (D.findings.length ? ' bad' : ''));
    var facts = D.source + ' · ' + grouped(D.ranks) + ' ranks · ' + D.steps + ' step(s)';
    if (D.layout) facts += ' · TP ' + D.layout.tp + ' × PP ' + D.layout.pp + ' × DP ' + D.layout.dp +
                           (D.layout_inferred ? ' (inferred from the trace\'s collective groups for the charts; the diagnosis uses --layout)' : '');
    if (D.hosts) facts += ' · ' + grouped(D.hosts) + (D.hosts === 1 ? ' host' : ' hosts');
    add(s, 'p', facts, 'facts');
    D.notes.forEach(function (n) { add(s, 'p', 'note: ' + n, 'note'); });
    add(s, 'p', 'Charts: hover for values; where a chart can be zoomed, use the wheel, drag to pan, double-click to reset.', 'hint');
  }

  // Ranks the diagnosis names as stragglers (marked on the heat-map and the grid).
  function flaggedRanks() {
    var out = [];
    D.findings.forEach(function (f) {
      if (f.kind === 'straggler') f.ranks.forEach(function (r) { out.push({ rank: r, excess: f.excess }); });
    });
    return out;
  }

  // The cell furthest from its peers' median, as a signed percentage.
  function largest(cells) {
    var x = 0;
    cells.forEach(function (c) { if (Math.abs(c.x) > Math.abs(x)) x = c.x; });
    return (x >= 0 ? '+' : '') + (100 * x).toFixed(1) + ' %';
  }

  function rowLabel(by, k) { return (by === 'stage' ? 'stage ' : 'peer group ') + k; }

  function breakdown() {
    var B = D.breakdown, top = {};
    B.rows.forEach(function (r) { top[r[0]] = (top[r[0]] || 0) + r[2]; });
    var most = Math.max.apply(null, Object.keys(top).map(function (k) { return top[k]; }).concat([0]));
    var u = most >= 1 ? { k: 1, name: 's' } : most >= 1e-3 ? { k: 1e3, name: 'ms' } : { k: 1e6, name: 'µs' };
    var rows = B.rows.map(function (r) {
      return { row: rowLabel(B.by, r[0]), phase: D.phases[r[1]], order: r[1], s: r[2] * u.k };
    });
    var n = {}; rows.forEach(function (r) { n[r.row] = 1; });
    var count = Object.keys(n).length;
    draw(el('breakdown'), {
      width: 760, height: Math.max(60, Math.min(420, 22 * count)),
      title: { text: 'Mean time per step of each phase, by ' + (B.by === 'stage' ? 'pipeline stage' : 'peer group (ranks running the same program)'),
               subtitle: 'averaged over the ' + (B.by === 'stage' ? 'stage' : 'group') + '\'s ranks and the run\'s steps' },
      data: [{ name: 't', values: rows, transform: [{ type: 'stack', groupby: ['row'], sort: { field: 'order' }, field: 's' }] }],
      scales: [
        { name: 'y', type: 'band', domain: { data: 't', field: 'row', sort: false }, range: 'height', padding: 0.15 },
        { name: 'x', type: 'linear', domain: { data: 't', field: 'y1' }, range: 'width', nice: true, zero: true },
        { name: 'c', type: 'ordinal', domain: D.phases, range: { scheme: 'tableau10' } }],
      axes: [{ orient: 'bottom', scale: 'x', title: 'time per step (' + u.name + ')', grid: true },
             { orient: 'left', scale: 'y', title: count < 5 ? (B.by === 'stage' ? 'stage' : 'group') : B.by === 'stage' ? 'pipeline stage' : 'peer group' }],
      legends: [{ fill: 'c', title: 'phase', orient: 'right' }],
      marks: [{ type: 'rect', from: { data: 't' }, encode: { enter: {
        y: { scale: 'y', field: 'row' }, height: { scale: 'y', band: 1 },
        x: { scale: 'x', field: 'y0' }, x2: { scale: 'x', field: 'y1' }, fill: { scale: 'c', field: 'phase' },
        tooltip: { signal: "{'row': datum.row, 'phase': datum.phase, 'per step': format(datum.s, '.4~r') + ' " + u.name + "'}" } } } }]
    });
  }

  function heatmap() {
    // One rank a row: rows span rank ± 0.5 so that the axis ticks sit on them.
    var H = D.heat, o = H.per > 1 ? 0 : 0.5, cells = H.cells.map(function (c) {
      return { r0: c[0] - o, r1: c[1] + 1 - o, first: c[0], last: c[1], phase: D.phases[c[2]], x: c[3], s: shortTime(c[4]), worst: c[5] };
    });
    var stages = (H.stages || []).map(function (s) { return { stage: s[0], r0: s[1] - o, r1: s[2] + 1 - o }; });
    var flagged = flaggedRanks().map(function (f) {
      var first = Math.floor(f.rank / H.per) * H.per;
      return { rank: f.rank, excess: f.excess, r0: first - o, r1: Math.min(D.ranks, first + H.per) - o };
    });
    var n = D.ranks, h = Math.max(120, Math.min(520, cells.length / Math.max(1, D.phases.length) * 4));
    var marks = [{ type: 'rect', from: { data: 'cells' }, clip: true, encode: { enter: {
      x: { scale: 'x', field: 'phase' }, width: { scale: 'x', band: 1 },
      y: { scale: 'y', field: 'r0' }, y2: { scale: 'y', field: 'r1' }, fill: { scale: 'slow', field: 'x' },
      tooltip: { signal: "{'ranks': datum.last > datum.first ? datum.first + '–' + datum.last : datum.first, 'phase': datum.phase, " +
        "'worst vs peers': format(datum.x, '+.1%'), 'worst rank': datum.worst, 'mean time per step': datum.s}" } },
      update: { y: { scale: 'y', field: 'r0' }, y2: { scale: 'y', field: 'r1' } } } }];
    if (stages.length > 1) {
      marks.push({ type: 'rule', from: { data: 'stages' }, clip: true, encode: { update: {
        x: { value: 0 }, x2: { signal: 'width' }, y: { scale: 'y', field: 'r0' }, stroke: { value: '#333' }, strokeWidth: { value: 1 } } } });
      marks.push({ type: 'text', from: { data: 'stages' }, encode: { update: {
        x: { signal: 'width + 4' }, y: { signal: "(scale('y', datum.r0) + scale('y', datum.r1)) / 2" }, baseline: { value: 'middle' },
        text: { signal: "'stage ' + datum.stage" }, fontSize: { value: 10 }, fill: { value: '#333' },
        opacity: { signal: "scale('y', datum.r1) < 0 || scale('y', datum.r0) > height ? 0 : 1" } } } });
    }
    // Stragglers: their row outlined across the phases, named on the right.
    marks.push({ type: 'rect', from: { data: 'flagged' }, clip: true, encode: { update: {
      x: { value: 0 }, x2: { signal: 'width' }, y: { scale: 'y', field: 'r0' }, y2: { scale: 'y', field: 'r1' },
      fill: { value: null }, stroke: { value: '#000' }, strokeWidth: { value: 2 },
      tooltip: { signal: "{'straggler': 'rank ' + datum.rank, 'own time vs peers': format(datum.excess, '+.1%')}" } } } });
    marks.push({ type: 'text', from: { data: 'flagged' }, encode: { update: {
      x: { signal: 'width + ' + (stages.length > 1 ? 50 : 4) }, y: { signal: "(scale('y', datum.r0) + scale('y', datum.r1)) / 2" },
      baseline: { value: 'middle' }, fontSize: { value: 10 }, fontWeight: { value: 'bold' }, fill: { value: '#b2182b' },
      text: { signal: "'◀ rank ' + datum.rank + ' ' + format(datum.excess, '+.1%')" },
      opacity: { signal: "scale('y', datum.r1) < 0 || scale('y', datum.r0) > height ? 0 : 1" } } } });
    draw(el('heatmap'), {
      width: Math.max(240, 130 * D.phases.length), height: h,
      title: { text: 'Each phase\'s time against the median of the rank\'s peers',
               subtitle: (H.per > 1 ? 'rows of ' + H.per + ' consecutive ranks, each showing its worst rank (' + grouped(n) + ' ranks)' : 'one row per rank') +
               '; largest deviation ' + largest(cells) },
      signals: zoomSignals('y', 'y', -o, n - o),
      data: [{ name: 'cells', values: cells }, { name: 'stages', values: stages }, { name: 'flagged', values: flagged }],
      scales: [
        { name: 'x', type: 'band', domain: D.phases, range: 'width', padding: 0.04 },
        { name: 'y', type: 'linear', domain: { signal: 'ydom' }, range: 'height', reverse: true, zero: false, nice: false },
        Object.assign({ name: 'slow' }, SLOW)],
      axes: [{ orient: 'top', scale: 'x', title: 'phase' },
             { orient: 'left', scale: 'y', title: 'rank' + (H.per > 1 ? ' (' + H.per + ' per row)' : ''), format: 'd', tickMinStep: 1 }],
      legends: [{ fill: 'slow', type: 'gradient', title: 'vs peers\' median', format: '+.0%', orient: 'right', offset: (stages.length > 1 ? 46 : 0) + (flagged.length ? 140 : 10),
                  values: [-0.1, -0.05, 0, 0.05, 0.1], gradientLength: Math.min(200, h) }],
      marks: marks
    });
    add(el('heatmap'), 'p', 'Red: slower than the peers (ranks that run the same program), white: at their median, blue: faster; ' +
        'colours saturate at ±10 %.' + (D.layout ? ' Lines mark pipeline stages.' : '') +
        (flagged.length ? ' Outlined and named: the stragglers of the diagnosis.' : ''), 'note');
  }

  function grid() {
    var G = D.grid, L = D.layout, byLayout = G.by === 'layout', g = el('grid'), o = G.dp_per_column > 1 ? 0 : 0.5;
    if (!G.cells.length) { add(g, 'p', 'no ranks', 'note'); return; }
    var cells = G.cells.map(function (c) {
      return { row: byLayout ? 'stage ' + c[0] : 'group ' + c[0], first: c[1], last: c[2], c0: c[1] - o, c1: c[2] + 1 - o,
               x: c[3], worst: c[4], mean: c[5] };
    });
    var rows = {}; cells.forEach(function (c) { rows[c.row] = 1; });
    var nrows = Object.keys(rows).length, ncols = 0;
    cells.forEach(function (c) { ncols = Math.max(ncols, c.last + 1); });
    var gh = Math.max(40, Math.min(420, nrows * 26)), marked = {};
    flaggedRanks().forEach(function (f) {
      if (byLayout) {
        var dp = Math.floor(f.rank / L.tp) % L.dp, pp = Math.floor(f.rank / (L.tp * L.dp));
        marked[pp + ':' + Math.floor(dp / G.dp_per_column)] = true;
      } else marked['r' + f.rank] = true;
    });
    cells.forEach(function (c, i) {
      c.flagged = byLayout ? !!marked[G.cells[i][0] + ':' + Math.floor(c.first / G.dp_per_column)] : !!marked['r' + c.worst];
    });
    var tip = byLayout
      ? "{'stage': datum.row, 'DP': datum.last > datum.first ? datum.first + '–' + datum.last : datum.first, 'TP': '0–" + (L.tp - 1) +
        "', 'worst rank': datum.worst, 'worst own time vs peers': format(datum.x, '+.1%'), 'mean': format(datum.mean, '+.1%')}"
      : "{'peer group': datum.row, 'members': datum.last > datum.first ? datum.first + '–' + datum.last : datum.first, " +
        "'worst rank': datum.worst, 'own time vs peers': format(datum.x, '+.1%')}";
    if (!byLayout)
      add(g, 'p', 'Layout unknown (a per-rank CSV has tp/pp/dp columns; for this input give --layout TPxDPxPP): ' +
          'ranks are shown by peer group (ranks running the same program, i.e. one pipeline stage) instead.', 'note');
    draw(g, {
      width: Math.max(300, Math.min(860, ncols * 14)), height: gh,
      title: { text: byLayout ? 'Pipeline stage × DP replica, each cell the slowest of its TP ranks' : 'Peer group × member',
               subtitle: (byLayout ? 'TP ' + L.tp + ' × PP ' + L.pp + ' × DP ' + L.dp + (G.dp_per_column > 1 ? '; columns of ' + G.dp_per_column + ' DP replicas' : '') +
               '; own time (compute) against the peers\' median; outlined: holds a straggler' : 'own time (compute) against the peers\' median') +
               '; largest deviation ' + largest(cells) },
      signals: zoomSignals('x', 'x', -o, ncols - o),
      data: [{ name: 'cells', values: cells }],
      scales: [
        { name: 'x', type: 'linear', domain: { signal: 'xdom' }, range: 'width', zero: false, nice: false },
        { name: 'y', type: 'band', domain: { data: 'cells', field: 'row', sort: false }, range: 'height', padding: 0.08 },
        Object.assign({ name: 'slow' }, SLOW)],
      axes: [{ orient: 'bottom', scale: 'x', title: byLayout ? 'DP replica' : 'member', format: 'd', tickMinStep: 1 },
             { orient: 'left', scale: 'y', title: gh < 110 ? (byLayout ? 'stage' : 'group') : byLayout ? 'pipeline stage' : 'peer group' }],
      legends: [gh < 150 ? { fill: 'slow', type: 'gradient', title: 'own time vs peers', format: '+.0%', values: [-0.1, -0.05, 0, 0.05, 0.1],
                             orient: 'bottom', direction: 'horizontal', gradientLength: 240 }
                         : { fill: 'slow', type: 'gradient', title: 'own time vs peers', format: '+.0%', values: [-0.1, -0.05, 0, 0.05, 0.1],
                             gradientLength: Math.min(200, gh) }],
      marks: [{ type: 'rect', from: { data: 'cells' }, clip: true, encode: {
        enter: { y: { scale: 'y', field: 'row' }, height: { scale: 'y', band: 1 }, fill: { scale: 'slow', field: 'x' },
                 stroke: { signal: "datum.flagged ? '#000' : " + (ncols > 48 ? 'null' : "'#ccc'") }, strokeWidth: { signal: "datum.flagged ? 2 : 0.5" },
                 tooltip: { signal: tip } },
        update: { x: { scale: 'x', field: 'c0' }, x2: { scale: 'x', field: 'c1' } } } }]
    });
  }

  function perfettoNote(parent, T) {
    var p = add(parent, 'p', undefined, 'note');
    p.appendChild(document.createTextNode('Every op in a trace viewer: open '));
    var a = add(p, 'a', 'ui.perfetto.dev');
    a.href = 'https://ui.perfetto.dev';
    a.target = '_blank';
    p.appendChild(document.createTextNode(T.binary
      ? ' and open a Chrome trace of chosen ranks, written by "twinscale trace convert ' + T.source + ' ranks.json --ranks ' + T.ranks.join(',') + '".'
      : T.has_trace && /\.json(\.gz)?$/.test(T.source) ? ' and open ' + T.source + ' ("Open trace file").'
      : T.has_trace ? ' and open the run\'s Chrome trace (the file of run --trace, or of simulate --trace).'
                    : ' and open a trace written by simulate --trace t.json (or run --trace).'));
  }

  function timeline() {
    var T = D.timeline, t = el('timeline');
    if (!T.events.length) {
      add(t, 'p', 'No per-op events: a per-rank CSV has none. Give a trace (simulate --trace t.json, run --trace) to see a timeline.', 'note');
      perfettoNote(t, T);
      return;
    }
    var t0 = Infinity, t1 = -Infinity;
    T.events.forEach(function (e) { t0 = Math.min(t0, e[2]); t1 = Math.max(t1, e[2] + e[3]); });
    var ms = t1 - t0 < 2, k = ms ? 1000 : 1, unit = ms ? 'ms' : 's';
    var lanes = {}, ev = T.events.map(function (e) {
      var lane = 'rank ' + e[0] + ' · ' + T.streams[e[1]];
      lanes[lane] = e[0] * 16 + e[1];
      return { lane: lane, stream: T.streams[e[1]], rank: e[0], t0: (e[2] - t0) * k, t1: (e[2] + e[3] - t0) * k, name: T.names[e[4]],
               d: shortTime(e[3]) };
    });
    var order = Object.keys(lanes).sort(function (a, b) { return lanes[a] - lanes[b]; });
    var streamsUsed = T.streams.filter(function (s) { return ev.some(function (e) { return e.stream === s; }); });
    var span = (t1 - t0) * k;
    draw(t, {
      width: 860, height: Math.max(60, 16 * order.length),
      title: { text: 'Ops of ranks ' + T.ranks.join(', ') + ', one lane per stream',
               subtitle: grouped(T.events.length) + ' ops' + (T.events_total > T.events.length ? ' (the earliest of ' + grouped(T.events_total) + ')' : '') +
               '; time from the first op shown' },
      signals: zoomSignals('x', 'x', 0, span),
      data: [{ name: 'ev', values: ev }],
      scales: [
        { name: 'x', type: 'linear', domain: { signal: 'xdom' }, range: 'width', zero: false, nice: false },
        { name: 'y', type: 'band', domain: order, range: 'height', padding: 0.12 },
        { name: 'c', type: 'ordinal', domain: streamsUsed, range: { scheme: 'tableau10' } }],
      axes: [{ orient: 'bottom', scale: 'x', title: 'time (' + unit + ')', grid: true },
             { orient: 'left', scale: 'y', title: 'rank · stream', labelFontSize: 10 }],
      legends: [{ fill: 'c', title: 'stream', orient: 'right' }],
      marks: [{ type: 'rect', from: { data: 'ev' }, clip: true, encode: {
        enter: { y: { scale: 'y', field: 'lane' }, height: { scale: 'y', band: 1 }, fill: { scale: 'c', field: 'stream' },
                 tooltip: { signal: "{'op': datum.name, 'rank': datum.rank, 'stream': datum.stream, 'start': format(datum.t0, '.4~f') + ' " + unit +
                   "', 'duration': datum.d}" } },
        update: { x: { scale: 'x', field: 't0' }, x2: { signal: "max(scale('x', datum.t1), scale('x', datum.t0) + 1)" } } } }]
    }, ev.length > 6000 ? 'canvas' : 'svg');
    perfettoNote(t, T);
  }

  function links() {
    var lk = el('links');
    if (!D.links.length) {
      add(lk, 'p', 'No link loads given: report --links FILE, written by a flow-mode simulate --link-csv FILE.', 'note');
      return;
    }
    D.links.forEach(function (tier) {
      var rows = tier.links.map(function (u) {
        return { link: u[0] + ' (' + u[1] + ')', busy: u[2], rate: u[3], bytes: u[4], state: u[5] ? 'flagged slow by the diagnosis' : 'normal' };
      });
      var hi = Math.max(1e-6, tier.max_busy);
      draw(lk, {
        width: 560, height: Math.max(40, 18 * rows.length), padding: { left: 6, right: 6, top: 10, bottom: 6 },
        title: { text: tier.kind + ': ' + grouped(tier.count) + ' link directions (link name, direction)',
                 subtitle: 'busy ' + pct(tier.mean_busy) + ' of the run on average, at most ' + pct(tier.max_busy) +
                 (rows.length < tier.count ? '; the ' + rows.length + ' shown: the busiest and any flagged' : '') },
        data: [{ name: 'l', values: rows }],
        scales: [
          { name: 'y', type: 'band', domain: { data: 'l', field: 'link', sort: false }, range: 'height', padding: 0.15 },
          { name: 'x', type: 'linear', domain: [0, hi], range: 'width', nice: true },
          { name: 'c', type: 'ordinal', domain: ['normal', 'flagged slow by the diagnosis'], range: ['#4e79a7', '#c62828'] },
          { name: 'xr', type: 'linear', domain: [0, 1], range: 'width' },
          { name: 'mk', type: 'ordinal', domain: ['rate while busy (top axis)'], range: ['#222'] }],
        axes: [{ orient: 'bottom', scale: 'x', title: 'busy share of the run (%, bars)', format: '~%', grid: true },
               { orient: 'top', scale: 'xr', title: 'rate while busy (% of capacity, ◆)', format: '~%', tickCount: 5 },
               { orient: 'left', scale: 'y', labelFontSize: 10, labelLimit: 300 }],
        legends: [{ fill: 'c', title: 'link', orient: 'right', labelLimit: 260 },
                  { fill: 'mk', symbolType: 'diamond', orient: 'right', labelLimit: 260 }],
        marks: [{ type: 'rect', from: { data: 'l' }, encode: { enter: {
          y: { scale: 'y', field: 'link' }, height: { scale: 'y', band: 1 }, x: { scale: 'x', value: 0 }, x2: { scale: 'x', field: 'busy' },
          fill: { scale: 'c', field: 'state' },
          tooltip: { signal: "{'link': datum.link, 'busy': format(datum.busy, '.2%'), 'rate while busy': format(datum.rate, '.0%') + ' of capacity', " +
                     "'bytes': format(datum.bytes, '.3~s') + 'B', 'state': datum.state}" } } } },
                { type: 'symbol', from: { data: 'l' }, encode: { enter: {
                  y: { scale: 'y', field: 'link', band: 0.5 }, x: { scale: 'xr', field: 'rate' }, shape: { value: 'diamond' },
                  size: { value: 50 }, fill: { value: '#222' },
                  tooltip: { signal: "{'link': datum.link, 'rate while busy': format(datum.rate, '.0%') + ' of capacity'}" } } } }]
      });
    });
  }

  // Campaign states in order of meaning, with the category that colours them.
  var STATES = [
    ['training', 'training'], ['slowdown', 'slowed training'], ['checkpoint_stall', 'checkpointing'], ['checkpoint_load', 'checkpointing'],
    ['network_stall', 'stalls'], ['detection', 'failure and recovery'], ['diagnosis', 'failure and recovery'],
    ['replacement', 'failure and recovery'], ['restart_init', 'failure and recovery'], ['replay', 'lost work, replayed']];
  var CATEGORIES = ['training', 'slowed training', 'checkpointing', 'stalls', 'failure and recovery', 'lost work, replayed', 'other'];
  var CATEGORY_COLOURS = ['#2e7d32', '#9ccc65', '#1e88e5', '#8e24aa', '#ef6c00', '#c62828', '#9e9e9e'];

  function duration(seconds) {
    var f = function (x) { return Number(x.toPrecision(3)).toString(); };
    if (seconds < 60) return f(seconds) + ' s';
    if (seconds < 3600) return f(seconds / 60) + ' min';
    if (seconds < 2 * 86400) return f(seconds / 3600) + ' h';
    return f(seconds / 86400) + ' d';
  }
  function share(x) { return x >= 0.001 ? (100 * x).toFixed(2) + ' %' : Number((100 * x).toPrecision(2)) + ' %'; }

  function campaign() {
    var cp = el('campaign'), C = D.campaign;
    if (!C.states.length) {
      add(cp, 'p', 'No campaign given: report --campaign FILE, written by twinscale campaign --json.', 'note');
      return;
    }
    var rank = {}, cat = {};
    STATES.forEach(function (s, i) { rank[s[0]] = i; cat[s[0]] = s[1]; });
    var wall = C.states.reduce(function (a, s) { return a + s[1]; }, 0) || 1;
    var rows = C.states.map(function (s) {
      return { state: s[0], h: s[1] / 3600, share: s[1] / wall, cat: cat[s[0]] || 'other', order: s[0] in rank ? rank[s[0]] : 99,
               label: duration(s[1]) + ' (' + share(s[1] / wall) + ')' };
    }).sort(function (a, b) { return a.order - b.order || (a.state < b.state ? -1 : 1); });
    var shown = rows.filter(function (r) { return r.h > 0; }), none = rows.filter(function (r) { return !(r.h > 0); });
    var lo = Math.min.apply(null, shown.map(function (r) { return r.h; }));
    var hi = Math.max.apply(null, shown.map(function (r) { return r.h; }));
    // Ticks at round durations (0.1 s … 1,000 d, in hours) around the data.
    var round = [0.1, 1, 10, 60, 600, 3600, 36000, 86400, 864000, 8640000, 86400000].map(function (x) { return x / 3600; });
    var ticks = round.filter(function (t, i) { return (round[i + 1] || Infinity) > lo && (i === 0 || round[i - 1] < hi); });
    draw(cp, {
      width: 620, height: Math.max(40, 24 * shown.length),
      title: { text: 'Mean time per run by state' + (C.ettr >= 0 ? ': ETTR ' + C.ettr.toFixed(4) : ''),
               subtitle: C.source + '; ' + (wall / 86400).toFixed(2) + ' days of wall time' +
               (none.length ? '; no time in ' + none.map(function (r) { return r.state; }).join(', ') : '') },
      data: [{ name: 's', values: shown }],
      scales: [
        { name: 'y', type: 'band', domain: shown.map(function (r) { return r.state; }), range: 'height', padding: 0.15 },
        { name: 'x', type: 'log', domain: [ticks[0], Math.max(hi * 1.5, ticks[ticks.length - 1])], range: 'width', nice: false },
        { name: 'c', type: 'ordinal', domain: CATEGORIES, range: CATEGORY_COLOURS }],
      axes: [{ orient: 'bottom', scale: 'x', title: 'time per run (log scale)', grid: true, values: ticks, encode: { labels: { update: { text: {
               signal: "datum.value < 1 / 60 ? format(datum.value * 3600, '~g') + ' s' : datum.value < 1 ? format(datum.value * 60, '~g') + ' min' : datum.value < 24 ? format(datum.value, '~g') + ' h' : format(datum.value / 24, '~g') + ' d'" } } } } },
             { orient: 'left', scale: 'y', title: 'state' }],
      legends: [{ fill: 'c', title: 'meaning', orient: 'right', values: CATEGORIES.filter(function (c) {
        return shown.some(function (r) { return r.cat === c; }); }) }],
      marks: [
        { type: 'rect', from: { data: 's' }, encode: { enter: {
          y: { scale: 'y', field: 'state' }, height: { scale: 'y', band: 1 }, x: { value: 0 }, x2: { scale: 'x', field: 'h' },
          fill: { scale: 'c', field: 'cat' },
          tooltip: { signal: "{'state': datum.state, 'meaning': datum.cat, 'time per run': datum.label}" } } } },
        { type: 'text', from: { data: 's' }, encode: { enter: {
          y: { scale: 'y', field: 'state', band: 0.5 }, baseline: { value: 'middle' }, fontSize: { value: 10 }, text: { field: 'label' },
          x: { signal: "scale('x', datum.h) > width - 120 ? scale('x', datum.h) - 4 : scale('x', datum.h) + 4" },
          align: { signal: "scale('x', datum.h) > width - 120 ? 'right' : 'left'" },
          fill: { signal: "scale('x', datum.h) > width - 120 ? '#fff' : '#222'" } } } }]
    });
  }

  function findings() {
    var f = el('findings');
    if (!D.findings.length) { add(f, 'p', 'nothing found'); return; }
    var tb = add(f, 'table'), hr = add(tb, 'tr');
    ['kind', 'ranks', 'where', 'host / link', 'excess', 'score', 'detail'].forEach(function (k) { add(hr, 'th', k); });
    D.findings.forEach(function (x) {
      var tr = add(tb, 'tr');
      add(tr, 'td', x.kind.replace('_', ' '));
      add(tr, 'td', x.ranks.slice(0, 16).join(', ') + (x.ranks.length > 16 ? ', … (' + x.ranks.length + ')' : ''));
      add(tr, 'td', x.where || '–');
      add(tr, 'td', x.link || x.host || '–');
      add(tr, 'td', pct(x.excess));
      add(tr, 'td', x.score.toFixed(2));
      add(tr, 'td', x.detail);
    });
  }

  // "report.html#only=heatmap" shows that section alone (the tests screenshot each
  // section so, and check that what is left is not blank).
  function only() {
    var m = /only=([a-z]+)/.exec(location.hash || '');
    if (!m) return;
    document.querySelector('h1').style.display = 'none';
    Array.prototype.forEach.call(document.querySelectorAll('section'), function (s) {
      if (s.id !== m[1]) {
        s.style.display = 'none';
        if (s.previousElementSibling && s.previousElementSibling.tagName === 'H2') s.previousElementSibling.style.display = 'none';
      }
    });
  }

  var sections = [summary, breakdown, heatmap, grid, timeline, links, campaign, findings, only];
  var failures = [];
  sections.forEach(function (fn) {
    try { fn(); } catch (e) { failures.push(fn.name + ': ' + (e && e.stack ? e.stack : e)); }
  });
  function finish(more) {
    failures = failures.concat(more || []);
    if (failures.length) {
      el('errors').textContent = 'report error: ' + failures.join('\n');
      document.body.setAttribute('data-rendered', 'error');
    } else {
      document.body.setAttribute('data-rendered', 'ok');
      // Milliseconds from navigation to the last chart drawn (the page's responsiveness).
      if (window.performance) document.body.setAttribute('data-render-ms', Math.round(performance.now()));
    }
  }
  // "report.html#probe=tooltip": once drawn, the pointer is moved over the first mark of
  // each chart and the tooltip Vega gives it is copied into the section's data-tooltip
  // (the tests read it; a person hovering sees the same text).
  function probeTooltips() {
    if (!/probe=[a-z+]*tooltip/.test(location.hash || '')) return;
    Array.prototype.forEach.call(document.querySelectorAll('section.chart'), function (sec) {
      var mark = sec.querySelector('.role-mark path, .role-mark rect');
      if (!mark) return;
      var box = mark.getBoundingClientRect(), x = box.left + box.width / 2, y = box.top + box.height / 2;
      ['pointerover', 'pointermove', 'mouseover', 'mousemove'].forEach(function (type) {
        mark.dispatchEvent(new MouseEvent(type, { bubbles: true, clientX: x, clientY: y }));
      });
      var tipped = sec.querySelector('[title]');
      sec.setAttribute('data-tooltip', tipped ? tipped.getAttribute('title').replace(/\n/g, '; ') : '');
    });
  }

  // "report.html#probe=zoom" (or probe=tooltip+zoom): one wheel step over the middle of each zoomable chart; the
  // section's data-zoom gets the axis domain before and after (the tests compare them).
  function probeZoom() {
    if (!/probe=[a-z+]*zoom/.test(location.hash || '')) return;
    [['heatmap', 'ydom'], ['grid', 'xdom'], ['timeline', 'xdom']].forEach(function (z) {
      var view = views[z[0]], sec = el(z[0]), target = sec && sec.querySelector('.role-mark path, .role-mark rect, canvas');
      if (!view || !target) return;
      var before = view.signal(z[1]).slice(), box = target.getBoundingClientRect();
      target.dispatchEvent(new WheelEvent('wheel', { bubbles: true, cancelable: true, deltaY: -300, deltaMode: 0,
        clientX: box.left + box.width / 2, clientY: box.top + box.height / 2 }));
      view.runAsync().then(function () {
        var after = view.signal(z[1]);
        sec.setAttribute('data-zoom', before.map(function (v) { return +v.toFixed(3); }).join(',') + ' -> ' +
                         after.map(function (v) { return +v.toFixed(3); }).join(','));
      });
    });
  }

  Promise.all(pending).then(function () { finish(); probeTooltips(); probeZoom(); },
                            function (e) { finish([String(e && e.stack ? e.stack : e)]); });
})();
