// veth pairs, persistent taps, deletion of what vdev made, link queries.
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <netlink/route/link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/route/link/veth.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "socket.h"

#include "base/netns.h"
#include "base/fd.h"
#include "rtnl/link.h"

// glibc's <net/if.h> stops at IFF_DYNAMIC; <linux/if.h> clashes with it.
#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000  // driver signals L1 up (the carrier)
#endif

namespace vdev::rtnl {

using detail::AddrPtr;
using detail::getKernelLink;
using detail::LinkPtr;
using detail::RtnlSocket;
using detail::withContext;

using vdev::errnoError;
using vdev::FileDesc;


// ---------------------------------------------------------------------------
// MAC addresses and names

Mac randomMac() {
  Mac mac{};
  size_t got = 0;
  while (got < mac.size()) {
    ssize_t n = getrandom(mac.data() + got, mac.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      // getrandom() cannot fail once the pool is initialised; if it ever
      // does, a weaker but still distinct value beats aborting.
      uint64_t x = static_cast<uint64_t>(getpid()) * 0x9e3779b97f4a7c15ull ^ reinterpret_cast<uintptr_t>(&mac);
      for (size_t i = got; i < mac.size(); i++) mac[i] = static_cast<uint8_t>(x >> (8 * i));
      break;
    }
    got += static_cast<size_t>(n);
  }
  mac[0] = static_cast<uint8_t>((mac[0] & 0xfe) | 0x02);  // unicast, locally administered
  return mac;
}

Status validateIfname(std::string_view name) {
  auto bad = [&](const char* why) {
    return Error{EINVAL, "invalid interface name '" + std::string(name) + "' (" + why + ")"};
  };
  if (name.empty()) return bad("empty");
  if (name.size() >= IFNAMSIZ) return bad("longer than 15 bytes");
  if (name == "." || name == "..") return bad("reserved");
  for (char c : name) {
    // dev_valid_name() refuses '/', ':' and whitespace; '%' makes the name
    // a pattern ("vd%d" -> "vd0"), so the device would not be called `name`.
    if (c == '/' || c == ':' || c == '%' || std::isspace(static_cast<unsigned char>(c)) || c == '\0')
      return bad("contains '/', ':', '%' or whitespace");
  }
  return {};
}

// ---------------------------------------------------------------------------
// NetnsRef

std::string NetnsRef::filePath() const {
  switch (kind_) {
    case Kind::kCurrent: return "";
    case Kind::kName: return "/run/netns/" + text_;
    case Kind::kPath: return text_;
    case Kind::kPid: return "/proc/" + std::to_string(pid_) + "/ns/net";
  }
  return "";
}

std::string NetnsRef::describe() const {
  switch (kind_) {
    case Kind::kCurrent: return "";
    case Kind::kName:
    case Kind::kPath: return "netns " + text_;
    case Kind::kPid: return "netns of pid " + std::to_string(pid_);
  }
  return "";
}

Result<int> NetnsRef::open() const {
  if (kind_ == Kind::kCurrent) return Error{EINVAL, "open netns: no namespace named"};
  if (kind_ == Kind::kName &&
      (text_.empty() || text_ == "." || text_ == ".." || text_.find('/') != std::string::npos))
    return Error{EINVAL, "open netns: invalid namespace name '" + text_ + "'"};
  if (kind_ == Kind::kPath && text_.empty()) return Error{EINVAL, "open netns: empty path"};
  if (kind_ == Kind::kPid && pid_ <= 0)
    return Error{EINVAL, "open netns: invalid pid " + std::to_string(pid_)};

  const std::string path = filePath();
  // O_PATH first: it opens nothing (a FIFO, a device or a file on a hung
  // NFS mount would block or act on an open()), so a caller-chosen path can
  // neither stall nor poke anything; only an nsfs file is then opened for
  // real, through /proc/self/fd (setns() and IFLA_NET_NS_FD refuse O_PATH
  // descriptors).
  FileDesc pathFd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!pathFd.valid()) {
    // A process that does not exist shows up as ENOENT on /proc/PID: say so.
    if (kind_ == Kind::kPid && errno == ENOENT)
      return Error{ESRCH, "open " + path + " (no process " + std::to_string(pid_) + ")"};
    return errnoError("open " + path);
  }
  struct statfs sfs {};
  if (::fstatfs(pathFd.get(), &sfs) != 0) return errnoError("statfs " + path);
  if (sfs.f_type != NSFS_MAGIC) return Error{EINVAL, path + " is not a namespace file"};
  const std::string self = "/proc/self/fd/" + std::to_string(pathFd.get());
  FileDesc fd(::open(self.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return errnoError("open " + path);
  int type = ioctl(fd.get(), NS_GET_NSTYPE);
  if (type < 0) {
    if (errno == ENOTTY || errno == EINVAL)
      return Error{EINVAL, path + " is not a namespace file"};
    return errnoError("query namespace type of " + path);
  }
  if (type != CLONE_NEWNET) return Error{EINVAL, path + " is not a network namespace"};
  return fd.release();
}

Result<uid_t> netnsOwnerUid(int nsfd) {
  FileDesc userns(ioctl(nsfd, NS_GET_USERNS));
  if (!userns.valid()) return errnoError("query the user namespace of a network namespace");
  uid_t uid = 0;
  if (ioctl(userns.get(), NS_GET_OWNER_UID, &uid) != 0)
    return errnoError("query the owner of a user namespace");
  return uid;
}

namespace {

// ---------------------------------------------------------------------------
// helpers

AddrPtr macAddr(const Mac& mac) {
  return AddrPtr(nl_addr_build(AF_LLC, mac.data(), mac.size()));
}

Mac macOf(rtnl_link* link) {
  Mac mac{};
  nl_addr* a = rtnl_link_get_addr(link);
  if (a && nl_addr_get_len(a) == mac.size())
    std::memcpy(mac.data(), nl_addr_get_binary_addr(a), mac.size());
  return mac;
}

LinkState stateOf(rtnl_link* link) {
  LinkState s;
  s.ifindex = rtnl_link_get_ifindex(link);
  if (const char* n = rtnl_link_get_name(link)) s.name = n;
  if (const char* k = rtnl_link_get_type(link)) s.kind = k;
  s.mac = macOf(link);
  s.mtu = static_cast<int>(rtnl_link_get_mtu(link));
  s.flags = rtnl_link_get_flags(link);
  s.up = (s.flags & IFF_UP) != 0;
  s.carrier = (s.flags & IFF_LOWER_UP) != 0;
  if (const char* a = rtnl_link_get_ifalias(link)) s.alias = a;
  s.managed = isManagedAlias(s.alias);
  s.linkIfindex = rtnl_link_get_link(link);
  int32_t nsid = 0;
  s.linkElsewhere = rtnl_link_get_link_netnsid(link, &nsid) == 0;
  return s;
}

// Applies `changes` to the device with `ifindex` (RTM_NEWLINK on an existing
// device, RTM_SETLINK on kernels that refuse that).
Status changeLink(RtnlSocket& sk, int ifindex, rtnl_link* changes, const std::string& what) {
  LinkPtr orig(rtnl_link_alloc());
  if (!orig) return Error{ENOMEM, what};
  rtnl_link_set_ifindex(orig.get(), ifindex);
  int rc = sk.run([&](nl_sock* s) { return rtnl_link_change(s, orig.get(), changes, 0); });
  if (rc < 0) return sk.error(rc, what);
  return {};
}

// Deletes by ifindex; used to undo a half-made device, so errors are ignored
// (the caller reports the error that made it undo).
void deleteByIndex(RtnlSocket& sk, int ifindex) {
  LinkPtr l(rtnl_link_alloc());
  if (!l) return;
  rtnl_link_set_ifindex(l.get(), ifindex);
  (void)sk.run([&](nl_sock* s) { return rtnl_link_delete(s, l.get()); });
}

void deleteByName(RtnlSocket& sk, const std::string& name) {
  LinkPtr l(rtnl_link_alloc());
  if (!l) return;
  rtnl_link_set_name(l.get(), name.c_str());
  (void)sk.run([&](nl_sock* s) { return rtnl_link_delete(s, l.get()); });
}

// net.ipv6.conf.NAME.disable_ipv6=1. /proc/sys/net shows the network
// namespace of the thread that opens the file, i.e. the caller's. A kernel
// without IPv6 has nothing to disable.
Status disableIpv6(const std::string& name) {
  if (::access("/proc/sys/net/ipv6", F_OK) != 0) return {};
  const std::string path = "/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6";
  FileDesc fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return errnoError("disable IPv6 on " + name + ": open " + path);
  if (::write(fd.get(), "1\n", 2) != 2) return errnoError("disable IPv6 on " + name + ": write " + path);
  return {};
}

// The common tail of createVeth and createTap, on a device that exists and
// is down: the mark (and MAC/MTU where given), IPv6 off, then up. Up is last
// so that the device never runs with IPv6 on; the mark is first so that a
// crash in between leaves a device vdev can still clean up.
Status markConfigureUp(RtnlSocket& sk, int ifindex, const std::string& name,
                       const std::optional<Mac>& mac, int mtu, const std::string& id) {
  LinkPtr changes(rtnl_link_alloc());
  if (!changes) return Error{ENOMEM, "configure " + name};
  const std::string alias = managedAlias(id);
  rtnl_link_set_ifalias(changes.get(), alias.c_str());
  std::string what = "set alias " + alias;
  if (mac) {
    AddrPtr a = macAddr(*mac);
    if (!a) return Error{ENOMEM, "configure " + name};
    rtnl_link_set_addr(changes.get(), a.get());  // takes its own reference
    what += ", MAC " + formatMac(*mac);
  }
  if (mtu > 0) {
    rtnl_link_set_mtu(changes.get(), static_cast<unsigned>(mtu));
    what += ", MTU " + std::to_string(mtu);
  }
  if (Status st = changeLink(sk, ifindex, changes.get(), what + " on " + name); !st) return st;

  if (Status st = disableIpv6(name); !st) return st;

  LinkPtr up(rtnl_link_alloc());
  if (!up) return Error{ENOMEM, "bring up " + name};
  rtnl_link_set_flags(up.get(), IFF_UP);
  return changeLink(sk, ifindex, up.get(), "bring up " + name);
}

}  // namespace

// ---------------------------------------------------------------------------
// veth

namespace {

// Legacy ethtool feature ioctls on ifname (ETHTOOL_SGRO, ETHTOOL_STXCSUM,
// ...: {cmd, value} pairs), inside the namespace nsfd (-1: this one), from
// a throw-away thread that enters it (ioctls act on the socket's namespace).
Status setFeatures(int nsfd, const std::string& ifname, const std::string& nsDesc,
                   const std::vector<std::pair<uint32_t, uint32_t>>& features) {
  auto doIt = [&]() -> Status {
    vdev::FileDesc s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) return errnoError("socket for ethtool");
    for (const auto& [cmd, value] : features) {
      struct ethtool_value v = {cmd, value};
      struct ifreq ifr = {};
      std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
      ifr.ifr_data = reinterpret_cast<char*>(&v);
      if (::ioctl(s.get(), SIOCETHTOOL, &ifr) != 0)
        return errnoError("set offload feature (ethtool cmd " + std::to_string(cmd) + ") of " + ifname + " in " + nsDesc);
    }
    return {};
  };
  if (nsfd < 0) return doIt();
  return runInNetns(nsfd, nsDesc, doIt);
}

}  // namespace

Status setOffloads(const std::string& name, const Offloads& o) {
  if (Status st = validateIfname(name); !st) return st;
  std::vector<std::pair<uint32_t, uint32_t>> f;
  if (o.tso) f.push_back({ETHTOOL_STSO, *o.tso});
  if (o.gso) f.push_back({ETHTOOL_SGSO, *o.gso});
  if (o.tx_csum) f.push_back({ETHTOOL_STXCSUM, *o.tx_csum});
  if (o.gro) f.push_back({ETHTOOL_SGRO, *o.gro});
  vdev::FileDesc s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return errnoError("socket for ethtool");
  auto ioc = [&](void* data, const std::string& what) -> Status {
    struct ifreq ifr = {};
    std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
    ifr.ifr_data = reinterpret_cast<char*>(data);
    if (::ioctl(s.get(), SIOCETHTOOL, &ifr) != 0) return errnoError(what + " of " + name);
    return {};
  };
  for (const auto& [cmd, value] : f) {
    struct ethtool_value v = {cmd, value};
    if (Status st = ioc(&v, "set offload feature (ethtool cmd " + std::to_string(cmd) + ")"); !st) return st;
  }
  if (o.tx_vlan) {
    // The legacy flags word sets LRO, RX/TX VLAN, n-tuple and RX hash at
    // once: read it, change TX VLAN only.
    struct ethtool_value v = {ETHTOOL_GFLAGS, 0};
    if (Status st = ioc(&v, "read offload flags"); !st) return st;
    v.cmd = ETHTOOL_SFLAGS;
    v.data = *o.tx_vlan ? (v.data | ETH_FLAG_TXVLAN) : (v.data & ~uint32_t(ETH_FLAG_TXVLAN));
    if (Status st = ioc(&v, "set tx-vlan-offload"); !st) return st;
  }
  return {};
}

namespace {

// What createVeth and createNetkit start with: the request's description
// ("create KIND NAME <-> PEER [in netns ...]"), its names checked, the
// peer's namespace open, a socket, the peer's MAC.
struct PairStart {
  std::string what;
  FileDesc nsfd;  // invalid: the peer stays here
  RtnlSocket sk;
  Mac peerMac;
};

Result<PairStart> startPair(const VethSpec& spec, const char* kind) {
  std::string what = std::string("create ") + kind + " " + spec.name + " <-> " + spec.peerName;
  if (!spec.peerNetns.isCurrent()) what += " in " + spec.peerNetns.describe();
  if (Status st = validateIfname(spec.name); !st) return withContext(st.error(), what);
  if (Status st = validateIfname(spec.peerName); !st) return withContext(st.error(), what);
  if (spec.mtu < 0) return Error{EINVAL, what + ": negative MTU"};
  FileDesc nsfd;
  if (!spec.peerNetns.isCurrent()) {
    auto fd = spec.peerNetns.open();
    if (!fd) return withContext(fd.error(), what);
    nsfd = FileDesc(*fd);
  }
  auto sk = RtnlSocket::open();
  if (!sk) return withContext(sk.error(), what);
  return PairStart{std::move(what), std::move(nsfd), std::move(*sk), spec.peerMac ? *spec.peerMac : randomMac()};
}

// The common tail of createVeth and createNetkit, once the pair exists:
// the host end marked, IPv6 off and up, then the peer up inside its
// namespace with `features` (ethtool {cmd, value}). Any failure deletes
// the pair.
Result<VethInfo> finishPair(RtnlSocket& sk, const FileDesc& nsfd, const VethSpec& spec, const Mac& peerMac,
                            const std::string& what, const std::vector<std::pair<uint32_t, uint32_t>>& features) {
  auto host = getKernelLink(sk, spec.name, what + ": look up " + spec.name);
  if (!host) {
    deleteByName(sk, spec.name);
    return host.error();
  }
  const LinkState hs = stateOf(host->get());
  auto undo = [&](const Error& e) {
    deleteByIndex(sk, hs.ifindex);  // takes the peer with it
    return withContext(e, what);
  };

  // The host end first: marked (so that from now on vdev may delete it),
  // IPv6 off, up. Its carrier stays off until the peer is up too.
  if (Status st = markConfigureUp(sk, hs.ifindex, spec.name, std::nullopt, 0, spec.id); !st) return undo(st.error());

  // Then the peer, from a socket inside its namespace (ifindexes are per
  // namespace; IFLA_LINK of the host end is the peer's index there).
  {
    Result<RtnlSocket> inNs = Error{};
    if (nsfd.valid()) inNs = RtnlSocket::openInNetns(nsfd.get(), spec.peerNetns.describe());
    RtnlSocket* psk = nsfd.valid() ? (inNs ? &*inNs : nullptr) : &sk;
    if (!psk) return undo(inNs.error());
    LinkPtr up(rtnl_link_alloc());
    if (!up) return undo(Error{ENOMEM, "bring up " + spec.peerName});
    rtnl_link_set_flags(up.get(), IFF_UP);
    if (Status st = changeLink(*psk, hs.linkIfindex, up.get(), "bring up " + spec.peerName); !st)
      return undo(st.error());
    Status st = features.empty() ? Status{}
                                 : setFeatures(nsfd.valid() ? nsfd.get() : -1, spec.peerName,
                                               spec.peerNetns.describe(), features);
    if (!st) return undo(st.error());
  }

  VethInfo info;
  info.name = spec.name;
  info.ifindex = hs.ifindex;
  info.peerName = spec.peerName;
  info.peerIfindex = hs.linkIfindex;
  info.mac = hs.mac;
  info.peerMac = peerMac;
  info.mtu = hs.mtu;
  return info;
}

}  // namespace

Result<VethInfo> createVeth(const VethSpec& spec) {
  auto start = startPair(spec, "veth");
  if (!start) return start.error();
  const std::string& what = start->what;
  const FileDesc& nsfd = start->nsfd;
  RtnlSocket* sk = &start->sk;
  const Mac peerMac = start->peerMac;

  LinkPtr link(rtnl_link_veth_alloc());
  if (!link) return Error{ENOMEM, what};
  // The peer is owned by `link` (freed with it); get_peer adds a reference
  // that `peer` drops.
  LinkPtr peer(rtnl_link_veth_get_peer(link.get()));
  if (!peer) return Error{ENOMEM, what};

  // Host end: created down; markConfigureUp brings it up once IPv6 is off.
  rtnl_link_set_name(link.get(), spec.name.c_str());
  if (spec.mtu > 0) rtnl_link_set_mtu(link.get(), static_cast<unsigned>(spec.mtu));
  if (spec.mac) {
    AddrPtr a = macAddr(*spec.mac);
    if (!a) return Error{ENOMEM, what};
    rtnl_link_set_addr(link.get(), a.get());
  }

  // Peer: created directly inside its namespace (IFLA_NET_NS_FD inside
  // VETH_INFO_PEER), with its name, MAC and MTU. Not up yet: the kernel
  // applies the peer's flags before it links the two ends, and veth_open()
  // refuses (ENOTCONN) to open an end without a peer.
  rtnl_link_set_name(peer.get(), spec.peerName.c_str());
  if (spec.mtu > 0) rtnl_link_set_mtu(peer.get(), static_cast<unsigned>(spec.mtu));
  {
    AddrPtr a = macAddr(peerMac);
    if (!a) return Error{ENOMEM, what};
    rtnl_link_set_addr(peer.get(), a.get());
  }
  if (nsfd.valid()) rtnl_link_set_ns_fd(peer.get(), nsfd.get());

  int rc = sk->run([&](nl_sock* s) { return rtnl_link_add(s, link.get(), NLM_F_CREATE | NLM_F_EXCL); });
  if (rc < 0) return sk->error(rc, what);
  std::vector<std::pair<uint32_t, uint32_t>> features;
  // GRO on (--fast-path): NAPI, so redirected XDP frames are delivered.
  // Every other offload stays as the kernel made it: the container keeps
  // TSO and checksum offload (vdevd's skb-level path carries their state,
  // and its punt device finishes what vdevd's own path needs).
  if (spec.peerGro) features.push_back({ETHTOOL_SGRO, 1});
  if (spec.peerTxCsumOff) features.push_back({ETHTOOL_STXCSUM, 0});
  return finishPair(*sk, nsfd, spec, peerMac, what, features);
}

Status setPeerTxCsumOff(const NetnsRef& peerNetns, const std::string& peerName) {
  if (Status st = validateIfname(peerName); !st) return st;
  FileDesc nsfd;
  if (!peerNetns.isCurrent()) {
    auto fd = peerNetns.open();
    if (!fd) return fd.error();
    nsfd = FileDesc(*fd);
  }
  return setFeatures(nsfd.valid() ? nsfd.get() : -1, peerName, peerNetns.describe(), {{ETHTOOL_STXCSUM, 0}});
}

// ---------------------------------------------------------------------------
// netkit

namespace {

// uapi/linux/if_link.h of Linux 6.7, newer than Debian 12's headers.
constexpr int kIflaNetkitPeerInfo = 1;
constexpr int kIflaNetkitPolicy = 3;
constexpr int kIflaNetkitPeerPolicy = 4;
constexpr int kIflaNetkitMode = 5;
constexpr uint32_t kNetkitPass = 0;
constexpr uint32_t kNetkitDrop = 2;
constexpr uint32_t kNetkitL2 = 0;  // NETKIT_L2: Ethernet headers and MACs, what a switch port needs

}  // namespace

Result<VethInfo> createNetkit(const VethSpec& spec) {
  auto start = startPair(spec, "netkit");
  if (!start) return start.error();
  const std::string& what = start->what;
  const FileDesc& nsfd = start->nsfd;
  RtnlSocket* sk = &start->sk;
  const Mac peerMac = start->peerMac;

  // RTM_NEWLINK, kind "netkit": IFLA_INFO_DATA holds the mode, the two
  // default policies and IFLA_NETKIT_PEER_INFO, an ifinfomsg followed by
  // the peer's own attributes (as VETH_INFO_PEER is built).
  detail::NlMsgPtr msg(nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL));
  if (!msg) return Error{ENOMEM, what};
  nl_msg* m = msg.get();
  struct ifinfomsg ifi = {};
  ifi.ifi_family = AF_UNSPEC;
  bool built = nlmsg_append(m, &ifi, sizeof ifi, NLMSG_ALIGNTO) == 0 && nla_put_string(m, IFLA_IFNAME, spec.name.c_str()) == 0;
  if (built && spec.mtu > 0) built = nla_put_u32(m, IFLA_MTU, uint32_t(spec.mtu)) == 0;
  nlattr* linkinfo = built ? nla_nest_start(m, IFLA_LINKINFO) : nullptr;
  built = linkinfo && nla_put_string(m, IFLA_INFO_KIND, "netkit") == 0;
  nlattr* data = built ? nla_nest_start(m, IFLA_INFO_DATA) : nullptr;
  built = data && nla_put_u32(m, kIflaNetkitMode, kNetkitL2) == 0 && nla_put_u32(m, kIflaNetkitPolicy, kNetkitPass) == 0 &&
          nla_put_u32(m, kIflaNetkitPeerPolicy, kNetkitDrop) == 0;
  nlattr* peer = built ? nla_nest_start(m, kIflaNetkitPeerInfo) : nullptr;
  built = peer && nlmsg_append(m, &ifi, sizeof ifi, NLMSG_ALIGNTO) == 0 &&
          nla_put_string(m, IFLA_IFNAME, spec.peerName.c_str()) == 0 &&
          nla_put(m, IFLA_ADDRESS, int(peerMac.size()), peerMac.data()) == 0;
  if (built && spec.mtu > 0) built = nla_put_u32(m, IFLA_MTU, uint32_t(spec.mtu)) == 0;
  if (built && nsfd.valid()) built = nla_put_u32(m, IFLA_NET_NS_FD, uint32_t(nsfd.get())) == 0;
  if (!built) return Error{ENOMEM, what + ": build the request"};
  nla_nest_end(m, peer);
  nla_nest_end(m, data);
  nla_nest_end(m, linkinfo);
  // nl_send_sync() frees the message, sent or not.
  const int rc = sk->run([&](nl_sock* s) { return nl_send_sync(s, msg.release()); });
  if (rc < 0) {
    Error e = sk->error(rc, what);
    // The kernel's answer for a kind it has no driver for ("Unknown device
    // type"): say what is missing.
    if (e.err == EOPNOTSUPP)
      e.what += ": this kernel has no netkit (Linux 6.7 or later with CONFIG_NETKIT is needed)";
    return e;
  }
  return finishPair(*sk, nsfd, spec, peerMac, what, {});
}

