#include "datapath/tc_path.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "datapath/fast_path.h"
#include "vdev_tc.skel.h"
#include "bpf_host_addrs.h"
#include "bpf_limits.h"
#include "vdev_xdp_shared.h"

// Newer than Debian's headers (Linux 6.6+): tcx, the multi-program tc hook.
#ifndef BPF_TCX_INGRESS
#define BPF_TCX_INGRESS 46
#endif
#ifndef BPF_F_BEFORE
#define BPF_F_BEFORE (1U << 3)
#endif
// Linux 6.7+: a netkit's programs (bpf_attach_type).
#ifndef BPF_NETKIT_PRIMARY
#define BPF_NETKIT_PRIMARY 54
#endif
#ifndef BPF_NETKIT_PEER
#define BPF_NETKIT_PEER 55
#endif

namespace vdev::datapath {

namespace {

constexpr const char* kProgName = "vdev_tc_port";
constexpr const char* kCopyProgName = "vdev_tc_copy";
constexpr enum bpf_attach_type kTcxIngress = static_cast<enum bpf_attach_type>(BPF_TCX_INGRESS);

// tcx through BPF_PROG_ATTACH/DETACH/QUERY: libbpf 1.1 (Debian 12) predates
// tcx, and its wrappers fill the same attr fields (target_fd is the
// ifindex for tcx), so the raw calls are the honest version.
long sysBpf(int cmd, union bpf_attr* attr) { return ::syscall(__NR_bpf, cmd, attr, sizeof *attr); }

// Whether the program with this id is one of vdev's skb programs (by name:
// what a vdevd that died left behind is no program of this one's).
bool isVdevProg(uint32_t id) {
  const int fd = bpf_prog_get_fd_by_id(id);
  if (fd < 0) return false;
  const FileDesc own(fd);
  struct bpf_prog_info info = {};
  uint32_t len = sizeof info;
  return bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
         (std::strcmp(info.name, kProgName) == 0 || std::strcmp(info.name, kCopyProgName) == 0);
}

uint32_t progId(int prog_fd) {
  struct bpf_prog_info info = {};
  uint32_t len = sizeof info;
  return bpf_obj_get_info_by_fd(prog_fd, &info, &len) == 0 ? info.id : 0;
}

// ---- tcx (Linux 6.6+)

Status tcxAttach(int prog_fd, int ifindex, const std::string& what, bool first) {
  union bpf_attr a;
  std::memset(&a, 0, sizeof a);
  a.target_fd = uint32_t(ifindex);
  a.attach_bpf_fd = uint32_t(prog_fd);
  a.attach_type = kTcxIngress;
  a.attach_flags = first ? BPF_F_BEFORE : 0;  // first: ours decides before anyone else's
  if (sysBpf(BPF_PROG_ATTACH, &a) != 0) {
    const int e = errno;
    return Error{e, "attach " + what + (e == EINVAL ? " (a kernel with tcx, Linux 6.6 or later, is needed; "
                                                      "vdevd --tc-attach clsact uses classic tc)"
                                                    : "")};
  }
  return {};
}

// A program as a netkit's peer (or primary) program: a BPF link
// (BPF_LINK_CREATE, target the primary end's ifindex), first in the
// netkit's list. Raw, as for tcx: libbpf 1.1 knows no netkit.
Result<FileDesc> netkitAttach(int prog_fd, int ifindex, const std::string& ifname, bool primary) {
  union bpf_attr a;
  std::memset(&a, 0, sizeof a);
  a.link_create.prog_fd = uint32_t(prog_fd);
  a.link_create.target_fd = uint32_t(ifindex);  // target_ifindex in newer headers: the same field
  a.link_create.attach_type = static_cast<enum bpf_attach_type>(primary ? BPF_NETKIT_PRIMARY : BPF_NETKIT_PEER);
  a.link_create.flags = BPF_F_BEFORE;  // ours decides before anyone else's
  const long fd = sysBpf(BPF_LINK_CREATE, &a);
  if (fd < 0) {
    const int e = errno;
    return Error{e, std::string("attach the skb program as the netkit ") + (primary ? "primary" : "peer") +
                        " program of " + ifname +
                        (e == EINVAL ? " (a kernel with netkit, Linux 6.7 or later, is needed)" : "")};
  }
  return FileDesc(int(fd));
}

void tcxDetach(int prog_fd, int ifindex) {
  union bpf_attr a;
  std::memset(&a, 0, sizeof a);
  a.target_fd = uint32_t(ifindex);
  a.attach_bpf_fd = uint32_t(prog_fd);
  a.attach_type = kTcxIngress;
  (void)sysBpf(BPF_PROG_DETACH, &a);
}

// Detaches every program named kProgName or kCopyProgName at ifindex's tcx
// ingress: what a vdevd that died left behind. Nothing on a kernel without
// tcx (the query fails).
void tcxDetachStale(int ifindex) {
  uint32_t ids[64];
  union bpf_attr a;
  std::memset(&a, 0, sizeof a);
  a.query.target_fd = uint32_t(ifindex);
  a.query.attach_type = kTcxIngress;
  a.query.prog_ids = reinterpret_cast<uint64_t>(ids);
  a.query.prog_cnt = 64;
  if (sysBpf(BPF_PROG_QUERY, &a) != 0) return;
  for (uint32_t i = 0; i < a.query.prog_cnt && i < 64; i++) {
    if (!isVdevProg(ids[i])) continue;
    const int fd = bpf_prog_get_fd_by_id(ids[i]);
    if (fd < 0) continue;
    const FileDesc own(fd);
    tcxDetach(fd, ifindex);
  }
}

// ---- classic tc: clsact + cls_bpf in direct-action mode (libbpf's bpf_tc_*)

struct bpf_tc_hook ingressHook(int ifindex) {
  struct bpf_tc_hook h = {};
  h.sz = sizeof h;
  h.ifindex = ifindex;
  h.attach_point = BPF_TC_INGRESS;
  return h;
}

struct bpf_tc_opts slotOpts(uint16_t prio) {
  struct bpf_tc_opts o = {};
  o.sz = sizeof o;
  o.handle = kTcHandle;
  o.priority = prio;
  return o;
}

// The id of the program in vdev's slot (handle kTcHandle, priority prio)
// at ifindex's clsact ingress; 0 if there is none, or nothing can be read
// (no clsact; an empty one has no filter chain to ask: EINVAL).
uint32_t clsQuery(int ifindex, uint16_t prio) {
  const BpfQuiet quiet;  // no qdisc, no filter: an answer, not a warning
  const struct bpf_tc_hook h = ingressHook(ifindex);
  struct bpf_tc_opts o = slotOpts(prio);
  return bpf_tc_query(&h, &o) == 0 ? o.prog_id : 0;
}

void clsDetach(int ifindex, uint16_t prio) {
  const BpfQuiet quiet;  // gone already: nothing to say
  const struct bpf_tc_hook h = ingressHook(ifindex);
  const struct bpf_tc_opts o = slotOpts(prio);
  (void)bpf_tc_detach(&h, &o);
}

// vdev's filters a vdevd that died left at the clsact ingress (both slots),
// where the program is vdev's; anyone else's stay.
void clsDetachStale(int ifindex) {
  for (uint16_t prio : {kTcPortPrio, kTcCopyPrio})
    if (const uint32_t id = clsQuery(ifindex, prio); id && isVdevProg(id)) clsDetach(ifindex, prio);
}

std::string slotName(uint16_t prio) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "cls_bpf filter (handle 0x%x, priority %u)", kTcHandle, unsigned(prio));
  return buf;
}

