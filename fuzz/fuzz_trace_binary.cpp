// libFuzzer harness: binary traces (.tstrace, schedules/binary_trace.cpp). The input is
// the file: the reader opens it, and every rank block is read; every event it returns
// must lie inside its program and be non-negative.
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "fuzz/fuzz_common.hpp"
#include "schedules/binary_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("fuzz.tstrace", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (size > 0 && write(fd, data, size) != static_cast<ssize_t>(size)) {
    close(fd);
    return 0;
  }
  twinscale::fuzz::expect_clean_rejection([&] {
    const twinscale::schedules::BinaryTraceReader r("/proc/self/fd/" + std::to_string(fd));
    std::vector<twinscale::schedules::BinaryTraceEvent> events;
    for (int64_t rank = 0; rank < r.world(); ++rank) {
      r.read_rank(rank, events);
      const auto& ops = r.programs()[r.program_of(rank)].ops;
      for (const auto& e : events) // the reader's promise
        if (e.op_index >= ops.size() || e.start_ns < 0 || e.duration_ns < 0) std::abort();
    }
  });
  close(fd);
  return 0;
}
