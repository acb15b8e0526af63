// Network namespaces for tests and benchmarks, and the per-namespace
// settings they need (sysctls, sysfs, ifindexes).
//
// A namespace is one `ip netns add` away, so that `ip -n NAME`, `ip netns
// exec NAME` and people debugging a test see it. Code runs inside one through
// base/netns.h's runInNetns (a throw-away thread; the caller never moves).
// Every function taking `const Netns* ns` works in the calling thread's own
// namespace when ns is null.
//
// The kit's rule: IPv6 is off in every namespace it makes (all and default,
// so that devices created in or moved into it inherit that) and on every
// device it makes, so the kernel sends nothing by itself (no router
// solicitation, no MLD) and frame counts are exact.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "base/fd.h"
#include "base/netns.h"
#include "base/result.h"

namespace vdev::testkit {

class Netns {
 public:
  // `ip netns add NAME` (a namespace of that name left by a killed process
  // is deleted first), lo up, IPv6 off.
  static Result<Netns> create(const std::string& name);
  Netns(Netns&& o) noexcept;
  Netns& operator=(Netns&&) = delete;
  Netns(const Netns&) = delete;
  ~Netns();  // remove(), errors ignored

  const std::string& name() const { return name_; }
  // An fd of /run/netns/NAME, for setns(); -1 once removed.
  int fd() const { return fd_.get(); }
  // Deletes the namespace now (`ip netns del`), and with it every device
  // inside and the far end of their veths. Done once; later calls are ok.
  Status remove();

 private:
  Netns(std::string name, FileDesc fd) : name_(std::move(name)), fd_(std::move(fd)) {}
  std::string name_;
  FileDesc fd_;
};

// fn() run inside ns (on a thread that enters it), or right here when ns is
// null. fn returns a Status or a Result<T>.
template <class F>
auto inNetns(const Netns* ns, F&& fn) -> std::invoke_result_t<F&> {
  if (!ns) return fn();
  return runInNetns(ns->fd(), "netns " + ns->name(), fn);
}

// "root namespace" or "netns NAME", for messages.
std::string netnsLabel(const Netns* ns);

// A sysctl, by its path under /proc/sys ("net/ipv6/conf/all/disable_ipv6":
// slashes, since an interface name may hold a dot). net.* sysctls are per
// namespace. readSysctl drops the trailing newline.
Status writeSysctl(const std::string& key, std::string_view value, const Netns* ns = nullptr);
Result<std::string> readSysctl(const std::string& key, const Netns* ns = nullptr);

// Whether the kernel has IPv6 (/proc/sys/net/ipv6).
bool hasIpv6();
// net/ipv6/conf/IFNAME/disable_ipv6 = 1; nothing without IPv6.
Status disableIpv6(const std::string& ifname, const Netns* ns = nullptr);

// Writes /sys/class/net/IFNAME/ATTR of a device inside ns. sysfs shows the
// namespace it was mounted in, so this goes through `ip netns exec`, which
// mounts the namespace's own.
Status writeSysfsNet(const std::string& ifname, const std::string& attr, std::string_view value,
                     const Netns* ns = nullptr);

// The ifindex of a device; ENODEV (from if_nametoindex) when there is none.
Result<int> ifindexOf(const std::string& ifname, const Netns* ns = nullptr);
bool linkExists(const std::string& ifname, const Netns* ns = nullptr);

}  // namespace vdev::testkit
