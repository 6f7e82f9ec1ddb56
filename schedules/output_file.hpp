// The one output policy: every file a command writes goes through OutputFile (or
// write_output_file), which
//  - writes a regular file (or a new one) atomically: a temporary file next to it, then
//    rename, so readers see the old file or the whole new one, never a prefix;
//  - never renames over anything but a regular file: a character device or a FIFO
//    (/dev/null, /dev/stdout, a pipe) is written in place; a directory, block device or
//    socket is refused;
//  - on any failure (disk full, quota, I/O error, an interruption) removes its temporary
//    file and throws OutputFileError naming the file and the cause ("disk full");
//  - refuses, up front, a content whose size is known and exceeds the free space.
// check_distinct_files() refuses an output that is an input of the same command or
// another of its outputs, before any work is done.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace twinscale::schedules {

/// A file that cannot be written; the message starts with the path.
class OutputFileError : public Error {
public:
  explicit OutputFileError(const std::string& what) : Error(what) {}
};

class TempFileRegistration;

class OutputFile {
public:
  /// Opens `path` for writing a `what` ("trace", "CSV"); `size_hint` > 0 is checked
  /// against the free space of the file system. Throws OutputFileError.
  OutputFile(std::string path, std::string what, double size_hint = 0);
  /// Without commit(): the temporary file is removed (the final name is untouched).
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view data);
  /// Flushes to disk and renames the temporary file into place (or closes the device).
  void commit();
  const std::string& path() const { return path_; }

private:
  [[noreturn]] void fail(const std::string& step, int err);
  void discard();

  std::string path_, what_, target_, tmp_; // target_: where the rename lands (symlinks followed)
  int fd_ = -1;
  bool in_place_ = false;
  std::unique_ptr<TempFileRegistration> registration_;
};

/// Writes `content` to `path` under the policy above.
void write_output_file(const std::string& path, std::string_view content, const std::string& what = "output");

/// A path named on the command line, with the option or argument that named it.
struct NamedPath {
  std::string name; // "--csv", "DB"
  std::string path;
};

/// Throws OutputFileError when an output names the same file as an input or as another
/// output (by device and inode when the file exists, else by canonical path). Empty paths
/// and inputs that are no file (a preset's name) are skipped; character devices
/// (/dev/null twice) are allowed.
void check_distinct_files(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

} // namespace twinscale::schedules
