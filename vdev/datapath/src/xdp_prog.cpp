#include "datapath/xdp_prog.h"

#include <bpf/bpf.h>
#include <linux/if_link.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <xdp/libxdp.h>

#include <cstdarg>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/fd.h"
#include "datapath/fast_path.h"
#include "vdev_xdp.skel.h"
#include "vdev_xdp_shared.h"
#include "bpf_host_addrs.h"
#include "bpf_limits.h"
#include "datapath/datapath.h"

static_assert(VDEV_XDP_MAX_HOST_MACS == vdev::datapath::kMaxHostMacs,
              "a port's program holds every host MAC vdevd accepts");

namespace vdev::datapath {

void XdpObject::SkelDeleter::operator()(struct ::vdev_xdp* s) const noexcept { vdev_xdp__destroy(s); }

namespace {

struct ProgDeleter {
  void operator()(struct xdp_program* p) const noexcept { xdp_program__close(p); }
};
using ProgPtr = std::unique_ptr<struct xdp_program, ProgDeleter>;

// A libxdp handle on the loaded program (its own dup of the fd), for one
// attach or detach call: held no longer, so a port holds no descriptor of
// the program.
Result<ProgPtr> libxdpHandle(int prog_fd, const std::string& ifname) {
  struct xdp_program* prog = xdp_program__from_fd(prog_fd);
  // An error comes back as an error pointer, which is nobody's to close.
  if (long err = libxdp_get_error(prog); err || !prog)
    return Error{int(err ? -err : EINVAL), "XDP program for " + ifname};
  return ProgPtr(prog);
}

struct MultiprogDeleter {
  void operator()(struct xdp_multiprog* mp) const noexcept { xdp_multiprog__close(mp); }
};
using MultiprogPtr = std::unique_ptr<struct xdp_multiprog, MultiprogDeleter>;

// libxdp's view of what is attached to ifindex; null if none (or an error).
MultiprogPtr multiprogOf(int ifindex) {
  struct xdp_multiprog* mp = xdp_multiprog__get_from_ifindex(ifindex);
  if (!mp || libxdp_get_error(mp)) return nullptr;
  return MultiprogPtr(mp);
}

constexpr const char* kProgName = "vdev_xdp";
bool g_verbose = false;
// While set, library messages are collected here instead of printed: libxdp
// first tries its dispatcher, which fails on kernels that refuse freplace
// (libbpf logs the failed load as a warning) and then attaches our program
// alone. The messages matter only if the attach fails in the end.
thread_local std::string* g_capture = nullptr;

int emit(const char* fmt, va_list args) {
  if (!g_capture) return std::vfprintf(stderr, fmt, args);
  char buf[1024];
  int n = std::vsnprintf(buf, sizeof buf, fmt, args);
  if (g_capture->size() < 64 * 1024) *g_capture += buf;
  return n;
}

int libbpfPrint(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (level == LIBBPF_DEBUG || (level == LIBBPF_INFO && !g_verbose)) return 0;
  return emit(fmt, args);
}
int libxdpPrint(enum libxdp_print_level level, const char* fmt, va_list args) {
  if (level == LIBXDP_DEBUG || (level == LIBXDP_INFO && !g_verbose)) return 0;
  // Without bpffs (or where the kernel refuses freplace) libxdp cannot use
  // its multi-program dispatcher and attaches our single program directly,
  // which is what vdev expects: say so only when asked to be verbose.
  if (!g_verbose && (std::strstr(fmt, "bpffs") || std::strstr(fmt, "dispatcher"))) return 0;
  return emit(fmt, args);
}

std::string xdpStrerror(int err) {
  char buf[256];
  libxdp_strerror(err, buf, sizeof buf);
  return buf;
}

// What is attached to ifindex now: "" if nothing, else the main program's
// name (the dispatcher's components are listed after it).
struct Existing {
  bool any = false;
  bool ours = false;  // every attached program is a vdev program
  std::string names;
};

constexpr const char* kDispatcherName = "xdp_dispatcher";

// What is attached, read with libbpf (bpf_xdp_query + program info): libxdp
// 1.3's xdp_multiprog__get_from_ifindex() leaks a program fd (and with it
// the detached program and its maps) on every call when a single program is
// attached, which is the normal case here. libxdp is asked only when its
// dispatcher is attached.
Existing existingPrograms(int ifindex) {
  Existing e;
  LIBBPF_OPTS(bpf_xdp_query_opts, q);
  bool dispatcher = false;
  if (bpf_xdp_query(ifindex, 0, &q) == 0) {
    for (uint32_t id : {q.drv_prog_id, q.skb_prog_id, q.hw_prog_id}) {
      if (!id) continue;
      if (!e.any) e.ours = true;
      e.any = true;
      std::string n = "?";
      const FileDesc fd(bpf_prog_get_fd_by_id(id));
      if (fd.valid()) {
        struct bpf_prog_info info = {};
        uint32_t len = sizeof info;
        if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) == 0) n = info.name;
      }
      if (!e.names.empty()) e.names += ", ";
      e.names += n + " (id " + std::to_string(id) + ")";
      if (n != kProgName) e.ours = false;
      if (n == kDispatcherName) dispatcher = true;
    }
    if (!dispatcher) return e;
    e = Existing{};
  }
  const MultiprogPtr owner = multiprogOf(ifindex);
  if (!owner) return e;
  struct xdp_multiprog* mp = owner.get();
  struct xdp_program* main = xdp_multiprog__main_prog(mp);
  struct xdp_program* hw = xdp_multiprog__hw_prog(mp);
  if (!main && !hw) return e;
  e.any = true;
  e.ours = true;
  auto note = [&](struct xdp_program* p) {
    const char* n = xdp_program__name(p);
    if (!e.names.empty()) e.names += ", ";
    e.names += n ? n : "?";
    e.names += " (id " + std::to_string(xdp_program__id(p)) + ")";
    if (!n || std::strcmp(n, kProgName) != 0) e.ours = false;
  };
  if (main && xdp_multiprog__is_legacy(mp)) {
    note(main);
  } else if (main) {
    for (struct xdp_program* p = xdp_multiprog__next_prog(nullptr, mp); p;
         p = xdp_multiprog__next_prog(p, mp))
      note(p);
    if (e.names.empty()) note(main);
  }
  if (hw) {
    note(hw);
    e.ours = false;
  }
  return e;
}

