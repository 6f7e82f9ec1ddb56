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
}
