// Streams and events: creating, waiting for and querying them, and ordering one stream after
// another without a host synchronisation.
#pragma once

#include <arrayport/config.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/runtime/check.hpp>
#include <arrayport/runtime/device.hpp>
#include <arrayport/runtime/fork.hpp>
#include <arrayport/runtime/probe.hpp>

#include <cstdint>
#include <string>

namespace arrayport::runtime {

/// Is `stream` one of the handles that name "the default stream of whichever device is current"
/// (nullptr, cudaStreamLegacy, cudaStreamPerThread)? arrayport reads such a handle, held with
/// memory of device d, as device d's default stream, and calls CUDA with d current.
inline bool is_default_stream(stream_handle stream) noexcept {
  return reinterpret_cast<std::uintptr_t>(stream) <= 2;
}

#if ARRAYPORT_HAS_CUDA

/// Whether `stream` is capturing a CUDA graph (a default-stream handle: whether another stream
/// captures in a mode that forbids the legacy stream's implicit synchronisation). Many calls are
/// refused on a capturing stream, and a refusal ends the capture: callers ask this first.
inline bool stream_capturing(stream_handle stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(detail::to_cuda(stream), &status);
  if (e == cudaErrorStreamCaptureImplicit) {
    (void)cudaGetLastError();
    return true;
  }
  ARRAYPORT_CUDA_CHECK(e);
  return status != cudaStreamCaptureStatusNone;
}

/// While alive, lets the calling thread make the calls that a capture in global mode (PyTorch's
/// default) forbids to every thread, such as waits, allocations and event queries: on streams that
/// are not capturing they touch no graph, and CUDA's refusal would end the capture.
class relaxed_capture_mode {
 public:
  relaxed_capture_mode() noexcept : m_on(is_available()) {
    if (m_on) (void)cudaThreadExchangeStreamCaptureMode(&m_mode);
  }
  ~relaxed_capture_mode() {
    if (m_on) (void)cudaThreadExchangeStreamCaptureMode(&m_mode);
  }
  relaxed_capture_mode(const relaxed_capture_mode&) = delete;
  relaxed_capture_mode& operator=(const relaxed_capture_mode&) = delete;