Status removeExisting(int ifindex, const std::string& ifname, bool dispatcher) {
  LIBBPF_OPTS(bpf_xdp_query_opts, q);
  if (!dispatcher && bpf_xdp_query(ifindex, 0, &q) == 0) {
    if (q.drv_prog_id && bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, nullptr))
      return errnoError("detach existing XDP program from " + ifname);
    if (q.skb_prog_id && bpf_xdp_detach(ifindex, XDP_FLAGS_SKB_MODE, nullptr))
      return errnoError("detach existing XDP program from " + ifname);
    return {};
  }
  const MultiprogPtr mp = multiprogOf(ifindex);
  if (!mp) return {};
  int err = xdp_multiprog__detach(mp.get());
  if (err) return Error{-err, "detach existing XDP program from " + ifname + ": " + xdpStrerror(err)};
  return {};
}

}  // namespace

BpfQuiet::BpfQuiet() {
  if (g_verbose || g_capture) return;
  g_capture = &sink_;
  on_ = true;
}

BpfQuiet::~BpfQuiet() {
  if (on_) g_capture = nullptr;
}

void setupBpfLogging(bool verbose) {
  g_verbose = verbose;
  libbpf_set_print(libbpfPrint);
  libxdp_set_print(libxdpPrint);
}

XdpObject::XdpObject(const FastPath* fast)
    : fast_(fast), slots_(VDEV_XDP_MAX_PORTS, false), xsks_(VDEV_XDP_MAX_XSKS, false) {}

