// two_host_topology.cpp - see two_host_topology.h.
#include "two_host_topology.h"

#include "topology.h"

namespace vdev::bench {

namespace {
// 198.18.0.0/15 (RFC 2544's range): the containers' subnet and the
// underlay's; locally administered MACs with "vb" in the second and third
// byte, 03 in the fourth (the XDP-frame topology uses 00, --real 01 and 02).
constexpr uint32_t kIpContainer[2] = {0xc6126101, 0xc6126102};  // 198.18.97.1, .2
constexpr uint32_t kIpUnderlay[2] = {0xc6136101, 0xc6136102};   // 198.19.97.1, .2
constexpr int kPrefixLen = 24;
constexpr Mac kMacContainer[2] = {{0x02, 0x76, 0x62, 0x03, 0x00, 0x01}, {0x02, 0x76, 0x62, 0x03, 0x00, 0x02}};
constexpr Mac kMacUnderlay[2] = {{0x02, 0x76, 0x62, 0x03, 0x01, 0x01}, {0x02, 0x76, 0x62, 0x03, 0x01, 0x02}};
constexpr const char* kVxlanId = "42";
constexpr const char* kVxlanPort = "4789";
constexpr uint32_t kVxlanMtu = 1450;  // the underlay's 1500 less VXLAN's 50 bytes
constexpr uint32_t kVethMtu = 1500;
const char* const kHostSuffix[2] = {"-ha", "-hb"};
const char* const kContainerSuffix[2] = {"-ca", "-cb"};

std::string withPrefix(uint32_t ip) { return formatIp(ip) + "/" + std::to_string(kPrefixLen); }

Result<Netns> makeNetns(const std::string& name) {
  if (stopRequested()) return Error{EINTR, "setup"};
  return Netns::create(name);
}

// A permanent neighbour entry on dev in ns: no ARP for ip.
Status staticNeighbour(const Netns& ns, const std::string& dev, uint32_t ip, const Mac& mac) {
  return runCommand({"ip", "-n", ns.name(), "neigh", "replace", formatIp(ip), "lladdr", formatMac(mac), "dev", dev,
                     "nud", "permanent"});
}
}  // namespace

const char* uplinkName(Uplink u) { return u == Uplink::kVxlan ? "vxlan" : "veth"; }

bool parseUplink(const std::string& name, Uplink* out) {
  if (name == "vxlan") *out = Uplink::kVxlan;
  else if (name == "veth") *out = Uplink::kVeth;
  else return false;
  return true;
}

uint32_t containerMtu(Uplink u) { return u == Uplink::kVxlan ? kVxlanMtu : kVethMtu; }

std::string describeUplink(Uplink u) {
  if (u == Uplink::kVxlan)
    return std::string("up0 = VXLAN id ") + kVxlanId + ", dstport " + kVxlanPort +
           ", on each host over the underlay veth " + TwoHostTopology::kUnderlayDev + " (" + withPrefix(kIpUnderlay[0]) + " <-> " + withPrefix(kIpUnderlay[1]) +
           "); containers at MTU " + std::to_string(kVxlanMtu);
  return "up0 = a veth between the hosts (a NIC stand-in); containers at MTU " + std::to_string(kVethMtu);
}

Result<std::unique_ptr<TwoHostTopology>> TwoHostTopology::create(const std::string& prefix, Uplink uplink) {
  std::unique_ptr<TwoHostTopology> t(new TwoHostTopology());
  t->prefix_ = prefix;
  t->uplink_ = uplink;
  Status s = t->build();
  if (!s.ok()) return s.error();  // ~TwoHostTopology removes what was built so far
  return t;
}

Status TwoHostTopology::build() {
  for (int i = 0; i < 2; ++i) {
    auto h = makeNetns(prefix_ + kHostSuffix[i]);
    if (!h) return h.error();
    hosts_[i].emplace(std::move(h.value()));
    auto c = std::make_unique<Station>();
    c->name = i == 0 ? "A" : "B";
    c->port = kPortDev;
    c->mac = kMacContainer[i];
    c->ip = kIpContainer[i];
    auto ns = makeNetns(prefix_ + kContainerSuffix[i]);
    if (!ns) return ns.error();
    c->ns.emplace(std::move(ns.value()));
    containers_[i] = std::move(c);
  }

  std::vector<NetDev> devs;
  if (uplink_ == Uplink::kVxlan) {
    auto ul = testkit::VethPair::create({.host_name = kUnderlayDev,
                                         .peer_name = kUnderlayDev,
                                         .host_ns = &*hosts_[0],
                                         .peer_ns = &*hosts_[1],
                                         .host_mac = kMacUnderlay[0],
                                         .peer_mac = kMacUnderlay[1]});
    if (!ul) return ul.error();
    underlay_.emplace(std::move(*ul));
    for (int i = 0; i < 2; ++i) {
      const Netns& h = *hosts_[i];
      VB_TRY(runCommand({"ip", "-n", h.name(), "addr", "add", withPrefix(kIpUnderlay[i]), "dev", kUnderlayDev}));
      VB_TRY(staticNeighbour(h, kUnderlayDev, kIpUnderlay[1 - i], kMacUnderlay[1 - i]));
      VB_TRY(runCommand({"ip", "-n", h.name(), "link", "add", kUplinkDev, "type", "vxlan", "id", kVxlanId, "local",
                         formatIp(kIpUnderlay[i]), "remote", formatIp(kIpUnderlay[1 - i]), "dstport", kVxlanPort,
                         "dev", kUnderlayDev}));
      VB_TRY(testkit::disableIpv6(kUplinkDev, &h));
      VB_TRY(runCommand({"ip", "-n", h.name(), "link", "set", kUplinkDev, "up"}));
      devs.push_back({&h, kUnderlayDev});
    }
  } else {
    auto up = testkit::VethPair::create(
        {.host_name = kUplinkDev, .peer_name = kUplinkDev, .host_ns = &*hosts_[0], .peer_ns = &*hosts_[1]});
    if (!up) return up.error();
    uplinkVeth_.emplace(std::move(*up));
  }
  for (int i = 0; i < 2; ++i) devs.push_back({&*hosts_[i], kUplinkDev});
  return waitLinksRunning(devs);
}

Status TwoHostTopology::addContainerVeths() {
  veths_.reserve(2);
  for (int i = 0; i < 2; ++i) {
    const Station& c = *containers_[i];
    auto veth = testkit::VethPair::create({.host_name = kPortDev,
                                           .peer_name = "eth0",
                                           .host_ns = &*hosts_[i],
                                           .peer_ns = &*c.ns,
                                           .peer_mac = c.mac,
                                           .mtu = static_cast<int>(mtu())});
    if (!veth) return veth.error();
    veths_.push_back(std::move(*veth));
  }
  return {};
}

Status TwoHostTopology::finishContainers() {
  std::vector<NetDev> devs;
  for (int i = 0; i < 2; ++i) {
    const Station& c = *containers_[i];
    const Station& other = *containers_[1 - i];
    const std::string& ns = c.ns->name();
    VB_TRY(testkit::disableIpv6("eth0", &*c.ns));
    VB_TRY(runCommand({"ip", "-n", ns, "link", "set", "eth0", "mtu", std::to_string(mtu()), "up"}));
    VB_TRY(runCommand({"ip", "-n", ns, "addr", "add", withPrefix(c.ip), "dev", "eth0"}));
    VB_TRY(staticNeighbour(*c.ns, "eth0", other.ip, other.mac));
    devs.push_back({&*c.ns, "eth0"});
    devs.push_back({&*hosts_[i], kPortDev});
  }
  return waitLinksRunning(devs);
}

TwoHostTopology::~TwoHostTopology() {
  veths_.clear();
  uplinkVeth_.reset();
  underlay_.reset();
  for (auto& c : containers_) c.reset();  // their namespaces
  for (auto& h : hosts_) h.reset();
}

}  // namespace vdev::bench
