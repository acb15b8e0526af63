// result.h - vdev-bench's errors are vdev::Result<T> / vdev::Status
// (base/result.h): a positive errno and the operation that failed ("attach
// XDP to vb123a"), or errno 0 and a text that says everything (a command's
// own error output). libbpf/libc return codes are converted once, in the
// wrapper that made the call.
#pragma once

#include "base/result.h"

namespace vdev::bench {
// vdev's own, also for code that names them through `using namespace
// vdev::bench` (main.cpp).
using vdev::errnoError;
using vdev::Error;
using vdev::makeError;
using vdev::Result;
using vdev::Status;
}  // namespace vdev::bench

// Propagate a failed Status out of the current function (which returns a
// Status or a Result<T>).
#define VB_TRY(expr)                         \
  do {                                       \
    ::vdev::Status vb_s_ = (expr);           \
    if (!vb_s_.ok()) return vb_s_.error();   \
  } while (0)
