// Proves what write_file_atomic promises about what a path names: a symlink is written through to
// its target (atomically, keeping its mode), a FIFO or character device is written into instead of
// being replaced, a directory or socket is refused and left alone.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

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
