// Scratch folders of a test process.
#pragma once

#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <unistd.h>

namespace twinscale::test {

/// <tmp>/twinscale-<name>-<pid>: the folder of this process's scratch `name`.
inline std::filesystem::path scratch_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("twinscale-" + name + "-" + std::to_string(::getpid()));
}

/// That folder, created empty: whatever is there is removed. Process ids
/// repeat, and a machine that keeps its temporary folder between runs (CI's does) can give
/// this process the id of an earlier one whose files are still there; a test that found a
/// finished study store, a trace or a run folder of that run would test the wrong thing.
inline std::filesystem::path empty_scratch_dir(const std::string& name) {
  const auto dir = scratch_path(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// The same folder, emptied only the first time this process asks for `name`: later calls
/// return it as it is, with the files this process wrote there.
inline std::filesystem::path scratch_dir(const std::string& name) {
  static std::mutex mutex;
  static std::set<std::string> emptied;
  const std::lock_guard<std::mutex> lock(mutex);
  if (emptied.insert(name).second) return empty_scratch_dir(name);
  const auto dir = scratch_path(name);
  std::filesystem::create_directories(dir);
  return dir;
}

} // namespace twinscale::test