// ---------------------------------------------------------------------------
// tap

Result<TapInfo> createTap(const TapSpec& spec) {
  std::string what = spec.name.empty() ? std::string("create tap") : "create tap " + spec.name;
  if (!spec.name.empty()) {
    if (Status st = validateIfname(spec.name); !st) return withContext(st.error(), what);
  }
  if (spec.mtu < 0) return Error{EINVAL, what + ": negative MTU"};

  // Order: everything is configured while this fd holds the device, and
  // TUNSETPERSIST comes last. Until then any failure (or a crash) closes the
  // fd and the kernel deletes the non-persistent device: nothing to undo.
  FileDesc tun(::open("/dev/net/tun", O_RDWR | O_CLOEXEC));
  if (!tun.valid()) {
    int err = errno;
    return Error{err, what + ": open /dev/net/tun"};
  }

  struct ifreq ifr {};
  std::strncpy(ifr.ifr_name, spec.name.c_str(), IFNAMSIZ - 1);
  // IFF_TUN_EXCL: fail if a device of this name exists, instead of
  // attaching to it (as root we would be allowed to) and marking someone
  // else's tap as ours.
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_TUN_EXCL;
  if (spec.multiQueue) ifr.ifr_flags |= IFF_MULTI_QUEUE;
  if (ioctl(tun.get(), TUNSETIFF, &ifr) < 0) {
    int err = errno;
    if (err == EBUSY) err = EEXIST;  // IFF_TUN_EXCL's answer for "exists"
    return Error{err, what};
  }
  const std::string name(ifr.ifr_name, strnlen(ifr.ifr_name, IFNAMSIZ));
  what = "create tap " + name;

  auto sk = RtnlSocket::open();
  if (!sk) return withContext(sk.error(), what);
  auto link = getKernelLink(*sk, name, what + ": look up " + name);
  if (!link) return link.error();
  const int ifindex = rtnl_link_get_ifindex(link->get());

  if (Status st = markConfigureUp(*sk, ifindex, name, spec.mac, spec.mtu, spec.id); !st)
    return withContext(st.error(), what);

  auto tunIoctl = [&](unsigned long req, unsigned long arg, const std::string& step) -> Status {
    if (ioctl(tun.get(), req, arg) == 0) return {};
    int err = errno;
    return Error{err, what + ": " + step};
  };
  if (spec.owner) {
    if (Status st = tunIoctl(TUNSETOWNER, *spec.owner, "set owner uid " + std::to_string(*spec.owner)); !st)
      return st.error();
  }
  if (spec.group) {
    if (Status st = tunIoctl(TUNSETGROUP, *spec.group, "set group gid " + std::to_string(*spec.group)); !st)
      return st.error();
  }
  if (Status st = tunIoctl(TUNSETPERSIST, 1, "make persistent"); !st) return st.error();
  tun.reset();  // detach: the device stays (persistent), its carrier goes off

  auto now = getKernelLink(*sk, name, what + ": look up " + name);
  if (!now) return now.error();
  const LinkState s = stateOf(now->get());
  TapInfo info;
  info.name = name;
  info.ifindex = s.ifindex;
  info.mac = s.mac;
  info.mtu = s.mtu;
  info.multiQueue = spec.multiQueue;
  return info;
}

