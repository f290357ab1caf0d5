// A refreshing stderr progress line for long work (loading and validating huge files, diff,
// gen-weights, generate).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

namespace amk::cli {

/// One stderr line that a ticker thread rewrites in place ("amk diff: loading b.json (685 MB),
/// 3.1 s") while work runs: shown only when stderr is a terminal and the work has run longer
/// than half a second, or always (from the start, each update on its own line) when the
/// environment sets AMK_PROGRESS=always. Nothing is printed otherwise.
class Progress {
 public:
  explicit Progress(std::string command);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  /// Names the step under way; resets its count.
  void step(std::string what);
  /// The count within the step ("12/40").
  void count(size_t done, size_t total);
  /// The share of the step done, as a percentage.
  void fraction(double done);
  /// Erases the line (before other output); the next update draws it again.
  void clear();

 private:
  void draw_locked();
  void tick();
  std::string command_, what_;
  size_t done_ = 0, total_ = 0;
  double fraction_ = -1;
  bool tty_ = false, always_ = false, shown_ = false, stop_ = false;
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread ticker_;
};

/// "PATH (N MB)" for a progress step (PATH alone when its size is unknown: stdin, a pipe).
std::string sized(const std::string& path);

}  // namespace amk::cli
