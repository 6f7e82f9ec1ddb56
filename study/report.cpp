#include "study/report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

namespace twinscale::study {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string json_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt("%.9g", v.get<double>());
  return v.dump();
}

/// "tp=8 pp=16 micro_batch=1" from the inputs JSON.
std::string inputs_text(const StoredPoint& p) {
  std::string s;
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(p.inputs);
  for (const auto& [k, v] : j.items()) s += (s.empty() ? "" : " ") + k + "=" + json_text(v);
  return s;
}

std::string point_line(const StoredPoint& p) {
  const PointResult& r = p.result;
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %6lld  %6.2f %%  %9.4f s  %7.1f GB  %s", static_cast<long long>(r.id), 100 * r.mfu,
                r.iteration_time_s, r.memory_bytes / 1e9,
                p.flow && p.flow->status == PointStatus::Ok ? fmt("%6.2f %%", 100 * p.flow->mfu).c_str() : "     -  ");
  // Megatron's order, tp cp dp pp (vpp with pp), then ep; cp and ep 0 (a version 1 store): not shown
  const auto part = [](const char* name, int64_t v) { return v > 0 ? " " + (name + (" " + std::to_string(v))) : ""; };
  return std::string(buf) + " " + part("tp", r.tp) + part("cp", r.cp) + part("dp", r.dp) + part("pp", r.pp) +
         part("vpp", r.vpp) + part("ep", r.ep) + " mb " + std::to_string(r.micro_batch) +
         (r.campaign ? fmt("  ETTR %.4f", r.ettr) + fmt(" ± %.4f", r.ettr_ci95) : std::string()) + "  | " +
         inputs_text(p) + "\n";
}

} // namespace

std::vector<const StoredPoint*> ranked(const std::vector<StoredPoint>& rows) {
  std::vector<const StoredPoint*> out;
  for (const auto& p : rows)
    if (p.result.status == PointStatus::Ok) out.push_back(&p);
  std::stable_sort(out.begin(), out.end(), [](const StoredPoint* a, const StoredPoint* b) {
    if (a->result.score() != b->result.score()) return a->result.score() > b->result.score();
    return a->result.id < b->result.id;
  });
  return out;
}

std::vector<int64_t> best_ids(const std::vector<StoredPoint>& rows, int64_t k) {
  std::vector<int64_t> ids;
  for (const StoredPoint* p : ranked(rows)) {
    if (static_cast<int64_t>(ids.size()) >= k) break;
    ids.push_back(p->result.id);
  }
  return ids;
}

std::vector<const StoredPoint*> pareto_front(const std::vector<StoredPoint>& rows) {
  std::vector<const StoredPoint*> ok;
  for (const auto& p : rows)
    if (p.result.status == PointStatus::Ok) ok.push_back(&p);
  std::stable_sort(ok.begin(), ok.end(), [](const StoredPoint* a, const StoredPoint* b) {
    if (a->result.memory_bytes != b->result.memory_bytes) return a->result.memory_bytes < b->result.memory_bytes;
    if (a->result.mfu != b->result.mfu) return a->result.mfu > b->result.mfu;
    return a->result.id < b->result.id;
  });
  // Sweep by memory ascending: a point is on the front when its MFU beats every point
  // with less (or equal) memory seen so far.
  std::vector<const StoredPoint*> front;
  double best = -1;
  for (const StoredPoint* p : ok)
    if (p->result.mfu > best) {
      front.push_back(p);
      best = p->result.mfu;
    }
  return front;
}

