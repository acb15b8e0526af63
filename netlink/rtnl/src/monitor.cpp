#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include <cerrno>
#include <vector>

#include "socket.h"
#include "rtnl/monitor.h"

namespace vdev::rtnl {

using detail::NlSockPtr;
using detail::nlErrno;

namespace {

constexpr int kRcvBuf = 1 << 20;

}  // namespace

const char* linkEventTypeName(LinkEvent::Type t) {
  return t == LinkEvent::Type::kNew ? "new" : "del";
}

struct LinkMonitor::State {
  NlSockPtr sock;
  // Filled by the libnl callback, delivered after libnl returns: the user's
  // callback never runs (or throws) inside C code.
  std::vector<LinkEvent> pending;
  bool addr_changed = false;  // an RTM_NEWADDR / RTM_DELADDR was seen

  // NL_CB_VALID: one RTM_NEWLINK/RTM_DELLINK notification. Parsed here from
  // the attributes directly (ifinfomsg + IFLA_IFNAME/IFLA_MTU): all an event
  // needs, and no dependence on libnl's object parser accepting every
  // attribute a newer kernel sends.
  static int onMessage(struct nl_msg* msg, void* arg) {
    auto* st = static_cast<State*>(arg);
    nlmsghdr* h = nlmsg_hdr(msg);
    if (h->nlmsg_type == RTM_NEWADDR || h->nlmsg_type == RTM_DELADDR) {
      st->addr_changed = true;
      return NL_OK;
    }
    if (h->nlmsg_type != RTM_NEWLINK && h->nlmsg_type != RTM_DELLINK) return NL_OK;
    if (!nlmsg_valid_hdr(h, sizeof(ifinfomsg))) return NL_OK;
    const auto* ifi = static_cast<const ifinfomsg*>(nlmsg_data(h));
    // AF_BRIDGE (and other families') link messages describe a device's role
    // in a bridge, not the device: a bridge port leaving its bridge sends
    // RTM_DELLINK/AF_BRIDGE while the device lives on.
    if (ifi->ifi_family != AF_UNSPEC) return NL_OK;

    nlattr* tb[IFLA_MAX + 1] = {};
    if (nlmsg_parse(h, sizeof(ifinfomsg), tb, IFLA_MAX, nullptr) < 0) return NL_OK;
    LinkEvent ev;
    ev.type = h->nlmsg_type == RTM_NEWLINK ? LinkEvent::Type::kNew : LinkEvent::Type::kDel;
    ev.ifindex = ifi->ifi_index;
    ev.flags = ifi->ifi_flags;
    ev.up = (ev.flags & IFF_UP) != 0;
    ev.carrier = (ev.flags & IFF_LOWER_UP) != 0;
    if (tb[IFLA_IFNAME] && nla_len(tb[IFLA_IFNAME]) > 0) {
      const char* s = static_cast<const char*>(nla_data(tb[IFLA_IFNAME]));
      ev.name.assign(s, strnlen(s, static_cast<size_t>(nla_len(tb[IFLA_IFNAME]))));
    }
    if (tb[IFLA_MTU] && nla_len(tb[IFLA_MTU]) >= static_cast<int>(sizeof(uint32_t)))
      ev.mtu = static_cast<int>(nla_get_u32(tb[IFLA_MTU]));
    st->pending.push_back(std::move(ev));
    return NL_OK;
  }
};

LinkMonitor::LinkMonitor(std::unique_ptr<State> s) : s_(std::move(s)) {}
LinkMonitor::LinkMonitor(LinkMonitor&&) noexcept = default;
LinkMonitor& LinkMonitor::operator=(LinkMonitor&&) noexcept = default;
LinkMonitor::~LinkMonitor() = default;

Result<LinkMonitor> LinkMonitor::open() {
  const std::string what = "open link monitor";
  auto st = std::make_unique<State>();
  st->sock.reset(nl_socket_alloc());
  if (!st->sock) return Error{ENOMEM, what};
  nl_sock* sk = st->sock.get();

  // Notifications carry no sequence number of ours.
  nl_socket_disable_seq_check(sk);
  // Peek at each datagram's size first: a link message with many attributes
  // (VF info, stats) can exceed libnl's default one-page buffer.
  nl_socket_enable_msg_peek(sk);
  if (int rc = nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, State::onMessage, st.get()); rc < 0)
    return Error{nlErrno(rc), what};
  if (int rc = nl_connect(sk, NETLINK_ROUTE); rc < 0) return Error{nlErrno(rc), what + ": connect"};
  if (int rc = nl_socket_add_membership(sk, RTNLGRP_LINK); rc < 0)
    return Error{nlErrno(rc), what + ": join RTNLGRP_LINK"};
  if (int rc = nl_socket_add_memberships(sk, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR, 0); rc < 0)
    return Error{nlErrno(rc), what + ": join RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR"};
  if (int rc = nl_socket_set_nonblocking(sk); rc < 0)
    return Error{nlErrno(rc), what + ": set non-blocking"};

  // A burst of link events (a container runtime starting 100 containers)
  // must not overflow the queue while the control thread is busy. SO_RCVBUFFORCE
  // goes past net.core.rmem_max with CAP_NET_ADMIN; without it, SO_RCVBUF
  // gets what rmem_max allows. Either way overflow is reported, not lost.
  int fd = nl_socket_get_fd(sk);
  int size = kRcvBuf;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) != 0)
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  return LinkMonitor(std::move(st));
}

int LinkMonitor::fd() const { return nl_socket_get_fd(s_->sock.get()); }

Result<size_t> LinkMonitor::processEvents(const LinkEventCallback& cb, size_t maxDatagrams) {
  s_->pending.clear();
  bool overrun = false;
  Error failure;
  for (size_t i = 0; i < maxDatagrams; i++) {
    // One call reads and dispatches one datagram (notifications are not
    // multipart). Non-blocking: -NLE_AGAIN once the queue is empty.
    int rc = nl_recvmsgs_default(s_->sock.get());
    if (rc >= 0) continue;
    if (rc == -NLE_AGAIN) break;
    // The kernel reports a receive-queue overflow as ENOBUFS on the next
    // read, which libnl folds into -NLE_NOMEM, as it does a failed malloc.
    // Both are answered the same way (resynchronise), which is harmless
    // for the second, so they are not told apart.
    if (rc == -NLE_NOMEM) {
      overrun = true;
      break;
    }
    failure = Error{nlErrno(rc), std::string("read link events (libnl: ") + nl_geterror(rc) + ")"};
    break;
  }
  std::vector<LinkEvent> events;
  events.swap(s_->pending);
  for (const LinkEvent& ev : events) cb(ev);

  if (overrun) {
    s_->addr_changed = true;
    return Error{ENOBUFS,
                 "read link events: events were lost (receive queue overflow); resynchronise with snapshot()"};
  }
  if (failure.err != 0) return failure;
  return events.size();
}

bool LinkMonitor::takeAddressChange() {
  const bool was = s_->addr_changed;
  s_->addr_changed = false;
  return was;
}

Status LinkMonitor::snapshot(const LinkEventCallback& cb) const {
  auto links = listLinks();
  if (!links) return links.error();
  for (const LinkState& l : *links) {
    LinkEvent ev;
    ev.ifindex = l.ifindex;
    ev.name = l.name;
    ev.flags = l.flags;
    ev.up = l.up;
    ev.carrier = l.carrier;
    ev.mtu = l.mtu;
    cb(ev);
  }
  return {};
}

}  // namespace vdev::rtnl
