// The CPU kernels' thread pool: workers started on first use, one job at a time, the caller helps.
#include "ops/cpu/parallel.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace arrayport::ops::cpu {
namespace {

class pool;

// The process's pool. fork() copies it into the child without its worker threads (and perhaps
// with its locks held by them), where the next job would wait forever for workers that do not
// exist: the atfork child handler drops it, and the child starts a pool of its own on first use.
// Pools are leaked on purpose: joining threads from a static destructor at exit can hang.
std::atomic<pool*> g_pool{nullptr};

void forget_pool_after_fork() noexcept { g_pool.store(nullptr, std::memory_order_relaxed); }

class pool {
 public:
  static pool& instance() {
    pool* p = g_pool.load(std::memory_order_acquire);
    if (p) return *p;
    static const bool registered = pthread_atfork(nullptr, nullptr, &forget_pool_after_fork) == 0;
    (void)registered;
    pool* fresh = new pool();  // starts no thread, so the loser of a race can delete it
    if (g_pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) return *fresh;
    delete fresh;
    return *p;
  }

  int threads() const noexcept { return static_cast<int>(m_worker_count) + 1; }

  void run(std::int64_t n, std::int64_t grain, detail::chunk_fn fn, void* context) {
    std::unique_lock<std::mutex> busy(m_submit, std::try_to_lock);
    if (!busy.owns_lock()) {  // another thread's job (or ours, nested) is running: do it alone
      fn(context, 0, n);
      return;
    }
    if (m_workers.empty()) {  // first job: start the workers (they wait for a slot)
      for (unsigned i = 0; i < m_worker_count; ++i) m_workers.emplace_back([this] { loop(); });
      for (auto& t : m_workers) t.detach();
    }
    const std::int64_t max_chunks = std::int64_t(threads()) * 4;
    const std::int64_t chunk = std::max(grain, (n + max_chunks - 1) / max_chunks);
    // Only as many workers as there are chunks beyond the caller's first are woken.
    const auto helpers = static_cast<int>(
        std::min<std::int64_t>(std::int64_t(m_workers.size()), (n + chunk - 1) / chunk - 1));
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_fn = fn;
      m_context = context;
      m_n = n;
      m_chunk = chunk;
      m_next.store(0, std::memory_order_relaxed);
      m_slots = m_active = helpers;
    }
    if (helpers == static_cast<int>(m_workers.size()))
      m_wake.notify_all();
    else
      for (int i = 0; i < helpers; ++i) m_wake.notify_one();
    work();
    // Every chunk is taken: slots no worker has claimed yet are withdrawn, so the caller waits
    // only for the workers already running a chunk, never for one still waking up.
    std::unique_lock<std::mutex> lock(m_mutex);
    m_active -= m_slots;
    m_slots = 0;
    m_done.wait(lock, [&] { return m_active == 0; });
  }

 private:
  pool() {
    unsigned hw = std::thread::hardware_concurrency();
    if (const char* env = std::getenv("ARRAYPORT_NUM_THREADS")) hw = unsigned(std::atoi(env));
    m_worker_count = hw > 1 ? std::min(hw, 256u) - 1 : 0;
  }

  void work() {
    for (;;) {
      const std::int64_t begin = m_next.fetch_add(m_chunk, std::memory_order_relaxed);
      if (begin >= m_n) return;
      m_fn(m_context, begin, std::min(m_n, begin + m_chunk));
    }
  }

  // A worker claims one slot of the current job under the lock (the job's parameters were written
  // under it), runs chunks until none is left, and reports back.
  void loop() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(m_mutex);
        m_wake.wait(lock, [&] { return m_slots > 0; });
        --m_slots;
      }
      work();
      std::lock_guard<std::mutex> lock(m_mutex);
      if (--m_active == 0) m_done.notify_one();
    }
  }

  unsigned m_worker_count = 0;
  std::vector<std::thread> m_workers;
  std::mutex m_submit;
  std::mutex m_mutex;
  std::condition_variable m_wake, m_done;
  int m_slots = 0;   // workers still wanted by the current job
  int m_active = 0;  // workers that claimed (or may still claim) a slot and have not finished
  detail::chunk_fn m_fn = nullptr;
  void* m_context = nullptr;
  std::int64_t m_n = 0, m_chunk = 1;
  std::atomic<std::int64_t> m_next{0};
};

}  // namespace

int thread_count() noexcept {
  static const int n = pool::instance().threads();
  return n;
}

namespace detail {
void parallel_for_impl(std::int64_t n, std::int64_t grain, chunk_fn fn, void* context) {
  pool::instance().run(n, grain, fn, context);
}
}  // namespace detail

}  // namespace arrayport::ops::cpu