XdpObject::~XdpObject() = default;

uint32_t XdpObject::freePorts() const { return VDEV_XDP_MAX_PORTS - slots_used_; }

int XdpObject::progFd() const { return bpf_program__fd(skel_->progs.vdev_xdp); }

Status XdpObject::load() {
  if (skel_) return {};
  // Opened (and its maps set up) once per try: libbpf loads an object once.
  auto open = [&](bool frags) -> Result<std::unique_ptr<struct ::vdev_xdp, SkelDeleter>> {
    std::unique_ptr<struct ::vdev_xdp, SkelDeleter> skel(vdev_xdp__open());
    if (!skel) return errnoError("open vdev's XDP program");
    if (!frags) {
      struct bpf_program* p = skel->progs.vdev_xdp;
      (void)bpf_program__set_flags(p, bpf_program__flags(p) & ~uint32_t(BPF_F_XDP_HAS_FRAGS));
    }
    if (fast_) {
      // The fast path's maps, shared with its own object and the skb path.
      const std::pair<struct bpf_map*, int> shared[] = {{skel->maps.fast_fdb, fast_->fdbFd()},
                                                        {skel->maps.fast_ports, fast_->portsFd()},
                                                        {skel->maps.fast_stats, fast_->statsFd()},
                                                        {skel->maps.fast_ifindex, fast_->ifindexFd()},
                                                        {skel->maps.fast_capture, fast_->captureFd()},
                                                        {skel->maps.fast_capture_events, fast_->captureEventsFd()},
                                                        {skel->maps.fast_capture_missed, fast_->captureMissedFd()},
                                                        {skel->maps.fast_vlans, fast_->vlansFd()}};
      for (const auto& [map, fd] : shared)
        if (int err = bpf_map__reuse_fd(map, fd); err)
          return Error{-err, std::string("XDP program: share fast-path map ") + bpf_map__name(map)};
    } else {
      // Unused without the fast path: keep them minimal.
      (void)bpf_map__set_max_entries(skel->maps.fast_fdb, 1);
      (void)bpf_map__set_max_entries(skel->maps.fast_ports, 1);
      (void)bpf_map__set_max_entries(skel->maps.fast_stats, 1);
      (void)bpf_map__set_max_entries(skel->maps.fast_ifindex, 1);
      (void)bpf_map__set_max_entries(skel->maps.fast_capture, 1);
      (void)bpf_map__set_max_entries(skel->maps.fast_capture_missed, 1);
      (void)bpf_map__set_max_entries(skel->maps.fast_vlans, 1);
    }
    return skel;
  };
  auto skel = open(true);
  if (!skel) return skel.error();
  frags_ = true;
  if (vdev_xdp__load(skel->get())) {
    // Frags-aware (xdp.frags: BPF_F_XDP_HAS_FRAGS, Linux 5.18) where the
    // kernel takes it. One that refuses the flag (EINVAL) gets the program
    // without it: frames of one buffer only, and a veth then takes it only
    // up to MTU 3506 (the kernels before 5.18 lack bpf_xdp_load_bytes too,
    // which the address checks use: 5.18 is this program's floor).
    const Error first = errnoError("load vdev's XDP program");
    if (first.err != EINVAL) return first;
    skel = open(false);
    if (!skel) return skel.error();
    if (vdev_xdp__load(skel->get())) return first;
    frags_ = false;
    std::fprintf(stderr, "vdevd: the kernel refused a frags-aware XDP program (xdp.frags, Linux 5.18); loaded "
                         "without: frames of one buffer only\n");
  }
  ncpu_ = std::max(libbpf_num_possible_cpus(), 1);
  skel_ = std::move(skel.value());
  return {};
}