// The program as vdev's filter in the slot of priority prio. The attach
// itself says who holds the slot: NLM_F_EXCL refuses a filter already at
// vdev's handle (EEXIST: replaced if its program is vdev's, else left
// alone), and the kernel refuses a bpf filter at a priority that holds
// another kind of filter, or one for another protocol (EINVAL).
Status clsAttach(int prog_fd, int ifindex, const std::string& what, const std::string& ifname, uint16_t prio,
                 bool& made) {
  made = false;
  // Every refusal below is an answer this function turns into its own
  // error (or acts on: EEXIST); libbpf's echo of the kernel's is noise.
  const BpfQuiet quiet;
  struct bpf_tc_hook h = ingressHook(ifindex);
  // The qdisc only if the device has none (a clsact, or an ingress qdisc,
  // whose filters attach the same way).
  if (int rc = bpf_tc_hook_create(&h); rc == 0) {
    made = true;
  } else if (rc != -EEXIST) {
    return makeError(-rc, "make the clsact qdisc of " + ifname + " for " + what);
  }
  const std::string where = " as the " + slotName(prio) + " at the clsact ingress of " + ifname;
  struct bpf_tc_opts o = slotOpts(prio);
  o.prog_fd = prog_fd;
  int rc = bpf_tc_attach(&h, &o);
  if (rc == -EEXIST) {
    const uint32_t held = clsQuery(ifindex, prio);
    if (!held || !isVdevProg(held))
      return Error{EBUSY, "attach " + what + where + ": another program" +
                              (held ? " (id " + std::to_string(held) + ")" : std::string()) +
                              " holds that handle; not replaced"};
    o = slotOpts(prio);  // a vdevd that died left it: replaced in one step, no moment without
    o.prog_fd = prog_fd;
    o.flags = BPF_TC_F_REPLACE;
    rc = bpf_tc_attach(&h, &o);
  }
  if (rc == -EINVAL)
    return Error{EINVAL, "attach " + what + where + ": another kind of filter, or one for another protocol, "
                                                    "holds priority " + std::to_string(prio)};
  if (rc != 0) return makeError(-rc, "attach " + what + where);
  return {};
}

}  // namespace

