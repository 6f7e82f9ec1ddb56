#include "backend/detail/atomic_file.hpp"

#include "backend/error.hpp"
#include "schedules/output_file.hpp"

namespace twinscale::backend::detail {

void write_file_atomically(const std::string& path, std::string_view content) {
  try {
    schedules::write_output_file(path, content);
  } catch (const schedules::OutputFileError& e) {
    throw BackendError(e.what());
  }
}

} // namespace twinscale::backend::detail
