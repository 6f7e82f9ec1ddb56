// The HTML report's embedded assets (report_assets.cpp, generated at build time by
// report/embed_assets.cmake from report/*.css, report/*.js and Debian's libjs-vega).
#pragma once

namespace twinscale::diagnose::report_assets {

/// Whether the Vega charting library was found at build time (kChartLibrary non-empty).
extern const bool kChartLibraryFound;
/// The folder it was read from (empty when not found).
extern const char* const kChartLibrarySource;
/// The page's style sheet and its script (the charts' specifications).
extern const char* const kCss;
extern const char* const kScript;
/// Vega's modules and the loader that links them into a global `vega`.
extern const char* const kChartLibrary;

} // namespace twinscale::diagnose::report_assets
