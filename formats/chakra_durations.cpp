// The measured durations of an imported Chakra ET set (duration_micros of its nodes) as a
// calibration table the simulator reads (formats/chakra.hpp, docs/chakra.md).
#include "formats/chakra.hpp"

namespace twinscale::formats {

namespace s = twinscale::schedules;

s::CalibrationTable calibration_of_durations(const s::Schedule& schedule, const ChakraImportReport& report,
                                             const std::string& device) {
  s::CalibrationBuilder builder;
  for (const ChakraImportReport::Timed& t : report.durations) {
    const s::Op& op = schedule.program(t.rank).ops.at(t.op);
    const std::string& name = op.name < schedule.names.size() ? schedule.names[op.name] : std::string();
    if (!op.is_communication()) {
      builder.add_kernel_sample(op.kernel, op.dtype, op.shape, t.seconds, name);
    } else if (op.kind != s::OpKind::Recv) { // a link is counted once, at its send
      const int64_t group = op.kind == s::OpKind::Send ? 2 : schedule.layout.group_size(op.group);
      builder.add_comm_sample(op.kind, group, op.bytes, t.seconds);
    }
  }
  return builder.build("chakra", device);
}

} // namespace twinscale::formats