// ---------------------------------------------------------------------------
// delete, queries

Status deleteManagedLink(const std::string& name, std::string_view id) {
  const std::string what = "delete link " + name;
  if (Status st = validateIfname(name); !st) return withContext(st.error(), what);
  auto sk = RtnlSocket::open();
  if (!sk) return withContext(sk.error(), what);
  auto link = getKernelLink(*sk, name, what);
  if (!link) return link.error();
  const LinkState s = stateOf(link->get());
  if (!s.managed)
    return Error{EPERM, what + ": not created by vdev (its alias is " +
                            (s.alias.empty() ? std::string("empty") : "'" + s.alias + "'") +
                            ", not '" + kManagedAlias + "')"};
  if (!id.empty() && s.alias != managedAlias(id))
    return Error{EPERM, what + ": not the device vdev made for this port (its alias is '" + s.alias + "', not '" +
                            managedAlias(id) + "')"};
  // By ifindex alone: if the name has moved to another device since the
  // check, this deletes the one that was checked (or fails with ENODEV).
  LinkPtr del(rtnl_link_alloc());
  if (!del) return Error{ENOMEM, what};
  rtnl_link_set_ifindex(del.get(), s.ifindex);
  int rc = sk->run([&](nl_sock* so) { return rtnl_link_delete(so, del.get()); });
  if (rc < 0) return sk->error(rc, what);
  return {};
}

