// Prints docs/keys.md, the reference of every configuration key, from the key tables
// (schedules/job_keys.cpp, config/cluster_keys.cpp, config/gpu_keys.cpp, config/fault_plan_keys.cpp,
// config/recovery_keys.cpp, study/study_keys.cpp). The test `keys_doc` fails when the committed file differs;
// refresh it with: build/config/twinscale_keys_doc > docs/keys.md
#include <iostream>

#include "common/key_reference.hpp"
#include "config/cluster_keys.hpp"
#include "config/fault_plan_keys.hpp"
#include "config/gpu_keys.hpp"
#include "config/recovery_keys.hpp"
#include "schedules/job_keys.hpp"
#include "study/study_keys.hpp"

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
  std::cout << "\n"
            << twinscale::key_reference_markdown(
                   "Cluster files",
                   "A cluster file (TOML) describes the GPUs, servers, NICs, switches and Clos fabric, and "
                   "optionally the network's congestion control (presets: presets/clusters/; the hardware "
                   "catalogue: presets/hardware/). On the command line its keys take the prefix `cluster.` "
                   "(`--set cluster.server.nics=4`).",
                   twinscale::config::cluster_sections(), twinscale::config::cluster_keys(),
                   twinscale::config::cluster_file_defaults());
  std::cout << "\n"
            << twinscale::key_reference_markdown(
                   "GPU catalogue",
                   "A GPU of the hardware catalogue (presets/hardware/gpus.toml, one [NAME] table per model, each "
                   "figure with its source) and the GPU tables of a cluster file ([gpu], [[gpu_groups]]), which "
                   "override the model's figures. NCCL's tuner figures per GPU generation are "
                   "presets/hardware/nccl.toml (its keys are documented at its top).",
                   twinscale::config::gpu_sections(), twinscale::config::gpu_keys());
  std::cout << "\n"
            << twinscale::key_reference_markdown(
                   "Fault plan files",
                   "A fault plan (TOML, `--faults plan.toml`) lists explicit events at simulated times (a link "
                   "flaps, a GPU slows down, a server crashes…) and the retransmit parameters that decide "
                   "whether a link outage stalls or fails the job (example: examples/plan.toml). These keys "
                   "are not taken by `--set`.",
                   twinscale::config::fault_plan_sections(), twinscale::config::fault_plan_keys());
  std::cout << "\n"
            << twinscale::key_reference_markdown(
                   "Recovery files",
                   "A recovery file (TOML, `--recovery NAME|FILE`) describes one operating practice: how "
                   "failures are detected, diagnosed and repaired, how the job restarts and how it "
                   "checkpoints (presets: presets/recovery/). Every key is optional. These keys are not taken "
                   "by `--set`.",
                   twinscale::config::recovery_sections(), twinscale::config::recovery_keys());
  std::cout << "\n" << twinscale::study::study_keys_markdown();
  return 0;
}
