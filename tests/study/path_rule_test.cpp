// The path rule of every document that names another (config::resolve_document_reference)
// applied to study files: base.job, base.cluster, axes.job, axes.cluster, campaign.faults
// and campaign.recovery name a preset or a file in the study file's folder; a path that
// leads out of it ("../../x.toml", an absolute path, /etc/shadow) is refused naming the
// file and the key, before anything is opened.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "config/error.hpp"
#include "study/study_file.hpp"
#include "tests/scratch.hpp"

namespace fs = std::filesystem;
namespace study = twinscale::study;
using Catch::Matchers::Contains;

namespace {

fs::path folder() {
  static const fs::path d = [] {
    const fs::path p = twinscale::test::scratch_dir("path-rule");
    fs::create_directories(p / "studies");
    std::ofstream(p / "outside.toml") << "name = \"x\"\n";         // a file next to, not in, the folder
    std::ofstream(p / "studies" / "job.toml") << "name = \"j\"\n"; // a file inside it
    return p;
  }();
  return d;
}

std::string study_file() { return (folder() / "studies" / "s.toml").string(); }

std::string with_base(const std::string& base, const std::string& tail = "") {
  return "name = \"p\"\n[base]\n" + base + "\n[axes]\ntp = [1]\n" + tail;
}

} // namespace

TEST_CASE("path rule: study files may not name files outside their folder", "[study][path-rule]") {
  const std::string outside = (folder() / "outside.toml").string();
  struct Case {
    std::string text, key;
  };
  const Case cases[] = {
      {with_base("job = \"../outside.toml\""), "base.job"},
      {with_base("job = \"../../../../../../etc/shadow\""), "base.job"},
      {with_base("job = \"" + outside + "\""), "base.job"},
      {with_base("job = \"tiny-1f1b\"\ncluster = \"/etc/passwd\""), "base.cluster"},
      {with_base("job = \"tiny-1f1b\"", "cluster = [\"../outside.toml\"]\n"), "axes.cluster[0]"},
      {with_base("job = \"tiny-1f1b\"", "job = [\"tiny-1f1b\", \"/etc/passwd\"]\n"), "axes.job[1]"},
      {with_base("job = \"tiny-1f1b\"", "[campaign]\nfaults = \"../outside.toml\"\n"), "campaign.faults"},
      {with_base("job = \"tiny-1f1b\"", "[campaign]\nrecovery = \"/etc/shadow\"\n"), "campaign.recovery"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK_THROWS_WITH(study::parse_study(c.text, study_file()), Contains(study_file()) &&
                                                                    Contains("key '" + c.key + "'") &&
                                                                    Contains("points outside the document's folder"));
  }
}

TEST_CASE("path rule: a study file may name presets and files in its own folder", "[study][path-rule]") {
  const study::StudySpec s =
      study::parse_study(with_base("job = \"job.toml\"\ncluster = \"tiny-2tier\""), study_file());
  CHECK(s.job == (folder() / "studies" / "job.toml").string());
  CHECK(s.cluster == "tiny-2tier");
}
