// result.h - error values for vdev-bench's control code.
//
// A Status carries a positive errno and the operation that failed ("attach XDP
// to vb123a"); Result<T> is a T or a Status. libbpf/libc return codes are
// converted to these once, in the wrapper that made the call.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace vdev::bench {

class Status {
 public:
  Status() = default;  // success
  static Status fail(int err, std::string what) {
    Status s;
    s.err_ = err > 0 ? err : (err < 0 ? -err : EIO);
    s.what_ = std::move(what);
    return s;
  }
  // A failure whose text says everything (a command's own error output):
  // message() does not append strerror(err).
  static Status failText(int err, std::string text) {
    Status s = fail(err, std::move(text));
    s.plain_ = true;
    return s;
  }
  // From the current errno (call right after the failing libc call).
  static Status fromErrno(std::string what) { return fail(errno, std::move(what)); }

  bool ok() const { return err_ == 0; }
  explicit operator bool() const { return ok(); }
  int err() const { return err_; }
  const std::string& what() const { return what_; }
  std::string message() const {
    if (ok()) return "ok";
    if (plain_) return what_;
    return what_ + ": " + std::strerror(err_);
  }

 private:
  int err_ = 0;
  bool plain_ = false;
  std::string what_;
};

template <class T>
class Result {
 public:
  Result(T v) : v_(std::move(v)) {}  // NOLINT: implicit by design
  Result(Status s) : v_(std::move(s)) {}  // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T* operator->() { return &value(); }
  T& operator*() { return value(); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

// Propagate a failed Status out of the current function.
#define VB_TRY(expr)                     \
  do {                                   \
    ::vdev::bench::Status vb_s_ = (expr); \
    if (!vb_s_.ok()) return vb_s_;       \
  } while (0)

}  // namespace vdev::bench