TcAttach probeTcAttach() {
  union bpf_attr a;
  std::memset(&a, 0, sizeof a);
  a.query.target_fd = 1;  // LOOPBACK_IFINDEX
  a.query.attach_type = kTcxIngress;
  return sysBpf(BPF_PROG_QUERY, &a) == 0 ? TcAttach::kTcx : TcAttach::kClsact;
}

void TcPath::SkelDeleter::operator()(struct ::vdev_tc* s) const noexcept { vdev_tc__destroy(s); }

Result<std::unique_ptr<TcPath>> TcPath::create(const FastPath* fast, TcAttach attach, uint32_t host_macs_max) {
  std::unique_ptr<TcPath> t(new TcPath());
  t->attach_ = attach == TcAttach::kAuto ? probeTcAttach() : attach;
  t->ncpu_ = libbpf_num_possible_cpus();
  if (t->ncpu_ <= 0) return makeError(-t->ncpu_, "skb path: count CPUs");
  t->percpu_.resize(size_t(t->ncpu_));
  t->skel_.reset(vdev_tc__open());
  if (!t->skel_) return errnoError("skb path: open BPF object");
  t->skel_->rodata->fast_enabled = fast ? 1 : 0;
  t->shares_fast_ = fast != nullptr;
  if (fast) {
    // The fast path's maps, shared with every XDP port's program.
    struct {
      struct bpf_map* map;
      int fd;
    } shared[] = {{t->skel_->maps.fast_fdb, fast->fdbFd()},
                  {t->skel_->maps.fast_ports, fast->portsFd()},
                  {t->skel_->maps.fast_stats, fast->statsFd()},
                  {t->skel_->maps.fast_ifindex, fast->ifindexFd()},
                  {t->skel_->maps.fast_capture, fast->captureFd()},
                  {t->skel_->maps.fast_capture_events, fast->captureEventsFd()},
                  {t->skel_->maps.fast_capture_missed, fast->captureMissedFd()},
                  {t->skel_->maps.fast_vlans, fast->vlansFd()}};
    for (const auto& m : shared)
      if (int rc = bpf_map__reuse_fd(m.map, m.fd); rc)
        return makeError(rc, std::string("skb path: share map ") + bpf_map__name(m.map));
  } else {
    // Never read without the fast path: keep them small.
    (void)bpf_map__set_max_entries(t->skel_->maps.fast_fdb, 1);
    (void)bpf_map__set_max_entries(t->skel_->maps.fast_capture, 1);
    (void)bpf_map__set_max_entries(t->skel_->maps.fast_capture_missed, 1);
    (void)bpf_map__set_max_entries(t->skel_->maps.fast_vlans, 1);
  }
  // Every port's MAC goes into tc_host_macs: a fixed 64 left the MACs of
  // the 65th port on switched and flooded instead of passed to the host.
  if (int rc = bpf_map__set_max_entries(t->skel_->maps.tc_host_macs, std::max<uint32_t>(host_macs_max, 1)); rc)
    return makeError(-rc, "skb path: size the host MAC map");
  if (vdev_tc__load(t->skel_.get())) return errnoError("skb path: load the tc program");
  t->prog_fd_ = bpf_program__fd(t->skel_->progs.vdev_tc_port);
  t->copy_fd_ = bpf_program__fd(t->skel_->progs.vdev_tc_copy);
  t->netkit_in_fd_ = bpf_program__fd(t->skel_->progs.vdev_tc_netkit_in);
  t->prog_id_ = progId(t->prog_fd_);
  t->copy_id_ = progId(t->copy_fd_);
  return t;
}

