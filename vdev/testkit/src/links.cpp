#include "testkit/links.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <utility>
#include <vector>

#include "testkit/process.h"

namespace vdev::testkit {

namespace {

constexpr auto kIpTimeout = 60s;

// `ip [-n NS] ARGS...`
Result<std::string> ip(const Netns* ns, std::vector<std::string> args) {
  std::vector<std::string> argv = {"ip"};
  if (ns) argv.insert(argv.end(), {"-n", ns->name()});
  argv.insert(argv.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
  return runChecked({.argv = std::move(argv), .timeout = kIpTimeout});
}

// `link set dev NAME [address MAC] [mtu N] [up]`, when there is anything to set.
Status setLink(const Netns* ns, const std::string& name, const std::optional<Mac>& mac, int mtu, bool up) {
  std::vector<std::string> args = {"link", "set", "dev", name};
  if (mac) args.insert(args.end(), {"address", formatMac(*mac)});
  if (mtu > 0) args.insert(args.end(), {"mtu", std::to_string(mtu)});
  if (up) args.push_back("up");
  if (args.size() == 4) return {};
  if (auto r = ip(ns, std::move(args)); !r) return r.error();
  return {};
}

// An unsigned member of a JSON object, or 0.
uint64_t u64Of(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return 0;
  const auto it = o.find(key);
  return it != o.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

}  // namespace

// ---------------------------------------------------------------------------
// VethPair

Result<VethPair> VethPair::create(const VethSpec& spec) {
  if (linkExists(spec.host_name, spec.host_ns)) (void)ip(spec.host_ns, {"link", "del", spec.host_name});
  // The peer is made directly in its namespace. A null peer_ns means this
  // process's namespace; named by pid, since `ip -n` runs ip elsewhere.
  const std::string peerNs = spec.peer_ns ? spec.peer_ns->name() : std::to_string(::getpid());
  if (auto r = ip(spec.host_ns, {"link", "add", "name", spec.host_name, "type", "veth", "peer", "name",
                                 spec.peer_name, "netns", peerNs});
      !r)
    return r.error();
  VethPair pair(spec.host_name, spec.peer_name, spec.host_ns);  // deletes both ends if what follows fails
  if (Status s = disableIpv6(spec.host_name, spec.host_ns); !s) return s.error();
  if (Status s = disableIpv6(spec.peer_name, spec.peer_ns); !s) return s.error();
  if (Status s = setLink(spec.peer_ns, spec.peer_name, spec.peer_mac, spec.mtu, true); !s) return s.error();
  if (Status s = setLink(spec.host_ns, spec.host_name, spec.host_mac, spec.mtu, true); !s) return s.error();
  return pair;
}

VethPair::VethPair(VethPair&& o) noexcept
    : host_(std::move(o.host_)), peer_(std::move(o.peer_)), hostNs_(o.hostNs_), removed_(o.removed_) {
  o.removed_ = true;
}

VethPair::~VethPair() { (void)remove(); }

Status VethPair::remove() {
  if (removed_) return {};
  removed_ = true;
  // Deleting one end deletes both. If the namespace went first, so did the pair.
  auto r = ip(hostNs_, {"link", "del", host_});
  if (!r && linkExists(host_, hostNs_)) return r.error();
  return {};
}

// ---------------------------------------------------------------------------
// Tap

Result<Tap> Tap::open(const TapSpec& spec) {
  if (spec.name.empty() || spec.name.size() >= IFNAMSIZ) return Error{EINVAL, "tap name '" + spec.name + "'"};
  // The device is made in the namespace of the thread that attaches.
  auto fd = inNetns(spec.ns, [&]() -> Result<FileDesc> {
    FileDesc f(::open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK));
    if (!f.valid()) return errnoError("open /dev/net/tun");
    ifreq ifr{};
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;  // as QEMU's -netdev tap without vnet_hdr
    std::strncpy(ifr.ifr_name, spec.name.c_str(), IFNAMSIZ - 1);
    if (::ioctl(f.get(), TUNSETIFF, &ifr) < 0) return errnoError("TUNSETIFF " + spec.name);
    return f;
  });
  if (!fd) return fd.error();
  Tap tap(spec.name, std::move(*fd));  // closing it deletes the device if what follows fails
  if (Status s = disableIpv6(spec.name, spec.ns); !s) return s.error();
  if (Status s = setLink(spec.ns, spec.name, spec.mac, spec.mtu, spec.up); !s) return s.error();
  return tap;
}

// ---------------------------------------------------------------------------
// Packet sockets, MACs, link information

Result<FileDesc> openPacketSocket(const std::string& ifname, const Netns* ns, bool receive) {
  return inNetns(ns, [&]() -> Result<FileDesc> {
    const int ifindex = int(::if_nametoindex(ifname.c_str()));
    if (ifindex == 0) return errnoError("if_nametoindex " + ifname + " in " + netnsLabel(ns));
    // Protocol 0 until bound: nothing from other devices meanwhile.
    FileDesc fd(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) return errnoError("socket(AF_PACKET)");
    if (receive) {
      const int one = 1;
      if (::setsockopt(fd.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) < 0)
        return errnoError("PACKET_IGNORE_OUTGOING");
      const int bufSize = 16 << 20;
      if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &bufSize, sizeof bufSize) < 0)
        return errnoError("SO_RCVBUFFORCE");
      if (::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUFFORCE, &bufSize, sizeof bufSize) < 0)
        return errnoError("SO_SNDBUFFORCE");
    }
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = receive ? htons(ETH_P_ALL) : 0;
    sll.sll_ifindex = ifindex;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sll), sizeof sll) < 0)
      return errnoError("bind AF_PACKET to " + ifname);
    return fd;
  });
}