Result<LinkState> getLink(const std::string& name, const NetnsRef& netns) {
  std::string what = "look up link " + name;
  if (!netns.isCurrent()) what += " in " + netns.describe();
  if (Status st = validateIfname(name); !st) return withContext(st.error(), what);

  auto sk = RtnlSocket::open(netns);
  if (!sk) return withContext(sk.error(), what);
  return detail::getLinkState(*sk, name, what);
}

Result<LinkState> detail::getLinkState(RtnlSocket& sk, const std::string& name, const std::string& what) {
  auto link = getKernelLink(sk, name, what);
  if (!link) return link.error();
  return stateOf(link->get());
}

Result<int> ifindexOf(const std::string& name) {
  auto s = getLink(name);
  if (!s) return s.error();
  return s->ifindex;
}

Result<std::vector<LinkState>> listLinks() {
  const std::string what = "list links";
  auto sk = RtnlSocket::open();
  if (!sk) return withContext(sk.error(), what);
  nl_cache* raw = nullptr;
  const int rc = sk->run([&](nl_sock* s) { return rtnl_link_alloc_cache(s, AF_UNSPEC, &raw); });
  if (rc < 0) return sk->error(rc, what);
  detail::CachePtr cache(raw);
  std::vector<LinkState> out;
  for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o))
    out.push_back(stateOf(reinterpret_cast<rtnl_link*>(o)));
  return out;
}

