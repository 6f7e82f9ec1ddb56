// The checked TOML reader: errors name the file and the full key; a missing required key
// next to a near-miss spelling points at the misspelling.
#include <catch2/catch.hpp>

#include "config/error.hpp"
#include "config/toml_reader.hpp"

using namespace twinscale;

TEST_CASE("a missing key with a near-miss spelling present names the misspelling", "[config][bad-input]") {
  const toml::table t = config::parse_toml("[model]\nlayers = 4\nhiden = 256\n", "m.toml");
  config::TableReader top(t, "m.toml");
  config::TableReader model = top.table("model");
  CHECK(model.get_int("layers") == 4);
  CHECK_THROWS_WITH(model.get_int("hidden"), Catch::Contains("m.toml: key 'model.hidden' is missing") &&
                                                 Catch::Contains("found 'model.hiden' instead"));
}

TEST_CASE("a missing key without a near miss says only what is required", "[config][bad-input]") {
  const toml::table t = config::parse_toml("x = 1\n", "a.toml");
  config::TableReader r(t, "a.toml");
  CHECK_THROWS_WITH(r.get_string("cluster"), Catch::Equals("a.toml: key 'cluster' is missing (a string is required)"));
}

TEST_CASE("range and type errors name the key and the valid range", "[config][bad-input]") {
  const toml::table t = config::parse_toml("tp = 0\nname = 3\n", "b.toml");
  config::TableReader r(t, "b.toml");
  CHECK_THROWS_WITH(r.get_int("tp", std::nullopt, 1), Catch::Contains("key 'tp' is 0; must be in [1, "));
  CHECK_THROWS_WITH(r.get_string("name"), Catch::Contains("key 'name' must be a string, got an integer"));
  // a key that must be above zero says so, not "[1e-300, …]" (the tables' smallest bound)
  const toml::table u = config::parse_toml("ratio = 0\n", "c.toml");
  config::TableReader q(u, "c.toml");
  CHECK_THROWS_WITH(q.get_double("ratio", std::nullopt, 1e-300, 4),
                    Catch::Equals("c.toml: key 'ratio' is 0; must be in (0, 4]"));
}

TEST_CASE("a 50,000-segment dotted table header or key is refused before parsing, naming the limit",
          "[config][bad-input]") {
  std::string deep = "a";
  for (int i = 0; i < 50000; ++i) deep += ".a";
  CHECK_THROWS_WITH(config::parse_toml("[" + deep + "]\nx = 1\n", "deep.toml"),
                    Catch::Contains("deep.toml:1: TOML nesting of") && Catch::Contains("limit of 64"));
  CHECK_THROWS_WITH(config::parse_toml("[t]\n" + deep + " = 1\n", "key.toml"),
                    Catch::Contains("key.toml:2: TOML nesting of"));
  CHECK_THROWS_WITH(config::parse_toml("x = {" + deep + " = 1}\n", "inline.toml"),
                    Catch::Contains("inline.toml:1: TOML nesting"));
  std::string arrays(5000, '[');
  CHECK_THROWS_WITH(config::parse_toml("x = " + arrays + "\n", "arr.toml"),
                    Catch::Contains("arr.toml:1: TOML nesting"));
}

TEST_CASE("nesting below the limit parses, and dots inside strings and numbers do not count", "[config]") {
  std::string key = "a";
  for (int i = 0; i < 40; ++i) key += ".b";
  const std::string dotted_string = "\"" + std::string(500, '.') + "\"";
  const toml::table t = config::parse_toml("[" + key + "]\nx = " + dotted_string + "\ny = 1.5\n[c]\n\"q.q\" = 'a.b'\n" +
                                               "z = \"\"\"\n" + std::string(200, '.') + "\n\"\"\"\n",
                                           "ok.toml");
  CHECK(t.contains("a"));
  CHECK(t["c"]["q.q"].value_or(std::string()) == "a.b");
}
