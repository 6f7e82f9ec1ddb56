// Links Vega's UMD modules (Debian's libjs-vega ships each separately) into one `vega`
// object as Vega's own bundle does: each module is defined with a CommonJS-style
// module/exports/require, then the transforms are registered with the dataflow.
var tsVegaModules = {};
function tsVegaDefine(name, factory) {
  var module = { exports: {} };
  factory(module, module.exports, function (dep) {
    if (dep === 'vega-selections') dep = 'vega-selection'; // Debian's file name
    var m = tsVegaModules[dep];
    if (!m) throw new Error('vega module ' + dep + ' (needed by ' + name + ') is not embedded');
    return m;
  });
  tsVegaModules[name] = module.exports;
}
function tsVegaLink() {
  var m = tsVegaModules, registry = m['vega-dataflow'].transforms;
  ['vega-transforms', 'vega-view-transforms', 'vega-encode'].forEach(function (name) {
    Object.keys(m[name]).forEach(function (k) { if (k !== '__esModule') registry[k] = m[name][k]; });
  });
  return { parse: m['vega-parser'].parse, View: m['vega-view'].View, version: '5 (Debian libjs-vega)' };
}
