#include "diagnose/html_report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace twinscale::diagnose {

namespace {

using nlohmann::json;

/// Rounds to 9 significant digits so the page's bytes do not depend on float printing.
double r9(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return std::strtod(buf, nullptr);
}

std::vector<int64_t> pick_timeline_ranks(const RunData& d, const Diagnosis& diag, const ReportOptions& o) {
  std::set<int64_t> chosen;
  for (int64_t r : o.timeline_ranks)
    if (r >= 0 && r < static_cast<int64_t>(d.ranks.size())) chosen.insert(r);
  if (chosen.empty() && !d.ranks.empty()) {
    chosen.insert(0);
    for (const Finding& f : diag.findings)
      for (int64_t r : f.ranks)
        if (chosen.size() < o.max_timeline_ranks) chosen.insert(r);
  }
  std::vector<int64_t> v(chosen.begin(), chosen.end());
  if (v.size() > o.max_timeline_ranks) v.resize(o.max_timeline_ranks);
  return v;
}

json payload(const RunData& d, const Diagnosis& diag, const ReportOptions& o) {
  json j;
  j["title"] = o.title;
  j["source"] = d.source;
  j["ranks"] = d.ranks.size();
  j["steps"] = d.steps();
  j["phases"] = d.phases;
  j["own_time"] = d.own_time;
  j["layout"] = d.layout ? json{{"tp", d.layout->tp}, {"pp", d.layout->pp}, {"dp", d.layout->dp}} : json();
  json phase_s = json::array(), excess = json::array(), host = json::array();
  for (const RankSeries& r : d.ranks) {
    json row = json::array();
    for (size_t p = 0; p < d.phases.size(); ++p) {
      double sum = 0;
      for (const auto& step : r.step_phase_s) sum += step[p];
      row.push_back(r9(r.step_phase_s.empty() ? 0 : sum / static_cast<double>(r.step_phase_s.size())));
    }
    phase_s.push_back(std::move(row));
    host.push_back(r.host);
  }
  json phase_excess = json::array();
  for (const RankScore& s : diag.scores) {
    excess.push_back(r9(s.excess));
    json row = json::array();
    for (double x : s.phase_excess) row.push_back(r9(x));
    phase_excess.push_back(std::move(row));
  }
  j["phase_excess"] = std::move(phase_excess);
  j["phase_s"] = std::move(phase_s);
  j["excess"] = std::move(excess);
  j["host"] = std::move(host);
  j["hosts"] = d.hosts;
  j["notes"] = diag.notes;
  j["findings"] = json::array();
  for (const Finding& f : diag.findings)
    j["findings"].push_back({{"kind", std::string(to_string(f.kind))},
                             {"ranks", f.ranks},
                             {"host", f.host},
                             {"excess", r9(f.excess)},
                             {"score", r9(f.score)},
                             {"detail", f.detail}});
  // Timeline: every op of the chosen ranks (traces).
  const std::vector<int64_t> lanes = pick_timeline_ranks(d, diag, o);
  const std::set<int64_t> lane_set(lanes.begin(), lanes.end());
  std::map<std::string, int64_t> name_index;
  json names = json::array(), events = json::array();
  // A binary trace's events are not held: the chosen ranks' blocks are read back.
  const std::vector<schedules::TraceRecord> lane_records =
      d.records.empty() && !d.binary_trace.empty() ? schedules::BinaryTraceReader(d.binary_trace).records(lanes)
                                                   : std::vector<schedules::TraceRecord>{};
  for (const schedules::TraceRecord& r : d.records.empty() ? lane_records : d.records) {
    if (!lane_set.count(r.rank)) continue;
    const auto [it, fresh] = name_index.try_emplace(r.name, static_cast<int64_t>(names.size()));
    if (fresh) names.push_back(r.name);
    events.push_back({r.rank, static_cast<int>(r.stream), r9(r.start_s), r9(r.duration_s), it->second});
  }
  json states = json::array();
  for (const auto& [name, seconds] : o.campaign_time_by_state_s) states.push_back({name, r9(seconds)});
  j["campaign"] = {{"source", o.campaign_source}, {"ettr", r9(o.campaign_ettr)}, {"states", std::move(states)}};
  j["timeline"] = {{"ranks", lanes}, {"names", std::move(names)}, {"events", std::move(events)}};
  json links = json::array(); // [name, direction, kind, busy fraction, rate fraction]
  for (const LinkUse& u : d.links)
    links.push_back({u.name, u.direction, u.kind, r9(u.busy_fraction), r9(u.rate_fraction)});
  j["links"] = std::move(links);
  json slow = json::array();
  for (const Finding& f : diag.findings)
    if (!f.link.empty()) slow.push_back(f.link);
  j["slow_links"] = std::move(slow);
  return j;
}

const char* kStyle = R"(
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:2px 6px;font-size:12px;text-align:left}
.note{color:#666;font-size:12px}canvas{border:1px solid #ccc;image-rendering:pixelated}
#errors{color:#b00;white-space:pre}.legend{font-size:11px;color:#444}
)";

