#include "datapath/punt.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>

#include "base/fd.h"
#include "rtnl/link.h"

namespace vdev::datapath {

namespace {

constexpr std::string_view kOwnerPrefix = "vdev:punt owner=";

// Field 22 of /proc/PID/stat (clock ticks since boot), "" if there is no
// such process. The command name (field 2) may hold spaces and ')': the
// fields after it start after the last ')'.
std::string startTime(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return {};
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && (rest >> field); i++)
    if (i == 22) return field;
  return {};
}

// The far end's alias for this process.
std::string ownerAlias() {
  return std::string(kOwnerPrefix) + std::to_string(::getpid()) + ":" + startTime(::getpid());
}

}  // namespace

std::vector<std::string> PuntDevice::removeOrphans() {
  std::vector<std::string> removed;
  auto links = rtnl::listLinks();
  if (!links) return removed;
  for (const rtnl::LinkState& l : *links) {
    const std::string_view a = l.alias;
    if (a.substr(0, kOwnerPrefix.size()) != kOwnerPrefix || l.name.empty() || l.name.back() != 'u') continue;
    const std::string_view owner = a.substr(kOwnerPrefix.size());
    const size_t colon = owner.find(':');
    if (colon == std::string_view::npos) continue;
    pid_t pid = 0;
    if (std::from_chars(owner.data(), owner.data() + colon, pid).ec != std::errc{} || pid <= 0) continue;
    if (startTime(pid) == owner.substr(colon + 1)) continue;  // alive
    const std::string near = l.name.substr(0, l.name.size() - 1) + "k";
    // Only a pair whose near end carries the mark, i.e. one vdev made.
    if (rtnl::linkIsManaged(near) && rtnl::deleteManagedLink(near)) removed.push_back(near);
  }
  return removed;
}

Result<std::unique_ptr<PuntDevice>> PuntDevice::create(const std::string& base, uint32_t mtu) {
  if (base.empty() || base.size() > 13) return Error{EINVAL, "punt device name '" + base + "': 1..13 characters"};
  std::unique_ptr<PuntDevice> d(new PuntDevice());
  d->near_ = base + "k";
  d->far_ = base + "u";
  d->mtu_ = mtu;
  // Left by a vdevd that died (the pair survives its process): ours to replace.
  if (rtnl::linkIsManaged(d->near_)) (void)rtnl::deleteManagedLink(d->near_);
  if (rtnl::linkIsManaged(d->far_)) (void)rtnl::deleteManagedLink(d->far_);
  rtnl::VethSpec spec;
  spec.name = d->near_;
  spec.peerName = d->far_;
  spec.mtu = int(mtu);
  auto v = rtnl::createVeth(spec);
  if (!v) return Error{v.error().err, "punt device: " + v.error().what};
  d->near_ifindex_ = v->ifindex;
  {
    // The far end's own stack sends nothing (no router solicitation, no
    // MLD, no DAD) into the near end; createVeth did the near end.
    std::ofstream(("/proc/sys/net/ipv6/conf/" + d->far_ + "/disable_ipv6").c_str()) << "1\n";
  }
  if (Status st = rtnl::setAlias(d->far_, ownerAlias()); !st) {
    (void)rtnl::deleteManagedLink(d->near_);
    return Error{st.error().err, "punt device: " + st.error().what};
  }
  rtnl::Offloads off;
  off.tso = false;
  off.gso = false;
  off.tx_csum = false;
  off.tx_vlan = false;
  if (Status st = rtnl::setOffloads(d->near_, off); !st) {
    (void)rtnl::deleteManagedLink(d->near_);
    return Error{st.error().err, "punt device: " + st.error().what};
  }
  return d;
}

PuntDevice::~PuntDevice() {
  if (!near_.empty()) (void)rtnl::deleteManagedLink(near_);
}

Status PuntDevice::setMtu(uint32_t mtu) {
  FileDesc sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return errnoError("punt device: socket");
  for (const std::string* name : {&near_, &far_}) {
    struct ifreq ifr = {};
    std::strncpy(ifr.ifr_name, name->c_str(), IFNAMSIZ - 1);
    ifr.ifr_mtu = int(mtu);
    if (::ioctl(sock.get(), SIOCSIFMTU, &ifr) != 0)
      return errnoError("punt device: MTU " + std::to_string(mtu) + " on " + *name);
  }
  mtu_ = mtu;
  return {};
}

uint64_t PuntDevice::dropped() const {
  std::ifstream in("/sys/class/net/" + near_ + "/statistics/tx_dropped");
  uint64_t v = 0;
  in >> v;
  return v;
}

}  // namespace vdev::datapath
