// diagnose/binary_input.cpp: a binary trace read rank block by rank block (two threads,
// communication reduced as it is read) gives the findings the Chrome-trace reading gives
// for the same events: stragglers, slow links and late launchers; the simulator's binary
// trace of a run with an injected straggler or hang gives what its Chrome trace gives;
// a truncated or corrupted file is refused naming the file and the byte offset.
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "diagnose/diagnosis.hpp"
#include "diagnose/run_data.hpp"
#include "schedules/binary_trace.hpp"
#include "schedules/error.hpp"
#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"
#include "tests/cli_runner.hpp"

using namespace twinscale;
using diagnose::FindingKind;
namespace fs = std::filesystem;

namespace {

/// 32 ranks, TP 4 × DP 4 × PP 2, one program per stage: per step a GEMM then a TP
/// all-reduce, then a DP all-reduce at the end of the step.
schedules::Schedule schedule() {
  schedules::Schedule s;
  s.layout = schedules::Layout{4, 4, 2};
  s.names = {"attn.proj", "attn.allreduce", "grads.allreduce"};
  for (int stage = 0; stage < 2; ++stage) {
    schedules::Program p;
    for (int step = 0; step < 4; ++step) {
      schedules::Op g;
      g.kind = schedules::OpKind::Gemm;
      g.kernel = schedules::Kernel::Gemm;
      g.name = 0;
      g.labels.iteration = step;
      g.labels.layer = stage;
      p.ops.push_back(g);
      schedules::Op c;
      c.kind = schedules::OpKind::AllReduce;
      c.stream = schedules::Stream::TpComm;
      c.group = schedules::GroupKind::Tp;
      c.name = 1;
      c.bytes = 1 << 20;
      c.labels.iteration = step;
      p.ops.push_back(c);
      c.stream = schedules::Stream::DpComm;
      c.group = schedules::GroupKind::Dp;
      c.name = 2;
      c.labels.phase = schedules::Phase::Backward;
      p.ops.push_back(c);
    }
    s.programs.push_back(p);
  }
  for (int64_t r = 0; r < s.layout.world(); ++r) s.program_of_rank.push_back(r < 16 ? 0 : 1);
  return s;
}

/// Writes the trace of schedule() with rank 9 slow to `path`.
void write_trace(const std::string& path, const schedules::Schedule& s) {
  schedules::BinaryTraceWriter w(path, s, "sim");
  for (int64_t r = 0; r < s.layout.world(); ++r)
    for (int step = 0; step < 4; ++step) {
      const double t0 = 0.01 * step, gemm = r == 9 ? 1.3e-3 : 1e-3;
      const uint32_t base = static_cast<uint32_t>(3 * step);
      w.record(r, base, t0, t0 + gemm, false);
      w.record(r, base + 1, t0 + gemm, t0 + gemm + 2e-3, false);
      w.record(r, base + 2, t0 + gemm + 2e-3, t0 + 5e-3, false);
    }
  w.finish();
}

/// The message of the ScheduleError `f` throws ("" if none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const schedules::ScheduleError& e) {
    return e.what();
  }
  return "";
}

std::string findings_of(const nlohmann::json& j) {
  std::string s;
  for (const auto& f : j.at("findings")) s += f.at("kind").get<std::string>() + " " + f.at("ranks").dump() + "; ";
  return s;
}

} // namespace