const char* kScript = R"JS(
(function () {
  'use strict';
  function el(id) { return document.getElementById(id); }
  function add(parent, tag, text) { var e = document.createElement(tag); if (text !== undefined) e.textContent = text; parent.appendChild(e); return e; }
  function pct(x) { return (100 * x).toFixed(1) + ' %'; }
  // Slowness colour: white at 0, red at +10 % and beyond, blue when faster.
  function slowColour(x) {
    var t = Math.max(-1, Math.min(1, x / 0.10));
    if (t >= 0) { var g = Math.round(255 * (1 - t)); return 'rgb(255,' + g + ',' + g + ')'; }
    var v = Math.round(255 * (1 + t)); return 'rgb(' + v + ',' + v + ',255)';
  }
  try {
    var D = JSON.parse(el('run-data').textContent);
    var s = el('summary');
    add(s, 'p', D.source + ': ' + D.ranks + ' ranks, ' + D.steps + ' step(s), ' + D.findings.length + ' finding(s)' +
        (D.layout ? ', TP ' + D.layout.tp + ' × PP ' + D.layout.pp + ' × DP ' + D.layout.dp : ''));
    D.notes.forEach(function (n) { add(s, 'p', 'note: ' + n).className = 'note'; });

    // Breakdown: mean seconds per phase over ranks (per step).
    var b = el('breakdown'), mean = D.phases.map(function () { return 0; });
    D.phase_s.forEach(function (row) { row.forEach(function (v, p) { mean[p] += v / Math.max(1, D.ranks); }); });
    var total = mean.reduce(function (a, v) { return a + v; }, 0) || 1;
    var ns = 'http://www.w3.org/2000/svg', svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('width', 640); svg.setAttribute('height', 24 * mean.length + 8);
    var colours = ['#4e79a7', '#f28e2b', '#76b7b2', '#e15759', '#59a14f', '#edc948'];
    mean.forEach(function (v, p) {
      var r = document.createElementNS(ns, 'rect');
      r.setAttribute('x', 120); r.setAttribute('y', 4 + 24 * p); r.setAttribute('height', 18);
      r.setAttribute('width', Math.max(1, 400 * v / total)); r.setAttribute('fill', colours[p % colours.length]);
      svg.appendChild(r);
      var t = document.createElementNS(ns, 'text');
      t.setAttribute('x', 0); t.setAttribute('y', 18 + 24 * p); t.textContent = D.phases[p];
      svg.appendChild(t);
      var u = document.createElementNS(ns, 'text');
      u.setAttribute('x', 126 + 400 * v / total); u.setAttribute('y', 18 + 24 * p);
      u.textContent = v.toFixed(4) + ' s (' + pct(v / total) + ')';
      svg.appendChild(u);
    });
    b.appendChild(svg);

    // Heat-map: rank (rows, binned to ≤ 512) × phase, coloured by the phase's time
    // relative to the median of the rank's peers (same program), worst rank of each bin.
    var h = el('heatmap'), rows = Math.min(512, D.ranks), per = Math.ceil(D.ranks / Math.max(1, rows));
    var nrows = Math.max(1, Math.ceil(D.ranks / per)), px = Math.max(1, Math.floor(256 / nrows));
    var cw = 60, c = add(h, 'canvas'); c.width = cw * D.phases.length; c.height = nrows * px;
    var g = c.getContext('2d');
    for (var r0 = 0, row = 0; r0 < D.ranks; r0 += per, ++row)
      for (var p = 0; p < D.phases.length; ++p) {
        var worst = 0;
        for (var r = r0; r < Math.min(D.ranks, r0 + per); ++r) {
          var x = (D.phase_excess[r] || [])[p] || 0;
          if (Math.abs(x) > Math.abs(worst)) worst = x;
        }
        g.fillStyle = slowColour(worst); g.fillRect(cw * p, row * px, cw, px);
      }
    add(h, 'p', 'columns: ' + D.phases.join(', ') + '; rows: ranks ' + (per > 1 ? '(' + per + ' per row, worst shown)' : '0..' + (D.ranks - 1)) +
        '; colour: the phase against the median of the rank\'s peers (white = median, red = ≥ 10 % slower, blue = faster)').className = 'legend';

    // TP × PP × DP grid: one cell per rank, rows = pipeline stages, columns = DP × TP.
    var gr = el('grid');
    if (D.layout) {
      var L = D.layout, cols = L.dp * L.tp, cell = Math.max(1, Math.min(12, Math.floor(1200 / cols)));
      var gc = add(gr, 'canvas'); gc.width = cols * cell; gc.height = L.pp * Math.max(cell, 16);
      var gg = gc.getContext('2d');
      for (var rank = 0; rank < D.ranks; ++rank) {
        var tp = rank % L.tp, dp = Math.floor(rank / L.tp) % L.dp, pp = Math.floor(rank / (L.tp * L.dp));
        gg.fillStyle = slowColour(D.excess[rank] || 0);
        gg.fillRect((dp * L.tp + tp) * cell, pp * Math.max(cell, 16), cell, Math.max(cell, 16));
      }
      add(gr, 'p', 'rows: pipeline stage 0..' + (L.pp - 1) + '; columns: DP rank × TP rank; colour: own time vs peers').className = 'legend';
    } else {
      add(gr, 'p', 'layout unknown (give --layout TPxPPxDP)').className = 'note';
    }

    // Timeline of chosen ranks: one lane per rank and stream.
    var tl = el('timeline'), T = D.timeline;
    if (T.events.length) {
      var t0 = Infinity, t1 = -Infinity;
      T.events.forEach(function (e) { t0 = Math.min(t0, e[2]); t1 = Math.max(t1, e[2] + e[3]); });
      var lane = 10, W = 1100, streams = 6, tc = add(tl, 'canvas');
      tc.width = W + 80; tc.height = T.ranks.length * streams * lane + 4;
      var tg = tc.getContext('2d'), idx = {};
      T.ranks.forEach(function (r, i) { idx[r] = i; tg.fillStyle = '#000'; tg.font = '10px sans-serif';
        tg.fillText('rank ' + r, 2, i * streams * lane + 10); });
      T.events.forEach(function (e) {
        var y = (idx[e[0]] * streams + e[1]) * lane, x = 80 + W * (e[2] - t0) / Math.max(1e-12, t1 - t0);
        tg.fillStyle = colours[e[1] % colours.length];
        tg.fillRect(x, y + 1, Math.max(1, W * e[3] / Math.max(1e-12, t1 - t0)), lane - 2);
      });
      add(tl, 'p', 'ranks ' + T.ranks.join(', ') + '; lanes per rank: compute, tp, dp, pp send, pp recv, data; ' +
          (t1 - t0).toFixed(4) + ' s').className = 'legend';
    } else {
      add(tl, 'p', 'no per-op events (a per-rank CSV has none; give a trace)').className = 'note';
    }

    // Fabric link utilisation (flow mode, --links): per link kind, one cell per link
    // direction, coloured by the share of the run it was busy; slow links outlined.
    var lk = el('links'), L = D.links;
    if (L.length) {
      lk.textContent = '';
      var kinds = {}, order = [], slowSet = {};
      D.slow_links.forEach(function (n) { slowSet[n] = true; });
      L.forEach(function (u) { if (!kinds[u[2]]) { kinds[u[2]] = []; order.push(u[2]); } kinds[u[2]].push(u); });
      order.forEach(function (k) {
        var us = kinds[k], per = 128, cell = 7, lc = add(lk, 'canvas');
        lc.width = per * cell; lc.height = Math.ceil(us.length / per) * cell;
        var lg = lc.getContext('2d'), sum = 0, hi = 0;
        us.forEach(function (u, i) {
          var v = Math.max(0, Math.min(1, u[3])), x = (i % per) * cell, y = Math.floor(i / per) * cell;
          sum += v; hi = Math.max(hi, v);
          lg.fillStyle = 'rgb(255,' + Math.round(255 * (1 - v)) + ',' + Math.round(255 * (1 - v)) + ')';
          lg.fillRect(x, y, cell - 1, cell - 1);
          if (slowSet[u[0]]) { lg.strokeStyle = '#00f'; lg.strokeRect(x + 0.5, y + 0.5, cell - 2, cell - 2); }
        });
        add(lk, 'p', k + ': ' + us.length + ' link directions, busy ' + pct(sum / us.length) + ' of the run on ' +
            'average, at most ' + pct(hi) + ' (white idle, red always busy; blue: a slow link)').className = 'legend';
      });
    }

    // Campaign: mean time by state, as shares of the wall time.
    var cp = el('campaign'), C = D.campaign;
    if (C.states.length) {
      var wall = C.states.reduce(function (a, st) { return a + st[1]; }, 0) || 1;
      var cs = document.createElementNS(ns, 'svg');
      cs.setAttribute('width', 700); cs.setAttribute('height', 22 * C.states.length + 8);
      C.states.forEach(function (st, i) {
        var r = document.createElementNS(ns, 'rect');
        r.setAttribute('x', 170); r.setAttribute('y', 4 + 22 * i); r.setAttribute('height', 16);
        r.setAttribute('width', Math.max(1, 380 * st[1] / wall)); r.setAttribute('fill', colours[i % colours.length]);
        cs.appendChild(r);
        var t = document.createElementNS(ns, 'text');
        t.setAttribute('x', 0); t.setAttribute('y', 17 + 22 * i); t.textContent = st[0]; cs.appendChild(t);
        var u = document.createElementNS(ns, 'text');
        u.setAttribute('x', 176 + 380 * st[1] / wall); u.setAttribute('y', 17 + 22 * i);
        u.textContent = (st[1] / 86400).toFixed(2) + ' d (' + pct(st[1] / wall) + ')'; cs.appendChild(u);
      });
      add(cp, 'p', C.source + (C.ettr >= 0 ? ': ETTR ' + C.ettr.toFixed(4) : ''));
      cp.appendChild(cs);
    } else {
      add(cp, 'p', 'no campaign given (report --campaign FILE, from twinscale campaign --json)').className = 'note';
    }

    // Findings.
    var f = el('findings');
    if (!D.findings.length) add(f, 'p', 'nothing found');
    else {
      var tb = add(f, 'table'), hr = add(tb, 'tr');
      ['kind', 'ranks', 'host', 'excess', 'score', 'detail'].forEach(function (k) { add(hr, 'th', k); });
      D.findings.forEach(function (x) {
        var tr = add(tb, 'tr');
        add(tr, 'td', x.kind); add(tr, 'td', x.ranks.slice(0, 16).join(',') + (x.ranks.length > 16 ? ',…' : ''));
        add(tr, 'td', x.host || '-'); add(tr, 'td', pct(x.excess)); add(tr, 'td', x.score.toFixed(2)); add(tr, 'td', x.detail);
      });
    }
    document.body.setAttribute('data-rendered', 'ok');
  } catch (e) {
    el('errors').textContent = 'report error: ' + (e && e.stack ? e.stack : e);
    document.body.setAttribute('data-rendered', 'error');
  }
})();
)JS";

