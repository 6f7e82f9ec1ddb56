#include "backend/rendezvous.hpp"

#include <cstdlib>
#include <string_view>

#include "backend/error.hpp"

namespace twinscale::backend {

namespace {

std::optional<int64_t> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0' || x < 0)
    throw BackendError(std::string("environment variable ") + name + "=\"" + v + "\" is not a non-negative integer");
  return x;
}

} // namespace

LaunchEnv detect_launch_env() {
  struct Source {
    const char* rank;
    const char* size;
    const char* launcher;
  };
  for (const Source& s : {Source{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "openmpi"},
                          Source{"SLURM_PROCID", "SLURM_NTASKS", "slurm"}, Source{"PMI_RANK", "PMI_SIZE", "pmi"}}) {
    const auto rank = env_int(s.rank);
    const auto size = env_int(s.size);
    if (!rank && !size) continue;
    if (!rank || !size)
      throw BackendError(std::string("launcher environment incomplete: ") + s.rank + " and " + s.size +
                         " must both be set");
    if (*rank >= *size || *size == 0)
      throw BackendError(std::string("launcher environment inconsistent: ") + s.rank + "=" + std::to_string(*rank) +
                         " must be below " + s.size + "=" + std::to_string(*size));
    return LaunchEnv{*rank, *size, s.launcher};
  }
  return LaunchEnv{0, 1, "none"};
}

RendezvousSpec parse_rendezvous(const std::string& text) {
  RendezvousSpec r;
  if (text == "mpi") return r;
  constexpr std::string_view scheme = "redis://";
  if (text.rfind(scheme, 0) == 0) {
    const std::string rest = text.substr(scheme.size());
    const size_t colon = rest.rfind(':');
    r.kind = RendezvousSpec::Kind::Redis;
    r.host = colon == std::string::npos ? rest : rest.substr(0, colon);
    if (colon != std::string::npos) {
      const std::string port = rest.substr(colon + 1);
      char* end = nullptr;
      const long p = std::strtol(port.c_str(), &end, 10);
      if (port.empty() || *end != '\0' || p <= 0 || p > 65535)
        throw BackendError("--rendezvous \"" + text + "\": port \"" + port + "\" must be an integer in 1..65535");
      r.port = static_cast<int>(p);
    }
    if (r.host.empty()) throw BackendError("--rendezvous \"" + text + "\": missing host");
    return r;
  }
  throw BackendError("--rendezvous \"" + text + "\": valid values are mpi and redis://HOST:PORT");
}

} // namespace twinscale::backend