TEST_CASE("diagnose: a binary trace read in parallel finds what its Chrome reading finds") {
  const schedules::Schedule s = schedule();
  const fs::path dir = twinscale::test::scratch_dir("bin-input");
  const std::string path = (dir / "t.tstrace").string();
  {
    schedules::BinaryTraceWriter w(path, s, "sim");
    for (int64_t r = 0; r < s.layout.world(); ++r)
      for (int step = 0; step < 4; ++step) {
        const double t0 = 0.01 * step;
        const double gemm = r == 9 ? 1.3e-3 : 1e-3;            // rank 9: a straggler, late
        const double tp = (r >= 20 && r < 24) ? 2.6e-3 : 2e-3; // tp group of rank 20: slow
        const uint32_t base = static_cast<uint32_t>(3 * step);
        w.record(r, base + 2, t0 + gemm + tp, t0 + 4e-3 + 1e-3, false); // recorded out of order
        w.record(r, base, t0, t0 + gemm, false);
        w.record(r, base + 1, t0 + gemm, t0 + gemm + tp, false);
      }
    w.finish();
  }
  const schedules::BinaryTraceReader reader(path);
  std::vector<int64_t> all;
  for (int64_t r = 0; r < reader.world(); ++r) all.push_back(r);
  diagnose::RunData chrome = diagnose::from_trace(reader.records(all), path, 8);
  chrome.layout = s.layout;
  const diagnose::RunData binary = diagnose::from_binary_trace(reader, 8, std::nullopt, 2);
  CHECK(binary.comms.empty()); // reduced as read
  CHECK(binary.comm_summary.present);
  const auto a = diagnose::diagnose_run(chrome), b = diagnose::diagnose_run(binary);
  REQUIRE(a.findings.size() == b.findings.size());
  for (size_t i = 0; i < a.findings.size(); ++i) {
    CHECK(a.findings[i].kind == b.findings[i].kind);
    CHECK(a.findings[i].ranks == b.findings[i].ranks);
    CHECK(a.findings[i].excess == Approx(b.findings[i].excess).margin(1e-9));
    CHECK(a.findings[i].detail == b.findings[i].detail);
  }
  REQUIRE(a.scores.size() == b.scores.size());
  for (size_t i = 0; i < a.scores.size(); ++i) {
    CHECK(a.scores[i].peer_group == b.scores[i].peer_group);
    CHECK(a.scores[i].late_launches == b.scores[i].late_launches);
  }
  auto kinds = [&](FindingKind k) {
    std::vector<std::vector<int64_t>> v;
    for (const auto& f : b.findings)
      if (f.kind == k) v.push_back(f.ranks);
    return v;
  };
  CHECK(kinds(FindingKind::Straggler) == std::vector<std::vector<int64_t>>{{9}});
  // rank 9 (slow GEMM) and the slow TP group's ranks reach the DP all-reduce 0.3–0.6 ms late
  CHECK(kinds(FindingKind::LateLauncher) == std::vector<std::vector<int64_t>>{{9}, {20}, {21}, {22}, {23}});
  CHECK(kinds(FindingKind::SlowLink) == std::vector<std::vector<int64_t>>{{20, 21, 22, 23}});
  // one thread or three: the same
  const auto c = diagnose::diagnose_run(diagnose::from_binary_trace(reader, 8, std::nullopt, 3));
  CHECK(diagnose::to_json(c) == diagnose::to_json(b));
  fs::remove_all(dir);
}

TEST_CASE("diagnose: the simulator's binary trace names the injected straggler and hang as its Chrome trace does") {
  const fs::path dir = test::scratch_dir("bin-input-sim");
  test::write_text(dir / "speeds.csv", "scope,index,factor\nrank,21,0.9\n"); // rank 21: 10 % slow
  const std::string job = "--preset tiny-1f1b --gpus 32 --global-batch 32 --mode analytic --every-rank --json";

  // a straggler: the two traces of one run, read in process
  for (const char* f : {"s.tstrace", "s.json"}) {
    const auto sim = test::run_cli_split("simulate " + job + " --gpu-speed-file " + (dir / "speeds.csv").string() +
                                             " --trace " + (dir / f).string(),
                                         dir);
    INFO(sim.err);
    REQUIRE(sim.code == 0);
  }
  const schedules::BinaryTraceReader reader((dir / "s.tstrace").string());
  CHECK(reader.source() == "sim");
  const diagnose::RunData binary = diagnose::from_binary_trace(reader, 8, std::nullopt);
  diagnose::RunData chrome =
      diagnose::from_trace(schedules::read_chrome_trace_file((dir / "s.json").string()), "s.json", 8);
  chrome.layout = reader.layout();
  CHECK(binary.ranks.size() == 32);
  const auto a = diagnose::diagnose_run(chrome), b = diagnose::diagnose_run(binary);
  REQUIRE(!b.findings.empty());
  CHECK(b.findings[0].kind == FindingKind::Straggler);
  CHECK(b.findings[0].ranks == std::vector<int64_t>{21});
  REQUIRE(a.findings.size() == b.findings.size());
  for (size_t i = 0; i < a.findings.size(); ++i) {
    CHECK(a.findings[i].kind == b.findings[i].kind);
    CHECK(a.findings[i].ranks == b.findings[i].ranks);
    CHECK(a.findings[i].excess == Approx(b.findings[i].excess).margin(1e-4)); // Chrome times: 1 ns rounding
  }

  // a hang: run directories holding either trace and the state files, through the CLI
  const auto ok = test::run_cli_split("simulate " + job, dir);
  REQUIRE(ok.code == 0);
  const double iteration = nlohmann::json::parse(ok.out).at("iteration_time_s").get<double>();
  nlohmann::json found[2];
  const char* traces[2] = {"trace.tstrace", "trace.json"};
  for (int i = 0; i < 2; ++i) {
    const fs::path run = dir / ("run" + std::to_string(i));
    const auto sim =
        test::run_cli_split("simulate " + job + " --hang-rank 6 --hang-at-s " + std::to_string(iteration / 2) +
                                " --run-dir " + run.string() + " --trace " + (run / traces[i]).string(),
                            dir);
    INFO(sim.err);
    REQUIRE(sim.code == 5); // the hung job did not complete
    CHECK(nlohmann::json::parse(sim.out)["hang"]["rank"] == 6);
    const auto d = test::run_cli_split("diagnose " + run.string() + " --json", dir);
    INFO(d.out << d.err);
    REQUIRE(d.code == 4);
    found[i] = nlohmann::json::parse(d.out);
  }
  REQUIRE(!found[0]["findings"].empty());
  CHECK(found[0]["findings"][0]["kind"] == "hang");
  CHECK(found[0]["findings"][0]["ranks"] == nlohmann::json::array({6}));
  CHECK(found[0]["findings"][0]["detail"] == found[1]["findings"][0]["detail"]);
  CHECK(findings_of(found[0]) == findings_of(found[1]));
  fs::remove_all(dir);
}

