// Running code inside another network namespace.
//
// setns(CLONE_NEWNET) moves only the calling thread, and a thread that is
// moved cannot always be moved back (a namespace it left may be gone). So
// the work runs on a throw-away thread that enters the namespace and ends
// with it: the caller and every other thread stay where they are. What the
// work creates there (a netlink socket, an AF_PACKET socket, a device)
// stays in that namespace after the thread has gone.
//
// Needs CAP_SYS_ADMIN. Thread safe; blocks until fn has returned.
#pragma once

#include <sched.h>

#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include "base/result.h"

namespace vdev {

// Runs fn() on a new thread inside the namespace `nsfd` refers to (an fd of
// /run/netns/NAME or /proc/PID/ns/net) and returns what it returned. fn
// returns a Status or a Result<T>; entering the namespace or starting the
// thread failing is an Error naming `nsDesc` ("netns ctr1").
template <class F>
auto runInNetns(int nsfd, const std::string& nsDesc, F&& fn) -> std::invoke_result_t<F&> {
  using R = std::invoke_result_t<F&>;
  std::optional<R> out;
  try {
    std::thread t([&] {
      if (::setns(nsfd, CLONE_NEWNET) != 0) {
        out.emplace(errnoError("enter " + nsDesc));
        return;
      }
      out.emplace(fn());
    });
    t.join();
  } catch (const std::system_error& e) {
    return R(Error{e.code().value() ? e.code().value() : EAGAIN, "start a thread to enter " + nsDesc});
  }
  return std::move(*out);
}

}  // namespace vdev