 private:
  bool m_on;  // without a device the call would fail, and leave its error for cudaGetLastError
  cudaStreamCaptureMode m_mode = cudaStreamCaptureModeRelaxed;
};

/// Throws before `what` is attempted while `stream` captures a CUDA graph, where CUDA would refuse
/// it and end the capture: host waits, and allocations or page-locking that are not stream-ordered.
/// `why` says what the capture cannot hold.
inline void refuse_during_capture(stream_handle stream, const char* what, const char* why) {
  if (is_available() && stream_capturing(stream))
    throw error(std::string(what) + " cannot happen while the stream is capturing a CUDA graph (" +
                why + "): do it before the capture begins or after it ends");
}

/// The device `stream` belongs to; `fallback` for the default-stream handles and for a stream
/// that is capturing a graph (CUDA refuses cudaStreamGetDevice there).
inline int stream_device(stream_handle stream, int fallback) {
  if (is_default_stream(stream) || stream_capturing(stream)) return fallback;
  int device = -1;
  ARRAYPORT_CUDA_CHECK(cudaStreamGetDevice(detail::to_cuda(stream), &device));
  return device;
}

inline stream_handle stream_create(int device, int priority, bool non_blocking) {
  require_device_index(device, "stream creation");
  device_guard guard(device);
  cudaStream_t s = nullptr;
  ARRAYPORT_CUDA_CHECK(cudaStreamCreateWithPriority(
      &s, non_blocking ? cudaStreamNonBlocking : cudaStreamDefault, priority));
  return s;
}

inline void stream_destroy(stream_handle s) noexcept {
  if (s && !forked_after_cuda_init()) (void)cudaStreamDestroy(detail::to_cuda(s));
}

inline void stream_synchronize(stream_handle s) {
  if (!is_available()) return;  // no device work can be pending
  refuse_during_capture(s,
                        "waiting on the host for a stream's work (a synchronize, or a GPU result "
                        "read on the CPU)",
                        "captured work runs only when the graph is launched");
  relaxed_capture_mode relaxed;
  ARRAYPORT_CUDA_CHECK(cudaStreamSynchronize(detail::to_cuda(s)));
}

/// True when all work on `s` has completed.
inline bool stream_query(stream_handle s) {
  if (!is_available()) return true;
  cudaError_t status = cudaStreamQuery(detail::to_cuda(s));
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  ARRAYPORT_CUDA_CHECK(status);
  return true;
}

inline event_handle event_create(bool timing, bool blocking) {
  require_device("event creation");
  cudaEvent_t e = nullptr;
  unsigned flags = (timing ? 0u : cudaEventDisableTiming) | (blocking ? cudaEventBlockingSync : 0u);
  ARRAYPORT_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
  return e;
}

inline void event_destroy(event_handle e) noexcept {
  if (e && !forked_after_cuda_init()) (void)cudaEventDestroy(detail::to_cuda_event(e));
}

inline void event_record(event_handle e, stream_handle s) {
  check_not_forked("cudaEventRecord");
  ARRAYPORT_CUDA_CHECK(cudaEventRecord(detail::to_cuda_event(e), detail::to_cuda(s)));
}

inline void event_synchronize(event_handle e) {
  check_not_forked("cudaEventSynchronize");
  ARRAYPORT_CUDA_CHECK(cudaEventSynchronize(detail::to_cuda_event(e)));
}

/// True when the work captured by the event's last record has completed.
inline bool event_query(event_handle e) {
  check_not_forked("cudaEventQuery");
  cudaError_t status = cudaEventQuery(detail::to_cuda_event(e));
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  ARRAYPORT_CUDA_CHECK(status);
  return true;
}

/// Milliseconds between two recorded timing events.
inline float event_elapsed_ms(event_handle start, event_handle end) {
  check_not_forked("cudaEventElapsedTime");
  float ms = 0.f;
  ARRAYPORT_CUDA_CHECK(
      cudaEventElapsedTime(&ms, detail::to_cuda_event(start), detail::to_cuda_event(end)));
  return ms;
}

/// Makes future work on `s` wait for `e` (no host synchronisation).
inline void stream_wait_event(stream_handle s, event_handle e) {
  check_not_forked("cudaStreamWaitEvent");
  ARRAYPORT_CUDA_CHECK(cudaStreamWaitEvent(detail::to_cuda(s), detail::to_cuda_event(e), 0));
}

#else  // no GPU: no stream can be created, none has pending work, every wait is already over

inline bool stream_capturing(stream_handle) { return false; }
struct relaxed_capture_mode {
  relaxed_capture_mode() noexcept {}  // user-provided: a scope guard is not an unused variable
  ~relaxed_capture_mode() {}
};
inline void refuse_during_capture(stream_handle, const char*, const char*) {}
inline int stream_device(stream_handle, int fallback) { return fallback; }

inline stream_handle stream_create(int device, int, bool) {
  require_device_index(device, "stream creation");
  return nullptr;
}

inline void stream_destroy(stream_handle) noexcept {}
inline void stream_synchronize(stream_handle) {}
inline bool stream_query(stream_handle) { return true; }

inline event_handle event_create(bool, bool) {
  require_device("event creation");
  return nullptr;
}

inline void event_destroy(event_handle) noexcept {}
inline void event_record(event_handle, stream_handle) {}
inline void event_synchronize(event_handle) {}
inline bool event_query(event_handle) { return true; }
inline float event_elapsed_ms(event_handle, event_handle) { return 0.f; }
inline void stream_wait_event(stream_handle, event_handle) {}

#endif  // ARRAYPORT_HAS_CUDA

/// Waits for `s`; a default-stream handle means `device`'s default stream (-1: the current
/// device's).
inline void stream_synchronize(stream_handle s, int device) {
  device_guard guard(is_default_stream(s) ? device : -1);
  stream_synchronize(s);
}

/// Whether ordering `consumer` after `producer` may go ahead while a CUDA graph is captured: false
/// when only `consumer` captures (the producer's work is outside the graph, and must be done before
/// the capture began, as CUDA graphs ask of their inputs); an error when only `producer` captures,
/// which no stream outside the graph can wait for.
inline bool may_order_during_capture(stream_handle producer, stream_handle consumer) {
  const bool from = stream_capturing(producer), to = stream_capturing(consumer);
  if (from && !to)
    throw error(
        "the producer's stream is capturing a CUDA graph, and the stream that would wait for it "
        "is not part of the capture: make the capturing stream current (e.g. `with "
        "arrayport.cuda.Stream.from_handle(torch.cuda.current_stream().cuda_stream):`)");
  return !(to && !from);
}

/// Makes work enqueued later on `consumer` wait for the work enqueued so far on `producer`, both
/// streams of `device`: an event recorded on one and waited on by the other, never a host or
/// device-wide synchronisation. Nothing to do when they are the same stream. The event is one per
/// thread and device, reused: a wait captures the event's state when it is enqueued.
inline void order_streams(stream_handle producer, stream_handle consumer, int device) {
  if (producer == consumer) return;
  if (!is_available()) return;  // always so without CUDA
  if (!may_order_during_capture(producer, consumer)) return;
  constexpr int cached_devices = 64;
  thread_local event_handle events[cached_devices] = {};  // created on their device, as
  // cudaEventRecord requires: the producer's (a default-stream handle is `device`'s)
  const int current = stream_device(producer, device >= 0 ? device : get_device());
  device_guard guard(current);
  if (current < cached_devices) {
    if (!events[current]) events[current] = event_create(false, false);
    event_record(events[current], producer);
    stream_wait_event(consumer, events[current]);
    return;
  }
  event_handle e = event_create(false, false);
  try {
    event_record(e, producer);
    stream_wait_event(consumer, e);
  } catch (...) {
    event_destroy(e);
    throw;
  }
  event_destroy(e);  // CUDA keeps it until the wait is done
}

/// The same across devices: `consumer` (a stream of `consumer_device`, or that device's default
/// stream) waits for the work queued so far on `producer` (of `producer_device`). -1 names the
/// current device. A stream may wait on another device's event; the event is recorded with its
/// own device current and the wait enqueued with the consumer's.
inline void order_streams(stream_handle producer, int producer_device, stream_handle consumer,
                          int consumer_device) {
  if (!is_available()) return;  // always so without CUDA
  if (producer != consumer && !may_order_during_capture(producer, consumer)) return;
  const int current = get_device();
  const int from = stream_device(producer, producer_device >= 0 ? producer_device : current);
  const int to = stream_device(consumer, consumer_device >= 0 ? consumer_device : current);
  if (from == to) return order_streams(producer, consumer, from);
  constexpr int cached_devices = 64;
  thread_local event_handle events[cached_devices] = {};
  event_handle e = nullptr;
  {
    device_guard guard(from);
    e = from < cached_devices && events[from] ? events[from] : event_create(false, false);
    if (from < cached_devices) events[from] = e;
    event_record(e, producer);
  }
  device_guard guard(to);
  try {
    stream_wait_event(consumer, e);
  } catch (...) {
    if (from >= cached_devices) event_destroy(e);
    throw;
  }
  if (from >= cached_devices) event_destroy(e);
}

/// order_streams for handing an array back to its own stream after work on `producer`: the same,
/// except while `producer` captures a CUDA graph that `consumer` is outside of, when nothing is
/// ordered (whoever launches the graph orders its replays).
inline void order_streams_after(stream_handle producer, int producer_device, stream_handle consumer,
                                int consumer_device) {
  if (producer == consumer || !is_available()) return;
  if (stream_capturing(producer) && !stream_capturing(consumer)) return;
  order_streams(producer, producer_device, consumer, consumer_device);
}

}  // namespace arrayport::runtime
