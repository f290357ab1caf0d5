#include "ir/fileio.h"

#include <algorithm>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace amk::ir {

namespace {

Diagnostic io_error(std::string code, std::string message, const std::string& path) {
  Diagnostic d = error(std::move(code), std::move(message));
  d.file = path;
  return d;
}

std::atomic<bool> g_stdin_allowed{false};
std::atomic<uint64_t> g_max_input{0};  // 0: the environment's

constexpr uint64_t kDefaultMaxInput = uint64_t{2} << 30;

// AMK_MAX_INPUT_BYTES: digits, then optionally K, M, G or T (powers of 1024).
std::optional<uint64_t> parse_size(std::string_view s) {
  uint64_t n = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i)
    if (__builtin_mul_overflow(n, 10u, &n) || __builtin_add_overflow(n, s[i] - '0', &n))
      return std::nullopt;
  if (i == 0 || s.size() - i > 1) return std::nullopt;
  if (i == s.size()) return n;
  const std::string_view units = "KMGT";
  const size_t u = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(s[i]))));
  if (u == std::string_view::npos) return std::nullopt;
  const uint64_t scale = uint64_t{1} << (10 * (u + 1));
  return __builtin_mul_overflow(n, scale, &n) ? std::nullopt : std::optional(n);
}

// What a file's type is called in an error.
std::string_view kind_name(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

Diagnostic not_a_file(const std::string& path, mode_t m) {
  return io_error("io.not-a-file",
                  fmt::format("cannot read '{}': it is {}; amk reads regular files (or '-', "
                              "standard input, where a command takes it)",
                              path, kind_name(m)),
                  path);
}

// `size`: the size when known ("2028882 bytes"), else empty (a stream).
Diagnostic too_large(const std::string& path, std::string_view size, uint64_t limit) {
  return io_error("io.too-large",
                  fmt::format("cannot read '{}': it is {}over the {} bytes one input may have "
                              "(AMK_MAX_INPUT_BYTES sets that ceiling)",
                              path, size, limit),
                  path);
}

Diagnostic out_of_memory(const std::string& path, std::string_view doing) {
  return io_error(
      "io.out-of-memory",
      fmt::format("out of memory {} '{}' (AMK_MAX_INPUT_BYTES bounds one input)", doing, path),
      path);
}

}  // namespace

void allow_stdin_input(bool on) {
  g_stdin_allowed = on;
}

void set_max_input_bytes(uint64_t bytes) {
  g_max_input = bytes;
}

Result<uint64_t> max_input_bytes() {
  if (const uint64_t set = g_max_input.load()) return set;
  static const std::optional<std::string> env = [] {
    const char* v = std::getenv("AMK_MAX_INPUT_BYTES");
    return v ? std::optional<std::string>(v) : std::nullopt;
  }();
  if (!env) return kDefaultMaxInput;
  if (const std::optional<uint64_t> n = parse_size(*env); n && *n > 0) return *n;
  return error("io.limit",
               fmt::format("AMK_MAX_INPUT_BYTES='{}' is not a size in bytes (a positive count, "
                           "optionally with K, M, G or T)",
                           *env));
}

Result<std::pair<int, int64_t>> open_input(const std::string& path) {
  if (path == "-") {
    if (!g_stdin_allowed)
      return io_error("io.stdin", "'-' (standard input) is not an input here: give a file's path",
                      path);
    const int fd = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
      return io_error("io.read", fmt::format("cannot read '-': {}", std::strerror(errno)), path);
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd);
      return not_a_file(path, st.st_mode);
    }
    // A file, a pipe, a terminal or a device: read as a stream, cut at the ceiling.
    return std::pair{fd, int64_t{-1}};
  }
  // The kind is looked at before the open, so that a FIFO or a device is refused without being
  // opened (a FIFO's open blocks until a writer comes; a device may act on open). The race this
  // leaves (the name swapped for a FIFO or device between the stat and the open) is closed by the
  // open's O_NONBLOCK | O_NOCTTY, which never blocks or takes a terminal, and by the fstat after
  // it, which refuses whatever was opened before a byte is read: at worst such a device is
  // opened and closed.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return io_error("io.read", fmt::format("cannot open '{}': {}", path, std::strerror(errno)),
                    path);
  if (!S_ISREG(st.st_mode)) return not_a_file(path, st.st_mode);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return io_error("io.read", fmt::format("cannot open '{}': {}", path, std::strerror(errno)),
                    path);
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const mode_t m = st.st_mode;
    ::close(fd);
    return not_a_file(path, m);
  }
  return std::pair{fd, static_cast<int64_t>(st.st_size)};
}

