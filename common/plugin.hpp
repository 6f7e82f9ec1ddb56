// Opening a plugin: a shared library of this build that carries a heavy dependency (the
// CUDA runtime, SimGrid) so that only the commands that need it load it. Each plugin
// exports one C function, its entry, returning a table of its entry points whose first
// member is an int ABI number. Used by backend/detail/cuda_plugin.cpp and
// sim/detail/flow_plugin.cpp. Header-only (common/ sits below every layer).
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

namespace twinscale::plugin {

/// What open_plugin found: the entry's table (null when none loaded) and, when none did,
/// each place tried and what failed there.
struct Opened {
  const void* table = nullptr;
  std::string error;
};

/// The directory of the running executable ("" if unknown).
inline std::string executable_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  const std::string exe(buf, static_cast<size_t>(n));
  const size_t slash = exe.rfind('/');
  return slash == std::string::npos ? std::string() : exe.substr(0, slash);
}

/// Opens `file` from $`env_var` when set (and only there), else next to the running
/// executable, else at `build_path` (where the build wrote it), and calls its `entry`.
/// A table whose first int is not `abi` is from another build and is refused.
inline Opened open_plugin(const std::string& file, const char* env_var, const std::string& build_path,
                          const char* entry, int abi) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv(env_var); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  } else {
    if (const std::string dir = executable_dir(); !dir.empty()) candidates.push_back(dir + "/" + file);
    candidates.push_back(build_path);
  }
  Opened out;
  for (const std::string& path : candidates) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      out.error += "\n  " + path + ": " + (why ? why : "cannot be opened");
      continue;
    }
    using Entry = const void* (*)();
    const auto fn = reinterpret_cast<Entry>(::dlsym(handle, entry));
    const void* table = fn ? fn() : nullptr;
    const int found = table ? *static_cast<const int*>(table) : 0;
    if (table == nullptr || found != abi) {
      out.error += "\n  " + path + ": not a plugin of this build (" +
                   (table ? "interface " + std::to_string(found) + ", expected " + std::to_string(abi)
                          : "no " + std::string(entry)) +
                   ")";
      ::dlclose(handle);
      continue;
    }
    out.table = table; // kept open for the life of the process
    out.error.clear();
    return out;
  }
  return out;
}

} // namespace twinscale::plugin
