// The netdev genetlink family: a device's XDP features.
#include "rtnl/netdev.h"

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include <cstdint>
#include <memory>
#include <string>

#include "socket.h"

namespace vdev::rtnl {

namespace {

// The "netdev" generic netlink family (linux/netdev.h, newer than Debian's
// kernel headers): DEV_GET answers a device's XDP features.
constexpr uint8_t kNetdevCmdDevGet = 1;
constexpr int kNetdevAttrIfindex = 1;
constexpr int kNetdevAttrXdpFeatures = 3;
constexpr uint64_t kNetdevXdpActNdoXmit = 1u << 2;

struct NlMsgDeleter {
  void operator()(nl_msg* m) const noexcept { nlmsg_free(m); }
};
using NlMsgPtr = std::unique_ptr<nl_msg, NlMsgDeleter>;

}  // namespace

Result<bool> deviceTakesXdpFrames(int ifindex) {
  detail::NlSockPtr sk(nl_socket_alloc());
  if (!sk) return makeError(ENOMEM, "netlink socket");
  if (int err = genl_connect(sk.get()); err < 0)
    return makeError(EIO, std::string("genetlink: ") + nl_geterror(err));
  const int family = genl_ctrl_resolve(sk.get(), "netdev");
  if (family < 0) return makeError(EOPNOTSUPP, "no netdev genetlink family (kernel before 6.3)");
  int err;
  {
    NlMsgPtr msg(nlmsg_alloc());
    if (!msg) return makeError(ENOMEM, "netlink message");
    genlmsg_put(msg.get(), NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, 0, kNetdevCmdDevGet, 1);
    nla_put_u32(msg.get(), kNetdevAttrIfindex, uint32_t(ifindex));
    err = nl_send_auto(sk.get(), msg.get());
  }
  if (err < 0) return makeError(EIO, std::string("netdev DEV_GET: ") + nl_geterror(err));
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
  return (ctx.features & kNetdevXdpActNdoXmit) != 0;
}

}  // namespace vdev::rtnl
