// real_topology.cpp - see real_topology.h.
#include "real_topology.h"

#include <unistd.h>

#include <chrono>

#include "ethtool_stats.h"
#include "rtnl/link.h"
#include "topology.h"

namespace vdev::bench {

namespace {
// 198.18.0.0/15 (RFC 2544's range), one subnet; locally administered MACs
// with "vb" in the second and third byte, 01 in the fourth (the XDP-frame
// topology uses 00).
constexpr uint32_t kIpA = 0xc6120001;      // 198.18.0.1
constexpr uint32_t kIpB = 0xc6120101;      // 198.18.1.1
constexpr uint32_t kIpGuest = 0xc6120201;  // 198.18.2.1
constexpr uint32_t kIpQemu = 0xc6120301;   // 198.18.3.1
constexpr int kPrefixLen = 15;
constexpr Mac kMacA{0x02, 0x76, 0x62, 0x01, 0x00, 0x01};
constexpr Mac kMacB{0x02, 0x76, 0x62, 0x01, 0x00, 0x02};
constexpr Mac kMacGuest{0x02, 0x76, 0x62, 0x01, 0x00, 0x03};
constexpr Mac kMacTap{0x02, 0x76, 0x62, 0x01, 0x00, 0x04};  // the host's end of the VM's tap
constexpr Mac kMacQemu{0x02, 0x76, 0x62, 0x01, 0x00, 0x05};     // the QEMU guest's virtio-net
constexpr Mac kMacQemuTap{0x02, 0x76, 0x62, 0x01, 0x00, 0x06};  // the host's end of its tap
constexpr uint32_t kGuestMtu = 1500;

// testkit's namespace: lo up, IPv6 off before any device exists.
Result<Netns> makeNetns(const std::string& name) {
  if (stopRequested()) return Error{EINTR, "setup"};
  return Netns::create(name);
}
}  // namespace

Result<std::unique_ptr<RealTopology>> RealTopology::create(const std::string& prefix, uint32_t mtu, bool withGuest,
                                                          const std::string& vdevVmPath,
                                                          const std::string& vmLogPath, uint32_t idlePorts,
                                                          bool forXdpHook, const QemuSpec* qemu) {
  std::unique_ptr<RealTopology> t(new RealTopology());
  t->prefix_ = prefix;
  t->mtu_ = mtu;
  t->forXdpHook_ = forXdpHook;
  Status s = t->build(withGuest, vdevVmPath, vmLogPath, idlePorts, qemu);
  if (!s.ok()) return s.error();  // ~RealTopology removes what was built so far
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
  if (!ns) return ns.error();
  st->ns.emplace(std::move(ns.value()));
  stations_.push_back(std::move(st));
  return {};
}

// A container's eth0 for vdevd's XDP hook, as vdevd's own veths are made
// (see the header); nothing to do otherwise.
Status RealTopology::prepareContainerEnd(const Netns& ns) {
  if (!forXdpHook_) return {};
  VB_TRY(setOffloads(ns, "eth0", {.gro = true}));
  return rtnl::setPeerTxCsumOff(rtnl::NetnsRef::byName(ns.name()), "eth0");
}

// The idle containers: a namespace and a veth each, as for A and B, but no
// address and no neighbours (they never send). Their links are up; the
// caller waits for them to run.
Status RealTopology::addIdle(uint32_t count) {
  idleNs_.reserve(count);  // the veths point at their namespaces
  for (uint32_t i = 1; i <= count; ++i) {
    auto ns = makeNetns(prefix_ + "-i" + std::to_string(i));
    if (!ns) return ns.error();
    idleNs_.push_back(std::move(ns.value()));
    const std::string port = prefix_ + "i" + std::to_string(i);
    // 02:76:62:02:hi:lo: "vb", 02 for an idle container.
    const Mac mac{0x02, 0x76, 0x62, 0x02, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
    auto veth = testkit::VethPair::create({.host_name = port,
                                           .peer_name = "eth0",
                                           .host_ns = &*dut_,
                                           .peer_ns = &idleNs_.back(),
                                           .peer_mac = mac,
                                           .mtu = static_cast<int>(mtu_)});
    if (!veth) return veth.error();
    idleVeths_.push_back(std::move(*veth));
    VB_TRY(prepareContainerEnd(idleNs_.back()));
    idlePorts_.push_back(port);
  }
  return {};
}

// QEMU in the DUT namespace creates the tap <P>q there; the guest answers
// on its console once eth0 has its address (testkit's QemuGuest).
Status RealTopology::bootQemu(const QemuSpec& spec) {
  auto st = std::make_unique<Station>();
  st->name = "qemu";
  st->port = prefix_ + "q";
  st->portIsTap = true;
  st->inQemu = true;
  st->mac = kMacQemu;
  st->ip = kIpQemu;
  testkit::GuestOptions o;
  o.tap = st->port;
  o.mac = formatMac(kMacQemu);
  o.address = formatIp(kIpQemu) + "/" + std::to_string(kPrefixLen);
  o.mtu = static_cast<int>(kGuestMtu);
  o.vhost = spec.vhost;
  o.accel = spec.accel;
  o.cpu = spec.cpu;
  o.ns = &*dut_;
  auto g = testkit::QemuGuest::boot(spec.image, o, formatMac(kMacQemuTap));
  if (!g) return Error{g.error().err, "booting the QEMU guest: " + g.error().what};
  qemu_ = std::move(*g);
  qemuStation_ = st.get();
  stations_.push_back(std::move(st));
  return {};
}

Status RealTopology::build(bool withGuest, const std::string& vdevVmPath, const std::string& vmLogPath,
                           uint32_t idlePorts, const QemuSpec* qemu) {
  auto dut = makeNetns(prefix_ + "-dut");
  if (!dut) return dut.error();
  dut_.emplace(std::move(dut.value()));
  const std::string& d = dut_->name();

  // The containers: a veth each, made as a container runtime makes it.
  VB_TRY(addStation("A", "-a", prefix_ + "a", kMacA, kIpA));
  VB_TRY(addStation("B", "-b", prefix_ + "b", kMacB, kIpB));
  for (const auto& st : stations_) {
    auto veth = testkit::VethPair::create({.host_name = st->port,
                                           .peer_name = "eth0",
                                           .host_ns = &*dut_,
                                           .peer_ns = &*st->ns,
                                           .peer_mac = st->mac,
                                           .mtu = static_cast<int>(mtu_)});
    if (!veth) return veth.error();
    veths_.push_back(std::move(*veth));
    VB_TRY(prepareContainerEnd(*st->ns));
  }

  // The VM: vdev-vm creates the host's tap in the DUT namespace (it runs
  // there) and the guest's tap, eth0, inside the guest's namespace.
  if (withGuest) {
    VB_TRY(addStation("guest", "-g", prefix_ + "t", kMacGuest, kIpGuest));
    Station& g = *stations_.back();
    g.portIsTap = true;
    vmStation_ = &g;
    // Its output (the counts it prints as JSON when it stops) goes to a file.
    vmLog_ = vmLogPath;
    auto vm = testkit::Child::start({.argv = {"ip", "netns", "exec", d, vdevVmPath, "--tap", g.port, "--create",
                                              "--mac", formatMac(kMacTap), "guest", "--netns", g.ns->name()},
                                     .term_with_parent = true},
                                    {.stdout_path = vmLog_});
    if (!vm) return vm.error();
    vm_.emplace(std::move(*vm));
    if (Status ready = vm_->waitForLine("vdev-vm: ready", std::chrono::seconds(10), [] { return stopRequested(); });
        !ready.ok()) {
      if (ready.error().err == EINTR) return Error{EINTR, "waiting for vdev-vm"};
      if (ready.error().err == ECHILD)
        return Error{0, "vdev-vm exited before it was ready (" + childExitText(vm_->status().value_or(-1)) + ")" +
                            childOutputTail(vmLog_, "vdev-vm")};
      return Error{0, "vdev-vm did not print 'vdev-vm: ready' within 10 s" + childOutputTail(vmLog_, "vdev-vm")};
    }
    const std::string& ns = g.ns->name();
    VB_TRY(runCommand({"ip", "-n", ns, "link", "set", "eth0", "address", formatMac(g.mac), "mtu",
                       std::to_string(kGuestMtu), "up"}));
  }

  if (qemu) VB_TRY(bootQemu(*qemu));

  // Addresses and permanent neighbour entries: no ARP ever (but from the
  // QEMU guest, whose address its kernel command line set).
  for (const auto& st : stations_) {
    if (st->inQemu) continue;
    const std::string& ns = st->ns->name();
    VB_TRY(runCommand({"ip", "-n", ns, "addr", "add", formatIp(st->ip) + "/" + std::to_string(kPrefixLen), "dev",
                       "eth0"}));
    for (const auto& peer : stations_) {
      if (peer == st) continue;
      VB_TRY(runCommand({"ip", "-n", ns, "neigh", "replace", formatIp(peer->ip), "lladdr", formatMac(peer->mac),
                         "dev", "eth0", "nud", "permanent"}));
    }
  }

  VB_TRY(addIdle(idlePorts));

  std::vector<NetDev> devs;
  for (const auto& st : stations_) {
    if (!st->inQemu) devs.push_back({&*st->ns, "eth0"});
    devs.push_back({&*dut_, st->port});
  }
  for (size_t i = 0; i < idleNs_.size(); ++i) {
    devs.push_back({&idleNs_[i], "eth0"});
    devs.push_back({&*dut_, idlePorts_[i]});
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
  std::optional<int> st = stopChild(*vm_, std::chrono::seconds(5), "vdev-vm");
  if (st != 0)
    logWarn("vdev-vm: %s%s", st ? childExitText(*st).c_str() : "did not exit",
            childOutputTail(vmLog_, "vdev-vm").c_str());
  // Its last line of output: {"to_guest":{...},"from_guest":{...}}.
  const auto lines = childOutputLines(vmLog_, SIZE_MAX);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (!it->empty() && it->front() == '{') {
      guestCounts_ = *it;
      break;
    }
  vm_.reset();
  unlink(vmLog_.c_str());
  return guestCounts_;
}

RealTopology::~RealTopology() {
  stopGuest();
  qemu_.reset();  // QEMU goes, and its tap with it
  veths_.clear();
  idleVeths_.clear();
  idleNs_.clear();
  while (!stations_.empty()) stations_.pop_back();  // their namespaces, with the guest's tap
  dut_.reset();
}

}  // namespace vdev::bench
