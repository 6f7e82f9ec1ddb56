// A Redis key-value store used for rendezvous (M9): non-blocking for the server (each
// client only SETs, INCRs and polls its own keys), so ranks meet per group without a
// global barrier. Also carries NCCL unique ids for the CUDA device.
#pragma once

#include <string>

#include "schedules/layout.hpp"
#include "schedules/op.hpp"

struct redisContext;

namespace twinscale::backend::detail {

class RedisStore {
public:
  /// Connects to HOST:PORT; every later wait is bounded by `timeout_s`. Throws
  /// BackendError naming the address when the server cannot be reached.
  RedisStore(const std::string& host, int port, double timeout_s);
  ~RedisStore();
  RedisStore(const RedisStore&) = delete;
  RedisStore& operator=(const RedisStore&) = delete;

  void set(const std::string& key, const std::string& value);
  /// Polls until `key` exists; throws BackendError naming the key after the timeout.
  std::string get_wait(const std::string& key);
  /// Increments and returns a counter.
  long long incr(const std::string& key);

  /// Registers `rank` (value: identity) under `prefix`, then joins its TP, DP, PP and
  /// Embedding groups in M9's order: one counter per group, waited on by its members
  /// only (a local barrier, O(group) keys, no global barrier).
  void rendezvous(const std::string& prefix, const schedules::Layout& layout, int64_t rank, const std::string& identity,
                  bool expert_groups = false);

private:
  redisContext* ctx_ = nullptr;
  std::string address_;
  double timeout_s_;
};

} // namespace twinscale::backend::detail
