// Result<T>: a value or an error carrying errno and the failed operation.
//
// The control plane (setup, attach, teardown) reports failures with this
// type; the data plane never constructs one. libbpf/libxdp/syscall codes are
// converted to an Error exactly once, in the wrapper that called them.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace vdev {

struct Error {
  int err = 0;          // positive errno
  std::string what;     // the operation that failed, with its subject

  std::string message() const {
    if (err == 0) return what;
    return what + ": " + std::strerror(err);
  }
};

// Builds an Error from a negative-or-positive errno value.
inline Error makeError(int err, std::string what) {
  return Error{err < 0 ? -err : err, std::move(what)};
}
// Builds an Error from the current errno.
inline Error errnoError(std::string what) { return Error{errno, std::move(what)}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : e_(std::move(e)), ok_(false) {}
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return e_; }

 private:
  Error e_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace vdev
