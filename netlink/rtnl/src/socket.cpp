#include "socket.h"

#include "base/fd.h"
#include "base/netns.h"

#include <linux/netlink.h>
#include <netlink/errno.h>
#include <netlink/handlers.h>
#include <sched.h>
#include <sys/socket.h>

#include <cerrno>
#include <optional>
#include <system_error>
#include <thread>

namespace vdev::rtnl::detail {

namespace {

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

// libnl's NLMSG_ERROR hook. `e` points into the received message, just after
// its nlmsghdr (libnl passes nlmsg_data(hdr)), so the header and the
// extended-ack attributes after the nlmsgerr can be reached from it.
int onKernelError(struct sockaddr_nl*, struct nlmsgerr* e, void* arg) {
  auto* st = static_cast<RtnlSocket::State*>(arg);
  st->kernelErr = e->error < 0 ? -e->error : e->error;
  st->extack.clear();

  const auto* hdr = reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(e) - NLMSG_HDRLEN);
  if (hdr->nlmsg_flags & NLM_F_ACK_TLVS) {
    // Layout (netlink_ack): nlmsghdr | nlmsgerr | [request payload unless
    // NLM_F_CAPPED] | attributes. NETLINK_CAP_ACK is set, but a kernel that
    // ignored it would echo the request, so both cases are handled.
    size_t off = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nlmsgerr));
    if (!(hdr->nlmsg_flags & NLM_F_CAPPED) && e->msg.nlmsg_len >= NLMSG_HDRLEN)
      off += NLMSG_ALIGN(e->msg.nlmsg_len - NLMSG_HDRLEN);
    const char* base = reinterpret_cast<const char*>(hdr);
    while (off + NLA_HDRLEN <= hdr->nlmsg_len) {
      const auto* a = reinterpret_cast<const nlattr*>(base + off);
      if (a->nla_len < NLA_HDRLEN || off + a->nla_len > hdr->nlmsg_len) break;
      if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG && a->nla_len > NLA_HDRLEN) {
        const char* s = base + off + NLA_HDRLEN;
        st->extack.assign(s, strnlen(s, a->nla_len - NLA_HDRLEN));
      }
      off += NLA_ALIGN(a->nla_len);
    }
  }
  // NL_STOP: libnl ends the receive and returns -nl_syserr2nlerr(error).
  return NL_STOP;
}

}  // namespace

int nlErrno(int nlerr) {
  switch (nlerr < 0 ? -nlerr : nlerr) {
    case 0: return 0;
    case NLE_INTR: return EINTR;
    case NLE_BAD_SOCK: return EBADF;
    case NLE_AGAIN: return EAGAIN;
    case NLE_NOMEM: return ENOMEM;
    case NLE_EXIST: return EEXIST;
    case NLE_INVAL: return EINVAL;
    case NLE_RANGE: return ERANGE;
    case NLE_MSGSIZE: return EMSGSIZE;
    case NLE_OPNOTSUPP: return EOPNOTSUPP;
    case NLE_AF_NOSUPPORT: return EAFNOSUPPORT;
    case NLE_OBJ_NOTFOUND: return ENOENT;
    case NLE_NOADDR: return EADDRNOTAVAIL;
    case NLE_BUSY: return EBUSY;
    case NLE_PROTO_MISMATCH: return EPROTONOSUPPORT;
    case NLE_NOACCESS: return EACCES;
    case NLE_PERM: return EPERM;
    case NLE_NODEV: return ENODEV;
    case NLE_MSG_TRUNC: return EMSGSIZE;
    case NLE_DUMP_INTR: return EAGAIN;  // the dump changed underneath: retry
    default: return EIO;
  }
}

Error RtnlSocket::error(int rc, std::string what) const {
  if (s_->kernelErr != 0) {
    if (!s_->extack.empty()) what += " (kernel: " + s_->extack + ")";
    return Error{s_->kernelErr, std::move(what)};
  }
  int err = nlErrno(rc);
  if (err == EIO) what += std::string(" (libnl: ") + nl_geterror(rc) + ")";
  return Error{err, std::move(what)};
}

Result<RtnlSocket> RtnlSocket::open() {
  auto st = std::make_unique<State>();
  st->sock.reset(nl_socket_alloc());
  if (!st->sock) return Error{ENOMEM, "open rtnetlink socket"};
  int rc = nl_connect(st->sock.get(), NETLINK_ROUTE);
  if (rc < 0) return Error{nlErrno(rc), "open rtnetlink socket"};

  // Ask for the kernel's explanation of errors, without an echo of the
  // request. Both are best effort: older kernels send neither.
  int fd = nl_socket_get_fd(st->sock.get());
  int one = 1;
  (void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
  (void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);

  // The socket's callback set is shared by every request made on it
  // (nl_send_sync and nl_pickup clone it), so one hook covers them all.
  struct nl_cb* cb = nl_socket_get_cb(st->sock.get());
  if (!cb) return Error{ENOMEM, "open rtnetlink socket"};
  nl_cb_err(cb, NL_CB_CUSTOM, onKernelError, st.get());
  nl_cb_put(cb);
  return RtnlSocket(std::move(st));
}

Result<RtnlSocket> RtnlSocket::openInNetns(int nsfd, const std::string& nsDesc) {
  // A netlink socket belongs to the namespace it was created in for its
  // whole life: create it there (base/netns.h), use it from here.
  return runInNetns(nsfd, nsDesc, [] { return open(); });
}

Result<RtnlSocket> RtnlSocket::open(const NetnsRef& netns) {
  if (netns.isCurrent()) return open();
  auto fd = netns.open();
  if (!fd) return fd.error();
  FileDesc nsfd(*fd);
  return openInNetns(nsfd.get(), netns.describe());
}

Result<LinkPtr> getKernelLink(RtnlSocket& sk, const std::string& name, const std::string& what) {
  rtnl_link* raw = nullptr;
  int rc = sk.run([&](nl_sock* s) { return rtnl_link_get_kernel(s, 0, name.c_str(), &raw); });
  LinkPtr link(raw);
  if (rc < 0) return sk.error(rc, what);
  if (!link) return Error{ENODEV, what};
  return link;
}

}  // namespace vdev::rtnl::detail
