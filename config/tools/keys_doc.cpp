// Prints docs/keys.md, the reference of every configuration key, from the key tables
// (schedules/job_keys.cpp). The test `keys_doc` fails when the committed file differs;
// refresh it with: build/config/twinscale_keys_doc > docs/keys.md
#include <iostream>

#include "common/key_reference.hpp"
#include "schedules/job_keys.hpp"

int main() {
  namespace s = twinscale::schedules;
  std::cout << "# Configuration keys\n\n"
               "Generated from the key tables by `twinscale_keys_doc` (config/tools/keys_doc.cpp); do not edit:\n"
               "run `build/config/twinscale_keys_doc > docs/keys.md` after changing a table. Every key below\n"
               "is read from files as written here and may be changed on the command line with\n"
               "`--set KEY=VALUE` (e.g. `--set parallel.tp=4`).\n\n";
  std::cout << twinscale::key_reference_markdown(
      "Job files",
      "A job file (TOML) names a model, its parallelism, schedule options and the cluster it runs on "
      "(presets: presets/jobs/).",
      s::job_sections(), s::job_keys());
  return 0;
}
