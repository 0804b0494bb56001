// What the consume engine holds for one acquired view: the producer, and the buffer or DLPack
// tensor it exported. The handle of the C API's acquire entries (python/api.h).
#pragma once

#include <Python.h>

#include <arrayport/c/view.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace arrayport::bridge {

struct held {
  enum class source : std::uint8_t { none, reference, buffer, dlpack_legacy, dlpack_versioned };

  arrayport_view_t view;
  source from = source::none;
  std::uint32_t protocol = 0;    // the protocol bit the view came through
  PyObject* owner = nullptr;     // strong reference to the producer
  Py_buffer buffer;              // source::buffer only (not initialised otherwise)
  void* managed = nullptr;       // source::dlpack_*: the managed tensor to delete exactly once
  std::int64_t* heap = nullptr;  // shape and strides past inline_rank dimensions
  held* next_free = nullptr;     // the free list's link (see make_held)
  static constexpr int inline_rank = 8;
  std::int64_t inline_extents[2 * inline_rank];  // written before they are read

  held() noexcept { reset_view(); }
  // For memory already zeroed (a holder's tp_alloc): only the version is written.
  struct zeroed_t {};
  explicit held(zeroed_t) noexcept {
    view.version = {ARRAYPORT_C_ABI_VERSION_MAJOR, ARRAYPORT_C_ABI_VERSION_MINOR};
  }
  held(const held&) = delete;
  held& operator=(const held&) = delete;
  ~held() { release(); }

  void reset_view() noexcept {
    std::memset(&view, 0, sizeof view);
    view.version = {ARRAYPORT_C_ABI_VERSION_MAJOR, ARRAYPORT_C_ABI_VERSION_MINOR};
  }

  // Room for shape and strides, inline up to 8 dimensions.
  std::int64_t* extents(int ndim) {
    if (ndim <= inline_rank) return inline_extents;
    std::free(heap);
    heap = static_cast<std::int64_t*>(std::malloc(sizeof(std::int64_t) * 2 * std::size_t(ndim)));
    if (!heap) throw std::bad_alloc();
    return heap;
  }

  /// Drops the view: releases the buffer, calls the DLPack deleter, drops the producer. GIL held.
  /// The view's fields are left as they were: make_held resets them before a holder is reused.
  void release() noexcept;

  /// Calls the deleter of a tensor taken from a capsule and forgets it (the producer stays held).
  void drop_tensor() noexcept;

  /// Visits the producer and a buffer's exporter (for a GC-tracked holder's tp_traverse).
  int traverse(visitproc visit, void* arg) const {
    Py_VISIT(owner);
    if (from == source::buffer) Py_VISIT(buffer.obj);
    return 0;
  }
};

/// A fresh holder (from a small free list: one is taken per acquired argument) and its return.
/// GIL held.
held* make_held();
void free_held(held* h) noexcept;

}  // namespace arrayport::bridge
