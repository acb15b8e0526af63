// real_topology.cpp - see real_topology.h.
#include "real_topology.h"

#include <sys/wait.h>

#include "topology.h"

namespace vdev::bench {

namespace {
// 198.18.0.0/15 (RFC 2544's range), one subnet; locally administered MACs
// with "vb" in the second and third byte, 01 in the fourth (the XDP-frame
// topology uses 00).
constexpr uint32_t kIpA = 0xc6120001;      // 198.18.0.1
constexpr uint32_t kIpB = 0xc6120101;      // 198.18.1.1
constexpr uint32_t kIpGuest = 0xc6120201;  // 198.18.2.1
constexpr int kPrefixLen = 15;
constexpr Mac kMacA{0x02, 0x76, 0x62, 0x01, 0x00, 0x01};
constexpr Mac kMacB{0x02, 0x76, 0x62, 0x01, 0x00, 0x02};
constexpr Mac kMacGuest{0x02, 0x76, 0x62, 0x01, 0x00, 0x03};
constexpr Mac kMacTap{0x02, 0x76, 0x62, 0x01, 0x00, 0x04};  // the host's end of the VM's tap
constexpr uint32_t kGuestMtu = 1500;

Result<Netns> makeNetns(const std::string& name) {
  if (stopRequested()) return Status::fail(EINTR, "setup");
  auto ns = Netns::create(name);
  if (!ns) return ns.status();
  // Before any device exists, so "default" applies to each one created here.
  VB_TRY(sysctlIn(ns.value(), "net/ipv6/conf/all/disable_ipv6", "1"));
  VB_TRY(sysctlIn(ns.value(), "net/ipv6/conf/default/disable_ipv6", "1"));
  VB_TRY(runCommand({"ip", "-n", name, "link", "set", "lo", "up"}));
  return ns;
}
}  // namespace

Result<std::unique_ptr<RealTopology>> RealTopology::create(const std::string& prefix, uint32_t mtu, bool withGuest,
                                                          const std::string& vdevVmPath) {
  std::unique_ptr<RealTopology> t(new RealTopology());
  t->prefix_ = prefix;
  t->mtu_ = mtu;
  Status s = t->build(withGuest, vdevVmPath);
  if (!s.ok()) return s;  // ~RealTopology removes what was built so far
  return t;
}

Status RealTopology::addStation(const std::string& name, const std::string& nsSuffix, const std::string& port,
                                Mac mac, uint32_t ip) {
  auto st = std::make_unique<Station>();
  st->name = name;
  st->port = port;
  st->mac = mac;
  st->ip = ip;
  auto ns = makeNetns(prefix_ + nsSuffix);
  if (!ns) return ns.status();
  st->ns.emplace(std::move(ns.value()));
  stations_.push_back(std::move(st));
  return {};
}

Status RealTopology::build(bool withGuest, const std::string& vdevVmPath) {
  auto dut = makeNetns(prefix_ + "-dut");
  if (!dut) return dut.status();
  dut_.emplace(std::move(dut.value()));
  const std::string& d = dut_->name();
  const std::string m = std::to_string(mtu_);

  // The containers: a veth each, made as a container runtime makes it.
  VB_TRY(addStation("A", "-a", prefix_ + "a", kMacA, kIpA));
  VB_TRY(addStation("B", "-b", prefix_ + "b", kMacB, kIpB));
  for (const auto& st : stations_) {
    const std::string& ns = st->ns->name();
    VB_TRY(runCommand({"ip", "-n", d, "link", "add", st->port, "mtu", m, "type", "veth", "peer", "name", "eth0",
                       "mtu", m, "netns", ns}));
    VB_TRY(runCommand({"ip", "-n", ns, "link", "set", "eth0", "address", formatMac(st->mac), "up"}));
    VB_TRY(runCommand({"ip", "-n", d, "link", "set", st->port, "up"}));
  }

  // The VM: vdev-vm creates the host's tap in the DUT namespace (it runs
  // there) and the guest's tap, eth0, inside the guest's namespace.
  if (withGuest) {
    VB_TRY(addStation("guest", "-g", prefix_ + "t", kMacGuest, kIpGuest));
    Station& g = *stations_.back();
    g.portIsTap = true;
    ChildOptions co;
    co.name = "vdev-vm";
    co.readyPrefix = "vdev-vm: ready";
    co.keepOutput = true;  // its counts, printed as JSON when it stops
    auto vm = Child::start({"ip", "netns", "exec", d, vdevVmPath, "--tap", g.port, "--create", "--mac",
                            formatMac(kMacTap), "guest", "--netns", g.ns->name()},
                           co);
    if (!vm) return vm.status();
    vm_ = std::move(vm.value());
    VB_TRY(vm_->waitReady(10));
    const std::string& ns = g.ns->name();
    VB_TRY(runCommand({"ip", "-n", ns, "link", "set", "eth0", "address", formatMac(g.mac), "mtu",
                       std::to_string(kGuestMtu), "up"}));
  }

  // Addresses and permanent neighbour entries: no ARP ever.
  for (const auto& st : stations_) {
    const std::string& ns = st->ns->name();
    VB_TRY(runCommand({"ip", "-n", ns, "addr", "add", formatIp(st->ip) + "/" + std::to_string(kPrefixLen), "dev",
                       "eth0"}));
    for (const auto& peer : stations_) {
      if (peer == st) continue;
      VB_TRY(runCommand({"ip", "-n", ns, "neigh", "replace", formatIp(peer->ip), "lladdr", formatMac(peer->mac),
                         "dev", "eth0", "nud", "permanent"}));
    }
  }

  std::vector<NetDev> devs;
  for (const auto& st : stations_) {
    devs.push_back({&*st->ns, "eth0"});
    devs.push_back({&*dut_, st->port});
  }
  return waitLinksRunning(devs);
}

std::vector<std::string> RealTopology::ports() const {
  std::vector<std::string> v;
  for (const auto& st : stations_) v.push_back(st->port);
  return v;
}

std::string RealTopology::stopGuest() {
  if (!vm_) return guestCounts_;
  auto st = vm_->stop(5);
  if (!st || !WIFEXITED(st.value()) || WEXITSTATUS(st.value()) != 0)
    logWarn("vdev-vm: %s%s", st ? waitStatusText(st.value()).c_str() : st.status().message().c_str(),
            vm_->tail().c_str());
  // Its last line of output: {"to_guest":{...},"from_guest":{...}}.
  const std::string out = vm_->output();
  size_t at = out.rfind("\n{");
  at = at == std::string::npos ? (out.rfind('{', 0) == 0 ? 0 : std::string::npos) : at + 1;
  if (at != std::string::npos) {
    size_t nl = out.find('\n', at);
    guestCounts_ = out.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
  }
  vm_.reset();
  return guestCounts_;
}

RealTopology::~RealTopology() {
  stopGuest();
  while (!stations_.empty()) stations_.pop_back();  // their namespaces, with the veths and the guest's tap
  dut_.reset();
}

}  // namespace vdev::bench
