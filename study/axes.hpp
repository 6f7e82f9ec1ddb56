// The axes a study varies ([axes] of a study file): the short names (tp, nics, placement,
// …) and "job.KEY" / "cluster.KEY" for a key of the job or cluster key table
// (schedules/job_keys.cpp, config/cluster_keys.cpp). A short name that is a table key is
// an alias of it (tp is job.parallel.tp): its type, range, value names and setter are the
// table's, and the long spelling is stored under the short name. The other short axes
// (job, cluster, gpus, recompute, placement, seed, oversubscription and the campaign's)
// are the study's own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "config/cluster_keys.hpp"
#include "schedules/job_keys.hpp"
#include "study/study_spec.hpp"

namespace twinscale::study {

/// What an axis changes: the study's own setting, the point's job or its cluster variant.
enum class AxisTarget : uint8_t { Study, Job, Cluster };

struct AxisDef {
  std::string name; ///< as points, stores and reports name it: "tp", "job.model.layers"
  AxisTarget target = AxisTarget::Study;
  const schedules::JobKey* job_key = nullptr;      ///< Job: the key it sets
  const config::ClusterKey* cluster_key = nullptr; ///< Cluster: the key it sets
  /// Cluster: a hardware catalogue model key (gpu.model, server.nic, switch.model), made to
  /// the cluster document before it is read, so that the model's figures come with it.
  bool in_document = false;
  /// The valid values (type, range, value names, unit) and the one-line doc; for an axis
  /// of a table key, copied from its entry.
  KeyField<StudySpec> values;
  size_t rank = 0; ///< canonical order: short axes, then job keys, then cluster keys (table order)
};

/// The short axes, in canonical order.
const std::vector<AxisDef>& short_axes();
/// The names of the short axes, in canonical order.
std::vector<std::string> short_axis_names();

/// The axis named `name` as written in [axes] ("tp", "job.parallel.tp" → tp,
/// "cluster.switch.radix"); nullopt with `why` saying what is valid when it is none.
std::optional<AxisDef> find_axis(std::string_view name, std::string& why);
/// The axis a point or store names (one find_axis gave); a std::logic_error when none.
const AxisDef& axis_def(const std::string& name);

/// "axes.tp", "axes.\"job.parallel.cp\"": the axis written as `written`, for messages.
std::string axis_key(const std::string& written);

/// The values of axis `d` written as `written` in [axes], each checked against its type,
/// range and value names; ConfigError naming `file` and the axis otherwise (also for an
/// empty array or a repeated value). Job and cluster files resolve against `file`.
Axis read_axis(const AxisDef& d, const std::string& written, const toml::node& node, const std::string& file);

} // namespace twinscale::study
