// bench_executor: (1) the executor's own overhead per op, with a device whose ops
// complete at once (both issue disciplines), and the CPU device's overhead per op
// (compute-thread hand-off, MPI_Test) on a 1-rank schedule of 1-element ops;
// (2) start-up time vs ranks per rendezvous method (mpirun of `twinscale run`):
// MPI + local group creation (M9), MPI + global split with a barrier per group (the
// baseline), Redis store + local groups. Prints "bench <name> <value> <unit>" lines.
//   bench_executor [--ranks 8,16,32] [--no-launch]
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/executor.hpp"
#include "backend/runner.hpp"
#include "bench/measure.hpp"
#include "diagnose/hang_report.hpp"
#include "schedules/synthetic.hpp"

using namespace twinscale;
namespace fs = std::filesystem;

namespace {

/// Every op completes on its first poll: what remains is the executor's bookkeeping.
class InstantDevice final : public backend::Device {
public:
  explicit InstantDevice(bool on_device) : on_device_(on_device) {}
  std::string_view name() const override { return "instant"; }
  bool orders_on_device() const override { return on_device_; }
  void prepare(const schedules::Schedule& s, int64_t rank) override { n_ = s.program(rank).ops.size(); }
  void issue(uint32_t, std::span<const uint32_t>) override {}
  backend::OpStatus poll(uint32_t) override { return backend::OpStatus::Done; }
  void wait_for_progress(double) override {}
  std::vector<backend::DeviceOpTiming> timings() override {
    return std::vector<backend::DeviceOpTiming>(n_, {0, 0, true});
  }
  void abort() override {}
  double now_s() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

private:
  bool on_device_;
  size_t n_ = 0;
};

void executor_overhead() {
  schedules::SyntheticOptions so;
  so.micro_batches = 2000;
  so.gemms_per_stage = 4;
  const auto s = schedules::synthetic_schedule(schedules::Layout{2, 2, 2}, so);
  const size_t ops = s.program(0).ops.size();
  for (bool on_device : {false, true}) {
    InstantDevice dev(on_device);
    bench::Stopwatch w;
    backend::Executor ex(s, 0, dev);
    const auto r = ex.run();
    const double t = w.seconds();
    if (r.status != backend::RunStatus::Completed) std::fprintf(stderr, "executor run did not complete\n");
    bench::report(on_device ? "executor.overhead_per_op.device_ordered" : "executor.overhead_per_op.host_ordered",
                  t / static_cast<double>(ops) * 1e6, "us/op");
  }
  bench::report("executor.ops_per_run", static_cast<double>(ops), "ops");
}

void cpu_device_overhead() {
  // A 1-rank run in this process (MPI singleton): every op has 1-element shapes.
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  schedules::SyntheticOptions so;
  so.micro_batches = 500;
  so.hidden = so.tokens = 1;
  const auto s = schedules::synthetic_schedule(schedules::Layout{1, 1, 1}, so);
  backend::RunOptions o;
  o.executor.timeout_s = 60;
  const backend::RunOutcome out = backend::run_schedule(s, o);
  bench::report("cpu_device.overhead_per_op", out.result.elapsed_s / out.result.ops_total * 1e6, "us/op");
  bench::report("cpu_device.ops", out.result.ops_total, "ops");
  backend::finalize_backend(out);
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ::pclose(p);
  return out;
}

void init_times(const std::string& cli, const std::vector<int>& ranks) {
  const fs::path base = fs::temp_directory_path() / ("twinscale-bench-init-" + std::to_string(::getpid()));
  fs::create_directories(base);
  // A Redis server of our own on loopback (skipped if not installed).
  const bool have_redis = std::system("command -v redis-server > /dev/null 2>&1") == 0;
  const int port = 20000 + static_cast<int>(::getpid() % 20000);
  if (have_redis) {
    run("redis-server --port " + std::to_string(port) +
        " --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir " + base.string() + " --pidfile " +
        (base / "redis.pid").string());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  struct Method {
    const char* name;
    std::string args;
  };
  std::vector<Method> methods = {{"mpi_local", "--rendezvous mpi --group-init local"},
                                 {"mpi_global", "--rendezvous mpi --group-init global"}};
  if (have_redis)
    methods.push_back(
        {"redis_local", "--rendezvous redis://127.0.0.1:" + std::to_string(port) + " --group-init local"});
  for (int n : ranks) {
    for (const Method& m : methods) {
      const fs::path dir = base / (std::string(m.name) + "-" + std::to_string(n));
      bench::Stopwatch w;
      const std::string out = run("timeout 600 mpirun --oversubscribe --allow-run-as-root -np " + std::to_string(n) +
                                  " " + cli + " run --synthetic 2x2x" + std::to_string(n / 4) +
                                  " --synthetic-micro-batches 1 --synthetic-hidden 8 --timeout 300 " + m.args +
                                  " --run-dir " + dir.string());
      const double wall = w.seconds();
      std::map<std::string, double> worst; // slowest rank per phase
      double total = 0;
      try {
        const auto report = diagnose::analyse_run_dir(dir.string(), n);
        if (!report.all_completed()) throw std::runtime_error("run did not complete");
        for (const auto& st : report.states) {
          double rank_total = 0;
          for (const auto& p : st.init_phases) {
            worst[p.name] = std::max(worst[p.name], p.seconds);
            if (p.name != "mpi_init") rank_total += p.seconds;
          }
          total = std::max(total, rank_total);
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "init %s at %d ranks failed: %s\n%s\n", m.name, n, e.what(), out.c_str());
        continue;
      }
      const std::string key = "init." + std::string(m.name) + ".ranks" + std::to_string(n);
      bench::report((key + ".groups_and_rendezvous").c_str(), total, "s");
      for (const auto& [phase, s] : worst) bench::report((key + "." + phase).c_str(), s, "s");
      bench::report((key + ".mpirun_wall").c_str(), wall, "s");
    }
  }
  if (have_redis) {
    pid_t pid = 0;
    std::ifstream(base / "redis.pid") >> pid;
    if (pid > 0) ::kill(pid, SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::error_code ec;
  fs::remove_all(base, ec);
}

} // namespace

int main(int argc, char** argv) {
  std::vector<int> ranks = {8, 16, 32};
  bool launch = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-launch")
      launch = false;
    else if (a == "--ranks" && i + 1 < argc) {
      ranks.clear();
      std::stringstream ss(argv[++i]);
      for (std::string x; std::getline(ss, x, ',');) ranks.push_back(std::max(4, std::atoi(x.c_str()) / 4 * 4));
    }
  }
  bench::Stopwatch total;
  executor_overhead();
  if (launch) {
    const std::string cli = (fs::path(argv[0]).parent_path() / ".." / "cli" / "twinscale").lexically_normal().string();
    init_times(cli, ranks);
  }
  cpu_device_overhead(); // last: it initialises MPI in this process
  bench::report("bench_executor.wall", total.seconds(), "s");
  bench::report("bench_executor.peak_rss", bench::peak_rss_mib(), "MiB");
  return 0;
}