Status setAlias(const std::string& name, const std::string& alias) {
  const std::string what = "set alias of " + name;
  if (Status st = validateIfname(name); !st) return withContext(st.error(), what);
  if (alias.size() > 255) return Error{EINVAL, what + ": over 255 bytes"};
  auto sk = RtnlSocket::open();
  if (!sk) return withContext(sk.error(), what);
  auto link = getKernelLink(*sk, name, what);
  if (!link) return link.error();
  LinkPtr changes(rtnl_link_alloc());
  if (!changes) return Error{ENOMEM, what};
  rtnl_link_set_ifalias(changes.get(), alias.c_str());
  return changeLink(*sk, rtnl_link_get_ifindex(link->get()), changes.get(), what);
}

std::string newDeviceId() {
  uint8_t b[8];
  size_t got = 0;
  while (got < sizeof b) {
    const ssize_t n = getrandom(b + got, sizeof b - got, 0);
    if (n > 0) got += size_t(n);
    else if (errno != EINTR) std::abort();  // cannot happen once the pool is initialised (randomMac)
  }
  static const char* hex = "0123456789abcdef";
  std::string id;
  for (uint8_t x : b) {
    id += hex[x >> 4];
    id += hex[x & 15];
  }
  return id;
}

std::string managedAlias(std::string_view id) {
  if (id.empty()) return kManagedAlias;
  return std::string(kManagedAlias) + " id=" + std::string(id);
}

