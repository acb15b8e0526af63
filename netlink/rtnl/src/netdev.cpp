// The netdev genetlink family: a device's XDP features.
#include "rtnl/netdev.h"

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include "socket.h"

namespace vdev::rtnl {

namespace {

// The "netdev" generic netlink family (linux/netdev.h, newer than Debian's
// kernel headers): DEV_GET answers a device's XDP features.
constexpr uint8_t kNetdevCmdDevGet = 1;
constexpr int kNetdevAttrIfindex = 1;
constexpr int kNetdevAttrXdpFeatures = 3;
constexpr uint64_t kNetdevXdpActBasic = 1u << 0;
constexpr uint64_t kNetdevXdpActNdoXmit = 1u << 2;
constexpr uint64_t kNetdevXdpActXskZerocopy = 1u << 3;
// QUEUE_GET (Linux 6.8+) and its attributes; "xsk" from Linux 6.15.
constexpr uint8_t kNetdevCmdQueueGet = 10;
constexpr int kNetdevAttrQueueId = 1;
constexpr int kNetdevAttrQueueIfindex = 2;
constexpr int kNetdevAttrQueueType = 3;
constexpr int kNetdevAttrQueueXsk = 7;
constexpr uint32_t kNetdevQueueTypeRx = 0;

using detail::NlMsgPtr;

}  // namespace

struct XdpFeaturesMonitor::State {
  detail::NlSockPtr sock;
  std::vector<int> seen;  // ifindexes notified
  static int onMessage(struct nl_msg* m, void* arg) {
    struct nlattr* tb[kNetdevAttrXdpFeatures + 1] = {};
    if (genlmsg_parse(nlmsg_hdr(m), 0, tb, kNetdevAttrXdpFeatures, nullptr) == 0 && tb[kNetdevAttrIfindex])
      static_cast<State*>(arg)->seen.push_back(int(nla_get_u32(tb[kNetdevAttrIfindex])));
    return NL_OK;
  }
};

XdpFeaturesMonitor::XdpFeaturesMonitor(std::unique_ptr<State> s) : s_(std::move(s)) {}
XdpFeaturesMonitor::XdpFeaturesMonitor(XdpFeaturesMonitor&&) noexcept = default;
XdpFeaturesMonitor& XdpFeaturesMonitor::operator=(XdpFeaturesMonitor&&) noexcept = default;
XdpFeaturesMonitor::~XdpFeaturesMonitor() = default;

Result<XdpFeaturesMonitor> XdpFeaturesMonitor::open() {
  auto st = std::make_unique<State>();
  st->sock.reset(nl_socket_alloc());
  if (!st->sock) return makeError(ENOMEM, "netlink socket");
  nl_sock* sk = st->sock.get();
  nl_socket_disable_seq_check(sk);  // notifications carry no sequence number of ours
  if (int err = genl_connect(sk); err < 0) return makeError(EIO, std::string("genetlink: ") + nl_geterror(err));
  const int grp = genl_ctrl_resolve_grp(sk, "netdev", "mgmt");
  if (grp < 0) return makeError(EOPNOTSUPP, "no netdev genetlink family with a mgmt group");
  if (int err = nl_socket_add_membership(sk, grp); err < 0)
    return makeError(EIO, std::string("netdev mgmt group: ") + nl_geterror(err));
  if (int err = nl_socket_set_nonblocking(sk); err < 0)
    return makeError(EIO, std::string("netdev monitor: ") + nl_geterror(err));
  nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, State::onMessage, st.get());
  return XdpFeaturesMonitor(std::move(st));
}

int XdpFeaturesMonitor::fd() const { return nl_socket_get_fd(s_->sock.get()); }

Result<std::vector<int>> XdpFeaturesMonitor::processEvents(size_t maxDatagrams) {
  s_->seen.clear();
  for (size_t i = 0; i < maxDatagrams; i++) {
    const int rc = nl_recvmsgs_default(s_->sock.get());
    if (rc >= 0) continue;
    if (rc == -NLE_AGAIN) break;
    // A receive-queue overflow (ENOBUFS) comes back as -NLE_NOMEM (see
    // LinkMonitor::processEvents); anything else is treated alike: ask again.
    return makeError(ENOBUFS, std::string("netdev notifications lost (libnl: ") + nl_geterror(rc) + ")");
  }
  return std::move(s_->seen);
}

namespace {

// A genetlink socket that has sent the netdev family the request cmd with
// the u32 attributes attrs (attribute, value); its reply is to be read.
Result<detail::NlSockPtr> sendNetdev(uint8_t cmd, const char* what,
                                     std::initializer_list<std::pair<int, uint32_t>> attrs) {
  detail::NlSockPtr sk(nl_socket_alloc());
  if (!sk) return makeError(ENOMEM, "netlink socket");
  if (int err = genl_connect(sk.get()); err < 0)
    return makeError(EIO, std::string("genetlink: ") + nl_geterror(err));
  const int family = genl_ctrl_resolve(sk.get(), "netdev");
  if (family < 0) return makeError(EOPNOTSUPP, "no netdev genetlink family (kernel before 6.3)");
  NlMsgPtr msg(nlmsg_alloc());
  if (!msg) return makeError(ENOMEM, "netlink message");
  genlmsg_put(msg.get(), NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, 0, cmd, 1);
  for (const auto& [attr, v] : attrs) nla_put_u32(msg.get(), attr, v);
  if (int err = nl_send_auto(sk.get(), msg.get()); err < 0)
    return makeError(EIO, std::string("netdev ") + what + ": " + nl_geterror(err));
  return sk;
}

}  // namespace

