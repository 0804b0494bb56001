// Exceptions: every failure a user can cause is one of these, never exit() or abort().
//
// The hierarchy maps one-to-one onto the Python exceptions the bridge raises:
//   type_error -> TypeError, value_error -> ValueError, buffer_error -> BufferError,
//   cuda_error -> arrayport.CudaError, out_of_memory -> arrayport.OutOfMemoryError (a MemoryError),
//   no_device_error -> arrayport.NoDeviceError.
#pragma once

#include <stdexcept>
#include <string>

namespace arrayport {

/// Base of every arrayport exception.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Wrong dtype, rank or shape class (maps to TypeError).
class type_error : public error {
 public:
  using error::error;
};

/// A value out of range or inconsistent with the others (maps to ValueError).
class value_error : public error {
 public:
  using error::error;
};

/// A memory export or import that the object cannot honour (maps to BufferError).
class buffer_error : public error {
 public:
  using error::error;
};

/// No usable CUDA device: CPU-only build, no driver, or no device (maps to
/// arrayport.NoDeviceError).
class no_device_error : public error {
 public:
  using error::error;
};

/// A CUDA runtime call failed. Carries the status code and name, the API called and the call site.
class cuda_error : public error {
 public:
  cuda_error(int status, std::string status_name, std::string description, std::string api,
             std::string file, int line)
      : error(format(status, status_name, description, api, file, line)),
        m_status(status),
        m_status_name(std::move(status_name)),
        m_api(std::move(api)),
        m_file(std::move(file)),
        m_line(line) {}

  /// The cudaError_t value.
  int status() const noexcept { return m_status; }
  /// e.g. "cudaErrorMemoryAllocation".
  const std::string& status_name() const noexcept { return m_status_name; }
  /// The runtime call that failed, as written at the call site.
  const std::string& api() const noexcept { return m_api; }
  const std::string& file() const noexcept { return m_file; }
  int line() const noexcept { return m_line; }

  /// A sticky error corrupts the CUDA context: every later CUDA call in this process fails.
  bool is_sticky() const noexcept { return is_sticky_status(m_status); }

  static bool is_sticky_status(int status) noexcept {
    // The kernel-fault statuses that leave the context unusable (CUDA runtime API docs):
    // IllegalAddress 700, LaunchTimeout 702, Assert 710, HardwareStackError 714,
    // IllegalInstruction 715, MisalignedAddress 716, InvalidAddressSpace 717, InvalidPc 718,
    // LaunchFailure 719. Neighbours such as LaunchOutOfResources 701 are not sticky.
    switch (status) {
      case 700:
      case 702:
      case 710:
      case 714:
      case 715:
      case 716:
      case 717:
      case 718:
      case 719: return true;
      default: return false;
    }
  }

 private:
  static std::string format(int status, const std::string& name, const std::string& description,
                            const std::string& api, const std::string& file, int line) {
    std::string msg = api + " failed: " + name + " (" + std::to_string(status) +
                      "): " + description + " [at " + file + ":" + std::to_string(line) + "]";
    if (is_sticky_status(status))
      msg +=
          ". This is a sticky error: the CUDA context of this process is corrupted and every "
          "later CUDA call will fail; restart the process";
    return msg;
  }

  int m_status;
  std::string m_status_name;
  std::string m_api;
  std::string m_file;
  int m_line;
};

/// A device, managed or pinned allocation failed for lack of memory (maps to
/// arrayport.OutOfMemoryError, which is also a MemoryError).
class out_of_memory : public cuda_error {
 public:
  using cuda_error::cuda_error;
};

}  // namespace arrayport
