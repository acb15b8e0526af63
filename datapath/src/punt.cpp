#include "datapath/punt.h"

#include <fstream>

#include "rtnl/link.h"

namespace vdev::datapath {

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

uint64_t PuntDevice::dropped() const {
  std::ifstream in("/sys/class/net/" + near_ + "/statistics/tx_dropped");
  uint64_t v = 0;
  in >> v;
  return v;
}

}  // namespace vdev::datapath