Status TcPath::attachProg(bool copy, int ifindex, const std::string& ifname, bool& made) {
  made = false;
  const int fd = copy ? copy_fd_ : prog_fd_;
  const std::string what = copy ? "the copy program" : "the tc program";
  if (attach_ == TcAttach::kTcx) {
    // What a vdevd that died left, at tcx, and at clsact if it ran with
    // --tc-attach clsact: a stale filter there would copy frames twice,
    // and holds the old program and its maps.
    tcxDetachStale(ifindex);
    clsDetachStale(ifindex);
    // The port program first, to decide before anyone; the copy program
    // last: it only copies what the others let through to the host.
    return tcxAttach(fd, ifindex, what + " at the tcx ingress of " + ifname, !copy);
  }
  tcxDetachStale(ifindex);  // a kernel with tcx, and a vdevd of --tc-attach tcx before
  // The other program's slot: vdev's only if a vdevd that died left it
  // (a port that was at the other hook then).
  const uint16_t other = copy ? kTcPortPrio : kTcCopyPrio;
  if (const uint32_t id = clsQuery(ifindex, other); id && isVdevProg(id)) clsDetach(ifindex, other);
  if (Status st = clsAttach(fd, ifindex, what, ifname, copy ? kTcCopyPrio : kTcPortPrio, made); !st) return st;
  if (made)
    std::fprintf(stderr, "vdevd: %s: made its clsact qdisc for vdev's skb program (left in place when it goes)\n",
                 ifname.c_str());
  return {};
}

void TcPath::detachProg(bool copy, int ifindex) {
  if (attach_ == TcAttach::kTcx) {
    tcxDetach(copy ? copy_fd_ : prog_fd_, ifindex);
    return;
  }
  // vdev's filter, and only while it holds this vdevd's program.
  const uint16_t prio = copy ? kTcCopyPrio : kTcPortPrio;
  if (const uint32_t id = clsQuery(ifindex, prio); id && id == (copy ? copy_id_ : prog_id_)) clsDetach(ifindex, prio);
}

TcPath::~TcPath() {
  for (size_t i = 0; i < rows_.size(); i++) {
    if (rows_[i].attached) detach(uint16_t(i));
    if (rows_[i].copy_ifindex) detachCopy(uint16_t(i));
  }
}

