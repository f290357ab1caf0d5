#include "ir/pool.h"

#include <system_error>
#include <utility>

namespace amk::ir {

Pool::Pool(size_t n) {
  for (size_t w = 1; w < n; ++w) {
    try {
      threads_.emplace_back([this, w] { loop(w); });
    } catch (const std::system_error&) {  // no more threads to be had: fewer run the items
      break;
    }
  }
}

Pool::~Pool() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void Pool::run(size_t items, const std::function<void(size_t, size_t)>& work) {
  {
    std::lock_guard lock(m_);
    work_ = &work;
    items_ = items;
    next_.store(0);
    busy_ = threads_.size();
    failed_ = nullptr;
    ++generation_;
  }
  start_.notify_all();
  drain(0);
  std::unique_lock lock(m_);
  done_.wait(lock, [&] { return busy_ == 0; });
  work_ = nullptr;
  if (failed_) std::rethrow_exception(std::exchange(failed_, nullptr));
}

void Pool::drain(size_t w) {
  for (size_t i = next_.fetch_add(1); i < items_; i = next_.fetch_add(1)) {
    try {
      (*work_)(w, i);
    } catch (...) {
      std::lock_guard lock(m_);
      if (!failed_) failed_ = std::current_exception();
    }
  }
}

void Pool::loop(size_t w) {
  size_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(m_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain(w);
    std::lock_guard lock(m_);
    if (--busy_ == 0) done_.notify_one();
  }
}

}  // namespace amk::ir
