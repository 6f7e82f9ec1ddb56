// Reading PyTorch profiler (Kineto) Chrome traces into twinscale trace records
// (formats/kineto.hpp, docs/trace-format.md "PyTorch profiler traces").
#include "formats/kineto.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "schedules/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/limits.hpp"

namespace twinscale::formats {

namespace s = twinscale::schedules;
using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& path, const std::string& where, const std::string& why) {
  throw s::ScheduleError(path + ": " + where + ": " + why);
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

/// A compute kernel's kind from its name: GEMMs (cuBLAS's sm80_xmma_gemm_…, ampere_…gemm…,
/// nvjet_…, CUTLASS), attention (flash_fwd_…, fmha), optimizer steps (Adam/LAMB functors),
/// any other kernel as elementwise (memory-bound).
s::OpKind compute_kind(const std::string& name) {
  const std::string n = lower(name);
  if (has(n, "flash") || has(n, "fmha") || has(n, "attention") || has(n, "sdpa")) return s::OpKind::Attention;
  if (has(n, "gemm") || has(n, "xmma") || has(n, "cutlass") || has(n, "nvjet") || has(n, "cublas") || has(n, "wgmma"))
    return s::OpKind::Gemm;
  // LAMB, not the "lambda" of every templated kernel's name
  for (size_t at = n.find("lamb"); at != std::string::npos; at = n.find("lamb", at + 1))
    if (n.compare(at, 6, "lambda") != 0) return s::OpKind::OptimizerStep;
  if (has(n, "adam")) return s::OpKind::OptimizerStep;
  return s::OpKind::Elementwise;
}

/// PyTorch's "Collective name" (allreduce, _allgather_base, reduce_scatter_tensor_coalesced,
/// all_to_allv, broadcast, send, recv, barrier …) as a twinscale kind.
std::optional<s::OpKind> collective_from_metadata(const std::string& name) {
  const std::string n = lower(name);
  if (has(n, "all_to_all") || has(n, "alltoall")) return s::OpKind::AllToAll;
  if (has(n, "reduce_scatter") || has(n, "reducescatter")) return s::OpKind::ReduceScatter;
  if (has(n, "allgather") || has(n, "all_gather")) return s::OpKind::AllGather;
  if (has(n, "allreduce") || has(n, "all_reduce") || n == "barrier") return s::OpKind::AllReduce;
  if (has(n, "broadcast")) return s::OpKind::Broadcast;
  if (has(n, "send") && !has(n, "recv")) return s::OpKind::Send;
  if (has(n, "recv") && !has(n, "send")) return s::OpKind::Recv;
  return std::nullopt;
}

/// Bytes of one element of a c10 ScalarType name as PyTorch writes it ("BFloat16", "Float").
std::optional<double> dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, double> sizes{{"Float", 4},
                                                   {"Double", 8},
                                                   {"Half", 2},
                                                   {"BFloat16", 2},
                                                   {"Int", 4},
                                                   {"Long", 8},
                                                   {"Short", 2},
                                                   {"Byte", 1},
                                                   {"Char", 1},
                                                   {"Bool", 1},
                                                   {"UInt16", 2},
                                                   {"UInt32", 4},
                                                   {"UInt64", 8},
                                                   {"ComplexHalf", 4},
                                                   {"ComplexFloat", 8},
                                                   {"ComplexDouble", 16},
                                                   {"Float8_e4m3fn", 1},
                                                   {"Float8_e5m2", 1},
                                                   {"Float8_e4m3fnuz", 1},
                                                   {"Float8_e5m2fnuz", 1}};
  const auto it = sizes.find(dtype);
  if (it == sizes.end()) return std::nullopt;
  return it->second;
}

double number(const json& obj, const char* key, const std::string& path, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end()) bad(path, where, std::string("missing \"") + key + "\"");
  if (!it->is_number()) bad(path, where + "." + key, "expected a number, got " + it->dump());
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0) bad(path, where + "." + key, it->dump() + " must be finite and >= 0");
  return v;
}

