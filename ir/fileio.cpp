#include "ir/fileio.h"

#include <algorithm>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

namespace amk::ir {

namespace {

Diagnostic io_error(std::string code, std::string message, const std::string& path) {
  Diagnostic d = error(std::move(code), std::move(message));
  d.file = path;
  return d;
}

}  // namespace

Result<std::string> read_file(const std::string& path) {
  auto fail = [&](std::string msg) { return io_error("io.read", std::move(msg), path); };
  int fd = path == "-" ? ::dup(STDIN_FILENO) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    int e = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    return fail(fmt::format("cannot read '{}': {}", path, std::strerror(e)));
  }
  std::string out;
  if (S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return fail(fmt::format("cannot read '{}': {}", path, std::strerror(e)));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
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
  constexpr off_t kMapFrom = 1 << 20;  // smaller files are read: a mapping costs more than a copy
  FileBytes f;
  if (path != "-") {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= kMapFrom) {
      const auto size = static_cast<size_t>(st.st_size);
      void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      ::close(fd);
      if (m != MAP_FAILED) {
        ::madvise(m, size, MADV_SEQUENTIAL);
        f.map_ = static_cast<const char*>(m);
        f.size_ = size;
        return f;
      }
    } else if (fd >= 0) {
      ::close(fd);
    }
  }
  Result<std::string> text = read_file(path);  // and every error message
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

// The file a path names once its symlinks are followed (a dangling link names the file it would
// create); an error for a loop.
Result<std::string> follow_links(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p.string();
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

}  // namespace

Status write_file_atomic(const std::string& path, std::string_view data) {
  namespace fs = std::filesystem;
  auto fail_with = [&](std::string msg) {
    return Status(io_error("io.write", std::move(msg), path));
  };
  Result<std::string> resolved = follow_links(path);
  if (!resolved) return std::move(resolved.diagnostics);
  const std::string& real = *resolved;  // a symlink is written through, at its target
  struct stat st {};
  const bool exists = ::stat(real.c_str(), &st) == 0;
  if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    // A device or a pipe is written straight into: replacing it would break it (/dev/null).
    const int fd = ::open(real.c_str(), O_WRONLY | O_CLOEXEC);
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
  fs::path target(real);
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::string tmpl = fmt::format("{}/.{}.tmp.XXXXXX", dir.string(), target.filename().string());
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return fail_with(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
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

Result<std::pair<std::string, std::string>> read_builtin_or_file(
    std::string_view name_or_path, std::span<const BuiltinFile> builtins, std::string_view dir,
    std::string_view what, std::string_view hint) {
  for (const auto& [stem, text] : builtins)
    if (stem == name_or_path)
      return std::pair{std::string(dir) + "/" + std::string(stem) + ".json", std::string(text)};
  const bool looks_like_path = name_or_path == "-" ||
                               name_or_path.find('/') != std::string_view::npos ||
                               name_or_path.ends_with(".json");
  if (!looks_like_path) {
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
