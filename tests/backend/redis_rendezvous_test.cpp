// Rendezvous through a Redis store (M9): the test starts its own redis-server on a free
// loopback port, runs 8 CPU ranks with --rendezvous redis://127.0.0.1:PORT and stops the
// server. Skips when redis-server is not installed.
#include <chrono>
#include <csignal>
#include <fstream>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>

#include <catch2/catch.hpp>

#include "diagnose/hang_report.hpp"
#include "mpi_helpers.hpp"
#include "tests/skip.hpp"

using namespace twinscale;

namespace {

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

/// A redis-server of the test's own, stopped when the test ends.
struct RedisServer {
  int port = -1;
  pid_t pid = 0;
  std::string dir;
  explicit RedisServer(const std::string& d) : dir(d) {
    port = free_port();
    const std::string pidfile = dir + "/redis.pid";
    backend::test::shell("redis-server --port " + std::to_string(port) +
                             " --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir " + dir +
                             " --pidfile " + pidfile,
                         20);
    for (int i = 0; i < 100 && !pid; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::ifstream(pidfile) >> pid;
    }
  }
  ~RedisServer() {
    if (pid > 0) ::kill(pid, SIGTERM);
  }
};

} // namespace

TEST_CASE("redis rendezvous: 8 CPU ranks meet through a Redis store") {
  if (std::system("command -v redis-server > /dev/null 2>&1") != 0) TWINSCALE_SKIP("redis-server not installed");
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  const std::string dir = backend::test::fresh_dir("redis");
  RedisServer server(dir);
  REQUIRE(server.pid > 0);
  const auto r =
      backend::test::shell(backend::test::mpirun(8) +
                               " " TWINSCALE_CLI " run --synthetic 2x2x2 --timeout 30 --rendezvous redis://127.0.0.1:" +
                               std::to_string(server.port) + " --run-dir " + dir + "/run",
                           120);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("init redis_rendezvous"));
  CHECK(diagnose::analyse_run_dir(dir + "/run", 8).all_completed());
  // An unreachable store is an error that names it.
  const auto bad =
      backend::test::shell(backend::test::mpirun(2) +
                               " " TWINSCALE_CLI " run --synthetic 1x1x2 --timeout 5 --rendezvous redis://127.0.0.1:1",
                           60);
  CHECK(bad.status != 0);
  CHECK_THAT(bad.output, Catch::Contains("redis://127.0.0.1:1"));
}
