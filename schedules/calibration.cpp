#include "schedules/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <ostream>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "schedules/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/json_document.hpp"
#include "schedules/limits.hpp"

namespace twinscale::schedules {
namespace {

using nlohmann::json;

constexpr const char* kFormatName = "twinscale-calibration";

template <class E>
std::optional<E> enum_from_name(const std::string& name, int count) {
  for (int i = 0; i < count; ++i)
    if (to_string(static_cast<E>(i)) == name) return static_cast<E>(i);
  return std::nullopt;
}

template <class E>
std::string enum_names(int first, int count) {
  std::string out;
  for (int i = first; i < count; ++i) {
    out += out.empty() ? "" : ", ";
    out += std::string(to_string(static_cast<E>(i)));
  }
  return out;
}

constexpr int kKernelCount = static_cast<int>(kLastKernel) + 1;
constexpr int kOpKindCount = static_cast<int>(OpKind::Recv) + 1;
constexpr int kDTypeCount = static_cast<int>(DType::FP8) + 1;

double median(std::vector<double> v) {
  TWINSCALE_ASSERT(!v.empty(), "median of no samples");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

[[noreturn]] void fail(const std::string& path, const std::string& where, const std::string& what) {
  throw ScheduleError("calibration table " + path + ": " + where + ": " + what);
}

/// A checked field of one entry: present, of the right type, within range.
double get_number(const json& j, const char* key, const std::string& path, const std::string& where, double min) {
  if (!j.contains(key) || !j[key].is_number()) fail(path, where, std::string("\"") + key + "\" must be a number");
  const double v = j[key].get<double>();
  if (!std::isfinite(v) || v < min)
    fail(path, where,
         std::string("\"") + key + "\" = " + std::to_string(v) +
             " is out of range (must be finite and >= " + std::to_string(min) + ")");
  return v;
}

/// An exact integer field in [min, max] (samples, group sizes): 1.5 and 1e300 are refused.
int64_t get_integer(const json& j, const char* key, const std::string& path, const std::string& where, int64_t min,
                    int64_t max) {
  if (!j.contains(key) || !j[key].is_number_integer())
    fail(path, where, std::string("\"") + key + "\" must be an integer");
  const bool too_big = j[key].is_number_unsigned() && j[key].get<uint64_t>() > static_cast<uint64_t>(max);
  const int64_t v = too_big ? max : j[key].get<int64_t>();
  if (too_big || v < min || v > max)
    fail(path, where,
         std::string("\"") + key + "\" = " + j[key].dump() + " is out of range [" + std::to_string(min) + ", " +
             std::to_string(max) + "]");
  return v;
}

/// The keys an object of the table may hold; any other is refused with a "did you mean"
/// (a misspelt "kernelz" must not drop every kernel entry silently).
void check_keys(const json& j, std::initializer_list<std::string_view> known, const std::string& path,
                const std::string& where) {
  try {
    check_json_keys(j, known, "calibration table " + path, where);
  } catch (const JsonDocumentError& e) {
    throw ScheduleError(e.what());
  }
}

std::string get_string(const json& j, const char* key, const std::string& path, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string()) fail(path, where, std::string("\"") + key + "\" must be a string");
  return j[key].get<std::string>();
}

} // namespace

double bus_factor(OpKind kind, int64_t group_size) {
  const double n = static_cast<double>(std::max<int64_t>(group_size, 1));
  switch (kind) {
  case OpKind::AllReduce: return 2.0 * (n - 1.0) / n;
  case OpKind::AllGather:
  case OpKind::ReduceScatter:
  case OpKind::AllToAll: return (n - 1.0) / n;
  default: return 1.0;
  }
}

const KernelTiming* CalibrationTable::find_kernel(Kernel kernel, DType dtype, const std::array<int64_t, 4>& shape,
                                                  std::string_view op) const {
  const KernelTiming* any = nullptr;
  for (const KernelTiming& k : kernels) {
    if (k.kernel != kernel || k.dtype != dtype || k.shape != shape) continue;
    if (k.op == op) return &k;
    if (k.op.empty() && any == nullptr) any = &k;
  }
  return any;
}

bool span_matches(int64_t hosts, CommSpan span) {
  if (hosts <= 0 || span == CommSpan::Any) return true;
  return (hosts == 1) == (span == CommSpan::SameHost);
}

const CommBandwidth* CalibrationTable::find_comm(OpKind kind, int64_t group_size, double bytes, CommSpan span) const {
  for (const CommBandwidth& c : comms)
    if (c.kind == kind && c.group_size == group_size && c.bytes == bytes && span_matches(c.hosts, span)) return &c;
  return nullptr;
}

std::optional<double> CalibrationTable::busbw_bytes_per_s(OpKind kind, int64_t group_size, double bytes) const {
  std::vector<const CommBandwidth*> row;
  for (const CommBandwidth& c : comms)
    if (c.kind == kind && c.group_size == group_size && c.bytes > 0) row.push_back(&c);
  if (row.empty()) return std::nullopt;
  std::sort(row.begin(), row.end(), [](auto* a, auto* b) { return a->bytes < b->bytes; });
  if (bytes <= row.front()->bytes) return row.front()->busbw_bytes_per_s;
  if (bytes >= row.back()->bytes) return row.back()->busbw_bytes_per_s;
  for (size_t i = 1; i < row.size(); ++i) {
    if (bytes > row[i]->bytes) continue;
    const double x0 = std::log(row[i - 1]->bytes), x1 = std::log(row[i]->bytes);
    const double t = x1 > x0 ? (std::log(bytes) - x0) / (x1 - x0) : 1.0;
    return row[i - 1]->busbw_bytes_per_s + t * (row[i]->busbw_bytes_per_s - row[i - 1]->busbw_bytes_per_s);
  }
  return row.back()->busbw_bytes_per_s;
}

std::array<int64_t, 4> executed_shape(const Op& op, int64_t divisor) {
  std::array<int64_t, 4> s = op.shape;
  if (divisor <= 1) return s;
  for (int64_t& d : s)
    if (d > 0) d = std::max<int64_t>(1, (d + divisor - 1) / divisor);
  return s;
}

double executed_bytes(double bytes, int64_t divisor) {
  divisor = std::max<int64_t>(divisor, 1);
  return std::max(4.0, std::ceil(bytes / static_cast<double>(divisor)));
}

double largest_buffer_bytes(const Op& op, int64_t divisor, double element_bytes) {
  if (op.is_communication()) return executed_bytes(op.bytes, divisor);
  const std::array<int64_t, 4> s = executed_shape(op, divisor);
  auto d = [&](size_t i) { return static_cast<double>(std::max<int64_t>(s[i], 1)); };
  double elements = d(0);
  if (op.kind == OpKind::Gemm)
    elements = std::max({d(0) * d(2), d(2) * d(1), d(0) * d(1)});
  else if (op.kind == OpKind::Attention)
    elements = std::max(d(1) * d(1), d(1) * d(2));
  return elements * element_bytes;
}

namespace {

/// The work of a kernel shape: the product of its positive dimensions (m·n·k of a GEMM,
/// the elements of an elementwise kernel or optimizer step).
double shape_work(const std::array<int64_t, 4>& shape) {
  double w = 1;
  for (int64_t d : shape)
    if (d > 0) w *= static_cast<double>(d);
  return w;
}

} // namespace

std::optional<double> CalibrationTable::kernel_seconds(const Op& op, std::string_view name) const {
  const DType dtype = scaled_cpu_rule() ? DType::FP32 : op.dtype;
  const std::array<int64_t, 4> shape = scaled_cpu_rule() ? executed_shape(op, shape_divisor) : op.shape;
  if (const KernelTiming* k = find_kernel(op.kernel, dtype, shape, name)) return k->seconds;
  // No entry at this shape: the same op (kernel, dtype, op name) measured at other shapes,
  // interpolated log-log in work between the neighbours, proportional to work outside.
  if (name.empty()) return std::nullopt;
  const double w = shape_work(shape);
  const KernelTiming *lo = nullptr, *hi = nullptr;
  double wlo = 0, whi = 0;
  for (const KernelTiming& k : kernels) {
    if (k.kernel != op.kernel || k.dtype != dtype || k.op != name || !(k.seconds > 0)) continue;
    const double kw = shape_work(k.shape);
    if (kw <= w && (lo == nullptr || kw > wlo)) lo = &k, wlo = kw;
    if (kw >= w && (hi == nullptr || kw < whi)) hi = &k, whi = kw;
  }
  if (lo == nullptr && hi == nullptr) return std::nullopt;
  if (lo == nullptr) return hi->seconds * w / whi;
  if (hi == nullptr) return lo->seconds * w / wlo;
  if (whi <= wlo) return lo->seconds;
  const double t = (std::log(w) - std::log(wlo)) / (std::log(whi) - std::log(wlo));
  return std::exp(std::log(lo->seconds) + t * (std::log(hi->seconds) - std::log(lo->seconds)));
}

namespace {

/// Seconds at `bytes` from the entries of one kind and group size (no allocation: one
/// scan for the two neighbours and the ends). nullopt when there is none.
std::optional<double> seconds_at(const std::vector<CommBandwidth>& comms, OpKind kind, int64_t group_size, double bytes,
                                 CommSpan span) {
  const CommBandwidth *lo = nullptr, *hi = nullptr, *first = nullptr, *last = nullptr;
  for (const CommBandwidth& c : comms) {
    if (c.kind != kind || c.group_size != group_size || !(c.bytes > 0) || !(c.seconds > 0)) continue;
    if (!span_matches(c.hosts, span)) continue;
    if (first == nullptr || c.bytes < first->bytes) first = &c;
    if (last == nullptr || c.bytes > last->bytes) last = &c;
    if (c.bytes <= bytes && (lo == nullptr || c.bytes > lo->bytes)) lo = &c;
    if (c.bytes >= bytes && (hi == nullptr || c.bytes < hi->bytes)) hi = &c;
  }
  if (first == nullptr) return std::nullopt;
  if (lo == nullptr) return first->seconds;                      // latency bound
  if (hi == nullptr) return last->seconds * bytes / last->bytes; // bandwidth bound
  if (hi->bytes <= lo->bytes) return lo->seconds;
  const double t = (std::log(bytes) - std::log(lo->bytes)) / (std::log(hi->bytes) - std::log(lo->bytes));
  return std::exp(std::log(lo->seconds) + t * (std::log(hi->seconds) - std::log(lo->seconds)));
}

} // namespace

std::optional<double> CalibrationTable::comm_seconds(OpKind kind, int64_t group_size, double bytes,
                                                     CommSpan span) const {
  if (kind == OpKind::Recv) kind = OpKind::Send;
  if (group_size <= 1) return 0.0;
  const double b = scaled_cpu_rule() ? executed_bytes(bytes, shape_divisor) : bytes;
  if (!(b > 0)) return 0.0;
  if (auto s = seconds_at(comms, kind, group_size, b, span)) return s;
  int64_t below = 0, above = 0; // the nearest measured group sizes around group_size
  for (const CommBandwidth& c : comms) {
    if (c.kind != kind || !span_matches(c.hosts, span)) continue;
    if (c.group_size < group_size && c.group_size > below) below = c.group_size;
    if (c.group_size > group_size && (above == 0 || c.group_size < above)) above = c.group_size;
  }
  if (below < 2 || above == 0) return std::nullopt;
  const auto s0 = seconds_at(comms, kind, below, b, span), s1 = seconds_at(comms, kind, above, b, span);
  if (!s0 || !s1) return std::nullopt;
  const double t = (std::log(static_cast<double>(group_size)) - std::log(static_cast<double>(below))) /
                   (std::log(static_cast<double>(above)) - std::log(static_cast<double>(below)));
  return std::exp(std::log(*s0) + t * (std::log(*s1) - std::log(*s0)));
}

void CalibrationBuilder::add_kernel_sample(Kernel kernel, DType dtype, const std::array<int64_t, 4>& shape,
                                           double seconds, std::string_view op) {
  kernel_samples_[{static_cast<int>(kernel), static_cast<int>(dtype), shape, std::string(op)}].push_back(seconds);
}

void CalibrationBuilder::add_comm_sample(OpKind kind, int64_t group_size, double bytes, double seconds, int64_t hosts) {
  comm_samples_[{static_cast<int>(kind), group_size, std::max<int64_t>(hosts, 0), bytes}].push_back(seconds);
}

CalibrationTable CalibrationBuilder::build(std::string source, std::string device) const {
  CalibrationTable t;
  t.source = std::move(source);
  t.device = std::move(device);
  for (const auto& [key, samples] : kernel_samples_) {
    KernelTiming k;
    k.kernel = static_cast<Kernel>(std::get<0>(key));
    k.dtype = static_cast<DType>(std::get<1>(key));
    k.shape = std::get<2>(key);
    k.op = std::get<3>(key);
    k.seconds = median(samples);
    k.samples = static_cast<int64_t>(samples.size());
    t.kernels.push_back(k);
  }
  for (const auto& [key, samples] : comm_samples_) {
    CommBandwidth c;
    c.kind = static_cast<OpKind>(std::get<0>(key));
    c.group_size = std::get<1>(key);
    c.hosts = std::get<2>(key);
    c.bytes = std::get<3>(key);
    c.seconds = median(samples);
    c.samples = static_cast<int64_t>(samples.size());
    c.algbw_bytes_per_s = c.seconds > 0 ? c.bytes / c.seconds : 0;
    c.busbw_bytes_per_s = c.algbw_bytes_per_s * bus_factor(c.kind, c.group_size);
    t.comms.push_back(c);
  }
  return t;
}

void write_calibration(const CalibrationTable& table, std::ostream& out) {
  json j;
  j["format"] = kFormatName;
  j["version"] = table.version;
  j["source"] = table.source;
  j["device"] = table.device;
  j["shape_divisor"] = table.shape_divisor;
  j["kernels"] = json::array();
  for (const KernelTiming& k : table.kernels)
    j["kernels"].push_back({{"kernel", std::string(to_string(k.kernel))},
                            {"dtype", std::string(to_string(k.dtype))},
                            {"shape", k.shape},
                            {"op", k.op},
                            {"seconds", k.seconds},
                            {"samples", k.samples}});
  j["comms"] = json::array();
  for (const CommBandwidth& c : table.comms) {
    json e = {{"kind", std::string(to_string(c.kind))},
              {"group_size", c.group_size},
              {"bytes", c.bytes},
              {"seconds", c.seconds},
              {"algbw_bytes_per_s", c.algbw_bytes_per_s},
              {"busbw_bytes_per_s", c.busbw_bytes_per_s},
              {"samples", c.samples}};
    if (c.hosts > 0) e["hosts"] = c.hosts; // not known: absent (any span)
    j["comms"].push_back(std::move(e));
  }
  out << j.dump(1) << "\n";
}

namespace {

/// kernels[i] of a table (`where`), checked field by field.
KernelTiming read_kernel_entry(const json& e, const std::string& path, const std::string& where) {
  if (!e.is_object()) fail(path, where, "must be an object");
  check_keys(e, {"kernel", "dtype", "shape", "op", "seconds", "samples"}, path, "$." + where);
  KernelTiming k;
  const std::string kname = get_string(e, "kernel", path, where);
  const auto kernel = enum_from_name<Kernel>(kname, kKernelCount);
  if (!kernel || *kernel == Kernel::None)
    fail(path, where, "unknown kernel \"" + kname + "\"; valid: " + enum_names<Kernel>(1, kKernelCount));
  k.kernel = *kernel;
  const std::string dname = get_string(e, "dtype", path, where);
  const auto dtype = enum_from_name<DType>(dname, kDTypeCount);
  if (!dtype) fail(path, where, "unknown dtype \"" + dname + "\"; valid: " + enum_names<DType>(0, kDTypeCount));
  k.dtype = *dtype;
  const std::string w = where + " (" + kname + ")";
  if (!e.contains("shape") || !e["shape"].is_array() || e["shape"].size() != 4)
    fail(path, w, "\"shape\" must be an array of 4 integers");
  for (size_t d = 0; d < 4; ++d) {
    if (!e["shape"][d].is_number_integer() || e["shape"][d].get<int64_t>() < 0)
      fail(path, w, "\"shape\" must hold non-negative integers");
    k.shape[d] = e["shape"][d].get<int64_t>();
  }
  if (e.contains("op")) k.op = get_string(e, "op", path, w);
  k.seconds = get_number(e, "seconds", path, w, 0);
  k.samples = get_integer(e, "samples", path, w, 1, int64_t{1} << 53);
  return k;
}

/// comms[i] of a table (`where`), checked field by field.
CommBandwidth read_comm_entry(const json& e, const std::string& path, const std::string& where) {
  if (!e.is_object()) fail(path, where, "must be an object");
  check_keys(e,
             {"kind", "group_size", "bytes", "seconds", "algbw_bytes_per_s", "busbw_bytes_per_s", "samples", "hosts"},
             path, "$." + where);
  CommBandwidth c;
  const std::string kname = get_string(e, "kind", path, where);
  const auto kind = enum_from_name<OpKind>(kname, kOpKindCount);
  if (!kind || *kind < OpKind::AllGather || *kind == OpKind::Recv)
    fail(path, where,
         "unknown communication kind \"" + kname +
             "\"; valid: all_gather, reduce_scatter, all_reduce, all_to_all, "
             "broadcast, send");
  c.kind = *kind;
  const std::string w = where + " (" + kname + ")";
  c.group_size = get_integer(e, "group_size", path, w, 1, kMaxRanks);
  c.bytes = get_number(e, "bytes", path, w, 0);
  c.seconds = get_number(e, "seconds", path, w, 0);
  c.algbw_bytes_per_s = get_number(e, "algbw_bytes_per_s", path, w, 0);
  c.busbw_bytes_per_s = get_number(e, "busbw_bytes_per_s", path, w, 0);
  c.samples = get_integer(e, "samples", path, w, 1, int64_t{1} << 53);
  if (e.contains("hosts")) c.hosts = get_integer(e, "hosts", path, w, 1, kMaxRanks);
  return c;
}

} // namespace

CalibrationTable read_calibration(std::istream& in, const std::string& path) {
  json j;
  try {
    j = parse_json_document(std::string(std::istreambuf_iterator<char>(in), {}), "calibration table " + path);
  } catch (const JsonDocumentError& e) { // not JSON, a repeated key, too deep
    throw ScheduleError(e.what());
  }
  if (!j.is_object()) fail(path, "file", "must be a JSON object");
  check_keys(j, {"format", "version", "source", "device", "shape_divisor", "kernels", "comms"}, path, "$");
  if (!j.contains("format") || j["format"] != kFormatName)
    fail(path, "\"format\"", std::string("must be \"") + kFormatName + "\"");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() < 1 ||
      j["version"].get<int>() > kCalibrationFormatVersion)
    fail(path, "\"version\"",
         "unsupported; this build reads versions 1 to " + std::to_string(kCalibrationFormatVersion));
  CalibrationTable t;
  t.source = j.contains("source") && j["source"].is_string() ? j["source"].get<std::string>() : "";
  t.device = j.contains("device") && j["device"].is_string() ? j["device"].get<std::string>() : "";
  if (j.contains("shape_divisor")) t.shape_divisor = get_integer(j, "shape_divisor", path, "file", 1, int64_t{1} << 30);
  for (const char* key : {"kernels", "comms"})
    if (j.contains(key) && !j[key].is_array()) fail(path, std::string("\"") + key + "\"", "must be an array");