void TcPath::setHostPort(uint16_t port_index, bool on) {
  if (port_index >= VDEV_FAST_MAX_PORTS) return;
  Row& r = row(port_index);
  if (!r.indexed) return;  // a port at tc only
  const uint32_t f = on ? (r.flags | VDEV_TC_HOST) : (r.flags & ~uint32_t(VDEV_TC_HOST));
  if (f == r.flags) return;
  r.flags = f;
  writeRow(port_index);
}

Status TcPath::attachCopy(uint16_t port_index, int ifindex, const std::string& ifname, const PortLimits& limits) {
  if (port_index >= VDEV_FAST_MAX_PORTS || port_index >= VDEV_PUNT_MAX_VID)
    return Error{ENOSPC, "port " + ifname + ": index " + std::to_string(port_index) +
                             " beyond the skb path's port table (" + std::to_string(VDEV_FAST_MAX_PORTS) + ")"};
  Row& r = row(port_index);
  if (r.copy_ifindex == ifindex) return {};
  if (r.copy_ifindex) return Error{EBUSY, "port " + ifname + ": index " + std::to_string(port_index) +
                                              " has the copy program at another device"};
  if (auto st = setLimits(port_index, limits); !st) return st;
  uint32_t ifi = uint32_t(ifindex), k = port_index;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.tc_copy_index), &ifi, &k, BPF_ANY))
    return errnoError("skb path: copy index map for " + ifname);
  bool made = false;
  if (Status st = attachProg(true, ifindex, ifname, made); !st) {
    (void)bpf_map_delete_elem(bpf_map__fd(skel_->maps.tc_copy_index), &ifi);
    return st;
  }
  row(port_index).copy_ifindex = ifindex;
  row(port_index).clsact_made = made;
  return {};
}

LimitDrops TcPath::detachCopy(uint16_t port_index) {
  Row& r = row(port_index);
  if (!r.copy_ifindex) return {};
  detachProg(true, r.copy_ifindex);
  return forgetCopy(port_index);
}

LimitDrops TcPath::forgetCopy(uint16_t port_index) {
  Row& r = row(port_index);
  if (!r.copy_ifindex) return {};
  uint32_t ifi = uint32_t(r.copy_ifindex);
  (void)bpf_map_delete_elem(bpf_map__fd(skel_->maps.tc_copy_index), &ifi);
  r.copy_ifindex = 0;
  if (!r.attached) r.clsact_made = false;
  // No copy program runs for the row any more: what it dropped is read
  // once, and the row is clean for the index's next port.
  const LimitDrops d = limitDrops(port_index);
  resetLimitDrops(bpf_map__fd(skel_->maps.tc_limit_drops), port_index, percpu_.size());
  (void)setLimits(port_index, PortLimits{});
  return d;
}

void TcPath::setPunt(int ifindex, uint32_t mtu) {
  skel_->bss->punt_max_frame = mtu + 14;
  skel_->bss->punt_ifindex = uint32_t(ifindex);
}

TcPath::Row& TcPath::row(uint16_t port_index) {
  if (port_index >= rows_.size()) rows_.resize(size_t(port_index) + 1);
  return rows_[port_index];
}

void TcPath::writeRow(uint16_t port_index) {
  const Row& r = rows_[port_index];
  struct vdev_tc_port v = {};
  v.ifindex = uint32_t(r.ifindex);
  v.mtu = r.mtu;
  v.flags = r.flags;
  v.vid = r.vid;
  uint32_t k = port_index;
  (void)bpf_map_update_elem(bpf_map__fd(skel_->maps.tc_ports), &k, &v, BPF_ANY);
}

void TcPath::clearRow(uint16_t port_index) {
  Row& r = row(port_index);
  uint32_t k = port_index;
  struct vdev_tc_port zero = {};
  (void)bpf_map_update_elem(bpf_map__fd(skel_->maps.tc_ports), &k, &zero, BPF_ANY);
  if (r.ifindex && r.indexed) {
    uint32_t ifi = uint32_t(r.ifindex);
    (void)bpf_map_delete_elem(bpf_map__fd(skel_->maps.tc_index), &ifi);
    (void)setHostIpv4(r.ifindex, {});
    (void)setHostIpv6(r.ifindex, {});
    (void)setHostVids(r.ifindex, {});
  }
  const int copy = r.copy_ifindex;  // the copy program is attachCopy()'s, not the row's
  const bool made = copy && r.clsact_made;
  r = Row{};
  r.copy_ifindex = copy;
  r.clsact_made = made;
}