std::string escape_html(const std::string& s) {
  std::string o;
  for (char c : s) switch (c) {
    case '<': o += "&lt;"; break;
    case '>': o += "&gt;"; break;
    case '&': o += "&amp;"; break;
    case '"': o += "&quot;"; break;
    default: o += c;
    }
  return o;
}

} // namespace

std::string html_report(const RunData& d, const Diagnosis& diag, const ReportOptions& o) {
  std::string data = payload(d, diag, o).dump();
  // Inside <script>, "</" would end the element: JSON allows "<\/".
  for (size_t at = data.find("</"); at != std::string::npos; at = data.find("</", at + 3)) data.replace(at, 2, "<\\/");
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" + escape_html(o.title) +
       "</title>\n<style>" + kStyle + "</style></head>\n<body>\n<h1>" + escape_html(o.title) + "</h1>\n";
  h += "<div id=\"errors\"></div>\n<section id=\"summary\"></section>\n";
  h += "<h2>Time by phase (mean per rank and step)</h2><section id=\"breakdown\"></section>\n";
  h += "<h2>Rank × phase</h2><section id=\"heatmap\"></section>\n";
  h += "<h2>TP × PP × DP grid</h2><section id=\"grid\"></section>\n";
  h += "<h2>Timeline</h2><section id=\"timeline\"></section>\n";
  h += "<h2>Fabric link utilisation</h2><section id=\"links\"><p class=\"note\">no link loads given (report "
       "--links FILE, from a flow-mode simulate --link-csv)</p></section>\n";
  h += "<h2>Campaign: time by state</h2><section id=\"campaign\"></section>\n";
  h += "<h2>Diagnosis</h2><section id=\"findings\"></section>\n";
  h += "<script type=\"application/json\" id=\"run-data\">" + data + "</script>\n";
  h += std::string("<script>") + kScript + "</script>\n</body></html>\n";
  return h;
}

} // namespace twinscale::diagnose
