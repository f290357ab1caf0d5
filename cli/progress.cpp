#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

namespace amk::cli {

namespace {
constexpr auto kDelay = std::chrono::milliseconds(500);
constexpr auto kTick = std::chrono::milliseconds(100);
}  // namespace

Progress::Progress(std::string command)
    : command_(std::move(command)), start_(std::chrono::steady_clock::now()) {
  const char* env = std::getenv("AMK_PROGRESS");
  always_ = env && std::string_view(env) == "always";
  tty_ = !always_ && ::isatty(STDERR_FILENO);
  if (tty_) ticker_ = std::thread([this] { tick(); });
}

Progress::~Progress() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  clear();
}

void Progress::step(std::string what) {
  std::lock_guard lock(mu_);
  what_ = std::move(what);
  done_ = total_ = 0;
  fraction_ = -1;
  if (always_) draw_locked();
}

void Progress::count(size_t done, size_t total) {
  std::lock_guard lock(mu_);
  done_ = done;
  total_ = total;
  if (always_) draw_locked();
}

void Progress::fraction(double done) {
  std::lock_guard lock(mu_);
  fraction_ = done;
  if (always_) draw_locked();
}

void Progress::clear() {
  std::lock_guard lock(mu_);
  if (tty_ && shown_) std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  shown_ = false;
}

void Progress::draw_locked() {
  if (what_.empty()) return;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = fmt::format("{}: {}", command_, what_);
  if (total_) line += fmt::format(" {}/{}", done_, total_);
  if (fraction_ >= 0) line += fmt::format(" {:.0f}%", 100 * fraction_);
  line += fmt::format(", {:.1f} s", s);
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
  shown_ = true;
}

void Progress::tick() {
  std::unique_lock lock(mu_);
  if (cv_.wait_for(lock, kDelay, [this] { return stop_; })) return;
  while (!stop_) {
    draw_locked();
    cv_.wait_for(lock, kTick, [this] { return stop_; });
  }
}

std::string sized(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  if (ec) return path;
  return fmt::format("{} ({:.0f} MB)", path, static_cast<double>(n) / 1e6);
}

}  // namespace amk::cli
