// Tests for core/atomic_file: crash-safe writes (docs/DESIGN.md, "Data and file formats": write a
// temporary file, fsync, rename), strict whole-file reads and mkdir -p.
//
// Failures that need a real errno (permission denied, file too large) run in a forked child: the
// child can drop root privileges or lower its file-size limit without touching the test process.
#include "seqlab/core/atomic_file.h"

#include "seqlab/core/error.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace seqlab;
namespace fs = std::filesystem;

namespace {

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "seqlab-atomic-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    fs::permissions(dir_, fs::perms(0755));  // the unprivileged child must be able to enter it
  }
  void TearDown() override {
    for (auto& e : fs::recursive_directory_iterator(dir_))
      if (e.is_directory()) fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  for (auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Runs f; returns the seqlab::Error message, or "<no error>".
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// Runs f in a forked child and returns the seqlab::Error message it produced (sent back through a
// pipe), or "<no error>" / "<child failed>" so that the parent's checks fail readably.
std::string error_in_child(const std::function<void()>& f) {
  int fds[2];
  if (::pipe(fds) != 0) return "<pipe failed>";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string msg = error_of(f);
    ssize_t ignored = ::write(fds[1], msg.data(), msg.size());
    (void)ignored;
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "<child failed>";
  return msg;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_F(AtomicFile, RoundTripAndOverwrite) {
  const std::string bytes("binary\0data\xff\n", 13);
  write_file_atomic(path("f.bin"), bytes);
  EXPECT_EQ(read_file(path("f.bin")), bytes);
  write_file_atomic(path("f.bin"), "x");  // shorter content must not keep a tail of the old one
  EXPECT_EQ(read_file(path("f.bin")), "x");
  write_file_atomic(path("empty"), "");
  EXPECT_EQ(read_file(path("empty")), "");
  EXPECT_EQ(list_dir(dir_), (std::vector<std::string>{"empty", "f.bin"}));
}

TEST_F(AtomicFile, LargeRoundTrip) {
  // Larger than read_file's 64 KiB chunk, so the read loop runs many times.
  std::string bytes(3 << 20, '\0');
  std::mt19937 rng(7);
  for (auto& c : bytes) c = static_cast<char>(rng());
  write_file_atomic(path("big"), bytes);
  EXPECT_EQ(read_file(path("big")), bytes);
}

TEST_F(AtomicFile, RelativePathInCurrentDirectory) {
  const auto cwd = fs::current_path();
  fs::current_path(dir_);
  write_file_atomic("rel.txt", "relative");
  fs::current_path(cwd);
  EXPECT_EQ(read_file(path("rel.txt")), "relative");
}

TEST_F(AtomicFile, UnwritableDirectoryKeepsExistingFile) {
  fs::create_directory(path("ro"));
  write_file_atomic(path("ro/f"), "old");
  fs::permissions(path("ro"), fs::perms(0555));
  const std::string target = path("ro/f");
  const std::string msg = error_in_child([&] {
    // Root ignores directory permissions, so the child becomes nobody first.
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    write_file_atomic(target, "new");
  });
  EXPECT_TRUE(contains(msg, target)) << msg;
  EXPECT_TRUE(contains(msg, "Permission denied")) << msg;
  EXPECT_EQ(read_file(target), "old");
  EXPECT_EQ(list_dir(path("ro")), std::vector<std::string>{"f"});
}

TEST_F(AtomicFile, FailedWriteRemovesTempAndKeepsExistingFile) {
  // A file-size limit makes write() fail part-way (EFBIG), like a full disk does (ENOSPC).
  write_file_atomic(path("f"), "old");
  const std::string target = path("f");
  const std::string msg = error_in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim {};
    ::getrlimit(RLIMIT_FSIZE, &lim);
    lim.rlim_cur = 4096;
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) ::_exit(3);
    write_file_atomic(target, std::string(1 << 20, 'n'));
  });
  EXPECT_TRUE(contains(msg, target)) << msg;
  EXPECT_TRUE(contains(msg, "write failed after 4096 of 1048576 bytes")) << msg;
  EXPECT_TRUE(contains(msg, "too large")) << msg;
  EXPECT_EQ(read_file(target), "old");
  EXPECT_EQ(list_dir(dir_), std::vector<std::string>{"f"});
}