Result<uint32_t> XdpObject::takeSlot() {
  for (uint32_t i = 0; i < slots_.size(); i++)
    if (!slots_[i]) {
      slots_[i] = true;
      slots_used_++;
      return i;
    }
  return Error{ENOSPC, "vdev's XDP program serves at most " + std::to_string(VDEV_XDP_MAX_PORTS) +
                           " ports at the XDP hook"};
}

void XdpObject::putSlot(uint32_t slot) {
  if (slot < slots_.size() && slots_[slot]) {
    slots_[slot] = false;
    // The last port is gone: so are the program and its maps (loaded
    // again with the next port), and a vdevd without ports at the XDP hook
    // holds none of their descriptors.
    if (--slots_used_ == 0) skel_.reset();
  }
}

Result<uint32_t> XdpObject::takeXsks(uint32_t n) {
  for (uint32_t base = 0, run = 0; base + run < xsks_.size();) {
    if (xsks_[base + run]) {
      base += run + 1;
      run = 0;
    } else if (++run == n) {
      for (uint32_t i = 0; i < n; i++) xsks_[base + i] = true;
      return base;
    }
  }
  return Error{ENOSPC, "vdev's XDP program has room for " + std::to_string(VDEV_XDP_MAX_XSKS) +
                           " AF_XDP sockets in all, not " + std::to_string(n) + " more"};
}

void XdpObject::putXsks(uint32_t base, uint32_t n) {
  for (uint32_t i = 0; i < n && base + i < xsks_.size(); i++) xsks_[base + i] = false;
}

Result<std::unique_ptr<XdpProgram>> XdpProgram::attach(XdpObject& obj, int ifindex, const std::string& ifname,
                                                       XdpMode mode, bool force, uint32_t nqueues,
                                                       const std::function<Status(XdpProgram&)>& prepare,
                                                       const XdpFastConfig& fast) {
  if (nqueues == 0 || nqueues > VDEV_XDP_MAX_QUEUES)
    return Error{EINVAL, ifname + ": vdev's XDP program serves 1 to " + std::to_string(VDEV_XDP_MAX_QUEUES) +
                             " RX queues a port, not " + std::to_string(nqueues)};
  Existing ex = existingPrograms(ifindex);
  if (ex.any) {
    if (!force && !ex.ours)
      return Error{EEXIST, ifname + " already has an XDP program: " + ex.names +
                               "; vdevd does not replace it unless told to (--force)"};
    // A stale program of ours (vdevd was killed) or --force: remove it.
    if (auto st = removeExisting(ifindex, ifname, ex.names.find(kDispatcherName) != std::string::npos); !st)
      return st.error();
  }
  if (auto st = obj.load(); !st) return st.error();

  std::unique_ptr<XdpProgram> p(new XdpProgram(obj));
  p->ifindex_ = ifindex;
  p->ifname_ = ifname;
  p->port_index_ = fast.port_index;
  // fast-rx off: the port stays a destination (the devmap's business, not
  // the program's), but its frames never take the fast path.
  p->fast_rx_ = fast.fast && fast.rx;
  auto slot = obj.takeSlot();
  if (!slot) return Error{slot.error().err, "port " + ifname + ": " + slot.error().what};
  p->slot_ = *slot;
  auto base = obj.takeXsks(nqueues);
  if (!base) return Error{base.error().err, "port " + ifname + ": " + base.error().what};
  p->xsk_base_ = *base;
  p->nqueues_ = nqueues;
  // The device's entries: counters from zero (the slot may have served a
  // port before), then the port, then what prepare adds; the program is
  // attached last, so it never drops (no_socket) or misdirects (host MACs)
  // a frame while the port is being set up.
  p->entries_ = true;
  {
    const int fd = bpf_map__fd(obj.skel_->maps.vdev_xdp_stats);
    const std::vector<uint64_t> zero(size_t(obj.ncpu_), 0);
    for (uint32_t k = 0; k < VDEV_XDP_NCOUNTERS; k++) {
      const uint32_t key = p->slot_ * VDEV_XDP_NCOUNTERS + k;
      if (bpf_map_update_elem(fd, &key, zero.data(), BPF_ANY))
        return errnoError("XDP program for " + ifname + ": reset counters");
    }
    resetLimitDrops(bpf_map__fd(obj.skel_->maps.xdp_limit_drops), p->slot_, size_t(obj.ncpu_));
    if (auto st = p->setLimits(PortLimits{}); !st) return st.error();  // the slot's last port's are gone
  }
  if (auto st = p->writePort(); !st) return st.error();
  if (prepare)
    if (auto st = prepare(*p); !st) return st.error();

  auto handle = libxdpHandle(obj.progFd(), ifname);
  if (!handle) return handle.error();
  std::vector<XdpMode> tries;
  if (mode == XdpMode::kAuto)
    tries = {XdpMode::kNative, XdpMode::kGeneric};
  else
    tries = {mode};
  int err = 0;
  std::string log;
  if (!g_verbose) g_capture = &log;
  for (XdpMode m : tries) {
    err = xdp_program__attach(handle->get(), ifindex, m == XdpMode::kNative ? XDP_MODE_NATIVE : XDP_MODE_SKB, 0);
    if (err == 0) {
      p->mode_ = m;
      p->attached_ = true;
      break;
    }
  }
  g_capture = nullptr;
  if (err && !log.empty()) std::fputs(log.c_str(), stderr);
  if (err)
    return Error{-err, "attach XDP program to " + ifname + " (" + xdpModeName(mode) +
                           " mode): " + xdpStrerror(err)};
  return p;
}

