// Link state: a port transmits only while its device is up and has carrier
// (IFF_UP and IFF_RUNNING). A port whose link goes down is taken down like a
// deleted one -- frames for it are counted as port_down instead of being
// parked on its TX ring and delivered stale later -- and opened again when
// the link comes back. A deleted device waits for one of the same name --
// for a device vdev made, only for one that carries the port's identity
// (DeviceIdentity: deviceIsOwn()).
//
// The states and their transitions are Link's (link_state.h); this file
// looks at the device and the link and says which transition happened.
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "datapath/datapath.h"
#include "rtnl/link.h"

namespace vdev::datapath {

Status deviceIsOwn(const std::string& name, int ifindex, const DeviceIdentity& id) {
  auto l = rtnl::getLink(name);
  if (!l) return l.error();
  if (l->ifindex != ifindex) return Error{ENODEV, "it was replaced while being looked at"};
  const char* kind = id.tap ? "tun" : id.netkit ? "netkit" : "veth";
  if (l->kind != kind)
    return Error{EPERM, "it is " + (l->kind.empty() ? std::string("a device without a kind") : "a " + l->kind) +
                            " device, not " + (id.tap ? "a tap" : id.netkit ? "a netkit" : "a veth")};
  if (l->alias != id.alias)
    return Error{EPERM, "its alias is " + (l->alias.empty() ? std::string("empty") : "'" + l->alias + "'") +
                            ": not the device vdev made for the port"};
  if (id.tap && id.check_owner) {
    auto owner = rtnl::tunOwner(name, ifindex);
    if (!owner) return owner.error();
    if (*owner != id.tun_owner) {
      auto uid = [](const std::optional<uid_t>& u) { return u ? "uid " + std::to_string(*u) : std::string("no one"); };
      return Error{EPERM, "its tun owner is " + uid(*owner) + ", not " +
                              uid(id.tun_owner ? std::optional<uid_t>(uid_t(*id.tun_owner)) : std::nullopt)};
    }
  }
  return {};
}

void Datapath::checkLink(Port& p) {
  // A port without a device (unit tests): nothing to look at.
  if (p.ifindex() == 0 && p.link().state() != LinkState::kAbsent) return;
  checkLinkNow(p);
  fast_sync_.syncPort(p);
}

void Datapath::refreshMtu(Port& p) {
  struct ifreq ifr = {};
  std::strncpy(ifr.ifr_name, p.name().c_str(), IFNAMSIZ - 1);
  if (::ioctl(ctl_sock_.get(), SIOCGIFMTU, &ifr) != 0 || uint32_t(ifr.ifr_mtu) == p.mtu()) return;
  p.setMtu(uint32_t(ifr.ifr_mtu));
  if (tc_) tc_->setMtu(p.index(), p.mtu());  // the skb path's row, if the port has one
}

void Datapath::checkUplinkMtus() {
  const Port* up = nullptr;
  for (const Port* p : ports_.active())
    if (p->isUplink() && p->mtu() && (!up || p->mtu() < up->mtu())) up = p;
  for (Port* p : ports_.active()) {
    const bool over = up && !p->isUplink() && p->mtu() > up->mtu();
    if (over && !p->mtuOverUplink())
      std::fprintf(stderr,
                   "vdevd: warning: port %s: MTU %u is larger than uplink %s's %u: its frames to other hosts longer "
                   "than that are dropped (oversize); give it MTU %u (vdev-cni: \"mtu\" or \"uplink\")\n",
                   p->name().c_str(), p->mtu(), up->name().c_str(), up->mtu(), up->mtu());
    p->setMtuOverUplink(over);
  }
}

void Datapath::killPort(Port& p, const char* why, bool forget_macs) {
  std::fprintf(stderr, "vdevd: port %s: %s; detached, its frames returned\n", p.name().c_str(), why);
  p.shutdown(*pool_);
  fill_.noteClosed();  // its fill rings' frames are back
  fast_sync_.syncPort(p);
  // A link that is only down keeps its learned MACs: frames for them are
  // counted as port_down rather than flooded to every other port (another
  // guest's traffic is not theirs to see). A deleted device forgets them.
  if (forget_macs) fdb_.flushPort(p.index());
}

void Datapath::checkLinkNow(Port& p) {
  Link& link = p.link();
  if (link.state() == LinkState::kAbsent) {
    // A configured port whose device comes back (same name) is attached
    // again; a port of a device vdev made, only if the device is its own.
    const int idx = int(::if_nametoindex(p.name().c_str()));
    if (!idx) {
      if (p.refusedIfindex()) p.refuseDevice(0, {});  // the device it refused is gone too
      return;
    }
    if (p.identity()) {
      if (idx == p.refusedIfindex()) return;  // looked at already: still not its own
      if (Status own = deviceIsOwn(p.name(), idx, *p.identity()); !own) {
        p.refuseDevice(idx, own.error().what);
        std::fprintf(stderr, "vdevd: port %s: not attached to the device now named %s (ifindex %d): %s; "
                     "it waits for its own\n", p.name().c_str(), p.name().c_str(), idx, own.error().what.c_str());
        return;
      }
    }
    if (auto st = p.attachDevice(*pool_, anchors()); !st) {
      if (link.report())
        std::fprintf(stderr, "vdevd: port %s: device is back, but: %s\n", p.name().c_str(),
                     st.error().message().c_str());
      return;
    }
    if (p.identity() && p.ifindex() != idx) {
      // The name moved to another device between the check and the attach.
      link.gone();
      p.detachXdp();
      killPort(p, "device replaced while being attached", true);
      return;
    }
    for (auto& q : p.queues()) refill(*q);
    p.applyHost(tc_.get());  // the new program, as the old one was (the addresses follow within a second)
    std::fprintf(stderr, "vdevd: port %s: device is back (ifindex %d); attached again\n",
                 p.name().c_str(), p.ifindex());
    return;
  }
  const unsigned idx = ::if_nametoindex(p.name().c_str());
  int err = 0;
  if (p.live())
    for (auto& q : p.queues())
      if (q->xsk && !err) err = q->xsk->pendingError();
  if (idx != unsigned(p.ifindex()) || (err && err != ENETDOWN)) {
    link.gone();
    p.forgetProgram();
    killPort(p, idx ? "device replaced" : "device gone", true);
    return;
  }
  struct ifreq ifr = {};
  std::strncpy(ifr.ifr_name, p.name().c_str(), IFNAMSIZ - 1);
  const bool up = ::ioctl(ctl_sock_.get(), SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP) &&
                  (ifr.ifr_flags & IFF_RUNNING);
  if (!up) link.down();  // a wait for the kernel ends; a new one starts when the link is next up
  if (p.live() && (!up || err == ENETDOWN)) {
    killPort(p, "link down", false);
  } else if (!p.live() && up) {
    Link::Flap flap;
    bool waits;
    const bool may = link.mayAttach(monotonicNs(), flap, waits);
    if (flap == Link::Flap::kStarted)
      std::fprintf(stderr,
                   "vdevd: port %s: the link flapped more than %u times in a second: each time it comes up, "
                   "the port waits before it is attached again (%llu ms, doubling up to %llu ms, counted as "
                   "link.flap_waits), until it stays down or up for %llu s\n",
                   p.name().c_str(), kFlapBurst, (unsigned long long)(kFlapBackoffMinNs / 1000000),
                   (unsigned long long)(kFlapBackoffMaxNs / 1000000), (unsigned long long)(kFlapCalmNs / 1000000000));
    else if (flap == Link::Flap::kCalm)
      std::fprintf(stderr, "vdevd: port %s: the link stopped flapping; attached again at once from now on\n",
                   p.name().c_str());
    if (waits) p.counters()[kLinkFlapWaits].add(1);
    if (!may) {
      relink_.armAt(link.reattachAt());  // the sockets are opened when the wait is over
      return;
    }
    // A veth's peer moved between namespaces takes the link down and up:
    // the skb fast path's way into it follows (Port::redirectPeer).
    if (p.refreshPeerNetns() && p.tcAttached() && tc_) tc_->setPeer(p.index(), p.redirectPeer());
    if (auto st = p.openSockets(*pool_, anchors()); !st) {
      p.shutdown(*pool_);
      const uint64_t now = monotonicNs();
      if (st.error().err == EBUSY && link.busy(now)) {
        relink_.arm(now);  // the kernel is still releasing the old sockets: again in a moment
        return;
      }
      if (link.report())
        std::fprintf(stderr, "vdevd: port %s: link up, but: %s\n", p.name().c_str(), st.error().message().c_str());
      return;
    }
    const uint64_t now = monotonicNs();
    for (auto& q : p.queues()) refill(*q);
    const uint64_t waited = link.bound(now);
    const std::string after =
        waited ? " (after " + std::to_string(waited / 1000000) + " ms for the kernel to release its old sockets)" : "";
    std::fprintf(stderr, "vdevd: port %s: link up; attached again%s\n", p.name().c_str(), after.c_str());
  }
  if (p.live() && p.unboundQueues()) {
    // A multi-queue tap grows queues as the VM opens them.
    auto n = p.bindNewQueues(*pool_, anchors());
    if (!n) {
      if (link.report())
        std::fprintf(stderr, "vdevd: port %s: new queue, but: %s\n", p.name().c_str(),
                     n.error().message().c_str());
    } else if (*n) {
      for (auto& q : p.queues()) refill(*q);
      std::fprintf(stderr, "vdevd: port %s: %u more queue(s) bound, %u of %zu still absent\n",
                   p.name().c_str(), *n, p.unboundQueues(), p.queues().size());
    }
  }
}

void Datapath::relink() {
  relink_.fired();  // checkLink arms it again for a port still waiting
  const uint64_t now = monotonicNs();
  for (Port* p : ports_.active()) {
    const Link& l = p->link();
    // Waiting for the kernel, or a flapping link whose wait is over.
    if (l.state() == LinkState::kReleasing || (l.state() == LinkState::kDown && l.reattachAt() && now >= l.reattachAt()))
      checkLink(*p);
  }
}

}  // namespace vdev::datapath
