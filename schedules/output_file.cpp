#include "schedules/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "schedules/interrupt.hpp"

namespace twinscale::schedules {

namespace fs = std::filesystem;

namespace {

std::string cause(int err) {
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) return std::string("disk full (") + std::strerror(err) + ")";
  return std::strerror(err);
}

/// Writes all of `data` to `fd`; 0, or the errno of the write that failed (ENOSPC for a
/// write that wrote nothing).
int write_all(int fd, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ENOSPC;
    done += static_cast<size_t>(n);
  }
  return 0;
}

std::string mib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  return buf;
}

} // namespace

OutputFile::OutputFile(std::string path, std::string what, double size_hint)
    : path_(std::move(path)), what_(std::move(what)), target_(path_) {
  if (path_.empty()) throw OutputFileError("an empty path was given for the " + what_);
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) { // a device or a pipe: written in place
      fd_ = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd_ < 0 && errno == ENXIO)
        throw OutputFileError(path_ + ": cannot write " + what_ + ": a FIFO with no reader");
      if (fd_ < 0) fail("open", errno);
      ::fcntl(fd_, F_SETFL, 0);
      in_place_ = true;
      return;
    }
    if (!S_ISREG(st.st_mode))
      throw OutputFileError(path_ + ": cannot write " + what_ + ": " +
                            (S_ISDIR(st.st_mode) ? "a directory" : "not a regular file, a character device or a FIFO") +
                            " is in the way; name a file");
    std::error_code ec;
    const fs::path real = fs::canonical(path_, ec); // through a symbolic link: replace its target
    if (!ec) target_ = real.string();
  }
  const fs::path dir = fs::path(target_).parent_path();
  if (size_hint > 0) {
    struct statvfs vfs {};
    if (::statvfs(dir.empty() ? "." : dir.c_str(), &vfs) == 0) {
      const double free = static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize);
      if (size_hint > free)
        throw OutputFileError(path_ + ": cannot write " + what_ + ": disk full (" + mib(size_hint) + " needed, " +
                              mib(free) + " free)");
    }
  }
  tmp_ = target_ + ".tmp." + std::to_string(::getpid());
  registration_ = std::make_unique<TempFileRegistration>(tmp_);
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    registration_.reset();
    throw OutputFileError(path_ + ": cannot write " + what_ + ": cannot create " + tmp_ + " (" + cause(err) + ")");
  }
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
  registration_.reset();
}

void OutputFile::fail(const std::string& step, int err) {
  discard();
  throw OutputFileError(path_ + ": cannot write " + what_ + " (" + step + "): " + cause(err));
}

void OutputFile::write(std::string_view data) {
  if (fd_ < 0) throw OutputFileError(path_ + ": " + what_ + " written after it was closed");
  if (const int err = write_all(fd_, data); err != 0) fail("write", err);
}

void OutputFile::commit() {
  if (fd_ < 0) throw OutputFileError(path_ + ": " + what_ + " committed twice");
  if (in_place_) {
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) fail("close", errno);
    return;
  }
  if (::fsync(fd_) != 0 && errno != EINVAL) fail("fsync", errno);
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail("close", errno);
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) fail("rename into place", errno);
  tmp_.clear();
  registration_.reset();
  const fs::path dir = fs::path(target_).parent_path();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_output_file(const std::string& path, std::string_view content, const std::string& what) {
  OutputFile out(path, what, static_cast<double>(content.size()));
  out.write(content);
  out.commit();
}

OutputFileBatch::OutputFileBatch(std::string dir, std::string what) : dir_(std::move(dir)), what_(std::move(what)) {
  if (dir_.empty()) dir_ = ".";
  std::error_code ec;
  fs::create_directories(dir_, ec);
  dir_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) {
    const int err = errno;
    throw OutputFileError(dir_ + ": cannot write " + what_ + " files in it: " + (ec ? ec.message() : cause(err)));
  }
}

