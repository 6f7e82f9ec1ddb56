// Record tests (shipped clusters, fault plans, recovery files): each file's spec dumped field
// by field and compared with a record written by an earlier reader, so a new reader is
// checked to give identical specs. The record is "### PATH" then PATH's dump, per file.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <catch2/catch.hpp>

namespace twinscale::test {

/// A spec's fields as "key = value" lines, numbers to 17 digits (what the record holds).
struct Dump {
  std::string out;
  void add(const std::string& key, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out += key + " = " + buf + "\n";
  }
  void add(const std::string& key, int64_t v) { out += key + " = " + std::to_string(v) + "\n"; }
  void add(const std::string& key, uint64_t v) { out += key + " = " + std::to_string(v) + "\n"; }
  void add(const std::string& key, bool v) { out += key + " = " + (v ? "true" : "false") + "\n"; }
  void add(const std::string& key, const std::string& v) { out += key + " = \"" + v + "\"\n"; }
  template <size_t N>
  void add(const std::string& key, const std::array<double, N>& v) {
    for (size_t i = 0; i < N; ++i) add(key + "[" + std::to_string(i) + "]", v[i]);
  }
};

/// The record at `path`: file → its recorded dump.
inline std::map<std::string, std::string> read_record(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::map<std::string, std::string> out;
  std::string line, at;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0)
      at = line.substr(4);
    else
      out[at] += line + "\n";
  }
  return out;
}

/// Checks `now` (file → dump) against the record at `record`, file by file; with the
/// environment variable `write_env` set, first writes `now` as a record to the file it names.
inline void check_against_record(const std::map<std::string, std::string>& now, const std::filesystem::path& record,
                                 const char* write_env) {
  if (const char* out = std::getenv(write_env)) {
    std::ofstream w(out);
    for (const auto& [f, text] : now) w << "### " << f << "\n" << text;
  }
  const auto recorded = read_record(record);
  CHECK(recorded.size() == now.size());
  for (const auto& [f, text] : now) {
    INFO(f);
    REQUIRE(recorded.count(f) == 1);
    CHECK(text == recorded.at(f));
  }
}

} // namespace twinscale::test