namespace {

// Reads what `fd` (an input open_input opened, `size` long or -1) holds, then closes it.
Result<std::string> read_all(int fd, int64_t size, const std::string& path) {
  Result<uint64_t> limit = max_input_bytes();
  if (!limit || (size > 0 && static_cast<uint64_t>(size) > *limit)) {
    ::close(fd);
    if (!limit) return std::move(limit.diagnostics);
    return too_large(path, fmt::format("{} bytes, ", size), *limit);
  }
  std::string out;
  try {
    if (size > 0) out.reserve(static_cast<size_t>(size));
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // a stdin left non-blocking
        pollfd p{fd, POLLIN, 0};
        ::poll(&p, 1, -1);
        continue;
      }
      if (n <= 0) {
        const int e = errno;
        ::close(fd);
        if (n == 0) return out;
        return io_error("io.read", fmt::format("cannot read '{}': {}", path, std::strerror(e)),
                        path);
      }
      if (out.size() + static_cast<size_t>(n) > *limit) break;  // a stream, or a file that grew
      out.append(buf, static_cast<size_t>(n));
    }
  } catch (const std::bad_alloc&) {
    ::close(fd);
    return out_of_memory(path, "reading");
  }
  ::close(fd);
  return too_large(path, "", *limit);
}

}  // namespace

Result<std::string> read_file(const std::string& path) {
  Result<std::pair<int, int64_t>> in = open_input(path);
  if (!in) return std::move(in.diagnostics);
  return read_all(in->first, in->second, path);
}

FileBytes::FileBytes(FileBytes&& o) noexcept
    : owned_(std::move(o.owned_)), map_(std::exchange(o.map_, nullptr)), size_(o.size_) {}

FileBytes& FileBytes::operator=(FileBytes&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(const_cast<char*>(map_), size_);
    owned_ = std::move(o.owned_);
    map_ = std::exchange(o.map_, nullptr);
    size_ = o.size_;
  }
  return *this;
}

void FileBytes::release(size_t from, size_t to) const {
  if (!map_) return;
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  from = (from + page - 1) / page * page;
  to = std::min(to, size_) / page * page;
  if (from < to) ::madvise(const_cast<char*>(map_) + from, to - from, MADV_DONTNEED);
}

FileBytes::~FileBytes() {
  if (map_) ::munmap(const_cast<char*>(map_), size_);
}

Result<FileBytes> FileBytes::open(const std::string& path) {
  constexpr int64_t kMapFrom = 1 << 20;  // smaller files are read: a mapping costs more than a copy
  Result<std::pair<int, int64_t>> in = open_input(path);
  if (!in) return std::move(in.diagnostics);
  const auto [fd, size] = *in;
  FileBytes f;
  Result<uint64_t> limit = max_input_bytes();
  if (limit && size >= kMapFrom && static_cast<uint64_t>(size) <= *limit) {
    void* m =
        ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (m != MAP_FAILED) {
      ::close(fd);
      ::madvise(m, static_cast<size_t>(size), MADV_SEQUENTIAL);
      f.map_ = static_cast<const char*>(m);
      f.size_ = static_cast<size_t>(size);
      return f;
    }
  }
  Result<std::string> text = read_all(fd, size, path);
  if (!text) return std::move(text.diagnostics);
  f.owned_ = std::move(*text);
  return f;
}