/// An optional metadata field of a kernel's args: a string, or a non-negative integer.
std::optional<std::string> meta_text(const json& args, const char* key, const std::string& path,
                                     const std::string& where) {
  const auto it = args.find(key);
  if (it == args.end()) return std::nullopt;
  if (!it->is_string()) bad(path, where + ".args.\"" + key + "\"", "expected a string, got " + it->dump());
  return it->get<std::string>();
}
std::optional<double> meta_count(const json& args, const char* key, const std::string& path, const std::string& where) {
  const auto it = args.find(key);
  if (it == args.end()) return std::nullopt;
  if (!it->is_number_integer() || it->get<int64_t>() < 0)
    bad(path, where + ".args.\"" + key + "\"", "expected a count (integer >= 0), got " + it->dump());
  return it->get<double>();
}

/// Kind of an NCCL kernel (ncclDevKernel_AllReduce_Sum_bf16_RING_LL, ncclKernel_SendRecv …):
/// from its name, and for SendRecv (sends, receives and all-to-all) from the metadata.
s::OpKind nccl_kind(const std::string& name, const json& args, const std::string& path, const std::string& where) {
  const size_t u = name.find('_');
  const std::string word = u == std::string::npos ? "" : name.substr(u + 1, name.find('_', u + 1) - u - 1);
  if (word == "AllReduce") return s::OpKind::AllReduce;
  if (word == "AllGather") return s::OpKind::AllGather;
  if (word == "ReduceScatter") return s::OpKind::ReduceScatter;
  if (word == "Broadcast") return s::OpKind::Broadcast;
  if (word == "AllToAll") return s::OpKind::AllToAll;
  if (word == "Reduce" || word == "Gather" || word == "Scatter")
    bad(path, where + ".name",
        "NCCL " + word + " (\"" + name +
            "\") has no twinscale op (all-reduce, all-gather, reduce-scatter, "
            "all-to-all, broadcast, send and receive have)");
  const auto collective = meta_text(args, "Collective name", path, where);
  if (!collective)
    bad(path, where + ".args.\"Collective name\"",
        "missing: the NCCL kernel \"" + name +
            "\" is a send, a receive or an all-to-all, and only PyTorch's collective metadata says which "
            "(profile with a PyTorch that records it, 2.2 or later)");
  const auto kind = collective_from_metadata(*collective);
  if (!kind)
    bad(path, where + ".args.\"Collective name\"",
        "\"" + *collective +
            "\" is not a collective twinscale has an op for (all_reduce, all_gather, "
            "reduce_scatter, all_to_all, broadcast, send, recv, barrier)");
  return *kind;
}

/// The payload of an NCCL kernel from its metadata, in twinscale's convention (Op::bytes:
/// all-gather and reduce-scatter count the gathered size); nullopt without metadata.
std::optional<double> nccl_bytes(s::OpKind kind, const json& args, const std::string& path, const std::string& where) {
  const auto in = meta_count(args, "In msg nelems", path, where);
  const auto out = meta_count(args, "Out msg nelems", path, where);
  const auto dtype = meta_text(args, "dtype", path, where);
  if (!in || !out || !dtype) return std::nullopt;
  const auto size = dtype_bytes(*dtype);
  if (!size)
    bad(path, where + ".args.dtype", "unknown element type \"" + *dtype + "\" (PyTorch's: Float, BFloat16, …)");
  const bool gathered = kind == s::OpKind::AllGather || kind == s::OpKind::Recv;
  return (gathered ? *out : *in) * *size;
}

