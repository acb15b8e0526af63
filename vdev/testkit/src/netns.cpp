#include "testkit/netns.h"

#include <fcntl.h>
#include <net/if.h>
#include <unistd.h>

#include <utility>

#include "testkit/process.h"

namespace vdev::testkit {

namespace {
// iproute2 runs quickly; a minute means it hangs.
constexpr auto kIpTimeout = 60s;

Result<std::string> ip(std::vector<std::string> args, std::string stdinText = "") {
  args.insert(args.begin(), "ip");
  return runChecked({.argv = std::move(args), .stdin_text = std::move(stdinText), .timeout = kIpTimeout});
}
}  // namespace

std::string netnsLabel(const Netns* ns) { return ns ? "netns " + ns->name() : "root namespace"; }

Result<Netns> Netns::create(const std::string& name) {
  const std::string path = "/run/netns/" + name;
  // Left by an earlier process with the same pid, killed before it could
  // clean up: `ip netns add` would fail.
  if (::access(path.c_str(), F_OK) == 0) (void)ip({"netns", "del", name});
  if (auto r = ip({"netns", "add", name}); !r) return r.error();
  FileDesc fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const Error e = errnoError("open " + path);
    (void)ip({"netns", "del", name});
    return e;
  }
  Netns ns(name, std::move(fd));
  if (auto r = ip({"-n", name, "link", "set", "dev", "lo", "up"}); !r) return r.error();  // ~Netns deletes it
  if (hasIpv6()) {
    // Before any device exists, so "default" applies to every one made here.
    for (const char* k : {"net/ipv6/conf/all/disable_ipv6", "net/ipv6/conf/default/disable_ipv6"})
      if (Status s = writeSysctl(k, "1", &ns); !s) return s.error();
  }
  return ns;
}

Netns::Netns(Netns&& o) noexcept : name_(std::exchange(o.name_, std::string())), fd_(std::move(o.fd_)) {}

Netns::~Netns() { (void)remove(); }

Status Netns::remove() {
  if (name_.empty()) return {};
  // The fd would keep the namespace, and the devices in it, alive.
  fd_.reset();
  const std::string name = std::exchange(name_, std::string());
  if (auto r = ip({"netns", "del", name}); !r) return r.error();
  return {};
}

Status writeSysctl(const std::string& key, std::string_view value, const Netns* ns) {
  // /proc/sys/net resolves in the opening thread's network namespace.
  return inNetns(ns, [&]() -> Status {
    const std::string path = "/proc/sys/" + key;
    FileDesc fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid()) return errnoError("open " + path + " in " + netnsLabel(ns));
    if (::write(fd.get(), value.data(), value.size()) != ssize_t(value.size()))
      return errnoError("write " + path + " in " + netnsLabel(ns));
    return {};
  });
}

Result<std::string> readSysctl(const std::string& key, const Netns* ns) {
  return inNetns(ns, [&]() -> Result<std::string> {
    const std::string path = "/proc/sys/" + key;
    FileDesc fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errnoError("open " + path + " in " + netnsLabel(ns));
    char buf[256];
    const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
    if (n < 0) return errnoError("read " + path + " in " + netnsLabel(ns));
    std::string v(buf, size_t(n));
    while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
    return v;
  });
}

bool hasIpv6() { return ::access("/proc/sys/net/ipv6", F_OK) == 0; }

Status disableIpv6(const std::string& ifname, const Netns* ns) {
  if (!hasIpv6()) return {};
  return writeSysctl("net/ipv6/conf/" + ifname + "/disable_ipv6", "1", ns);
}

Status writeSysfsNet(const std::string& ifname, const std::string& attr, std::string_view value,
                     const Netns* ns) {
  const std::string path = "/sys/class/net/" + ifname + "/" + attr;
  const std::string text = std::string(value) + "\n";
  if (!ns) {
    FileDesc fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid()) return errnoError("open " + path);
    if (::write(fd.get(), text.data(), text.size()) != ssize_t(text.size())) return errnoError("write " + path);
    return {};
  }
  // tee writes what it reads to the file: no shell, nothing to quote.
  if (auto r = ip({"netns", "exec", ns->name(), "tee", path}, text); !r) return r.error();
  return {};
}

Result<int> ifindexOf(const std::string& ifname, const Netns* ns) {
  return inNetns(ns, [&]() -> Result<int> {
    const unsigned idx = ::if_nametoindex(ifname.c_str());
    if (idx == 0) return errnoError("if_nametoindex " + ifname + " in " + netnsLabel(ns));
    return int(idx);
  });
}

bool linkExists(const std::string& ifname, const Netns* ns) { return ifindexOf(ifname, ns).ok(); }

}  // namespace vdev::testkit