namespace {

// Writes all of `data` to `fd`; false with errno set on failure.
bool write_all(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

// The descriptor of this process a path names (/dev/stdin, /dev/stdout, /dev/stderr, /dev/fd/N,
// /proc/self/fd/N, /proc/thread-self/fd/N, /proc/PID/fd/N with this process's PID), or -1.
int descriptor_named(const std::filesystem::path& p) {
  const std::string s = p.lexically_normal().string();
  if (s == "/dev/stdin") return 0;
  if (s == "/dev/stdout") return 1;
  if (s == "/dev/stderr") return 2;
  for (const std::string& dir :
       {std::string("/dev/fd/"), std::string("/proc/self/fd/"),
        std::string("/proc/thread-self/fd/"), fmt::format("/proc/{}/fd/", ::getpid())}) {
    if (!s.starts_with(dir) || s.size() == dir.size() || s.size() - dir.size() > 9) continue;
    int fd = 0;
    for (size_t i = dir.size(); i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return -1;
      fd = fd * 10 + (s[i] - '0');
    }
    return fd;
  }
  return -1;
}

// Where a write goes: the file a path names once its symlinks are followed (a dangling link
// names the file it would create), or the descriptor of this process a link on the way names
// (/dev/stdout is a link to /proc/self/fd/1, whose own link text names what fd 1 is: the file
// behind it must not be replaced, and a pipe has no path). An error for a loop.
struct WriteTarget {
  std::string path;
  int fd = -1;
};
Result<WriteTarget> follow_links(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  for (int hops = 0; hops < 40; ++hops) {
    if (const int fd = descriptor_named(p); fd >= 0) return WriteTarget{p.string(), fd};
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return WriteTarget{p.string(), -1};
    fs::path to = fs::read_symlink(p, ec);
    if (ec)
      return io_error("io.write",
                      fmt::format("cannot follow the link '{}': {}", p.string(), ec.message()),
                      path);
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return io_error("io.write",
                  fmt::format("cannot write '{}': too many levels of symbolic links", path), path);
}

// The temporary files being written, for the signal handler to remove: a fixed table, as a
// handler may not allocate or lock. A slot is 0 free, 1 being filled, 2 holding a path.
constexpr size_t kTempSlots = 64;
struct TempSlot {
  std::atomic<int> state{0};
  char path[PATH_MAX] = {};
};
TempSlot g_temps[kTempSlots];
static_assert(std::atomic<int>::is_always_lock_free);

// Removes every registered temporary file, then lets the signal do what it would have done
// (the default action: the process ends with that signal). Async-signal-safe: unlink, sigaction
// and raise only.
extern "C" void remove_temps_and_reraise(int sig) {
  for (TempSlot& t : g_temps)
    if (t.state.load(std::memory_order_acquire) == 2) ::unlink(t.path);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);  // pending until the handler returns (the signal is blocked inside it)
}

// Installs the handler for the signals that end a process from outside (Ctrl-C, kill, a closed
// terminal), once, and only where the signal has its default action: a host with a handler of
// its own (Python's SIGINT) keeps it, and its writes are not cut short by the signal anyway.
void install_temp_cleanup() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
          old.sa_handler != SIG_DFL)
        continue;
      struct sigaction sa {};
      sa.sa_handler = remove_temps_and_reraise;
      ::sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

// A temporary file registered with the handler while it exists (a path too long for a slot,
// or a full table, is not registered: such a file is left behind by a signal, as before).
class TempFile {
 public:
  explicit TempFile(const std::string& path) {
    if (path.size() >= PATH_MAX) return;
    for (size_t i = 0; i < kTempSlots; ++i) {
      int free = 0;
      if (!g_temps[i].state.compare_exchange_strong(free, 1)) continue;
      std::memcpy(g_temps[i].path, path.c_str(), path.size() + 1);
      g_temps[i].state.store(2, std::memory_order_release);
      slot_ = static_cast<int>(i);
      return;
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (slot_ >= 0) g_temps[slot_].state.store(0, std::memory_order_release);
  }

 private:
  int slot_ = -1;
};

// Writes `data` to `real` through a temporary file in its folder, renamed over it when whole.
// `st`: the existing file's status (`exists`), whose permissions the new one keeps.
Status write_via_temp(const std::string& path, const std::string& real, std::string_view data,
                      bool exists, const struct stat& st) {
  namespace fs = std::filesystem;
  auto fail_with = [&](std::string msg) {
    return Status(io_error("io.write", std::move(msg), path));
  };
  install_temp_cleanup();
  fs::path target(real);
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::string tmpl = fmt::format("{}/.{}.tmp.XXXXXX", dir.string(), target.filename().string());
  // The signals the handler catches wait from before mkstemp until the file is registered, so
  // that none finds the file there unregistered (and leaves it behind).
  sigset_t ending, was;
  ::sigemptyset(&ending);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaddset(&ending, sig);
  ::pthread_sigmask(SIG_BLOCK, &ending, &was);
  int fd = ::mkstemp(tmpl.data());
  const int mkstemp_errno = errno;
  std::optional<TempFile> registered;
  if (fd >= 0) registered.emplace(tmpl);
  ::pthread_sigmask(SIG_SETMASK, &was, nullptr);
  if (fd < 0)
    return fail_with(fmt::format("cannot write '{}': {}", path, std::strerror(mkstemp_errno)));
  auto fail = [&](const char* what) {
    int e = errno;
    ::close(fd);
    ::unlink(tmpl.c_str());
    return fail_with(fmt::format("cannot write '{}' ({}): {}", path, what, std::strerror(e)));
  };
  if (!write_all(fd, data)) return fail("write");
  // Keep the permissions of a file we replace; new files get the usual 0666 & ~umask.
  if (exists) {
    ::fchmod(fd, st.st_mode & 07777);
  } else {
    mode_t um = ::umask(0);
    ::umask(um);
    ::fchmod(fd, 0666 & ~um);
  }
  if (::fsync(fd) != 0) return fail("fsync");
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmpl.c_str());
    return fail_with(fmt::format("cannot write '{}' (close): {}", path, std::strerror(e)));
  }
  if (::rename(tmpl.c_str(), real.c_str()) != 0) {
    int e = errno;
    ::unlink(tmpl.c_str());
    return fail_with(fmt::format("cannot write '{}' (rename): {}", path, std::strerror(e)));
  }
  return {};
}

}  // namespace