std::string summary_table(const StoreInfo& info, const std::vector<StoredPoint>& rows, int64_t top) {
  std::ostringstream o;
  std::map<std::string, int64_t> by_status;
  for (const auto& p : rows) ++by_status[std::string(to_string(p.result.status))];
  o << "study " << info.name << " (" << info.study_file << ", fingerprint " << info.fingerprint << ", twinscale "
    << info.version << ")\n";
  o << "  points " << rows.size() << " of " << info.points << " done:";
  for (const auto& [s, n] : by_status) o << " " << n << " " << s;
  o << "\n";
  if (info.schema_version < kStoreSchemaVersion)
    o << "  (a store of schema version " << info.schema_version
      << ": no cp or ep recorded, and exposed_tp_s includes the MoE all-to-alls)\n";
  std::map<std::string, int64_t> reasons;
  for (const auto& p : rows)
    if (p.result.status != PointStatus::Ok) {
      std::string r = p.result.reason;
      if (r.size() > 90) r = r.substr(0, 87) + "...";
      ++reasons[r];
    }
  if (!reasons.empty()) {
    std::vector<std::pair<int64_t, std::string>> rs;
    for (const auto& [r, n] : reasons) rs.emplace_back(-n, r);
    std::sort(rs.begin(), rs.end());
    o << "most common reasons a point was left out:\n";
    for (size_t i = 0; i < rs.size() && i < 5; ++i) o << "  " << -rs[i].first << " × " << rs[i].second << "\n";
  }
  const auto best = ranked(rows);
  const char* header = "      id      MFU   iteration    memory  flow MFU  layout and axes\n";
  const bool campaign = !best.empty() && best.front()->result.campaign;
  o << "best " << std::min<int64_t>(top, static_cast<int64_t>(best.size())) << " points by "
    << (campaign ? "MFU × ETTR" : "MFU") << "\n"
    << header;
  for (size_t i = 0; i < best.size() && static_cast<int64_t>(i) < top; ++i) o << point_line(*best[i]);
  const auto front = pareto_front(rows);
  o << "Pareto front, MFU vs memory per GPU (" << front.size() << " points)\n" << header;
  for (const StoredPoint* p : front) o << point_line(*p);
  return o.str();
}

std::string rows_csv(const StoreInfo& info, const std::vector<StoredPoint>& rows) {
  std::ostringstream o;
  o << "id";
  for (const auto& a : info.axes) o << ",axis_" << a; // the axis as given; the resolved values follow
  o << ",status,reason,gpus,tp,cp,ep,pp,vpp,dp,micro_batch,global_batch,memory_gb,gpu_memory_gb,ops,mode,"
       "iteration_time_s,tokens_per_s,tflops_per_gpu,mfu,compute_s,exposed_tp_s,exposed_ep_s,exposed_pp_s,"
       "exposed_dp_s,bubble_s,"
       "flow_status,flow_iteration_time_s,flow_mfu,flow_exposed_dp_s,ettr,ettr_ci95,interruptions,lost_work_h,"
       "twinscale_version\n";
  for (const auto& p : rows) {
    const PointResult& r = p.result;
    o << r.id;
    const nlohmann::json j = nlohmann::json::parse(p.inputs);
    for (const auto& a : info.axes) o << "," << (j.contains(a) ? csv_cell(json_text(j[a])) : std::string());
    o << "," << to_string(r.status) << "," << csv_cell(r.reason);
    // cp, ep and exposed_ep_s are blank in a store that predates them (schema version 1)
    const bool v1 = info.schema_version < 2;
    const auto count = [&](int64_t v, bool known) { return known ? std::to_string(v) : std::string(); };
    o << "," << r.gpus << "," << r.tp << "," << count(r.cp, !v1) << "," << count(r.ep, !v1);
    for (int64_t v : {r.pp, r.vpp, r.dp, r.micro_batch, r.global_batch}) o << "," << v;
    o << "," << fmt("%.4f", r.memory_bytes / 1e9) << "," << fmt("%.4f", r.gpu_memory_bytes / 1e9) << "," << r.ops << ","
      << r.mode;
    for (double v : {r.iteration_time_s, r.tokens_per_s, r.tflops_per_gpu, r.mfu, r.compute_s, r.exposed_tp_s})
      o << "," << fmt("%.9g", v);
    o << "," << (v1 ? std::string() : fmt("%.9g", r.exposed_ep_s));
    for (double v : {r.exposed_pp_s, r.exposed_dp_s, r.bubble_s}) o << "," << fmt("%.9g", v);
    if (p.flow)
      o << "," << to_string(p.flow->status) << "," << fmt("%.9g", p.flow->iteration_time_s) << ","
        << fmt("%.9g", p.flow->mfu) << "," << fmt("%.9g", p.flow->exposed_dp_s);
    else
      o << ",,,,";
    if (r.campaign)
      o << "," << fmt("%.6f", r.ettr) << "," << fmt("%.6f", r.ettr_ci95) << "," << fmt("%.3f", r.interruptions) << ","
        << fmt("%.4f", r.lost_work_s / 3600);
    else
      o << ",,,,";
    o << "," << p.version << "\n";
  }
  return o.str();
}

} // namespace twinscale::study
