// Strict JSON inputs (schedules/json_document.hpp): a key given twice in one object is
// refused naming it and where it is (nlohmann-json keeps the last silently), nesting is
// bounded, and the readers refuse keys they do not know with a "did you mean" — a
// calibration table whose "kernels" is misspelt "kernelz" no longer loses every kernel.
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "schedules/calibration.hpp"
#include "schedules/error.hpp"
#include "schedules/json_document.hpp"
#include "schedules/trace.hpp"

using namespace twinscale::schedules;
using Catch::Contains;

namespace {

const std::string kKernel = R"({"kernel":"gemm","dtype":"bf16","shape":[1,2,3,0],"seconds":1e-6,"samples":1})";

CalibrationTable read_table(const std::string& text) {
  std::istringstream in(text);
  return read_calibration(in, "cal.json");
}

std::vector<TraceRecord> read_trace(const std::string& text) {
  std::istringstream in(text);
  return read_chrome_trace(in, "t.json");
}

const std::string kEvent =
    R"({"ph":"X","name":"a","cat":"gemm","pid":0,"tid":0,"ts":1.000,"dur":2.000,"args":{"op":0,)"
    R"("kind":"gemm","kernel":"gemm","stream":"compute","iteration":0,"micro_batch":0,"chunk":0,)"
    R"("layer":0,"phase":"fwd","bytes":0,"flops":10,"failed":false}})";

} // namespace

TEST_CASE("strict json: a repeated key is refused naming the key and its path", "[schedules][json]") {
  CHECK_THROWS_WITH(parse_json_document(R"({"a":1,"a":2})", "doc.json"),
                    Contains("doc.json: $: key \"a\" is given twice"));
  CHECK_THROWS_WITH(parse_json_document(R"({"x":[{"b":1},{"b":1,"c":2,"c":3}]})", "doc.json"),
                    Contains("$.x[1]: key \"c\" is given twice"));
  CHECK_THROWS_WITH(parse_json_document(R"({"x":[1,[2,3],{"y":{"z":1,"z":2}}]})", "doc.json"),
                    Contains("$.x[2].y: key \"z\" is given twice"));
  // an object of many keys (past the short list kept while an object has few)
  std::string many = "{";
  for (int k = 0; k < 40; ++k) many += "\"k" + std::to_string(k) + "\":" + std::to_string(k) + ",";
  CHECK(parse_json_document(many + "\"last\":1}", "doc.json").size() == 41);
  CHECK_THROWS_WITH(parse_json_document(many + "\"k3\":1}", "doc.json"), Contains("$: key \"k3\" is given twice"));
  CHECK_THROWS_WITH(parse_json_document(many + "\"k39\":1}", "doc.json"), Contains("$: key \"k39\" is given twice"));
  // the same key in two objects is fine
  const auto j = parse_json_document(R"({"a":{"k":1},"b":{"k":2},"c":[{"k":3},{"k":4}]})", "doc.json");
  CHECK(j["c"][1]["k"] == 4);
}

TEST_CASE("strict json: nesting deeper than the limit is refused, shallow documents parse", "[schedules][json]") {
  const std::string deep = std::string(kMaxJsonNesting + 1, '[') + std::string(kMaxJsonNesting + 1, ']');
  CHECK_THROWS_WITH(parse_json_document(deep, "deep.json"),
                    Contains("deep.json") && Contains("nested deeper than " + std::to_string(kMaxJsonNesting)));
  const std::string ok = std::string(kMaxJsonNesting, '[') + std::string(kMaxJsonNesting, ']');
  CHECK_NOTHROW(parse_json_document(ok, "ok.json"));
  const std::string very_deep = std::string(200000, '['); // a truncated 200,000-deep array
  CHECK_THROWS_AS(parse_json_document(very_deep, "d.json"), JsonDocumentError);
  CHECK_THROWS_WITH(parse_json_document("{\"a\":", "bad.json"), Contains("bad.json: not valid JSON"));
  CHECK_THROWS_WITH(parse_json_document("[1e400]", "big.json"), Contains("big.json: not valid JSON"));
}

TEST_CASE("strict json: unknown keys are refused with the nearest valid key", "[schedules][json]") {
  const auto j = parse_json_document(R"({"kernelz":[],"format":1})", "doc.json");
  CHECK_THROWS_WITH(check_json_keys(j, {"format", "kernels", "comms"}, "doc.json", "$"),
                    Contains("doc.json: $: unknown key \"kernelz\"; did you mean \"kernels\"?") &&
                        Contains("valid keys here: format, kernels, comms"));
  const auto far = parse_json_document(R"({"zzzzzz":1})", "doc.json");
  CHECK_THROWS_WITH(check_json_keys(far, {"format"}, "doc.json", "$"),
                    !Contains("did you mean") && Contains("unknown key \"zzzzzz\""));
  CHECK_NOTHROW(check_json_keys(j, {"format", "kernelz"}, "doc.json", "$"));
}

TEST_CASE("strict json: a calibration table with 'kernelz' is refused, not read as no kernels",
          "[schedules][json][calibration]") {
  CHECK(read_table(R"({"format":"twinscale-calibration","version":1,"kernels":[)" + kKernel + "]}").kernels.size() ==
        1);
  CHECK_THROWS_WITH(read_table(R"({"format":"twinscale-calibration","version":1,"kernelz":[)" + kKernel + "]}"),
                    Contains("cal.json") && Contains("unknown key \"kernelz\"; did you mean \"kernels\"?"));
  // an unknown key inside an entry, and a repeated one
  std::string typo = kKernel;
  typo.replace(typo.find("seconds"), 7, "secs");
  CHECK_THROWS_WITH(read_table(R"({"format":"twinscale-calibration","version":1,"kernels":[)" + typo + "]}"),
                    Contains("$.kernels[0]: unknown key \"secs\""));
  std::string twice = kKernel;
  twice.insert(1, R"("seconds":1,)");
  CHECK_THROWS_WITH(read_table(R"({"format":"twinscale-calibration","version":1,"kernels":[)" + twice + "]}"),
                    Contains("cal.json") && Contains("$.kernels[0]: key \"seconds\" is given twice"));
  CHECK_THROWS_AS(read_table(R"({"format":"twinscale-calibration","version":1,"version":1})"), ScheduleError);
}

TEST_CASE("strict json: a trace with an unknown or repeated key is refused naming the event",
          "[schedules][json][trace]") {
  const std::string head = R"({"format":"twinscale-trace","format_version":1,"source":"sim","traceEvents":[)";
  CHECK(read_trace(head + kEvent + "]}").size() == 1);
  std::string typo = kEvent;
  typo.replace(typo.find("micro_batch"), 11, "microbatch");
  CHECK_THROWS_WITH(
      read_trace(head + typo + "]}"),
      Contains("t.json: $.traceEvents[0].args: unknown key \"microbatch\"; did you mean \"micro_batch\"?"));
  std::string twice = kEvent;
  twice.insert(1, R"("ts":5,)");
  CHECK_THROWS_WITH(read_trace(head + twice + "]}"), Contains("$.traceEvents[0]: key \"ts\" is given twice"));
  CHECK_THROWS_WITH(read_trace(R"({"format":"twinscale-trace","traceEvent":[]})"),
                    Contains("unknown key \"traceEvent\"; did you mean \"traceEvents\"?"));
  // metadata events keep the keys a trace viewer gives them
  CHECK(read_trace(head + R"({"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"rank 0"},"x":1},)" +
                   kEvent + "]}")
            .size() == 1);
}
