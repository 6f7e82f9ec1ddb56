// What the key tables of fault plans and recovery files share (config/fault_plan_keys.cpp,
// config/recovery_keys.cpp): the [retransmit] keys (NCCL's RDMA retransmission,
// faults::RetransmitPolicy), described once and added to each file's table, and the
// reading both readers do through their tables.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/key_schema.hpp"
#include "config/key_table_reader.hpp"
#include "config/toml_reader.hpp"
#include "faults/fault_plan.hpp"

namespace twinscale::config {

/// Appends the [retransmit] keys of a spec whose RetransmitPolicy is reached through Ms.
template <class Spec, auto... Ms>
void add_retransmit_keys(std::vector<KeyField<Spec>>& k) {
  using R = faults::RetransmitPolicy;
  KeyField<Spec> ib;
  ib.key = "retransmit.ib_timeout";
  ib.type = KeyType::Integer;
  k.push_back(ib.range(1, 31)
                  .read_by_hand()
                  .default_is("— (timeout_per_retry_s applies)")
                  .says("NCCL_IB_TIMEOUT: the wait per retry is 4.096 µs · 2^ib_timeout (InfiniBand local ACK "
                        "timeout encoding); give it or timeout_per_retry_s, not both"));
  k.push_back(member<Spec, Ms..., &R::timeout_per_retry_s>("retransmit.timeout_per_retry_s")
                  .range_number(1e-9, 1e300)
                  .in("s")
                  .says("the NIC's wait for an acknowledgement before it retries; default 4.096 µs · 2^14 "
                        "(NCCL_IB_TIMEOUT = 14, NCCL's default)"));
  k.push_back(member<Spec, Ms..., &R::retries>("retransmit.retries")
                  .range(1, 1000)
                  .says("NCCL_IB_RETRY_CNT (NCCL's default 7): retries before the queue pair breaks and the "
                        "collective fails; an outage longer than timeout × retries fails the job"));
}

/// The key named `key` of `keys`; an internal error (std::logic_error) when the table lacks it.
template <class Spec>
const KeyField<Spec>& key_in(const std::vector<KeyField<Spec>>& keys, std::string_view key) {
  for (const KeyField<Spec>& f : keys)
    if (f.key == key) return f;
  throw std::logic_error("no key '" + std::string(key) + "' in its key table");
}

/// read_key, except that a number that must be > 0 (num_min = kAboveZero) is refused
/// as "is 0; must be > 0 bytes/s" rather than with the bounds of its range.
template <class Spec>
void read_file_key(TableReader& t, const KeyField<Spec>& f, Spec& spec) {
  if (f.type != KeyType::Number || f.num_min != kAboveZero) return read_key(t, f, spec);
  const std::string_view leaf = key_leaf(f.key);
  const std::optional<double> fallback =
      f.required ? std::nullopt : std::optional<double>(std::get<double>(f.get(spec)));
  const double v = t.get_double(leaf, fallback, -1e300, f.num_max);
  if (!(v > 0)) t.fail(leaf, "is " + number_text(v) + "; must be > 0" + (f.unit.empty() ? "" : " " + f.unit));
  f.set(spec, v);
}

/// Reads the keys of `section` from its table `t` in table order (read_file_key), but not
/// those read by hand.
template <class Spec>
void read_file_keys(TableReader& t, std::string_view section, const std::vector<KeyField<Spec>>& keys, Spec& spec) {
  for (const KeyField<Spec>& f : keys)
    if (!f.key.empty() && !f.by_hand && key_parent(f.key) == section) read_file_key(t, f, spec);
}

/// Reads a [retransmit] table `r` into `out` (the RetransmitPolicy of `spec`) through the
/// keys of `keys`: ib_timeout and timeout_per_retry_s are exclusive (a rule spanning keys,
/// read here), then the table's other keys. Finishes `r`.
template <class Spec>
void read_retransmit_keys(TableReader& r, const std::vector<KeyField<Spec>>& keys, Spec& spec,
                          faults::RetransmitPolicy& out) {
  if (r.has("ib_timeout") && r.has("timeout_per_retry_s"))
    r.fail("ib_timeout", "and timeout_per_retry_s both given; give one");
  const KeyField<Spec>& ib = key_in(keys, "retransmit.ib_timeout");
  if (r.has("ib_timeout"))
    out.timeout_per_retry_s = faults::RetransmitPolicy::ib_timeout_s(
        static_cast<int>(r.get_int("ib_timeout", std::nullopt, ib.int_min, ib.int_max)));
  read_file_keys(r, "retransmit", keys, spec);
  r.finish();
}

} // namespace twinscale::config
