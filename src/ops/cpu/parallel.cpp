// The CPU kernels' thread pool: workers started on first use, one job at a time, the caller helps.
#include "ops/cpu/parallel.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
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
    // Only as many workers as there are chunks beyond the caller's first are asked for.
    const auto helpers = static_cast<int>(
        std::min<std::int64_t>(std::int64_t(m_workers.size()), (n + chunk - 1) / chunk - 1));
    m_fn = fn;  // read by workers only after they claim a slot (the release below)
    m_context = context;
    m_n = n;
    m_chunk = chunk;
    // The chunks in helpers + 1 contiguous ranges: the caller's first, then one a slot.
    const std::int64_t chunks = (n + chunk - 1) / chunk;
    m_parts = helpers + 1;
    for (int r = 0; r < m_parts; ++r) {
      m_ranges[r].next.store(chunks * r / m_parts, std::memory_order_relaxed);
      m_ranges[r].end = chunks * (r + 1) / m_parts;
    }
    m_active.store(helpers, std::memory_order_relaxed);
    // seq_cst, with the sleeper's count and claim: either this sees it asleep, or it sees slots.
    m_slots.store(helpers, std::memory_order_seq_cst);
    if (m_sleeping.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(m_mutex);  // a sleeper checks m_slots under this lock
      if (helpers == static_cast<int>(m_workers.size()))
        m_wake.notify_all();
      else
        for (int i = 0; i < helpers; ++i) m_wake.notify_one();
    }
    work(0);
    // Every chunk is taken: slots no worker has claimed yet are withdrawn, so the caller waits
    // only for the workers already running a chunk, never for one still waking up.
    const int unclaimed = m_slots.exchange(0, std::memory_order_acq_rel);
    if (m_active.fetch_sub(unclaimed, std::memory_order_acq_rel) == unclaimed) return;
    if (spin_until([&] { return m_active.load(std::memory_order_acquire) == 0; })) return;
    std::unique_lock<std::mutex> lock(m_mutex);
    m_done.wait(lock, [&] { return m_active.load(std::memory_order_acquire) == 0; });
  }

 private:
  pool() {
    unsigned hw = std::thread::hardware_concurrency();
    if (const char* env = std::getenv("ARRAYPORT_NUM_THREADS")) hw = unsigned(std::atoi(env));
    m_worker_count = hw > 1 ? std::min(hw, 256u) - 1 : 0;
    m_ranges.reset(new range[m_worker_count + 1]);
  }

  // Runs the chunks of range `own`, then those left in the others. A thread keeps the same part
  // of the data from call to call (the caller the first, a worker its slot's), so what fits in
  // the cores' caches together stays in them (docs/benchmarks.md, "One range of chunks a
  // thread"). A late or absent worker's range is done by the others.
  void work(int own) {
    for (int k = 0; k < m_parts; ++k) {
      range& r = m_ranges[(own + k) % m_parts];
      for (;;) {
        const std::int64_t i = r.next.fetch_add(1, std::memory_order_relaxed);
        if (i >= r.end) break;
        const std::int64_t begin = i * m_chunk;  // < m_n: no sum past it is formed
        m_fn(m_context, begin, begin + std::min(m_chunk, m_n - begin));
      }
    }
  }

  // Polls done() for up to 100 us before the caller sleeps. Waking a thread through the kernel
  // took 5-20 us on the CPU machine, as long as a whole 2^16-element op: BLAS and OpenMP keep
  // their workers polling after a job for the same reason. Past the first few hundred polls it
  // yields, so that a polling thread never holds a core another thread could use.
  template <class Done>
  static bool spin_until(const Done& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
    for (unsigned i = 1;; ++i) {
      if (done()) return true;
      if (i < 256) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        continue;
      }
      std::this_thread::yield();
      if (std::chrono::steady_clock::now() > until) return false;
    }
  }

  // The slot claimed (1 to helpers, its range), or 0 where none is left.
  int claim_slot() {
    int s = m_slots.load(std::memory_order_seq_cst);
    while (s > 0)
      if (m_slots.compare_exchange_weak(s, s - 1, std::memory_order_acq_rel)) return s;
    return 0;
  }

  // A worker claims one slot of the current job (polling a while, then asleep), runs chunks
  // until none is left, and reports back.
  void loop() {
    for (;;) {
      int slot = 0;
      if (!spin_until([&] { return (slot = claim_slot()) != 0; })) {
        std::unique_lock<std::mutex> lock(m_mutex);
        m_sleeping.fetch_add(1, std::memory_order_seq_cst);
        m_wake.wait(lock, [&] { return (slot = claim_slot()) != 0; });
        m_sleeping.fetch_sub(1, std::memory_order_relaxed);
      }
      work(slot);
      if (m_active.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(m_mutex);  // the caller checks m_active under it
        m_done.notify_one();
      }
    }
  }

  unsigned m_worker_count = 0;
  std::vector<std::thread> m_workers;
  std::mutex m_submit;
  std::mutex m_mutex;
  std::condition_variable m_wake, m_done;
  std::atomic<int> m_slots{0};     // workers still wanted by the current job
  std::atomic<int> m_active{0};    // workers that claimed (or may claim) a slot, not finished
  std::atomic<int> m_sleeping{0};  // workers waiting on m_wake
  detail::chunk_fn m_fn = nullptr;
  void* m_context = nullptr;
  std::int64_t m_n = 0, m_chunk = 1;
  struct alignas(64) range {            // a cache line each: the threads claim from their own
    std::atomic<std::int64_t> next{0};  // the next chunk's index
    std::int64_t end = 0;
  };
  std::unique_ptr<range[]> m_ranges;
  int m_parts = 1;
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