Result<Mac> deviceMac(const std::string& ifname, const Netns* ns) {
  return inNetns(ns, [&]() -> Result<Mac> {
    FileDesc s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) return errnoError("socket");
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    if (::ioctl(s.get(), SIOCGIFHWADDR, &ifr) < 0)
      return errnoError("SIOCGIFHWADDR " + ifname + " in " + netnsLabel(ns));
    Mac m;
    std::memcpy(m.data(), ifr.ifr_hwaddr.sa_data, 6);
    return m;
  });
}

Result<LinkInfo> linkInfo(const std::string& ifname, const Netns* ns) {
  auto out = ip(ns, {"-s", "-j", "link", "show", "dev", ifname});
  if (!out) return out.error();
  LinkInfo li;
  li.raw = nlohmann::json::parse(*out, nullptr, /*allow_exceptions=*/false);
  if (!li.raw.is_array() || li.raw.empty() || !li.raw[0].is_object())
    return Error{EINVAL, "ip -j link show dev " + ifname + ": unexpected output: " + *out};
  const nlohmann::json& l = li.raw[0];
  li.ifindex = int(u64Of(l, "ifindex"));
  li.mtu = int(u64Of(l, "mtu"));
  if (const auto a = l.find("address"); a != l.end() && a->is_string())
    li.address = parseMac(a->get<std::string>()).value_or(Mac{});
  if (const auto f = l.find("flags"); f != l.end() && f->is_array())
    for (const auto& flag : *f)
      if (flag.is_string() && flag.get<std::string>() == "UP") li.up = true;
  li.has_xdp = l.contains("xdp");
  if (const auto st = l.find("stats64"); st != l.end() && st->is_object()) {
    const nlohmann::json& rx = st->contains("rx") ? (*st)["rx"] : nlohmann::json();
    const nlohmann::json& tx = st->contains("tx") ? (*st)["tx"] : nlohmann::json();
    li.rx_packets = u64Of(rx, "packets");
    li.rx_bytes = u64Of(rx, "bytes");
    li.rx_dropped = u64Of(rx, "dropped");
    li.tx_packets = u64Of(tx, "packets");
    li.tx_bytes = u64Of(tx, "bytes");
    li.tx_dropped = u64Of(tx, "dropped");
  }
  return li;
}

}  // namespace vdev::testkit
