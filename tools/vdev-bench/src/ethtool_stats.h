// ethtool_stats.h - a netdev's counters, read from inside its namespace:
// ethtool statistics (ethtool -S) through SIOCETHTOOL, and the standard
// interface counters (ip -s link) through rtnetlink.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/fd.h"
#include "rtnl/link.h"
#include "result.h"
#include "sys.h"

namespace vdev::bench {

class EthtoolStats {
 public:
  static Result<EthtoolStats> open(const Netns& ns, const std::string& ifname);
  Result<std::map<std::string, uint64_t>> read() const;
  // Sum of the counters named <prefix>N<suffix> for every queue N, e.g.
  // ("rx_queue_", "_xdp_drops"); nullopt when there is none.
  static std::optional<uint64_t> sumQueues(const std::map<std::string, uint64_t>& m, const std::string& prefix,
                                           const std::string& suffix);

 private:
  EthtoolStats(FileDesc sock, std::string ifname, std::vector<std::string> names)
      : sock_(std::move(sock)), ifname_(std::move(ifname)), names_(std::move(names)) {}
  FileDesc sock_;
  std::string ifname_;
  std::vector<std::string> names_;
};

// Offloads of a netdev inside ns (rtnl::setOffloads, the legacy ethtool
// ioctls, run there).
Status setOffloads(const Netns& ns, const std::string& ifname, const rtnl::Offloads& o);

// The interface's struct rtnl_link_stats64 (RTM_GETLINK, IFLA_STATS64) and
// its flags (IFF_UP, IFF_RUNNING, ...).
struct LinkCounters {
  uint64_t rxPackets = 0, txPackets = 0, rxDropped = 0, txDropped = 0;
  unsigned flags = 0;
  uint64_t rxBytes = 0, txBytes = 0;
};
class LinkStats {
 public:
  static Result<LinkStats> open(const Netns& ns, const std::string& ifname);
  Result<LinkCounters> read() const;

 private:
  LinkStats(FileDesc sock, int ifindex) : sock_(std::move(sock)), ifindex_(ifindex) {}
  FileDesc sock_;
  int ifindex_;
};

}  // namespace vdev::bench
