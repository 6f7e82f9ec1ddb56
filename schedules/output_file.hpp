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

/// Many files of one directory under the same policy, made durable by one sync instead of
/// one per file (a hung run's 12,289 rank files). add() writes each file whole into a
/// staging directory inside `dir` (its name holds ".tmp"); commit() syncs the file system
/// once (syncfs), renames every staged file into place and syncs `dir` once. A reader
/// sees each file old or whole new, as with OutputFile. On any failure, and if the batch
/// ends without commit(), the files not yet renamed are removed with the staging
/// directory (a signal removes them too: interrupt.hpp), and OutputFileError names the
/// file and the cause. A name whose file exists and is no regular file (a symbolic link,
/// a device, a FIFO, a directory) is written on its own by OutputFile, which follows the
/// link, writes the device in place or refuses.
class OutputFileBatch {
public:
  /// Files inside `dir` (created if missing), each a `what` ("output", "rank state").
  OutputFileBatch(std::string dir, std::string what);
  ~OutputFileBatch();
  OutputFileBatch(const OutputFileBatch&) = delete;
  OutputFileBatch& operator=(const OutputFileBatch&) = delete;

  /// Writes `content` as the file `name` (a plain name: no '/') of the directory.
  void add(const std::string& name, std::string_view content);
  /// Places every file added (see above). Adding after it is an error.
  void commit();

private:
  [[noreturn]] void fail(const std::string& name, const std::string& step, int err);
  void discard();
  std::string path_of(const std::string& name) const;

  std::string dir_, what_, staging_;
  std::vector<std::string> staged_; // names written to the staging directory, not yet renamed
  size_t placed_ = 0;               // of staged_, renamed into place
  int dir_fd_ = -1, staging_fd_ = -1;
  bool committed_ = false;
  std::unique_ptr<TempFileRegistration> registration_;
};

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