Status TcPath::attach(uint16_t port_index, int ifindex, const std::string& ifname, bool peer, bool fast_rx,
                      uint32_t mtu, bool netkit) {
  if (port_index >= VDEV_FAST_MAX_PORTS || port_index >= VDEV_PUNT_MAX_VID)
    return Error{ENOSPC, "port " + ifname + ": index " + std::to_string(port_index) +
                             " beyond the skb path's port table (" + std::to_string(VDEV_FAST_MAX_PORTS) + ")"};
  if (row(port_index).attached) detach(port_index);
  Row& r = row(port_index);
  r.ifindex = ifindex;
  r.mtu = mtu;
  // setVlan()'s part stays: the port gives it before it attaches.
  r.flags = (peer ? VDEV_TC_PEER : 0) | (fast_rx ? VDEV_TC_FAST_RX : 0) | (netkit ? VDEV_TC_XMIT : 0) |
            (r.flags & VDEV_TC_ACCESS);
  writeRow(port_index);
  uint32_t ifi = uint32_t(ifindex), k = port_index;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.tc_index), &ifi, &k, BPF_ANY)) {
    const Error e = errnoError("skb path: index map for " + ifname);
    clearRow(port_index);
    return e;
  }
  r.indexed = true;
  // The maps are filled first: the program never sees the device without
  // its row.
  if (netkit) {
    // The primary program first: vdevd's frames into the container need
    // it from the first one on.
    auto in = netkitAttach(netkit_in_fd_, ifindex, ifname, true);
    if (!in) {
      clearRow(port_index);
      return in.error();
    }
    auto link = netkitAttach(prog_fd_, ifindex, ifname, false);
    if (!link) {
      clearRow(port_index);  // `in` closes: its program goes
      return link.error();
    }
    r.netkit_in_link = std::move(*in);
    r.netkit_link = std::move(*link);
    r.attached = true;
    return {};
  }
  bool made = false;
  if (Status st = attachProg(false, ifindex, ifname, made); !st) {
    clearRow(port_index);
    return st;
  }
  r.attached = true;
  r.clsact_made = made;
  return {};
}

void TcPath::detach(uint16_t port_index) {
  Row& r = row(port_index);
  // A netkit's link detaches when its fd closes (clearRow()).
  if (r.attached && r.ifindex && !r.netkit_link.valid()) detachProg(false, r.ifindex);
  clearRow(port_index);
}

void TcPath::forget(uint16_t port_index) { clearRow(port_index); }

void TcPath::setDest(uint16_t port_index, bool on) {
  Row& r = row(port_index);
  if (!r.ifindex) return;
  const uint32_t f = on ? (r.flags | VDEV_TC_DEST) : (r.flags & ~uint32_t(VDEV_TC_DEST));
  if (f == r.flags) return;
  r.flags = f;
  writeRow(port_index);
}

void TcPath::setOtherDest(uint16_t port_index, int ifindex, uint32_t mtu, bool peer, bool on) {
  if (port_index >= VDEV_FAST_MAX_PORTS) return;
  Row& r = row(port_index);
  if (r.indexed) return;  // a port at tc: setDest()
  if (!on || !ifindex) {
    if (r.ifindex) clearRow(port_index);
    return;
  }
  const uint32_t f = VDEV_TC_DEST | (peer ? VDEV_TC_PEER : 0);
  if (r.ifindex == ifindex && r.mtu == mtu && r.flags == f) return;
  r.ifindex = ifindex;
  r.mtu = mtu;
  r.flags = f;
  writeRow(port_index);
}