/// `obj[key]` when it is a string, else "" (a Kineto event's "ph" or "cat").
std::string text_of(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// "ProfilerStep#N" GPU annotations of a file: their start times, sorted.
std::vector<double> step_starts(const json& events) {
  std::vector<double> out;
  for (const auto& e : events) {
    if (!e.is_object() || text_of(e, "ph") != "X" || text_of(e, "cat") != "gpu_user_annotation") continue;
    const auto name = e.find("name");
    const auto ts = e.find("ts");
    if (name == e.end() || !name->is_string() || name->get<std::string>().rfind("ProfilerStep#", 0) != 0) continue;
    if (ts != e.end() && ts->is_number()) out.push_back(ts->get<double>());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Kernel {
  s::TraceRecord record;
  int64_t stream = 0;
  size_t index = 0;  // in traceEvents
  std::string group; // process group of a collective ("" without metadata)
};

struct FileRead {
  std::vector<Kernel> kernels;
  std::optional<int64_t> rank;
  int64_t world = 0;
  std::string device;
  int64_t copies = 0, unsized = 0;
};

std::optional<int64_t> dist_field(const json& dist, const char* key, const std::string& path) {
  const auto it = dist.find(key);
  if (it == dist.end()) return std::nullopt;
  int64_t v = -1;
  if (it->is_number_integer())
    v = it->get<int64_t>();
  else if (it->is_string() && std::regex_match(it->get<std::string>(), std::regex("[0-9]{1,9}")))
    v = std::stoll(it->get<std::string>());
  if (v < 0 || v >= s::kMaxRanks)
    bad(path, std::string("$.distributedInfo.") + key, it->dump() + " is not a rank count or rank (0 to 2^20)");
  return v;
}

/// One kernel event → its record (rank and op index set later).
Kernel read_kernel(const json& e, size_t i, const std::vector<double>& steps, const std::string& path) {
  const std::string where = "$.traceEvents[" + std::to_string(i) + "]";
  Kernel k;
  k.index = i;
  s::TraceRecord& r = k.record;
  const auto name = e.find("name");
  if (name == e.end() || !name->is_string()) bad(path, where + ".name", "missing or not a string");
  r.name = name->get<std::string>();
  r.start_s = number(e, "ts", path, where) * 1e-6;
  r.duration_s = number(e, "dur", path, where) * 1e-6;
  const auto tid = e.find("tid");
  if (tid != e.end() && tid->is_number_integer()) k.stream = tid->get<int64_t>();
  static const json empty = json::object();
  const auto a = e.find("args");
  if (a != e.end() && !a->is_object()) bad(path, where + ".args", "expected an object");
  const json& args = a != e.end() ? *a : empty;
  const auto step = std::upper_bound(steps.begin(), steps.end(), e.at("ts").get<double>()) - steps.begin();
  r.labels.iteration = static_cast<int32_t>(std::max<std::ptrdiff_t>(0, step - 1));
  if (r.name.rfind("nccl", 0) != 0) {
    r.kind = compute_kind(r.name);
    r.stream = s::Stream::Compute;
    r.labels.phase = r.kind == s::OpKind::OptimizerStep ? s::Phase::Optimizer : s::Phase::Forward;
    return k;
  }
  r.kind = nccl_kind(r.name, args, path, where);
  r.stream = r.kind == s::OpKind::Send   ? s::Stream::PpSend
             : r.kind == s::OpKind::Recv ? s::Stream::PpRecv
                                         : s::Stream::DpComm;
  if (const auto bytes = nccl_bytes(r.kind, args, path, where))
    r.bytes = *bytes;
  else
    r.bytes = -1; // counted as unsized, then 0
  if (const auto ranks = meta_text(args, "Process Group Ranks", path, where))
    k.group = *ranks;
  else if (const auto pg = meta_text(args, "Process Group Name", path, where))
    k.group = "pg " + *pg;
  return k;
}

FileRead read_file(const std::string& path) {
  std::string text;
  try {
    text = s::read_input_file(path, "trace", s::InputKind::Json);
  } catch (const s::InputFileError& e) {
    throw s::ScheduleError(e.what());
  }
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw s::ScheduleError(path + ": not valid JSON (" + e.what() + ")");
  }
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    bad(path, "$", "expected an object with a \"traceEvents\" array");
  FileRead f;
  if (const auto d = doc.find("distributedInfo"); d != doc.end() && d->is_object()) {
    f.rank = dist_field(*d, "rank", path);
    f.world = dist_field(*d, "world_size", path).value_or(0);
  }
  if (const auto p = doc.find("deviceProperties"); p != doc.end() && p->is_array() && !p->empty() &&
                                                   (*p)[0].is_object() && (*p)[0].contains("name") &&
                                                   (*p)[0]["name"].is_string())
    f.device = (*p)[0]["name"].get<std::string>();
  const json& events = doc["traceEvents"];
  const std::vector<double> steps = step_starts(events);
  std::optional<std::pair<int64_t, size_t>> device; // (pid, event) of the first kernel
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (!e.is_object() || text_of(e, "ph") != "X") continue;
    const std::string cat = text_of(e, "cat");
    if (cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Memcpy" || cat == "Memset") {
      ++f.copies;
      continue;
    }
    if (cat != "kernel" && cat != "Kernel") continue;
    const std::string where = "$.traceEvents[" + std::to_string(i) + "]";
    const auto pid = e.find("pid");
    if (pid == e.end() || !pid->is_number_integer()) bad(path, where + ".pid", "expected the device number");
    if (!device)
      device = std::make_pair(pid->get<int64_t>(), i);
    else if (device->first != pid->get<int64_t>())
      bad(path, where + ".pid",
          "kernels of device " + std::to_string(pid->get<int64_t>()) + " and of device " +
              std::to_string(device->first) + " ($.traceEvents[" + std::to_string(device->second) +
              "]) in one file: a Kineto trace is read as one rank's (one GPU per process)");
    f.kernels.push_back(read_kernel(e, i, steps, path));
  }
  if (f.kernels.empty())
    bad(path, "$.traceEvents",
        "no GPU kernel events (\"cat\": \"kernel\"): profile with ProfilerActivity.CUDA to trace the GPU");
  return f;
}

/// Compare for natural order ("rank2.json" before "rank10.json").
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string x = a.substr(i, ie - i), y = b.substr(j, je - j);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

} // namespace

