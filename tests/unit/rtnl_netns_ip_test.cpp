// rtnl/netns_ip.h: addresses and routes inside a network namespace, on
// namespaces this test makes for itself -- a child process unshares a
// network namespace (and, when not root, a user namespace that owns it), so
// the host's own addresses and routes are never touched. Only the loopback
// device is used: every namespace has one.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "base/fd.h"
#include "rtnl/netns_ip.h"

namespace vdev::rtnl {
namespace {

constexpr int kSkip = 77;

// Brings "lo" up in the calling thread's namespace (routes need a device
// that is up). Returns an error text or "".
std::string loopbackUp() {
  FileDesc s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return std::string("socket: ") + std::strerror(errno);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(s.get(), SIOCGIFFLAGS, &ifr) < 0) return std::string("SIOCGIFFLAGS lo: ") + std::strerror(errno);
  ifr.ifr_flags |= IFF_UP;
  if (::ioctl(s.get(), SIOCSIFFLAGS, &ifr) < 0) return std::string("SIOCSIFFLAGS lo: ") + std::strerror(errno);
  return "";
}

// The checks, run in the child. Every failure appends a line to `out`.
void checks(std::string& out) {
  const auto expect = [&](bool ok, const std::string& what) {
    if (!ok) out += what + "\n";
  };
  const auto err = [](const auto& r) { return r ? 0 : r.error().err; };

  // A second namespace, made by a thread that leaves the main one alone;
  // its fd keeps it alive after the thread has gone.
  FileDesc other;
  std::string made;
  std::thread([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      made = std::string("unshare a second netns: ") + std::strerror(errno);
      return;
    }
    made = loopbackUp();
    other = FileDesc(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  }).join();
  if (!made.empty() || !other.valid()) {
    out += made.empty() ? "open the second netns\n" : made + "\n";
    return;
  }
  const std::string path = "/proc/self/fd/" + std::to_string(other.get());

  auto here = NetnsIp::open(NetnsRef::current());
  auto there = NetnsIp::open(NetnsRef::byPath(path));
  if (!here || !there) {
    out += "open: " + (here ? there.error().message() : here.error().message()) + "\n";
    return;
  }
  expect(here->describe().empty(), "describe() of the current namespace: " + here->describe());
  expect(there->describe() == "netns " + path, "describe(): " + there->describe());

  // Links.
  auto lo = there->link("lo");
  expect(lo && lo->ifindex == 1 && lo->up, "link lo: up, ifindex 1");
  expect(err(there->link("vtnosuch0")) == ENODEV, "a missing link is ENODEV");
  expect(err(there->link("bad/name")) == EINVAL, "a bad name is EINVAL");

  // Addresses: there, and only there.
  Status st = there->addAddress(1, "198.18.7.1/24");
  expect(st.ok(), "add 198.18.7.1/24: " + (st ? std::string() : st.error().message()));
  st = there->addAddress(1, "198.18.7.1/24");
  expect(!st && st.error().err == EEXIST, "the same address again is EEXIST");
  expect(!st && st.error().what.find("198.18.7.1/24") != std::string::npos &&
             st.error().what.find(path) != std::string::npos,
         "the error names the address and the namespace: " + (st ? std::string() : st.error().what));
  expect(err(there->addAddress(1, "not-an-address")) == EINVAL, "text that is no address is EINVAL");
  auto has = there->hasAddress(1, "198.18.7.1/24");
  expect(has && *has, "hasAddress 198.18.7.1/24");
  has = there->hasAddress(1, "198.18.7.1/25");
  expect(has && !*has, "another prefix length is another address");
  has = there->hasAddress(1, "198.18.7.2/24");
  expect(has && !*has, "another address");
  has = here->hasAddress(1, "198.18.7.1/24");
  expect(has && !*has, "the address is not in the caller's namespace");

  // Routes: on the link, via a gateway, in another table.
  Route onLink;
  onLink.dst = "198.19.0.0/16";
  onLink.ifindex = 1;
  st = there->addRoute(onLink);
  expect(st.ok(), "add route 198.19.0.0/16 dev lo: " + (st ? std::string() : st.error().message()));
  auto hr = there->hasRoute(onLink);
  expect(hr && *hr, "hasRoute 198.19.0.0/16 dev lo");
  Route anyDev = onLink;
  anyDev.ifindex = 0;
  hr = there->hasRoute(anyDev);
  expect(hr && *hr, "hasRoute with ifindex 0 matches any device");
  Route viaGw = onLink;
  viaGw.gateway = "198.18.7.254";
  hr = there->hasRoute(viaGw);
  expect(hr && !*hr, "a route without that gateway does not match one with it");
  hr = here->hasRoute(anyDev);
  expect(hr && !*hr, "the route is not in the caller's namespace");

  Route def;
  def.dst = "0.0.0.0/0";
  def.ifindex = 1;
  def.gateway = "198.18.7.254";
  def.priority = 100;
  st = there->addRoute(def);
  expect(st.ok(), "add default via 198.18.7.254: " + (st ? std::string() : st.error().message()));
  hr = there->hasRoute(def);
  expect(hr && *hr, "hasRoute default via 198.18.7.254");
  Route otherGw = def;
  otherGw.gateway = "198.18.7.253";
  hr = there->hasRoute(otherGw);
  expect(hr && !*hr, "another gateway does not match");
  expect(err(there->addRoute(def)) == EEXIST, "the same route again is EEXIST");

  Route offLink;
  offLink.dst = "198.19.200.0/24";
  offLink.ifindex = 1;
  offLink.gateway = "198.18.9.1";  // on no link of that namespace
  expect(err(there->addRoute(offLink)) == ENETUNREACH, "a gateway on no link is ENETUNREACH");
  Route mixed = offLink;
  mixed.gateway = "2001:db8::1";
  expect(err(there->addRoute(mixed)) == EINVAL, "a gateway of the other family is EINVAL");

  Route table = onLink;
  table.dst = "198.19.128.0/17";
  table.table = 100;
  st = there->addRoute(table);
  expect(st.ok(), "add route in table 100: " + (st ? std::string() : st.error().message()));
  hr = there->hasRoute(table);
  expect(hr && *hr, "hasRoute in table 100");
  Route mainTable = table;
  mainTable.table = 254;
  hr = there->hasRoute(mainTable);
  expect(hr && !*hr, "the table is part of the route");

  // IPv6, where the kernel has it.
  if (::access("/proc/net/if_inet6", F_OK) == 0) {
    st = there->addAddress(1, "2001:db8::1/64");
    expect(st.ok(), "add 2001:db8::1/64: " + (st ? std::string() : st.error().message()));
    has = there->hasAddress(1, "2001:db8::1/64");
    expect(has && *has, "hasAddress 2001:db8::1/64");
  }
}

TEST(NetnsIp, AddressesAndRoutesInAnotherNamespace) {
  int pipefd[2];
  ASSERT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipefd[0]);
    std::string out;
    int code = 0;
    const int flags = ::geteuid() == 0 ? CLONE_NEWNET : CLONE_NEWUSER | CLONE_NEWNET;
    if (::unshare(flags) != 0) {
      out = std::string("cannot make a network namespace here (unshare: ") + std::strerror(errno) + ")";
      code = kSkip;
    } else if (std::string up = loopbackUp(); !up.empty()) {
      out = up;
      code = 1;
    } else {
      checks(out);
      code = out.empty() ? 0 : 1;
    }
    if (!out.empty() && ::write(pipefd[1], out.data(), out.size()) < 0) code = 1;
    ::_exit(code);
  }
  ::close(pipefd[1]);
  std::string out;
  char buf[1024];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0) out.append(buf, size_t(n));
  ::close(pipefd[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == kSkip) GTEST_SKIP() << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_TRUE(out.empty()) << out;
}

}  // namespace
}  // namespace vdev::rtnl