  std::map<std::tuple<int, int, std::array<int64_t, 4>, std::string>, size_t> kernel_seen;
  std::map<std::tuple<int, int64_t, int64_t, double>, size_t> comm_seen;
  static const json kNone = json::array();
  size_t i = 0;
  for (const json& e : j.contains("kernels") ? j["kernels"] : kNone) {
    const std::string where = "kernels[" + std::to_string(i++) + "]";
    const KernelTiming k = read_kernel_entry(e, path, where);
    const auto [it, fresh] = kernel_seen.emplace(
        std::make_tuple(static_cast<int>(k.kernel), static_cast<int>(k.dtype), k.shape, k.op), t.kernels.size());
    if (!fresh)
      fail(path, where + " (" + std::string(to_string(k.kernel)) + ")",
           "duplicates kernels[" + std::to_string(it->second) + "] (same kernel, dtype, shape and op); keep one entry");
    t.kernels.push_back(k);
  }
  i = 0;
  for (const json& e : j.contains("comms") ? j["comms"] : kNone) {
    const std::string where = "comms[" + std::to_string(i++) + "]";
    const CommBandwidth c = read_comm_entry(e, path, where);
    const auto [it, fresh] =
        comm_seen.emplace(std::make_tuple(static_cast<int>(c.kind), c.group_size, c.hosts, c.bytes), t.comms.size());
    if (!fresh)
      fail(path, where + " (" + std::string(to_string(c.kind)) + ")",
           "duplicates comms[" + std::to_string(it->second) +
               "] (same kind, group_size, hosts and bytes); keep one entry");
    t.comms.push_back(c);
  }
  return t;
}

CalibrationTable read_calibration_file(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path, "calibration table", InputKind::Json);
  } catch (const InputFileError& e) {
    throw ScheduleError(std::string("calibration table ") + e.what());
  }
  std::istringstream in(std::move(text));
  return read_calibration(in, path);
}

} // namespace twinscale::schedules
