// Whole-file I/O with crash-safe writes; see atomic_file.h and docs/DESIGN.md, "Data and file
// formats". POSIX calls are used directly (not std::ofstream) because every write, fsync and
// close must be checked: a full disk often shows up only at close or fsync.
#include "seqlab/core/atomic_file.h"

#include "seqlab/core/error.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <system_error>

namespace seqlab {
namespace {

std::string reason(int err) {
  return std::error_code(err, std::generic_category()).message();
}

// "a/b/c" -> "a/b", "c" -> ".", "/c" -> "/".
std::string parent_dir(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Owns the temporary file until it has been renamed into place: on any exit path before that,
// the descriptor is closed and the file unlinked, so failures leave nothing behind.
struct TempFile {
  std::string path;
  int fd = -1;
  bool renamed = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!renamed && !path.empty()) ::unlink(path.c_str());
  }
};

void write_all(int fd, std::string_view bytes, const std::string& target) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    // Large writes are split: Linux caps a single write at about 2 GiB anyway.
    const ssize_t n = ::write(fd, p, std::min<size_t>(left, size_t{1} << 30));
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      fail("cannot write {}: write failed after {} of {} bytes: {}", target, bytes.size() - left,
           bytes.size(), reason(err));
    }
    SEQLAB_CHECK(n > 0, "cannot write {}: write made no progress after {} of {} bytes", target,
                 bytes.size() - left, bytes.size());
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// Makes the rename itself durable. Filesystems that cannot fsync a directory say EINVAL (or
// ENOTSUP); there is nothing more to do on those, so that is not an error.
void sync_dir(const std::string& dir, const std::string& target) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    fail("wrote {} but cannot open its directory {} to sync it: {}", target, dir, reason(err));
  }
  int rc;
  do {
    rc = ::fsync(fd);
  } while (rc != 0 && errno == EINTR);
  const int err = rc == 0 ? 0 : errno;
  ::close(fd);  // read-only descriptor: nothing to lose if close fails
  if (rc != 0 && err != EINVAL && err != ENOTSUP)
    fail("wrote {} but cannot sync its directory {}: {}", target, dir, reason(err));
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  SEQLAB_CHECK(!path.empty(), "cannot write a file with an empty path");
  SEQLAB_CHECK(path.back() != '/', "cannot write {}: the path names a directory", path);
  const std::string dir = parent_dir(path);

  // O_EXCL with a per-process counter gives a unique name without mkstemp's fixed mode 0600:
  // the final file should get the usual 0666 minus the umask, like any other file the user writes.
  static std::atomic<unsigned> counter{0};
  TempFile tmp;
  for (int attempt = 0;; ++attempt) {
    std::string name = fmt::format("{}.tmp-{}-{}", path, ::getpid(), counter++);
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      tmp.path = std::move(name);
      tmp.fd = fd;
      break;
    }
    const int err = errno;
    if (err == EINTR || (err == EEXIST && attempt < 100)) continue;
    fail("cannot write {}: cannot create a temporary file in {}: {}", path, dir, reason(err));
  }

  write_all(tmp.fd, bytes, path);
  int rc;
  do {
    rc = ::fsync(tmp.fd);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    fail("cannot write {}: fsync failed: {}", path, reason(err));
  }
  // close can report a deferred write error (NFS, quota); after it the fd is gone either way.
  rc = ::close(tmp.fd);
  tmp.fd = -1;
  if (rc != 0 && errno != EINTR) {
    const int err = errno;
    fail("cannot write {}: close failed: {}", path, reason(err));
  }
  if (::rename(tmp.path.c_str(), path.c_str()) != 0) {
    const int err = errno;
    fail("cannot write {}: cannot rename the temporary file over it: {}", path, reason(err));
  }
  tmp.renamed = true;
  sync_dir(dir, path);
}

ReadableFile::ReadableFile(const std::string& path) {
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    fail("cannot read {}: {}", path, reason(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail("cannot read {}: {}", path, reason(err));
  }
  size = static_cast<uint64_t>(st.st_size);
  regular = S_ISREG(st.st_mode);
  directory = S_ISDIR(st.st_mode);
}

ReadableFile::~ReadableFile() {
  if (fd >= 0) ::close(fd);
}

std::string read_file(const std::string& path) {
  ReadableFile file(path);
  const int fd = file.fd;
  SEQLAB_CHECK(!file.directory, "cannot read {}: it is a directory", path);

  std::string out;
  if (file.regular) out.reserve(static_cast<size_t>(file.size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      fail("cannot read {}: read failed after {} bytes: {}", path, out.size(), reason(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

void ensure_dir(const std::string& path) {
  SEQLAB_CHECK(!path.empty(), "cannot create a directory with an empty path");
  // Walk the prefixes "a", "a/b", "a/b/c" (or "/a", ...), creating the missing ones in order so
  // that the error names the first component that is in the way.
  size_t pos = 0;
  while (pos < path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    if (next == pos) {  // leading or repeated '/'
      ++pos;
      continue;
    }
    const std::string prefix = path.substr(0, next);
    pos = next + 1;

    struct stat st {};
    if (::stat(prefix.c_str(), &st) == 0) {
      SEQLAB_CHECK(S_ISDIR(st.st_mode),
                   "cannot create directory {}: {} exists and is not a directory", path, prefix);
      continue;
    }
    int err = errno;
    if (err == ENOENT) {
      if (::mkdir(prefix.c_str(), 0777) == 0) continue;
      err = errno;
      // Someone else created it between stat and mkdir: fine if it is a directory.
      if (err == EEXIST && ::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    }
    fail("cannot create directory {}: cannot create {}: {}", path, prefix, reason(err));
  }
}

}  // namespace seqlab
