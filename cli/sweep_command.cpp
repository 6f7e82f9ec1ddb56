// `twinscale sweep STUDY.toml`: run a parameter study into a SQLite results store, on one
// process, as one shard of a Slurm job array (--shard i/n), or spread over MPI ranks
// (under mpirun/srun: rank 0 hands out points, every rank computes, rank 0 writes).
// `twinscale sweep show DB`: the best points, the Pareto front, CSV and plots.
//
//   twinscale sweep STUDY.toml [--db FILE] [--shard I/N] [--threads N] [--progress auto|always|never] [--top K]
//   twinscale sweep show DB [--top K] [--csv FILE] [--plot DIR]
//
// Study files are described in docs/keys.md ("Study files"), the store in study/store.hpp.
// Rerunning the same command resumes: points already in the store are skipped.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "backend/rendezvous.hpp"
#include "backend/work_queue.hpp"
#include "cli/commands.hpp"
#include "cli/detail/plot_helper.hpp"
#include "cli/job_args.hpp"
#include "config/error.hpp"
#include "schedules/output_file.hpp"
#include "study/evaluate.hpp"
#include "study/points.hpp"
#include "study/report.hpp"
#include "study/store.hpp"
#include "study/study_file.hpp"

namespace twinscale::cli {

namespace {

struct SweepArgs {
  std::string study;
  std::string db;
  std::string shard;
  std::string progress = "auto";
  int64_t top = 10;
  int64_t threads = 1;
};

struct ShowArgs {
  std::string db;
  int64_t top = 10;
  std::string csv;
  std::string plot_dir;
  bool json = false;
};

/// The store as JSON: its study, every row (axis values, result, flow re-simulation), the
/// best `top` ids by MFU and the Pareto front's ids.
std::string store_json(const study::StoreInfo& info, const std::vector<study::StoredPoint>& rows, int64_t top) {
  nlohmann::json j;
  j["study"] = info.name;
  j["study_file"] = info.study_file;
  j["fingerprint"] = info.fingerprint;
  j["version"] = info.version;
  j["points"] = info.points;
  j["axes"] = info.axes;
  j["rows"] = nlohmann::json::array();
  for (const auto& p : rows) {
    nlohmann::json row{{"inputs", nlohmann::json::parse(p.inputs)},
                       {"result", nlohmann::json::parse(study::to_json(p.result))},
                       {"version", p.version}};
    if (p.flow) row["flow"] = nlohmann::json::parse(study::to_json(*p.flow));
    j["rows"].push_back(row);
  }
  j["best_ids"] = study::best_ids(rows, top);
  j["pareto_ids"] = nlohmann::json::array();
  for (const auto* p : study::pareto_front(rows)) j["pareto_ids"].push_back(p->result.id);
  return j.dump(2) + "\n";
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

/// CPU time (user + system) of this process so far.
double cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/// Points computed of those to compute, with the points left out and the best point so
/// far as the note of the common progress report (common/progress.hpp).
class SweepProgress {
public:
  SweepProgress(const std::string& phase, int64_t total, int64_t done_before)
      : bar_(phase, total - done_before, "points"), start_(now_s()) {}
  void add(const study::PointResult& r) {
    ++here_;
    if (r.status != study::PointStatus::Ok)
      ++left_out_;
    else if (r.mfu > best_mfu_) {
      best_mfu_ = r.mfu;
      best_id_ = r.id;
    }
    if (left_out_ > 0 || best_id_ >= 0) {
      char buf[128];
      std::snprintf(buf, sizeof buf, ", %lld left out", static_cast<long long>(left_out_));
      std::string note = buf;
      if (best_id_ >= 0) {
        std::snprintf(buf, sizeof buf, ", best MFU %.2f %% (point %lld)", 100 * best_mfu_,
                      static_cast<long long>(best_id_));
        note += buf;
      }
      bar_.set_note(note);
    }
    bar_.update(here_);
  }
  void end() { bar_.finish(); }
  double elapsed() const { return now_s() - start_; }
  int64_t computed() const { return here_; }

private:
  Progress bar_;
  double start_;
  int64_t here_ = 0, left_out_ = 0;
  double best_mfu_ = -1;
  int64_t best_id_ = -1;
};

/// --progress: never silences the reports, always draws the terminal's bar even into a
/// file; auto (the default) draws it on a terminal and writes a line every 10 s otherwise.
void apply_progress_mode(const std::string& mode) {
  if (mode == "never") progress_settings().quiet = true;
  if (mode == "always") progress_settings().terminal = 1;
}

/// "I/N" with 0 ≤ I < N.
std::pair<int64_t, int64_t> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  int64_t i = -1, n = 0;
  try {
    size_t a = 0, b = 0;
    if (slash == std::string::npos) throw std::invalid_argument(text);
    i = std::stoll(text.substr(0, slash), &a);
    n = std::stoll(text.substr(slash + 1), &b);
    if (a != slash || b != text.size() - slash - 1) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    throw config::ConfigError(
        "--shard '" + text +
        "': expected I/N, e.g. 0/8 (with Slurm: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)");
  }
  if (n < 1 || i < 0 || i >= n) throw config::ConfigError("--shard '" + text + "': need N ≥ 1 and 0 ≤ I < N");
  return {i, n};
}

std::string default_db(const std::string& study) { return std::filesystem::path(study).stem().string() + ".db"; }

/// The flow phase's points: the best flow_best points once every point has a row.
std::vector<int64_t> flow_todo(const study::Store& store, const study::StudySpec& spec, size_t points) {
  const auto rows = store.rows();
  if (rows.size() < points) return {};
  const auto best = study::best_ids(rows, spec.flow_best);
  const auto done = store.flow_done();
  std::vector<int64_t> todo;
  for (int64_t id : best)
    if (!done.count(id)) todo.push_back(id);
  return todo;
}

void print_summary(const std::string& db, int64_t top) {
  const study::Store store(db);
  std::cout << study::summary_table(store.info(), store.rows(), top);
}

/// --threads: 0 = one per hardware thread where the study's points may run in threads
/// (analytic evaluation), else one; N > 1 for a study that cannot is an error.
int resolve_threads(int64_t asked, const study::StudySpec& spec) {
  if (asked == 0)
    return study::study_runs_in_threads(spec) ? static_cast<int>(std::max(1U, std::thread::hardware_concurrency())) : 1;
  const int64_t n = asked;
  if (n > 1 && !study::study_runs_in_threads(spec))
    throw config::ConfigError("--threads " + std::to_string(asked) +
                              ": this study simulates in flow mode, whose SimGrid engine is one per process; run it "
                              "with --threads 1, over MPI ranks (mpirun -np N twinscale sweep …) or as --shard I/N "
                              "processes");
  return static_cast<int>(n);
}

int run_local(const SweepArgs& a, const study::StudySpec& spec, const std::vector<study::Point>& points) {
  int64_t shard = 0, shards = 1;
  if (!a.shard.empty()) std::tie(shard, shards) = parse_shard(a.shard);
  const int threads = resolve_threads(a.threads, spec);
  const std::string db = a.db.empty() ? default_db(a.study) : a.db;
  study::Evaluator evaluator(spec); // checks every job and cluster the study names
  study::Store store(db, spec, points);

  const auto done = store.done();
  std::vector<int64_t> todo;
  int64_t mine = 0;
  for (const auto& p : points)
    if (p.id % shards == shard) {
      ++mine;
      if (!done.count(p.id)) todo.push_back(p.id);
    }
  const std::string label = shards > 1 ? "sweep shard " + a.shard : std::string("sweep");
  SweepProgress progress(label, mine, mine - static_cast<int64_t>(todo.size()));
  // results are stored in point order whatever the number of threads
  study::evaluate_in_threads(evaluator, spec, points, todo, threads,
                             [&](const study::Point& p, const study::PointResult& r) {
                               store.put(p, r);
                               progress.add(r);
                             });
  progress.end();
  std::fprintf(stderr,
               "twinscale sweep: %lld points computed in %.2f s (%.2f points/s, %d thread%s), %lld already in %s\n",
               static_cast<long long>(progress.computed()), progress.elapsed(),
               progress.computed() / std::max(1e-9, progress.elapsed()), threads, threads == 1 ? "" : "s",
               static_cast<long long>(mine - static_cast<int64_t>(todo.size())), db.c_str());

  if (spec.flow_best > 0) {
    const size_t have = store.done().size();
    if (have < points.size()) {
      std::fprintf(stderr,
                   "twinscale sweep: the flow phase runs once every point is in %s (%zu of %zu): the last shard to "
                   "finish runs it\n",
                   db.c_str(), have, points.size());
    } else {
      // Whichever shard finds every point in the store runs the flow phase; shards that
      // get here together start at different points and skip what another one stored.
      const auto todo_flow = flow_todo(store, spec, points.size());
      std::vector<int64_t> order;
      for (size_t k = 0; k < todo_flow.size(); ++k)
        order.push_back(todo_flow[(k + static_cast<size_t>(shard)) % todo_flow.size()]);
      SweepProgress fp(label + " flow", static_cast<int64_t>(order.size()), 0);
      for (int64_t id : order) {
        if (store.flow_done().count(id)) continue;
        const study::PointResult r = evaluator.evaluate_flow(points[static_cast<size_t>(id)]);
        store.put_flow(r);
        fp.add(r);
      }
      fp.end();
    }
  }
  print_summary(db, a.top);
  return 0;
}

int run_mpi(const SweepArgs& a, const study::StudySpec& spec, const std::vector<study::Point>& points) {
  if (a.threads > 1)
    throw config::ConfigError("--threads " + std::to_string(a.threads) +
                              " is for one process; under mpirun/srun the ranks share the points (one thread each)");
  if (!a.shard.empty())
    throw config::ConfigError(
        "--shard is for runs without MPI (Slurm job arrays); under mpirun/srun the ranks share the points dynamically");
  study::Evaluator evaluator(spec); // checks every job and cluster the study names (on every rank)
  backend::MpiSession mpi;
  evaluator.set_helper_thread(mpi.size() <= 1); // ranks side by side take the cores already
  const std::string db = a.db.empty() ? default_db(a.study) : a.db;
  std::unique_ptr<study::Store> store;
  std::string error;
  if (mpi.rank() == 0) {
    try {
      store = std::make_unique<study::Store>(db, spec, points);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!mpi.broadcast(error.empty())) {
    if (mpi.rank() == 0) throw config::ConfigError(error);
    return 1; // rank 0 reports the error
  }
  backend::WorkQueueOptions qo;
  qo.root_computes = mpi.size() <= 4; // with many ranks rank 0 only hands out and writes
  // One point computing and one waiting: rank 0's service thread answers within a nap,
  // and a larger backlog only lengthens the tail (rank 0 idle while a worker finishes).
  qo.prefetch = 2;
  if (mpi.rank() != 0) progress_settings().quiet = true;

  std::vector<int64_t> todo;
  int64_t total = static_cast<int64_t>(points.size());
  if (mpi.rank() == 0) {
    const auto done = store->done();
    for (const auto& p : points)
      if (!done.count(p.id)) todo.push_back(p.id);
  }
  SweepProgress progress("sweep (" + std::to_string(mpi.size()) + " ranks)", total,
                         total - static_cast<int64_t>(todo.size()));
  const auto stats = backend::run_work_queue(
      todo, [&](int64_t id) { return study::to_json(evaluator.evaluate(points[static_cast<size_t>(id)])); },
      [&](int64_t id, const std::string& text) {
        const study::PointResult r = study::point_result_from_json(text);
        store->put(points[static_cast<size_t>(id)], r);
        progress.add(r);
      },
      qo);
  progress.end();
  if (mpi.rank() == 0)
    std::fprintf(stderr,
                 "twinscale sweep: %lld points computed on %d ranks in %.2f s (%.2f points/s), %lld already in %s\n",
                 static_cast<long long>(progress.computed()), mpi.size(), progress.elapsed(),
                 progress.computed() / std::max(1e-9, progress.elapsed()),
                 static_cast<long long>(total - static_cast<int64_t>(todo.size())), db.c_str());
  std::fprintf(stderr, "twinscale sweep: rank %d computed %lld points, %.2f s CPU, waited %.2f s\n", mpi.rank(),
               static_cast<long long>(stats.items_here), cpu_s(), stats.wait_s);

  if (spec.flow_best > 0) {
    std::vector<int64_t> todo_flow;
    if (mpi.rank() == 0) todo_flow = flow_todo(*store, spec, points.size());
    SweepProgress fp("sweep flow", static_cast<int64_t>(todo_flow.size()), 0);
    backend::run_work_queue(
        todo_flow, [&](int64_t id) { return study::to_json(evaluator.evaluate_flow(points[static_cast<size_t>(id)])); },
        [&](int64_t, const std::string& text) {
          const study::PointResult r = study::point_result_from_json(text);
          store->put_flow(r);
          fp.add(r);
        },
        qo);
    fp.end();
  }
  if (mpi.rank() == 0) {
    store.reset();
    print_summary(db, a.top);
  }
  return 0;
}

int run_sweep(const SweepArgs& a) {
  apply_progress_mode(a.progress);
  const study::StudySpec spec = study::load_study(a.study);
  const std::vector<study::Point> points = study::generate_points(spec);
  const backend::LaunchEnv env = backend::detect_launch_env();
  if (env.size > 1) return run_mpi(a, spec, points);
  return run_local(a, spec, points);
}

int run_show(const ShowArgs& a) {
  schedules::check_distinct_files(
      {{"DB", a.db}},
      {{"--csv", a.csv},
       {"--plot", a.plot_dir.empty() ? "" : (std::filesystem::path(a.plot_dir) / "sweep.csv").string()}});
  const study::Store store(a.db);
  const auto info = store.info();
  const auto rows = store.rows();
  if (a.json)
    std::cout << store_json(info, rows, a.top);
  else
    std::cout << study::summary_table(info, rows, a.top);
  if (!a.csv.empty()) write_file_atomically(a.csv, study::rows_csv(info, rows));
  if (!a.plot_dir.empty()) {
    make_output_dir(a.plot_dir, "--plot");
    const auto csv = std::filesystem::path(a.plot_dir) / "sweep.csv";
    write_file_atomically(csv.string(), study::rows_csv(info, rows));
    const auto script = detail::find_script("plot_sweep.py");
    if (script.empty()) {
      std::cerr << "twinscale: scripts/plot_sweep.py not found; the CSV is " << csv << "\n";
      return 0;
    }
    const int rc = detail::run_python(script, {csv.string(), "--out", a.plot_dir});
    if (rc == detail::kPlotWriteFailed)
      throw schedules::OutputFileError(a.plot_dir + ": cannot write the plots (the cause is above); the CSV is " +
                                       csv.string());
    if (rc != 0) std::cerr << "twinscale: plotting failed (python3 with matplotlib needed); the CSV is " << csv << "\n";
  }
  return 0;
}

} // namespace

void add_sweep_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<SweepArgs>();
  auto show = std::make_shared<ShowArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Run a parameter study (STUDY.toml) into a SQLite results store; resumable, MPI or --shard I/N");
  cmd->add_option("study", args->study,
                  "study file (TOML: a [base] point, the [axes] to sweep and what to [evaluate])");
  cmd->add_option("--db", args->db, "results store (SQLite; default: STUDY's stem + .db in the current directory)");
  cmd->add_option("--shard", args->shard, "compute only points with id % N == I (Slurm job arrays; no MPI)");
  cmd->add_option(
         "--threads", args->threads,
         "evaluate points on N threads of this process (0: one per hardware thread; analytic studies only; each "
         "thread keeps its own fabric and schedule caches; the store is written in point order, as with 1)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  cmd->add_option("--progress", args->progress,
                  "progress on stderr: auto (a bar on a terminal, a line every 10 s otherwise), always (the bar "
                  "even into a file), never (as --quiet)")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  add_quiet_flag(*cmd);
  cmd->add_option("--top", args->top, "best points to print at the end")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}));
  CLI::App* sh =
      cmd->add_subcommand("show", "Print the best points and the Pareto front of a results store; CSV, plots");
  sh->add_option("db", show->db, "results store written by `twinscale sweep`")->required();
  sh->add_option("--top", show->top, "best points to print")->check(CLI::Range(int64_t{0}, int64_t{1000000}));
  sh->add_option("--csv", show->csv, "write every row as CSV (the axes as given in columns axis_<name>)");
  sh->add_flag("--json", show->json, "every row, the best ids and the Pareto front as JSON instead of the table");
  sh->add_option("--plot", show->plot_dir, "write DIR/sweep.csv and PNG plots (python3-matplotlib)");
  sh->callback([show, &action]() { action = [show]() { return run_show(*show); }; });
  cmd->callback([cmd, sh, args, &action]() {
    if (sh->parsed()) return;
    if (args->study.empty())
      throw CLI::ValidationError("STUDY", "give a study file: twinscale sweep STUDY.toml (or: sweep show DB)");
    action = [args]() { return run_sweep(*args); };
  });
}

} // namespace twinscale::cli