XdpProgram::~XdpProgram() {
  detach();
  clearEntries();
  obj_.putXsks(xsk_base_, nqueues_);
  obj_.putSlot(slot_);
}

void XdpProgram::detach() {
  if (!attached_) return;
  attached_ = false;
  // The device may be gone (deleted with its program); nothing to do then.
  char name[IF_NAMESIZE];
  if (!if_indextoname(ifindex_, name)) return;
  // Attached alone (the usual case): detach exactly our program with libbpf
  // (see existingPrograms on libxdp's fd leak); behind libxdp's dispatcher,
  // through libxdp.
  const int fd = obj_.progFd();
  struct bpf_prog_info info = {};
  uint32_t len = sizeof info;
  LIBBPF_OPTS(bpf_xdp_query_opts, q);
  const uint32_t mode_flag = mode_ == XdpMode::kNative ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
  int err;
  if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && bpf_xdp_query(ifindex_, 0, &q) == 0 &&
      (mode_flag == XDP_FLAGS_DRV_MODE ? q.drv_prog_id : q.skb_prog_id) == info.id) {
    LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = fd);
    err = bpf_xdp_detach(ifindex_, mode_flag | XDP_FLAGS_REPLACE, &opts);
  } else if (auto handle = libxdpHandle(fd, ifname_); handle) {
    err = xdp_program__detach(handle->get(), ifindex_, mode_ == XdpMode::kNative ? XDP_MODE_NATIVE : XDP_MODE_SKB, 0);
  } else {
    err = -handle.error().err;
  }
  if (err && err != -ENOENT && err != -ENODEV)
    std::fprintf(stderr, "vdevd: detach XDP program from %s: %s\n", ifname_.c_str(),
                 xdpStrerror(err).c_str());
}

void XdpProgram::forget() {
  attached_ = false;
  clearEntries();
}