OutputFileBatch::~OutputFileBatch() {
  discard();
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

std::string OutputFileBatch::path_of(const std::string& name) const { return (fs::path(dir_) / name).string(); }

void OutputFileBatch::discard() {
  if (staging_fd_ >= 0) {
    for (size_t i = placed_; i < staged_.size(); ++i) ::unlinkat(staging_fd_, staged_[i].c_str(), 0);
    ::close(staging_fd_);
    staging_fd_ = -1;
  }
  if (!staging_.empty()) ::rmdir(staging_.c_str());
  staging_.clear();
  staged_.clear();
  placed_ = 0;
  registration_.reset();
}

void OutputFileBatch::fail(const std::string& name, const std::string& step, int err) {
  discard();
  throw OutputFileError(path_of(name) + ": cannot write " + what_ + " (" + step + "): " + cause(err));
}

void OutputFileBatch::add(const std::string& name, std::string_view content) {
  if (committed_) throw OutputFileError(path_of(name) + ": " + what_ + " added after its batch was committed");
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw OutputFileError(path_of(name) + ": cannot write " + what_ + ": not a plain file name");
  struct stat st {};
  if (::fstatat(dir_fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
    write_output_file(path_of(name), content, what_); // a link, a device, a FIFO: the single file's policy
    return;
  }
  if (staging_.empty()) {
    std::string tmpl = path_of(".batch.tmp." + std::to_string(::getpid()) + ".XXXXXX");
    if (::mkdtemp(tmpl.data()) == nullptr) fail(name, "create a staging directory", errno);
    staging_ = tmpl;
    registration_ = std::make_unique<TempFileRegistration>(staging_, true);
    staging_fd_ = ::open(staging_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (staging_fd_ < 0) fail(name, "open the staging directory", errno);
  }
  const int fd = ::openat(staging_fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(name, "create", errno);
  staged_.push_back(name);
  if (const int err = write_all(fd, content); err != 0) {
    ::close(fd);
    fail(name, "write", err);
  }
  if (::close(fd) != 0) fail(name, "close", errno);
}

void OutputFileBatch::commit() {
  if (committed_) throw OutputFileError(dir_ + ": " + what_ + " files committed twice");
  committed_ = true;
  if (staged_.empty()) return;
  // one sync of the staged files' data (and of everything else on that file system), in
  // place of one fsync per file; then each rename, then one sync of the directory
  if (::syncfs(staging_fd_) != 0) {
    const int err = errno;
    discard();
    throw OutputFileError(dir_ + ": cannot write " + what_ + " files (sync): " + cause(err));
  }
  for (; placed_ < staged_.size(); ++placed_) {
    const std::string& name = staged_[placed_];
    if (::renameat(staging_fd_, name.c_str(), dir_fd_, name.c_str()) != 0) fail(name, "rename into place", errno);
  }
  ::fsync(dir_fd_);
  discard();
}

namespace {

struct Identity {
  bool exists = false;
  bool device = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string canonical;
};

Identity identify(const std::string& path) {
  Identity id;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.device = S_ISCHR(st.st_mode);
    id.dev = st.st_dev;
    id.ino = st.st_ino;
  }
  std::error_code ec;
  id.canonical = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
  return id;
}

bool same(const Identity& a, const Identity& b) {
  if (a.device || b.device) return false;
  if (a.exists && b.exists) return a.dev == b.dev && a.ino == b.ino;
  return a.canonical == b.canonical;
}

} // namespace

void check_distinct_files(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  std::vector<std::pair<const NamedPath*, Identity>> in, out;
  for (const auto& p : inputs) {
    if (p.path.empty()) continue;
    Identity id = identify(p.path);
    if (id.exists) in.emplace_back(&p, std::move(id)); // an input that is no file (a preset name) cannot be lost
  }
  for (const auto& p : outputs) {
    if (p.path.empty()) continue;
    const Identity id = identify(p.path);
    for (const auto& [other, oid] : in)
      if (same(id, oid))
        throw OutputFileError(p.name + " " + p.path + ": the same file as the input " + other->name + " " +
                              other->path + "; writing it would destroy the input; choose another output name");
    for (const auto& [other, oid] : out)
      if (same(id, oid))
        throw OutputFileError(p.name + " " + p.path + ": the same file as " + other->name + " " + other->path +
                              "; one output would replace the other; give each output its own name");
    out.emplace_back(&p, id);
  }
}

} // namespace twinscale::schedules
