// The consume engine's holder: its release and a free list, so that an argument acquired through
// the C API costs no allocation once the process is warm.
#include "bridge/held.hpp"

#include <arrayport/c/dlpack.h>

#include <utility>

namespace arrayport::bridge {

void held::release() noexcept {
  // Nothing held (a fresh or released holder).
  if (from == source::none && !owner && !heap) return;
  switch (from) {
    case source::buffer: PyBuffer_Release(&buffer); break;
    case source::dlpack_legacy: {
      auto* t = static_cast<arrayport_dl_managed_tensor_t*>(managed);
      if (t && t->deleter) t->deleter(t);
      break;
    }
    case source::dlpack_versioned: {
      auto* t = static_cast<arrayport_dl_managed_tensor_versioned_t*>(managed);
      if (t && t->deleter) t->deleter(t);
      break;
    }
    case source::reference:
    case source::none: break;
  }
  managed = nullptr;
  from = source::none;
  protocol = 0;
  Py_CLEAR(owner);
  std::free(heap);
  heap = nullptr;
}

void held::drop_tensor() noexcept {
  PyObject* producer = std::exchange(owner, nullptr);
  release();
  reset_view();  // the next protocol's reader fills a fresh view
  owner = producer;
  from = source::reference;
}

namespace {
// Guarded by the GIL, as every use of a holder is. Capped: a burst of live holders is freed.
held* g_free = nullptr;
int g_free_count = 0;
constexpr int free_cap = 16;
}  // namespace

held* make_held() {
  if (held* h = g_free) {
    g_free = h->next_free;
    --g_free_count;
    h->next_free = nullptr;
    h->reset_view();
    return h;
  }
  return new held();
}

void free_held(held* h) noexcept {
  if (!h) return;
  h->release();
  if (g_free_count >= free_cap) {
    delete h;
    return;
  }
  h->next_free = g_free;
  g_free = h;
  ++g_free_count;
}

}  // namespace arrayport::bridge