bool hasNetdevFamily() {
  detail::NlSockPtr sk(nl_socket_alloc());
  if (!sk || genl_connect(sk.get()) < 0) return false;
  return genl_ctrl_resolve(sk.get(), "netdev") >= 0;
}

namespace {

// NETDEV_A_DEV_XDP_FEATURES of the device (DEV_GET).
Result<uint64_t> xdpFeatures(int ifindex) {
  auto sent = sendNetdev(kNetdevCmdDevGet, "DEV_GET", {{kNetdevAttrIfindex, uint32_t(ifindex)}});
  if (!sent) return sent.error();
  detail::NlSockPtr sk = std::move(sent.value());
  int err;
  struct Ctx {
    bool found = false;
    uint64_t features = 0;
  } ctx;
  nl_socket_modify_cb(
      sk.get(), NL_CB_VALID, NL_CB_CUSTOM,
      [](struct nl_msg* m, void* arg) -> int {
        auto* c = static_cast<Ctx*>(arg);
        struct nlattr* tb[kNetdevAttrXdpFeatures + 1] = {};
        if (genlmsg_parse(nlmsg_hdr(m), 0, tb, kNetdevAttrXdpFeatures, nullptr) == 0 &&
            tb[kNetdevAttrXdpFeatures]) {
          c->found = true;
          c->features = nla_get_u64(tb[kNetdevAttrXdpFeatures]);
        }
        return NL_OK;
      },
      &ctx);
  if (err = nl_recvmsgs_default(sk.get()); err < 0)
    return makeError(EIO, std::string("netdev DEV_GET: ") + nl_geterror(err));
  if (!ctx.found) return makeError(EIO, "netdev DEV_GET: no XDP features in the reply");
  return ctx.features;
}

}  // namespace

Result<bool> deviceTakesXdpFrames(int ifindex) {
  auto f = xdpFeatures(ifindex);
  if (!f) return f.error();
  return (*f & kNetdevXdpActNdoXmit) != 0;
}

Result<bool> deviceHasNativeXdp(int ifindex) {
  auto f = xdpFeatures(ifindex);
  if (!f) return f.error();
  return (*f & kNetdevXdpActBasic) != 0;
}

Result<bool> deviceOffersXskZerocopy(int ifindex) {
  auto f = xdpFeatures(ifindex);
  if (!f) return f.error();
  return (*f & kNetdevXdpActXskZerocopy) != 0;
}

Result<bool> rxQueueHasXsk(int ifindex, uint32_t queue) {
  auto sent = sendNetdev(kNetdevCmdQueueGet, "QUEUE_GET",
                         {{kNetdevAttrQueueIfindex, uint32_t(ifindex)},
                          {kNetdevAttrQueueType, kNetdevQueueTypeRx},
                          {kNetdevAttrQueueId, queue}});
  if (!sent) return sent.error();
  detail::NlSockPtr sk = std::move(sent.value());
  int err;
  struct Ctx {
    bool found = false;
    bool xsk = false;
  } ctx;
  nl_socket_modify_cb(
      sk.get(), NL_CB_VALID, NL_CB_CUSTOM,
      [](struct nl_msg* m, void* arg) -> int {
        auto* c = static_cast<Ctx*>(arg);
        struct nlattr* tb[kNetdevAttrQueueXsk + 1] = {};
        if (genlmsg_parse(nlmsg_hdr(m), 0, tb, kNetdevAttrQueueXsk, nullptr) == 0 && tb[kNetdevAttrQueueId]) {
          c->found = true;
          c->xsk = tb[kNetdevAttrQueueXsk] != nullptr;
        }
        return NL_OK;
      },
      &ctx);
  if (err = nl_recvmsgs_default(sk.get()); err < 0) {
    // libnl's codes: no such device or queue, or a kernel without QUEUE_GET.
    if (err == -NLE_OBJ_NOTFOUND || err == -NLE_NODEV || err == -NLE_RANGE || err == -NLE_INVAL)
      return makeError(ENOENT, std::string("netdev QUEUE_GET: ") + nl_geterror(err));
    if (err == -NLE_OPNOTSUPP)
      return makeError(EOPNOTSUPP, std::string("netdev QUEUE_GET: ") + nl_geterror(err));
    return makeError(EIO, std::string("netdev QUEUE_GET: ") + nl_geterror(err));
  }
  if (!ctx.found) return makeError(EIO, "netdev QUEUE_GET: no queue in the reply");
  return ctx.xsk;
}

}  // namespace vdev::rtnl
