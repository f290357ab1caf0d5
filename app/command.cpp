#include "app/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <regex>

#include <fmt/format.h>

namespace amk::app {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

ir::Result<std::string> run_git(const std::string& dir, const std::string& args) {
  ir::Result<CommandOutput> r = run_command(
      "git " + (dir.empty() ? std::string() : "-C " + shell_quote(dir) + " ") + args, 120);
  if (!r) return r.diagnostics;
  if (r->status != 0)
    return ir::error("git.failed",
                     fmt::format("git {}: {}", args, r->err.empty() ? "failed" : r->err));
  return r->out;
}

ir::Result<CommandOutput> run_command(const std::string& command, double timeout_s) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return ir::error("command.start", std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(out_pipe[0]), ::close(out_pipe[1]);
    return ir::error("command.start", std::strerror(e));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return ir::error("command.start", fmt::format("cannot fork: {}", std::strerror(e)));
  }
  if (pid == 0) {  // the child: its own process group, so a timeout kills everything it started
    ::setpgid(0, 0);
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  CommandOutput r;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(timeout_s, 0.0));
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool timed_out = false;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    const int n = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t got = ::read(fds[k].fd, buf, sizeof buf);
      if (got > 0) {
        std::string& into = k == 0 ? r.out : r.err;
        if (into.size() < (1u << 20)) into.append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        ::close(fds[k].fd);
        fds[k].fd = -1;
        --open_fds;
      }
    }
  }
  if (timed_out) ::kill(-pid, SIGKILL);
  for (pollfd& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return ir::error("command.timeout",
                     fmt::format("'{}' did not finish within {} s (killed)", command, timeout_s));
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

ir::Result<double> measure_with_command(const std::string& command, const std::string& path,
                                        double timeout_s) {
  std::string cmd = command;
  if (const size_t at = cmd.find("{}"); at != std::string::npos)
    cmd.replace(at, 2, shell_quote(path));
  else
    cmd += " " + shell_quote(path);
  ir::Result<CommandOutput> r = run_command(cmd, timeout_s);
  auto fail = [&](std::string why) {
    return ir::Result<double>(ir::error("search.measure", fmt::format("--measure: {}", why)));
  };
  if (!r) return fail(ir::error_messages(r.diagnostics));
  if (r->status != 0) {
    std::string tail = r->err.size() > 200 ? r->err.substr(r->err.size() - 200) : r->err;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
    return fail(fmt::format("'{}' exited with status {}{}{}", cmd, r->status,
                            tail.empty() ? "" : ": ", tail));
  }
  static const std::regex kNumber(R"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)");
  std::string last;
  for (auto it = std::sregex_iterator(r->out.begin(), r->out.end(), kNumber);
       it != std::sregex_iterator(); ++it)
    last = it->str();
  if (last.empty()) return fail(fmt::format("'{}' printed no latency (a number of µs)", cmd));
  return std::stod(last);
}

}  // namespace amk::app