void XdpProgram::clearEntries() {
  if (!entries_) return;
  entries_ = false;
  const auto& maps = obj_.skel_->maps;
  // The socket keys are this port's alone, whoever has the ifindex now.
  for (uint32_t q = 0; q < nqueues_; q++) {
    const uint32_t k = xsk_base_ + q;
    (void)bpf_map_delete_elem(bpf_map__fd(maps.xsks_map), &k);
  }
  // The rest is keyed by the ifindex: cleared only while it is still this
  // port's entry (a device deleted under a port may have left its ifindex
  // to another port's device already).
  struct vdev_xdp_port cur = {};
  if (bpf_map_lookup_elem(bpf_map__fd(maps.xdp_ports), &ifindex_, &cur) || cur.slot != slot_) return;
  (void)bpf_map_delete_elem(bpf_map__fd(maps.xdp_ports), &ifindex_);
  for (uint64_t m : host_macs_) {
    struct vdev_xdp_mac_key k = {};
    k.mac = m;
    k.ifindex = uint32_t(ifindex_);
    (void)bpf_map_delete_elem(bpf_map__fd(maps.xdp_host_macs), &k);
  }
  (void)setHostIpv4({});
  (void)setHostIpv6({});
  (void)setHostVids({});
}

Status XdpProgram::writePort() {
  struct vdev_xdp_port v = {};
  v.port_index = port_index_;
  v.flags = port_flags_ | (fast_rx_ ? VDEV_PORT_FAST_RX : 0u) | (access_ ? VDEV_PORT_ACCESS : 0u);
  v.vid = vid_;
  v.slot = slot_;
  v.xsk_base = xsk_base_;
  v.nqueues = nqueues_;
  v.nhost_macs = uint32_t(host_macs_.size());
  v.own_mac = own_mac_;
  if (bpf_map_update_elem(bpf_map__fd(obj_.skel_->maps.xdp_ports), &ifindex_, &v, BPF_ANY))
    return errnoError("XDP program: port entry of " + ifname_);
  return {};
}

Status XdpProgram::setOwnMac(const uint8_t mac[6]) {
  uint64_t k = 0;
  std::memcpy(&k, mac, 6);
  if (k == own_mac_) return {};
  const uint64_t before = own_mac_;
  own_mac_ = k;
  if (auto st = writePort(); !st) {
    own_mac_ = before;
    return st.error();
  }
  return {};
}

Status XdpProgram::addHostMac(const uint8_t mac[6]) {
  struct vdev_xdp_mac_key k = {};
  std::memcpy(&k.mac, mac, 6);
  k.ifindex = uint32_t(ifindex_);
  if (std::find(host_macs_.begin(), host_macs_.end(), k.mac) != host_macs_.end()) return {};
  if (host_macs_.size() >= VDEV_XDP_MAX_HOST_MACS)
    return Error{ENOSPC, "more than " + std::to_string(VDEV_XDP_MAX_HOST_MACS) + " host MACs on " + ifname_};
  uint32_t one = 1;
  if (bpf_map_update_elem(bpf_map__fd(obj_.skel_->maps.xdp_host_macs), &k, &one, BPF_ANY))
    return errnoError("add host MAC on " + ifname_);
  host_macs_.push_back(k.mac);
  // The port's entry counts them: the program looks them up only then.
  if (auto st = writePort(); !st) {
    host_macs_.pop_back();
    (void)bpf_map_delete_elem(bpf_map__fd(obj_.skel_->maps.xdp_host_macs), &k);
    return st.error();
  }
  return {};
}

Status XdpProgram::setHostIpv4(const std::vector<uint32_t>& addrs) {
  if (addrs == host_ipv4_) return {};
  const std::string what = "add host address on " + ifname_;
  if (auto st = replaceHostAddrs<struct vdev_host_ipv4_key>(bpf_map__fd(obj_.skel_->maps.xdp_host_ipv4), ifindex_,
                                                            host_ipv4_, addrs, what.c_str());
      !st)
    return st;
  host_ipv4_ = addrs;
  return {};
}

Status XdpProgram::setHostVids(const std::vector<uint32_t>& vids) {
  if (vids == host_vids_) return {};
  const std::string what = "add host VLAN on " + ifname_;
  // Keyed like the IPv4 addresses: (ifindex, VID).
  if (auto st = replaceHostAddrs<struct vdev_host_ipv4_key>(bpf_map__fd(obj_.skel_->maps.xdp_host_vids), ifindex_,
                                                            host_vids_, vids, what.c_str());
      !st)
    return st;
  host_vids_ = vids;
  return {};
}

