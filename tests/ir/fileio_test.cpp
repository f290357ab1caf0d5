// Proves what write_file_atomic promises about what a path names: a symlink is written through to
// its target (atomically, keeping its mode), a FIFO or character device is written into instead of
// being replaced, a name of one of the process's descriptors is written into that descriptor, a
// directory or socket is refused and left alone, and a temp file does not outlive a signal; and
// the one rule for reads: regular files only, "-" only where allowed, a size ceiling.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/fileio.h"
#include "support.h"

namespace amk::ir {
namespace {

namespace fs = std::filesystem;

TEST(AtomicWrite, WritesThroughASymlinkToItsTargetKeepingTheLinkAndTheMode) {
  const fs::path dir = test::temp_dir();
  const fs::path real = dir / "real.json", link = dir / "link.json", chain = dir / "chain.json";
  std::ofstream(real) << "old";
  fs::permissions(real, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  fs::create_symlink("real.json", link);  // relative, as `ln -s` makes them
  fs::create_symlink(link, chain);        // and a link to a link
  ASSERT_TRUE(test::ok(write_file_atomic(link.string(), "new")));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(test::slurp(real), "new");
  EXPECT_EQ(fs::status(real).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  ASSERT_TRUE(test::ok(write_file_atomic(chain.string(), "newer")));
  EXPECT_TRUE(fs::is_symlink(chain));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(test::slurp(real), "newer");
  // A dangling link creates its target.
  fs::create_symlink("later.json", dir / "dangling.json");
  ASSERT_TRUE(test::ok(write_file_atomic((dir / "dangling.json").string(), "made")));
  EXPECT_EQ(test::slurp(dir / "later.json"), "made");
  EXPECT_TRUE(fs::is_symlink(dir / "dangling.json"));
  // A loop is an error, not a hang.
  fs::create_symlink("b", dir / "a");
  fs::create_symlink("a", dir / "b");
  Status loop = write_file_atomic((dir / "a").string(), "x");
  ASSERT_FALSE(loop);
  EXPECT_EQ(loop.diagnostics[0].code, "io.write");
}

TEST(AtomicWrite, WritesIntoAFifoInsteadOfReplacingIt) {
  const fs::path fifo = test::temp_dir() / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The reading end, open before the write (a writer then never blocks, whatever it does).
  const int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(rd, 0);
  const Status st = write_file_atomic(fifo.string(), "through the pipe");
  char buf[64] = {};
  const ssize_t n = ::read(rd, buf, sizeof buf);
  ::close(rd);
  ASSERT_TRUE(test::ok(st));
  EXPECT_EQ(std::string(buf, static_cast<size_t>(std::max<ssize_t>(n, 0))), "through the pipe");
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST(AtomicWrite, WritesIntoACharacterDeviceInsteadOfReplacingIt) {
  // A null device of our own (mknod c 1 3 needs root, as CI has); else the system's, which
  // every user may write.
  fs::path dev = "/dev/null";
  if (::geteuid() == 0) {
    dev = test::temp_dir() / "mynull";
    ASSERT_EQ(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  }
  ASSERT_TRUE(test::ok(write_file_atomic(dev.string(), "discarded")));
  EXPECT_TRUE(fs::is_character_file(dev));
}

TEST(AtomicWrite, RefusesADirectoryAndASocketAndLeavesThemAlone) {
  const fs::path dir = test::temp_dir();
  fs::create_directory(dir / "out");
  Status st = write_file_atomic((dir / "out").string(), "x");
  ASSERT_FALSE(st);
  EXPECT_NE(st.diagnostics[0].message.find("is a directory"), std::string::npos);
  EXPECT_TRUE(fs::is_directory(dir / "out"));
  const fs::path sock = dir / "sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.string().size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  st = write_file_atomic(sock.string(), "x");
  ::close(fd);
  ASSERT_FALSE(st);
  EXPECT_NE(st.diagnostics[0].message.find("refusing to replace it"), std::string::npos);
  EXPECT_TRUE(fs::is_socket(sock));
  EXPECT_EQ(st.diagnostics[0].file, sock.string());
}

}  // namespace
}  // namespace amk::ir

// ---- reads: the one rule for what an input may be ----------------------------------------------

namespace amk::ir {
namespace {

TEST(InputRule, ADeviceADirectoryAFifoAndASocketAreRefusedUpFrontNamingTheirKind) {
  const fs::path dir = test::temp_dir();
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);  // no writer: an open() without O_NONBLOCK blocks
  const fs::path sock = dir / "sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, sock.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::pair<std::string, std::string> cases[] = {{"/dev/zero", "a character device"},
                                                       {"/dev/urandom", "a character device"},
                                                       {dir.string(), "a directory"},
                                                       {fifo.string(), "a FIFO"},
                                                       {sock.string(), "a socket"}};
  for (const auto& [path, kind] : cases) {
    Result<std::string> r = read_file(path);
    ASSERT_FALSE(r) << path;
    EXPECT_EQ(r.diagnostics[0].code, "io.not-a-file") << path;
    EXPECT_NE(r.diagnostics[0].message.find(kind), std::string::npos) << r.diagnostics[0].message;
    EXPECT_EQ(r.diagnostics[0].file, path);
    Result<FileBytes> b = FileBytes::open(path);
    ASSERT_FALSE(b) << path;
    EXPECT_EQ(b.diagnostics[0].code, "io.not-a-file") << path;
  }
  ::close(fd);
}

TEST(InputRule, StandardInputIsRefusedUnlessTheProcessAllowsIt) {
  Result<std::string> r = read_file("-");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.diagnostics[0].code, "io.stdin");
  EXPECT_FALSE(FileBytes::open("-"));
  EXPECT_FALSE(open_input("-"));
  allow_stdin_input(true);
  Result<std::pair<int, int64_t>> in = open_input("-");
  allow_stdin_input(false);
  ASSERT_TRUE(in) << test::errors(in.diagnostics);
  EXPECT_EQ(in->second, -1);
  ::close(in->first);
}

TEST(InputRule, AFileOverTheCeilingIsRefusedBeforeItIsRead) {
  const fs::path dir = test::temp_dir();
  std::ofstream(dir / "small.json") << std::string(100, ' ');
  std::ofstream(dir / "big.json") << std::string((1 << 20) + 10, ' ');  // mapped when read
  set_max_input_bytes(1 << 20);
  EXPECT_TRUE(read_file((dir / "small.json").string()));
  Result<std::string> r = read_file((dir / "big.json").string());
  Result<FileBytes> m = FileBytes::open((dir / "big.json").string());
  set_max_input_bytes(0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.diagnostics[0].code, "io.too-large");
  EXPECT_NE(r.diagnostics[0].message.find("1048586 bytes"), std::string::npos)
      << r.diagnostics[0].message;
  EXPECT_NE(r.diagnostics[0].message.find("AMK_MAX_INPUT_BYTES"), std::string::npos);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.diagnostics[0].code, "io.too-large");
  EXPECT_TRUE(FileBytes::open((dir / "big.json").string())) << "the default ceiling is 2 GiB";
  EXPECT_EQ(*max_input_bytes(), uint64_t{2} << 30);
}

// ---- writes onto what is not a regular file, and interrupted writes ----------------------------

TEST(AtomicWrite, ANameOfThisProcesssDescriptorIsWrittenWhereTheDescriptorStands) {
  // `amk gen -o /dev/stdout >> log.txt`: fd 1 is log.txt opened for appending. Replacing the
  // file that /proc/self/fd/1 names would lose what log.txt held.
  const fs::path log = test::temp_dir() / "log.txt";
  std::ofstream(log) << "old\n";
  const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  struct stat before {};
  ASSERT_EQ(::stat(log.c_str(), &before), 0);
  for (const std::string& name :
       {fmt::format("/dev/fd/{}", fd), fmt::format("/proc/self/fd/{}", fd),
        fmt::format("/proc/{}/fd/{}", ::getpid(), fd)})
    ASSERT_TRUE(test::ok(write_file_atomic(name, name + "\n")));
  const fs::path link = test::temp_dir() / "out.json";  // a link of the user's own to it
  fs::create_symlink(fmt::format("/dev/fd/{}", fd), link);
  ASSERT_TRUE(test::ok(write_file_atomic(link.string(), "via a link\n")));
  ::close(fd);
  struct stat after {};
  ASSERT_EQ(::stat(log.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino) << "not replaced";
  EXPECT_EQ(test::slurp(log), fmt::format("old\n/dev/fd/{0}\n/proc/self/fd/{0}\n/proc/{1}/fd/{0}\n"
                                          "via a link\n",
                                          fd, ::getpid()));
  Status closed = write_file_atomic("/dev/fd/987", "x");  // not open: an error, not a file
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.diagnostics[0].code, "io.write");
}

// Forks a child that writes `bytes` to `out`; once its temp file exists the parent sends `sig`.
// The child's wait status, or -1 when the write was over before the signal came (too fast to be
// caught mid-way: the caller tries a bigger one).
int interrupt_a_write(const fs::path& out, size_t bytes, int sig) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string data(bytes, 'x');
    ::_exit(write_file_atomic(out.string(), data).ok() ? 0 : 1);
  }
  int st = 0;
  for (bool seen = false; !seen;) {
    if (::waitpid(pid, &st, WNOHANG) == pid) return -1;
    for (const auto& e : fs::directory_iterator(out.parent_path()))
      seen = seen || e.path().filename().string().starts_with("." + out.filename().string());
  }
  ::kill(pid, sig);
  ::waitpid(pid, &st, 0);
  return WIFSIGNALED(st) ? st : -1;
}

TEST(AtomicWrite, ASignalThatEndsTheProcessMidWriteRemovesItsTempFile) {
  for (int sig : {SIGTERM, SIGINT}) {
    const fs::path dir = test::temp_dir() / std::to_string(sig);
    fs::create_directories(dir);
    int st = -1;
    for (size_t bytes = size_t{4} << 20; st == -1 && bytes <= (size_t{256} << 20); bytes *= 2)
      st = interrupt_a_write(dir / "big.json", bytes, sig);  // larger until the kill lands mid-way
    ASSERT_NE(st, -1) << "every write finished before the signal came";
    EXPECT_EQ(WTERMSIG(st), sig) << "the signal still ends the process";
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename());
    EXPECT_TRUE(left.empty() || left == std::vector<std::string>{"big.json"})
        << "left behind: " << left.front();
  }
}

}  // namespace
}  // namespace amk::ir