void TcPath::setPeer(uint16_t port_index, bool peer) {
  Row& r = row(port_index);
  const uint32_t f = peer ? (r.flags | VDEV_TC_PEER) : (r.flags & ~uint32_t(VDEV_TC_PEER));
  if (f == r.flags) return;
  r.flags = f;
  if (r.ifindex) writeRow(port_index);
}

void TcPath::setVlan(uint16_t port_index, uint16_t vid, bool access) {
  Row& r = row(port_index);
  const uint32_t f = access ? (r.flags | VDEV_TC_ACCESS) : (r.flags & ~uint32_t(VDEV_TC_ACCESS));
  if (r.vid == vid && r.flags == f) return;
  r.vid = vid;
  r.flags = f;
  if (r.ifindex) writeRow(port_index);
}

void TcPath::setMtu(uint16_t port_index, uint32_t mtu) {
  Row& r = row(port_index);
  if (!r.ifindex || r.mtu == mtu) return;
  r.mtu = mtu;
  writeRow(port_index);
}

Status TcPath::setHostMacs(const std::vector<uint64_t>& mac_keys) {
  if (mac_keys == host_macs_) return {};
  const int fd = bpf_map__fd(skel_->maps.tc_host_macs);
  for (uint64_t k : host_macs_)
    if (std::find(mac_keys.begin(), mac_keys.end(), k) == mac_keys.end()) (void)bpf_map_delete_elem(fd, &k);
  uint32_t one = 1;
  for (size_t i = 0; i < mac_keys.size(); i++) {
    if (bpf_map_update_elem(fd, &mac_keys[i], &one, BPF_ANY) == 0) continue;
    const int err = errno;
    // The map holds the keys written before this one and the old ones still
    // wanted: remembered as such, so that a key written now is deleted when
    // it goes and the rest are tried again.
    std::vector<uint64_t> held(mac_keys.begin(), mac_keys.begin() + ptrdiff_t(i));
    for (uint64_t k : host_macs_)
      if (std::binary_search(mac_keys.begin() + ptrdiff_t(i), mac_keys.end(), k)) held.push_back(k);
    std::sort(held.begin(), held.end());
    host_macs_ = std::move(held);
    host_mac_errors_++;
    Error e = makeError(err, "skb path: host MAC map: " + std::to_string(mac_keys.size() - i) + " of " +
                                 std::to_string(mac_keys.size()) + " host MACs left out");
    if (host_mac_errors_ == 1)  // once: it is tried again every second
      std::fprintf(stderr, "vdevd: warning: %s; frames to them are switched, not passed to the host\n",
                   e.message().c_str());
    return e;
  }
  host_macs_ = mac_keys;
  return {};
}

namespace {

// Replaces the set of addresses kept for ifindex in `kept` and in the map.
template <class Key, class Addr>
Status replaceKept(int fd, int ifindex, const std::vector<Addr>& addrs,
                   std::vector<std::pair<int, std::vector<Addr>>>& kept, const char* what) {
  auto it = std::find_if(kept.begin(), kept.end(), [&](const auto& e) { return e.first == ifindex; });
  if (it != kept.end() && it->second == addrs) return {};
  if (auto st = replaceHostAddrs<Key>(fd, ifindex, it != kept.end() ? it->second : std::vector<Addr>{}, addrs, what);
      !st)
    return st;
  if (addrs.empty()) {
    if (it != kept.end()) kept.erase(it);
  } else if (it != kept.end()) {
    it->second = addrs;
  } else {
    kept.emplace_back(ifindex, addrs);
  }
  return {};
}

}  // namespace

Status TcPath::setHostIpv4(int ifindex, const std::vector<uint32_t>& addrs) {
  return replaceKept<struct vdev_host_ipv4_key>(bpf_map__fd(skel_->maps.tc_host_ipv4), ifindex, addrs, host_ipv4_,
                                               "skb path: host IPv4 map");
}