Status XdpProgram::setHostIpv6(const std::vector<std::array<uint8_t, 16>>& addrs) {
  if (addrs == host_ipv6_) return {};
  const std::string what = "add host IPv6 address on " + ifname_;
  if (auto st = replaceHostAddrs<struct vdev_host_ipv6_key>(bpf_map__fd(obj_.skel_->maps.xdp_host_ipv6), ifindex_,
                                                            host_ipv6_, addrs, what.c_str());
      !st)
    return st;
  host_ipv6_ = addrs;
  return {};
}

Status XdpProgram::setPortFlags(uint32_t flags) {
  if (flags == port_flags_) return {};
  const uint32_t before = port_flags_;
  port_flags_ = flags;
  if (auto st = writePort(); !st) {
    port_flags_ = before;
    return Error{st.error().err, "set the host's frames on " + ifname_};
  }
  return {};
}

Status XdpProgram::setVlan(uint16_t vid, bool access) {
  if (vid == vid_ && access == access_) return {};
  const uint16_t vid0 = vid_;
  const bool access0 = access_;
  vid_ = vid;
  access_ = access;
  if (auto st = writePort(); !st) {
    vid_ = vid0;
    access_ = access0;
    return Error{st.error().err, "set the VLAN of " + ifname_};
  }
  return {};
}

Status XdpProgram::setSocket(uint32_t queue, int xsk_fd) {
  if (queue >= nqueues_)
    return Error{EINVAL, "register AF_XDP socket for " + ifname_ + " queue " + std::to_string(queue) +
                             ": the port has " + std::to_string(nqueues_) + " queues"};
  const uint32_t k = xsk_base_ + queue;
  if (bpf_map_update_elem(bpf_map__fd(obj_.skel_->maps.xsks_map), &k, &xsk_fd, BPF_ANY))
    return errnoError("register AF_XDP socket for " + ifname_ + " queue " + std::to_string(queue));
  return {};
}

Status XdpProgram::clearSocket(uint32_t queue) {
  if (queue >= nqueues_) return {};
  const uint32_t k = xsk_base_ + queue;
  if (bpf_map_delete_elem(bpf_map__fd(obj_.skel_->maps.xsks_map), &k) && errno != ENOENT)
    return errnoError("unregister AF_XDP socket for " + ifname_);
  return {};
}

XdpProgCounters XdpProgram::counters() const { return obj_.counters(slot_); }

XdpProgCounters XdpObject::counters(uint32_t slot) const {
  XdpProgCounters c;
  std::vector<uint64_t> v(static_cast<size_t>(ncpu_));  // the caller's own: any thread
  const int fd = bpf_map__fd(skel_->maps.vdev_xdp_stats);
  uint64_t* out[] = {&c.pass, &c.redirect, &c.no_socket, &c.fast};
  for (uint32_t k = 0; k < VDEV_XDP_NCOUNTERS; k++) {
    const uint32_t key = slot * VDEV_XDP_NCOUNTERS + k;
    if (bpf_map_lookup_elem(fd, &key, v.data())) continue;
    for (uint64_t x : v) *out[k] += x;
  }
  return c;
}

Status XdpProgram::setLimits(const PortLimits& l) {
  const struct vdev_port_limits v = bpfLimits(l);
  if (bpf_map_update_elem(bpf_map__fd(obj_.skel_->maps.xdp_limits), &slot_, &v, BPF_ANY))
    return errnoError("XDP program: limits of " + ifname_);
  return {};
}

LimitDrops XdpProgram::limitDrops() const { return obj_.limitDrops(slot_); }

LimitDrops XdpObject::limitDrops(uint32_t slot) const {
  std::vector<uint64_t> v(static_cast<size_t>(ncpu_));
  return readLimitDrops(bpf_map__fd(skel_->maps.xdp_limit_drops), slot, v);
}

}  // namespace vdev::datapath