Status write_file_atomic(const std::string& path, std::string_view data) {
  auto fail_with = [&](std::string msg) {
    return Status(io_error("io.write", std::move(msg), path));
  };
  Result<WriteTarget> resolved = follow_links(path);
  if (!resolved) return std::move(resolved.diagnostics);
  if (resolved->fd >= 0) {  // one of this process's descriptors: written where it stands
    if (!write_all(resolved->fd, data))
      return fail_with(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    return {};
  }
  const std::string& real = resolved->path;  // a symlink is written through, at its target
  struct stat st {};
  const bool exists = ::stat(real.c_str(), &st) == 0;
  if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    // A device or a pipe is written straight into: replacing it would break it (/dev/null).
    const int fd = ::open(real.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return fail_with(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    const bool ok = write_all(fd, data);
    const int e = errno;
    ::close(fd);
    if (!ok) return fail_with(fmt::format("cannot write '{}': {}", path, std::strerror(e)));
    return {};
  }
  if (exists && S_ISDIR(st.st_mode))
    return fail_with(fmt::format("cannot write '{}': it is a directory", path));
  if (exists && !S_ISREG(st.st_mode))
    return fail_with(fmt::format(
        "cannot write '{}': it is neither a regular file nor a device or pipe (refusing to "
        "replace it)",
        path));
  return write_via_temp(path, real, data, exists, st);
}

bool names_a_file(std::string_view name_or_path) {
  return name_or_path == "-" || name_or_path.find('/') != std::string_view::npos ||
         name_or_path.ends_with(".json");
}

Result<std::pair<std::string, std::string>> read_builtin_or_file(
    std::string_view name_or_path, std::span<const BuiltinFile> builtins, std::string_view dir,
    std::string_view what, std::string_view hint) {
  for (const auto& [stem, text] : builtins)
    if (stem == name_or_path)
      return std::pair{std::string(dir) + "/" + std::string(stem) + ".json", std::string(text)};
  if (!names_a_file(name_or_path)) {
    std::string names;
    for (const std::string& n : builtin_names(builtins)) names += (names.empty() ? "" : ", ") + n;
    return error(fmt::format("{}.unknown", what),
                 fmt::format("unknown {} '{}' (built-in: {}; or give a path to {})", what,
                             name_or_path, names, hint));
  }
  Result<std::string> text = read_file(std::string(name_or_path));
  if (!text) return std::move(text.diagnostics);
  return std::pair{std::string(name_or_path), std::move(*text)};
}

std::vector<std::string> builtin_names(std::span<const BuiltinFile> builtins) {
  std::vector<std::string> v;
  for (const auto& f : builtins) v.emplace_back(f.first);
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace amk::ir
