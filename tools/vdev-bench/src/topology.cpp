// topology.cpp - see topology.h.
#include "topology.h"

#include <dirent.h>
#include <net/if.h>

#include "ethtool_stats.h"

namespace vdev::bench {

const char* scenarioName(Scenario s) {
  switch (s) {
    case Scenario::kVethVeth: return "veth-veth";
    case Scenario::kVethTap: return "veth-tap";
    case Scenario::kTapVeth: return "tap-veth";
    case Scenario::kSwitch: return "switch";
  }
  return "?";
}

bool parseScenario(const std::string& name, Scenario* out) {
  for (Scenario s : {Scenario::kVethVeth, Scenario::kVethTap, Scenario::kTapVeth, Scenario::kSwitch}) {
    if (name == scenarioName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

std::string formatIp(uint32_t ip) {
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." + std::to_string((ip >> 8) & 255) +
         "." + std::to_string(ip & 255);
}

namespace {
// Addresses: every endpoint in 198.18.0.0/15 (RFC 2544's range), one subnet.
constexpr uint32_t kGenIp = 0xc6120001;   // 198.18.0.1: container 1 / the generator
constexpr uint32_t kSinkIp = 0xc6120101;  // 198.18.1.1: container 2 / the sink
constexpr uint32_t kVmIp = 0xc6120201;    // 198.18.2.1: the VM in the switch scenario
constexpr int kPrefixLen = 15;
}  // namespace

Result<std::unique_ptr<Topology>> Topology::create(Scenario sc, SinkMode sinkMode, const std::string& prefix,
                                                  int bridgeNfCall) {
  std::unique_ptr<Topology> t(new Topology());
  t->scenario_ = sc;
  t->sinkMode_ = sinkMode;
  t->bridgeNfCall_ = bridgeNfCall;
  t->prefix_ = prefix;
  t->genIf_ = prefix + "g";
  t->portA_ = prefix + "a";
  t->portB_ = prefix + "b";
  t->sinkIf_ = prefix + "s";
  if (sc == Scenario::kSwitch) t->portC_ = prefix + "c";
  t->bridge_ = prefix + "br";
  // Locally administered unicast (02:...), "vb" in the second and third byte.
  t->genMac_ = {0x02, 0x76, 0x62, 0x00, 0x00, 0x01};
  t->sinkMac_ = {0x02, 0x76, 0x62, 0x00, 0x00, 0x02};
  t->vmMac_ = {0x02, 0x76, 0x62, 0x00, 0x00, 0x03};
  Status s = t->build();
  if (!s.ok()) return s;  // ~Topology removes what was built so far
  return t;
}

namespace {
Status disableIpv6(const Netns& ns) {
  // Before any device exists, so "default" applies to each one created here.
  VB_TRY(sysctlIn(ns, "net/ipv6/conf/all/disable_ipv6", "1"));
  return sysctlIn(ns, "net/ipv6/conf/default/disable_ipv6", "1");
}
}  // namespace

Status Topology::build() {
  auto mk = [&](std::optional<Netns>& slot, const std::string& name) -> Status {
    if (stopRequested()) return Status::fail(EINTR, "setup");
    auto ns = Netns::create(name);
    if (!ns) return ns.status();
    slot.emplace(std::move(ns.value()));
    return disableIpv6(*slot);
  };
  if (scenario_ != Scenario::kTapVeth) VB_TRY(mk(gen_, prefix_ + "-gen"));
  VB_TRY(mk(dut_, prefix_ + "-dut"));
  const std::string& dut = dut_->name();
  // br_netfilter (built in, or loaded by Docker & co.) sends every bridged
  // IPv4/IPv6/ARP frame through the netfilter hooks while these are 1 (its
  // default): a large part of the bridge's cost.
  if (bridgeNfCall_ >= 0) {
    for (const char* k : {"iptables", "ip6tables", "arptables"}) {
      Status s = sysctlIn(*dut_, std::string("net/bridge/bridge-nf-call-") + k, bridgeNfCall_ ? "1" : "0");
      if (!s.ok()) return Status::failText(s.err(), s.message() + " (--bridge-nf-call needs br_netfilter)");
    }
  }
  if (auto v = sysctlReadIn(*dut_, "net/bridge/bridge-nf-call-iptables")) bridgeNf_ = v.value();

  // Endpoints are referred to by pointer (LatencyPair): no reallocation.
  endpoints_.reserve(3);
  // Port A: the generator's veth peer, or (tap-veth) the VM's tap, which
  // transmits (TapWriter) with the generator's addresses.
  if (scenario_ == Scenario::kTapVeth) {
    auto vm = TapSink::create(*dut_, portA_, genMac_);
    if (!vm) return vm.status();
    vmOwned_ = std::move(vm.value());
    vm_ = vmOwned_.get();
    VB_TRY(runCommand({"ip", "-n", dut, "link", "set", portA_, "up"}));
    endpoints_.push_back({"vm", nullptr, portA_, genMac_, kGenIp, vm_});
  } else {
    VB_TRY(runCommand({"ip", "-n", dut, "link", "add", portA_, "type", "veth", "peer", "name", genIf_,
                       "netns", gen_->name()}));
    VB_TRY(runCommand({"ip", "-n", gen_->name(), "link", "set", genIf_, "address", formatMac(genMac_), "up"}));
    VB_TRY(runCommand({"ip", "-n", dut, "link", "set", portA_, "up"}));
    endpoints_.push_back({"container1", &*gen_, genIf_, genMac_, kGenIp, nullptr});
  }

  // Port B: the sink's veth peer, or (veth-tap) the VM's tap.
  if (scenario_ == Scenario::kVethTap) {
    auto sink = TapSink::create(*dut_, portB_, sinkMac_);
    if (!sink) return sink.status();
    vm_ = sink.value().get();
    sink_ = std::move(sink.value());
    VB_TRY(runCommand({"ip", "-n", dut, "link", "set", portB_, "up"}));
    endpoints_.push_back({"vm", nullptr, portB_, sinkMac_, kSinkIp, vm_});
  } else {
    VB_TRY(mk(sinkNs_, prefix_ + "-sink"));
    VB_TRY(runCommand({"ip", "-n", dut, "link", "add", portB_, "type", "veth", "peer", "name", sinkIf_,
                       "netns", sinkNs_->name()}));
    VB_TRY(runCommand({"ip", "-n", sinkNs_->name(), "link", "set", sinkIf_, "address", formatMac(sinkMac_), "up"}));
    VB_TRY(runCommand({"ip", "-n", dut, "link", "set", portB_, "up"}));
    auto sink = VethSink::create(*sinkNs_, sinkIf_, sinkMode_);
    if (!sink) return sink.status();
    sink_ = std::move(sink.value());
    endpoints_.push_back({"container2", &*sinkNs_, sinkIf_, sinkMac_, kSinkIp, nullptr});
  }

  // Port C (switch): the VM's tap.
  if (scenario_ == Scenario::kSwitch) {
    auto vm = TapSink::create(*dut_, portC_, vmMac_);
    if (!vm) return vm.status();
    vmOwned_ = std::move(vm.value());
    vm_ = vmOwned_.get();
    VB_TRY(runCommand({"ip", "-n", dut, "link", "set", portC_, "up"}));
    endpoints_.push_back({"vm", nullptr, portC_, vmMac_, kVmIp, vm_});
  }

  // Round trips: container -> container, container -> VM.
  const Endpoint* c1 = nullptr;
  const Endpoint* c2 = nullptr;
  const Endpoint* vm = nullptr;
  for (const Endpoint& e : endpoints_) {
    if (e.name == "container1") c1 = &e;
    else if (e.name == "container2") c2 = &e;
    else vm = &e;
  }
  const Endpoint* container = c1 ? c1 : c2;
  if (c1 && c2) pairs_.push_back({"container-container", c1, c2});
  if (vm && container) pairs_.push_back({"container-vm", container, vm});

  VB_TRY(addressContainers());
  return waitRunning();
}

// Each container's veth gets its address and a permanent neighbour entry for
// every other endpoint: the probes need no ARP, and no ARP frame ever mixes
// with the measured traffic.
Status Topology::addressContainers() {
  for (const Endpoint& e : endpoints_) {
    if (!e.ns) continue;
    const std::string& ns = e.ns->name();
    VB_TRY(runCommand({"ip", "-n", ns, "addr", "add", formatIp(e.ip) + "/" + std::to_string(kPrefixLen), "dev",
                       e.ifname}));
    for (const Endpoint& peer : endpoints_) {
      if (&peer == &e) continue;
      VB_TRY(runCommand({"ip", "-n", ns, "neigh", "replace", formatIp(peer.ip), "lladdr", formatMac(peer.mac),
                         "dev", e.ifname, "nud", "permanent"}));
    }
  }
  return {};
}

std::vector<std::string> Topology::ports() const {
  std::vector<std::string> v{portA_, portB_};
  if (!portC_.empty()) v.push_back(portC_);
  return v;
}

// A device that was just set up is IFF_RUNNING (operstate up) only once the
// kernel's linkwatch work has run, up to a second later. vdevd attaches a
// port's socket only while it is IFF_UP and IFF_RUNNING (and checks that
// periodically), so without this wait the first vdevd run of an invocation
// dropped everything for ~1 s after "vdevd: ready" (no socket on port A).
Status Topology::waitRunning() {
  std::vector<NetDev> devs;
  if (gen_) devs.push_back({&*gen_, genIf_});
  for (const auto& p : ports()) devs.push_back({&*dut_, p});
  if (sinkNs_) devs.push_back({&*sinkNs_, sinkIf_});
  return waitLinksRunning(devs);
}

Status waitLinksRunning(const std::vector<NetDev>& devs) {
  double deadline = monotonicSeconds() + 5;
  for (const NetDev& d : devs) {
    auto ls = LinkStats::open(*d.ns, d.name);
    if (!ls) return ls.status();
    for (;;) {
      auto c = ls->read();
      if (!c) return c.status();
      if ((c->flags & IFF_UP) && (c->flags & IFF_RUNNING)) break;
      if (monotonicSeconds() > deadline) {
        logWarn("%s is not running (flags 0x%x) 5 s after set-up; going on", d.name.c_str(), c->flags);
        break;
      }
      if (!sleepUnlessStopped(0.02)) return Status::fail(EINTR, "setup");
    }
  }
  logInfo("all links running");
  return {};
}

Topology::~Topology() {
  sink_.reset();  // closes the tap, detaches the sink program
  vmOwned_.reset();
  sinkNs_.reset();
  dut_.reset();
  gen_.reset();
}

std::vector<std::string> Topology::netnsNames() const {
  std::vector<std::string> v;
  if (gen_) v.push_back(gen_->name());
  v.push_back(prefix_ + "-dut");
  if (sinkNs_) v.push_back(sinkNs_->name());
  return v;
}

std::vector<std::string> leftovers(const std::string& prefix) {
  std::vector<std::string> out;
  // The prefix is "vb<pid>"; a name that continues with a digit belongs to
  // another pid and is not ours.
  auto ours = [&](const std::string& n) {
    return n.compare(0, prefix.size(), prefix) == 0 && !(n.size() > prefix.size() && isdigit(n[prefix.size()]));
  };
  for (const char* dir : {"/run/netns", "/sys/class/net"}) {
    DIR* d = opendir(dir);
    if (!d) continue;
    while (struct dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (ours(n)) out.push_back(std::string(dir) + "/" + n);
    }
    closedir(d);
  }
  return out;
}

}  // namespace vdev::bench