TEST_F(AtomicFile, MissingDirectoryIsAnError) {
  const std::string target = path("nope/f");
  const std::string msg = error_of([&] { write_file_atomic(target, "x"); });
  EXPECT_TRUE(contains(msg, target)) << msg;
  EXPECT_TRUE(contains(msg, "No such file or directory")) << msg;
  EXPECT_TRUE(list_dir(dir_).empty());
}

TEST_F(AtomicFile, TargetIsADirectory) {
  fs::create_directory(path("sub"));
  const std::string msg = error_of([&] { write_file_atomic(path("sub"), "x"); });
  EXPECT_TRUE(contains(msg, path("sub"))) << msg;
  EXPECT_TRUE(contains(msg, "rename")) << msg;
  EXPECT_EQ(list_dir(dir_), std::vector<std::string>{"sub"});  // the temp file is gone
  EXPECT_TRUE(contains(error_of([&] { write_file_atomic(path("sub") + "/", "x"); }), "directory"));
}

TEST_F(AtomicFile, ConcurrentWritersLeaveOneCompleteFile) {
  const std::string a(200000, 'a'), b(300000, 'b');
  auto writer = [&](const std::string& s) {
    for (int i = 0; i < 10; ++i) write_file_atomic(path("f"), s);
  };
  std::thread ta(writer, a), tb(writer, b);
  ta.join();
  tb.join();
  const std::string got = read_file(path("f"));
  EXPECT_TRUE(got == a || got == b) << "size " << got.size();
  EXPECT_EQ(list_dir(dir_), std::vector<std::string>{"f"});
}

TEST_F(AtomicFile, ReadMissingFileNamesIt) {
  const std::string msg = error_of([&] { read_file(path("missing.json")); });
  EXPECT_TRUE(contains(msg, path("missing.json"))) << msg;
  EXPECT_TRUE(contains(msg, "No such file or directory")) << msg;
}

TEST_F(AtomicFile, ReadDirectoryIsAnError) {
  const std::string msg = error_of([&] { read_file(dir_); });
  EXPECT_TRUE(contains(msg, dir_)) << msg;
  EXPECT_TRUE(contains(msg, "is a directory")) << msg;
}

TEST_F(AtomicFile, EnsureDirCreatesParentsAndIsIdempotent) {
  ensure_dir(path("a/b/c"));
  EXPECT_TRUE(fs::is_directory(path("a/b/c")));
  EXPECT_NO_THROW(ensure_dir(path("a/b/c")));
  EXPECT_NO_THROW(ensure_dir(path("a//b/c/")));
  ensure_dir(path("a/b/d/"));
  EXPECT_TRUE(fs::is_directory(path("a/b/d")));
  EXPECT_TRUE(contains(error_of([] { ensure_dir(""); }), "empty path"));
}

TEST_F(AtomicFile, EnsureDirThroughAFileNamesTheFile) {
  ensure_dir(path("a"));
  write_file_atomic(path("a/file"), "x");
  const std::string msg = error_of([&] { ensure_dir(path("a/file/sub")); });
  EXPECT_TRUE(contains(msg, path("a/file") + " exists and is not a directory")) << msg;
  EXPECT_TRUE(contains(error_of([&] { ensure_dir(path("a/file")); }), "not a directory"));
  EXPECT_FALSE(fs::exists(path("a/file/sub")));
}

TEST_F(AtomicFile, EnsureDirInUnwritableParent) {
  fs::create_directory(path("ro"));
  fs::permissions(path("ro"), fs::perms(0555));
  const std::string target = path("ro/new");
  const std::string msg = error_in_child([&] {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    ensure_dir(target);
  });
  EXPECT_TRUE(contains(msg, "cannot create " + target + ": Permission denied")) << msg;
}
