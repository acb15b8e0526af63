// ethtool_stats.cpp - see ethtool_stats.h.
#include "ethtool_stats.h"

#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstring>

namespace vdev::bench {

namespace {
int ethtoolIoctl(int fd, const std::string& ifname, void* cmd) {
  ifreq ifr = {};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = static_cast<char*>(cmd);
  return ioctl(fd, SIOCETHTOOL, &ifr);
}
}  // namespace

Result<EthtoolStats> EthtoolStats::open(const Netns& ns, const std::string& ifname) {
  // A socket stays in the namespace it was created in; ioctls on it then
  // name devices of that namespace from any thread.
  auto sock = testkit::inNetns(&ns, []() -> Result<FileDesc> {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return errnoError("socket");
    return FileDesc(fd);
  });
  if (!sock) return sock.error();
  int fd = sock->get();

  // ethtool_sset_info is followed by one __u32 per set asked for.
  alignas(8) uint8_t infoBuf[sizeof(ethtool_sset_info) + sizeof(uint32_t)] = {};
  auto* info = reinterpret_cast<ethtool_sset_info*>(infoBuf);
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ULL << ETH_SS_STATS;
  if (ethtoolIoctl(fd, ifname, info) < 0) return errnoError("ETHTOOL_GSSET_INFO " + ifname);
  uint32_t n = info->sset_mask ? info->data[0] : 0;

  std::vector<uint8_t> buf(sizeof(ethtool_gstrings) + n * ETH_GSTRING_LEN);
  auto* gs = reinterpret_cast<ethtool_gstrings*>(buf.data());
  gs->cmd = ETHTOOL_GSTRINGS;
  gs->string_set = ETH_SS_STATS;
  gs->len = n;
  if (ethtoolIoctl(fd, ifname, gs) < 0) return errnoError("ETHTOOL_GSTRINGS " + ifname);
  std::vector<std::string> names;
  for (uint32_t i = 0; i < n; ++i) {
    const char* s = reinterpret_cast<const char*>(gs->data + i * ETH_GSTRING_LEN);
    names.emplace_back(s, strnlen(s, ETH_GSTRING_LEN));
  }
  return EthtoolStats(std::move(sock.value()), ifname, std::move(names));
}

Result<std::map<std::string, uint64_t>> EthtoolStats::read() const {
  std::vector<uint8_t> buf(sizeof(ethtool_stats) + names_.size() * sizeof(uint64_t));
  auto* st = reinterpret_cast<ethtool_stats*>(buf.data());
  st->cmd = ETHTOOL_GSTATS;
  st->n_stats = static_cast<uint32_t>(names_.size());
  if (ethtoolIoctl(sock_.get(), ifname_, st) < 0) return errnoError("ETHTOOL_GSTATS " + ifname_);
  std::map<std::string, uint64_t> m;
  for (size_t i = 0; i < names_.size(); ++i) m[names_[i]] = st->data[i];
  return m;
}

std::optional<uint64_t> EthtoolStats::sumQueues(const std::map<std::string, uint64_t>& m, const std::string& prefix,
                                                const std::string& suffix) {
  std::optional<uint64_t> sum;
  for (const auto& [name, v] : m) {
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    std::string mid = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (mid.find_first_not_of("0123456789") != std::string::npos) continue;
    sum = sum.value_or(0) + v;
  }
  return sum;
}

Status setOffloads(const Netns& ns, const std::string& ifname, const rtnl::Offloads& o) {
  return testkit::inNetns(&ns, [&] { return rtnl::setOffloads(ifname, o); });
}

// ---- LinkStats ----------------------------------------------------------------

Result<LinkStats> LinkStats::open(const Netns& ns, const std::string& ifname) {
  auto r = testkit::inNetns(&ns, [&]() -> Result<LinkStats> {
    unsigned idx = if_nametoindex(ifname.c_str());
    if (idx == 0) return errnoError("if_nametoindex " + ifname);
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) return errnoError("socket(NETLINK_ROUTE)");
    return LinkStats(FileDesc(fd), static_cast<int>(idx));
  });
  return r;
}

Result<LinkCounters> LinkStats::read() const {
  struct {
    nlmsghdr nh;
    ifinfomsg ifi;
  } req = {};
  req.nh.nlmsg_len = sizeof req;
  req.nh.nlmsg_type = RTM_GETLINK;
  req.nh.nlmsg_flags = NLM_F_REQUEST;
  req.nh.nlmsg_seq = 1;
  req.ifi.ifi_family = AF_UNSPEC;
  req.ifi.ifi_index = ifindex_;
  if (send(sock_.get(), &req, sizeof req, 0) < 0) return errnoError("RTM_GETLINK");
  alignas(8) char buf[32768];
  ssize_t n = recv(sock_.get(), buf, sizeof buf, 0);
  if (n < 0) return errnoError("RTM_GETLINK reply");
  for (auto* nh = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(nh, static_cast<unsigned>(n)); nh = NLMSG_NEXT(nh, n)) {
    if (nh->nlmsg_type == NLMSG_ERROR) {
      auto* e = static_cast<nlmsgerr*>(NLMSG_DATA(nh));
      return makeError(-e->error, "RTM_GETLINK");
    }
    if (nh->nlmsg_type != RTM_NEWLINK) continue;
    auto* ifi = static_cast<ifinfomsg*>(NLMSG_DATA(nh));
    int len = static_cast<int>(nh->nlmsg_len - NLMSG_LENGTH(sizeof *ifi));
    for (auto* a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
      if (a->rta_type != IFLA_STATS64 || RTA_PAYLOAD(a) < sizeof(rtnl_link_stats64)) continue;
      rtnl_link_stats64 st;
      std::memcpy(&st, RTA_DATA(a), sizeof st);
      return LinkCounters{st.rx_packets, st.tx_packets, st.rx_dropped, st.tx_dropped,
                          ifi->ifi_flags, st.rx_bytes, st.tx_bytes};
    }
  }
  return makeError(ENODATA, "RTM_GETLINK: no IFLA_STATS64");
}

}  // namespace vdev::bench
