// topology.cpp - see topology.h.
#include "topology.h"

#include <net/if.h>

#include <algorithm>
#include <chrono>

#include "ethtool_stats.h"
#include "testkit/wait.h"

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

Result<std::unique_ptr<Topology>> Topology::create(Scenario sc, const std::string& prefix,
                                                  int bridgeNfCall, uint32_t idlePorts) {
  std::unique_ptr<Topology> t(new Topology());
  t->scenario_ = sc;
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
  Status s = t->build(idlePorts);
  if (!s.ok()) return s.error();  // ~Topology removes what was built so far
  return t;
}

Status Topology::build(uint32_t idlePorts) {
  // testkit::Netns::create turns IPv6 off in the namespace before any device
  // exists, so "default" applies to each one created here.
  auto mk = [&](std::optional<Netns>& slot, const std::string& name) -> Status {
    if (stopRequested()) return Error{EINTR, "setup"};
    auto ns = Netns::create(name);
    if (!ns) return ns.error();
    slot.emplace(std::move(*ns));
    return {};
  };
  if (scenario_ != Scenario::kTapVeth) VB_TRY(mk(gen_, prefix_ + "-gen"));
  VB_TRY(mk(dut_, prefix_ + "-dut"));
  // br_netfilter (built in, or loaded by Docker & co.) sends every bridged
  // IPv4/IPv6/ARP frame through the netfilter hooks while these are 1 (its
  // default): a large part of the bridge's cost.
  if (bridgeNfCall_ >= 0) {
    for (const char* k : {"iptables", "ip6tables", "arptables"}) {
      Status s = testkit::writeSysctl(std::string("net/bridge/bridge-nf-call-") + k, bridgeNfCall_ ? "1" : "0",
                                      &*dut_);
      if (!s.ok()) return Error{0, s.error().message() + " (--bridge-nf-call needs br_netfilter)"};
    }
  }
  if (auto v = testkit::readSysctl("net/bridge/bridge-nf-call-iptables", &*dut_)) bridgeNf_ = *v;

  // Endpoints are referred to by pointer (LatencyPair): no reallocation.
  endpoints_.reserve(3);
  // Port A: the generator's veth peer, or (tap-veth) the VM's tap, which
  // transmits (FrameWriter) with the generator's addresses.
  if (scenario_ == Scenario::kTapVeth) {
    auto vm = TapSink::create(*dut_, portA_, genMac_);
    if (!vm) return vm.error();
    vmOwned_ = std::move(*vm);
    vm_ = vmOwned_.get();
    endpoints_.push_back({"vm", nullptr, portA_, genMac_, kGenIp, vm_});
  } else {
    auto veth = testkit::VethPair::create(
        {.host_name = portA_, .peer_name = genIf_, .host_ns = &*dut_, .peer_ns = &*gen_, .peer_mac = genMac_});
    if (!veth) return veth.error();
    vethA_.emplace(std::move(*veth));
    endpoints_.push_back({"container1", &*gen_, genIf_, genMac_, kGenIp, nullptr});
  }

  // Port B: the sink's veth peer, or (veth-tap) the VM's tap.
  if (scenario_ == Scenario::kVethTap) {
    auto sink = TapSink::create(*dut_, portB_, sinkMac_);
    if (!sink) return sink.error();
    vm_ = sink->get();
    sink_ = std::move(*sink);
    endpoints_.push_back({"vm", nullptr, portB_, sinkMac_, kSinkIp, vm_});
  } else {
    VB_TRY(mk(sinkNs_, prefix_ + "-sink"));
    auto veth = testkit::VethPair::create(
        {.host_name = portB_, .peer_name = sinkIf_, .host_ns = &*dut_, .peer_ns = &*sinkNs_, .peer_mac = sinkMac_});
    if (!veth) return veth.error();
    vethB_.emplace(std::move(*veth));
    auto sink = VethSink::create(*sinkNs_, sinkIf_);
    if (!sink) return sink.error();
    sink_ = std::move(*sink);
    endpoints_.push_back({"container2", &*sinkNs_, sinkIf_, sinkMac_, kSinkIp, nullptr});
  }

  // Port C (switch): the VM's tap.
  if (scenario_ == Scenario::kSwitch) {
    auto vm = TapSink::create(*dut_, portC_, vmMac_);
    if (!vm) return vm.error();
    vmOwned_ = std::move(*vm);
    vm_ = vmOwned_.get();
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

  VB_TRY(addIdle(idlePorts));
  VB_TRY(addressContainers());
  return waitRunning();
}

// The idle ports: a veth each, far ends in one namespace, no address (they
// never send).
Status Topology::addIdle(uint32_t count) {
  if (!count) return {};
  auto ns = Netns::create(prefix_ + "-idle");
  if (!ns) return ns.error();
  idleNs_.emplace(std::move(*ns));
  idleVeths_.reserve(count);
  for (uint32_t i = 1; i <= count; ++i) {
    if (stopRequested()) return Error{EINTR, "setup"};
    const std::string port = prefix_ + "i" + std::to_string(i);
    // 02:76:62:02:hi:lo: "vb", 02 for an idle container.
    const Mac mac{0x02, 0x76, 0x62, 0x02, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
    auto veth = testkit::VethPair::create({.host_name = port,
                                           .peer_name = "i" + std::to_string(i),
                                           .host_ns = &*dut_,
                                           .peer_ns = &*idleNs_,
                                           .peer_mac = mac});
    if (!veth) return veth.error();
    idleVeths_.push_back(std::move(*veth));
    idlePorts_.push_back(port);
  }
  return {};
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
  for (const auto& p : idlePorts_) devs.push_back({&*dut_, p});
  if (sinkNs_) devs.push_back({&*sinkNs_, sinkIf_});
  return waitLinksRunning(devs);
}

Status waitLinksRunning(const std::vector<NetDev>& devs) {
  const double deadline = monotonicSeconds() + 5;
  for (const NetDev& d : devs) {
    auto ls = LinkStats::open(*d.ns, d.name);
    if (!ls) return ls.error();
    Status failed;
    unsigned flags = 0;
    const bool running = testkit::waitUntil(
        [&] {
          if (stopRequested()) return true;
          auto c = ls->read();
          if (!c) failed = c.error();
          else flags = c->flags;
          return !failed.ok() || ((flags & IFF_UP) && (flags & IFF_RUNNING));
        },
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::duration<double>(std::max(0.0, deadline - monotonicSeconds()))),
        std::chrono::milliseconds(20));
    VB_TRY(failed);
    if (stopRequested()) return Error{EINTR, "setup"};
    if (!running) logWarn("%s is not running (flags 0x%x) 5 s after set-up; going on", d.name.c_str(), flags);
  }
  logInfo("all links running");
  return {};
}

Topology::~Topology() {
  sink_.reset();  // closes the tap, detaches the sink program
  vmOwned_.reset();
  vethB_.reset();
  vethA_.reset();
  idleVeths_.clear();
  for (auto* ns : {&idleNs_, &sinkNs_, &dut_, &gen_})
    if (*ns)
      if (Status s = (*ns)->remove(); !s.ok()) logWarn("cleanup: %s", s.error().message().c_str());
  idleNs_.reset();
  sinkNs_.reset();
  dut_.reset();
  gen_.reset();
}

std::vector<std::string> leftovers(const std::string& prefix) {
  std::vector<std::string> out;
  // The prefix is "vb<pid>"; a name that continues with a digit belongs to
  // another pid and is not ours.
  auto ours = [&](const std::string& n) {
    return n.compare(0, prefix.size(), prefix) == 0 && !(n.size() > prefix.size() && isdigit(n[prefix.size()]));
  };
  for (const std::string dir : {"/run/netns", "/sys/class/net"})
    for (const std::string& n : dirEntries(dir).value_or(std::vector<std::string>{}))
      if (ours(n)) out.push_back(dir + "/" + n);
  return out;
}

}  // namespace vdev::bench