Status TcPath::setHostIpv6(int ifindex, const std::vector<std::array<uint8_t, 16>>& addrs) {
  return replaceKept<struct vdev_host_ipv6_key>(bpf_map__fd(skel_->maps.tc_host_ipv6), ifindex, addrs, host_ipv6_,
                                               "skb path: host IPv6 map");
}

Status TcPath::setHostVids(int ifindex, const std::vector<uint32_t>& vids) {
  // Keyed like the IPv4 addresses: (ifindex, VID).
  return replaceKept<struct vdev_host_ipv4_key>(bpf_map__fd(skel_->maps.tc_host_vids), ifindex, vids, host_vids_,
                                               "skb path: host VLAN map");
}

XdpProgCounters TcPath::counters(uint16_t port_index) const {
  XdpProgCounters c;
  if (port_index >= VDEV_FAST_MAX_PORTS) return c;
  uint64_t* out[VDEV_XDP_NCOUNTERS] = {&c.pass, &c.redirect, &c.no_socket, &c.fast};
  const int fd = bpf_map__fd(skel_->maps.tc_stats);
  std::vector<uint64_t> percpu(percpu_.size());  // the caller's own: any thread (Datapath::stats)
  for (uint32_t i = 0; i < VDEV_XDP_NCOUNTERS; i++) {
    uint32_t k = uint32_t(port_index) * VDEV_XDP_NCOUNTERS + i;
    if (bpf_map_lookup_elem(fd, &k, percpu.data())) continue;
    for (uint64_t v : percpu) *out[i] += v;
  }
  return c;
}

uint64_t TcPath::ownOversize(uint16_t port_index) const {
  if (shares_fast_ || port_index >= VDEV_FAST_MAX_PORTS) return 0;
  uint32_t k = uint32_t(port_index) * VDEV_FAST_NSTATS + VDEV_FAST_OVERSIZE;
  std::vector<uint64_t> percpu(percpu_.size());  // the caller's own: any thread
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.fast_stats), &k, percpu.data())) return 0;
  uint64_t n = 0;
  for (uint64_t v : percpu) n += v;
  return n;
}

void TcPath::resetCounters(uint16_t port_index) {
  if (port_index >= VDEV_FAST_MAX_PORTS) return;
  std::fill(percpu_.begin(), percpu_.end(), 0);
  const int fd = bpf_map__fd(skel_->maps.tc_stats);
  for (uint32_t i = 0; i < VDEV_XDP_NCOUNTERS; i++) {
    uint32_t k = uint32_t(port_index) * VDEV_XDP_NCOUNTERS + i;
    (void)bpf_map_update_elem(fd, &k, percpu_.data(), BPF_ANY);
  }
  if (!shares_fast_) {
    uint32_t k = uint32_t(port_index) * VDEV_FAST_NSTATS + VDEV_FAST_OVERSIZE;
    (void)bpf_map_update_elem(bpf_map__fd(skel_->maps.fast_stats), &k, percpu_.data(), BPF_ANY);
  }
  resetLimitDrops(bpf_map__fd(skel_->maps.tc_limit_drops), port_index, percpu_.size());
  (void)setLimits(port_index, PortLimits{});  // the index's last port's are gone
}

Status TcPath::setLimits(uint16_t port_index, const PortLimits& l) {
  if (port_index >= VDEV_FAST_MAX_PORTS) return {};  // such a port is never at tc (attach())
  const struct vdev_port_limits v = bpfLimits(l);
  const uint32_t k = port_index;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.tc_limits), &k, &v, BPF_ANY))
    return errnoError("skb path: limits of port " + std::to_string(port_index));
  return {};
}

LimitDrops TcPath::limitDrops(uint16_t port_index) const {
  if (port_index >= VDEV_FAST_MAX_PORTS) return {};
  std::vector<uint64_t> percpu(percpu_.size());  // the caller's own: any thread
  return readLimitDrops(bpf_map__fd(skel_->maps.tc_limit_drops), port_index, percpu);
}

}  // namespace vdev::datapath