bool is_kineto_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string head(64 << 10, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (has(head, "\"twinscale-trace\"")) return false;
  static const std::regex marker(R"re("(schemaVersion|deviceProperties|distributedInfo)"\s*:|"cat"\s*:\s*"kernel")re");
  return std::regex_search(head, marker);
}

std::vector<std::string> kineto_files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end(), natural_less);
  return out;
}

KinetoTrace read_kineto_traces(const std::vector<std::string>& paths) {
  KinetoTrace t;
  std::map<int64_t, std::string> rank_file;
  int64_t copies = 0, unsized = 0;
  for (size_t f = 0; f < paths.size(); ++f) {
    FileRead file = read_file(paths[f]);
    const int64_t rank = file.rank.value_or(static_cast<int64_t>(f));
    if (const auto [it, fresh] = rank_file.emplace(rank, paths[f]); !fresh)
      bad(paths[f], "$.distributedInfo.rank",
          "rank " + std::to_string(rank) + " is also the rank of " + it->second + " (one file per rank)");
    t.world = std::max({t.world, rank + 1, file.world});
    if (t.device.empty()) t.device = file.device;
    copies += file.copies;
    // the rank's kernels in start order: op index i is the i-th kernel to start
    std::stable_sort(file.kernels.begin(), file.kernels.end(), [](const Kernel& a, const Kernel& b) {
      if (a.record.start_s != b.record.start_s) return a.record.start_s < b.record.start_s;
      return a.stream < b.stream;
    });
    std::map<std::string, int64_t> sequence; // per process group: its collectives in order
    for (size_t i = 0; i < file.kernels.size(); ++i) {
      Kernel& k = file.kernels[i];
      k.record.rank = rank;
      k.record.op_index = static_cast<uint32_t>(i);
      if (k.record.bytes < 0) {
        ++unsized;
        k.record.bytes = 0;
      }
      s::Op op;
      op.kind = k.record.kind;
      if (op.is_collective() && !k.group.empty())
        k.record.instance = k.group + "#" + std::to_string(sequence[k.group]++);
      t.records.push_back(std::move(k.record));
    }
  }
  if (copies > 0)
    t.notes.push_back(std::to_string(copies) +
                      " GPU memory copies and sets skipped (twinscale times copies only as data-loading ops)");
  if (unsized > 0)
    t.notes.push_back(std::to_string(unsized) +
                      " NCCL kernels without PyTorch's collective metadata: their bytes are unknown (0)");
  return t;
}

} // namespace twinscale::formats