TEST_CASE("diagnose: a truncated or corrupted binary trace is refused naming the file and the offset") {
  const schedules::Schedule s = schedule();
  const fs::path dir = test::scratch_dir("bin-input-bad");
  const std::string good = (dir / "good.tstrace").string();
  write_trace(good, s);
  const std::string bytes = test::slurp(good);
  uint64_t meta_offset = 0;
  std::memcpy(&meta_offset, bytes.data() + 24, sizeof meta_offset); // the header's metadata offset
  REQUIRE(meta_offset > 64);
  REQUIRE(meta_offset < bytes.size());
  auto variant = [&](const std::string& name, std::string b) {
    const std::string p = (dir / name).string();
    test::write_text(p, b);
    return p;
  };
  auto flipped = [&](size_t at) {
    std::string b = bytes;
    b[at] = static_cast<char>(b[at] ^ 0x5a);
    return b;
  };
  auto open_error = [&](const std::string& p) { return error_of([&] { schedules::BinaryTraceReader r(p); }); };

  const std::string cut = variant("cut.tstrace", bytes.substr(0, bytes.size() - 7));
  CHECK(open_error(cut) == cut + ": offset " + std::to_string(bytes.size() - 7) +
                               ": truncated or extended: the file has " + std::to_string(bytes.size() - 7) +
                               " bytes, its header says " + std::to_string(bytes.size()));
  const std::string stub = variant("stub.tstrace", bytes.substr(0, 40));
  CHECK_THAT(open_error(stub), Catch::StartsWith(stub + ": offset 0: not a twinscale binary trace (40 bytes"));
  const std::string magic = variant("magic.tstrace", flipped(3));
  CHECK(open_error(magic) == magic + ": offset 0: not a twinscale binary trace (bad magic number)");
  const std::string meta = variant("meta.tstrace", flipped(meta_offset + 5));
  CHECK(open_error(meta) ==
        meta + ": offset " + std::to_string(meta_offset) + ": corrupted metadata (checksum mismatch)");

  // an event chunk: the file opens, its reading names the chunk's offset and rank
  const std::string chunk = variant("chunk.tstrace", flipped(64 + 2));
  const schedules::BinaryTraceReader reader(chunk);
  const std::string e = error_of([&] { diagnose::from_binary_trace(reader, 8, std::nullopt, 2); });
  CHECK_THAT(e, Catch::StartsWith(chunk + ": offset 64: rank ") && Catch::Contains(": corrupted event chunk (") &&
                    Catch::EndsWith(" bytes, checksum mismatch)"));
  // the untouched file still reads
  CHECK(diagnose::from_binary_trace(schedules::BinaryTraceReader(good), 8, std::nullopt, 2).ranks.size() == 32);
  fs::remove_all(dir);
}