bool isManagedAlias(std::string_view alias) {
  const std::string_view mark = kManagedAlias;
  return alias == mark || (alias.size() > mark.size() + 4 && alias.substr(0, mark.size() + 4) == std::string(mark) + " id=");
}

Result<std::optional<uid_t>> tunOwner(const std::string& name, int ifindex) {
  const std::string what = "tun owner of " + name;
  if (Status st = validateIfname(name); !st) return withContext(st.error(), what);
  const std::string dir = "/sys/class/net/" + name + "/";
  auto readAll = [](const std::string& path, std::string& out) {
    FileDesc fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno;
    char buf[64];
    const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
    if (n < 0) return errno;
    out.assign(buf, size_t(n));
    return 0;
  };
  std::string idx, owner;
  if (int e = readAll(dir + "ifindex", idx)) return Error{e == ENOENT ? ENODEV : e, what + ": read " + dir + "ifindex"};
  if (std::strtol(idx.c_str(), nullptr, 10) != ifindex)
    return Error{ENODEV, what + ": sysfs shows another device of that name (ifindex " + idx.substr(0, idx.find('\n')) +
                             ", not " + std::to_string(ifindex) + ")"};
  if (int e = readAll(dir + "owner", owner)) return Error{e, what + ": read " + dir + "owner"};
  char* end = nullptr;
  const long v = std::strtol(owner.c_str(), &end, 10);
  if (end == owner.c_str()) return Error{EIO, what + ": '" + owner + "' in " + dir + "owner"};
  if (v < 0) return std::optional<uid_t>{};
  return std::optional<uid_t>{uid_t(v)};
}

bool linkExists(const std::string& name) { return getLink(name).ok(); }

bool linkIsManaged(const std::string& name) {
  auto s = getLink(name);
  return s.ok() && s->managed;
}

}  // namespace vdev::rtnl
