// Whole-file I/O with crash-safe writes: the layer every checkpoint, config and metrics file uses.
//
// Follows docs/DESIGN.md, "Data and file formats": writes are atomic (write a temporary file in
// the same directory, fsync it, rename it over the target, fsync the directory), so a killed
// process leaves either the old file or the new one, never a half-written one. Every failure
// throws seqlab::Error with a one-line message naming the path and the system's reason.
//
// All functions are thread-safe with respect to each other (no shared state besides the
// filesystem); two concurrent writers to the same path each leave a complete file, the last
// rename wins.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace seqlab {

// Replaces the file at `path` with `bytes`, atomically.
//
// The temporary file is `<path>.tmp-<pid>-<n>` in the target's directory (rename is only atomic
// within one filesystem). On any failure (directory missing or unwritable, disk full, fsync or
// close error) the temporary file is removed, an existing file at `path` is left untouched, and
// seqlab::Error is thrown. The new file gets mode 0666 minus the umask. If `path` is a symlink the
// link itself is replaced, not its target. Cost: one extra fsync on the file and one on the
// directory.
void write_file_atomic(const std::string& path, std::string_view bytes);

// Returns the whole content of the file at `path`. Throws seqlab::Error naming the file when it is
// missing, unreadable or not a regular file.
std::string read_file(const std::string& path);

// A file opened for reading (O_RDONLY | O_CLOEXEC) and fstat'ed; closed on destruction. Throws
// seqlab::Error "cannot read <path>: <reason>" when it cannot be opened or stat'ed.
struct ReadableFile {
  explicit ReadableFile(const std::string& path);
  ~ReadableFile();
  ReadableFile(const ReadableFile&) = delete;
  ReadableFile& operator=(const ReadableFile&) = delete;
  int fd = -1;
  uint64_t size = 0;     // bytes (meaningful for regular files)
  bool regular = false;  // a regular file (not a directory, pipe, device)
  bool directory = false;
};

// mkdir -p: creates `path` and any missing parents (mode 0777 minus the umask). Succeeds when the
// directory already exists. Throws seqlab::Error naming the offending component when one exists
// but is not a directory, or when a directory cannot be created.
void ensure_dir(const std::string& path);

}  // namespace seqlab
