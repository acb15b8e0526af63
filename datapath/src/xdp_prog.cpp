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

namespace vdev::datapath {

void XdpProgram::SkelDeleter::operator()(struct ::vdev_xdp* s) const noexcept { vdev_xdp__destroy(s); }
void XdpProgram::ProgDeleter::operator()(struct ::xdp_program* p) const noexcept { xdp_program__close(p); }

namespace {

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

const char* xdpModeName(XdpMode m) {
  switch (m) {
    case XdpMode::kAuto: return "auto";
    case XdpMode::kNative: return "native";
    case XdpMode::kGeneric: return "generic";
  }
  return "?";
}

void setupBpfLogging(bool verbose) {
  g_verbose = verbose;
  libbpf_set_print(libbpfPrint);
  libxdp_set_print(libxdpPrint);
}

Result<std::unique_ptr<XdpProgram>> XdpProgram::attach(int ifindex, const std::string& ifname,
                                                       XdpMode mode, bool force,
                                                       const std::function<Status(XdpProgram&)>& prepare,
                                                       const XdpFastConfig& fast) {
  Existing ex = existingPrograms(ifindex);
  if (ex.any) {
    if (!force && !ex.ours)
      return Error{EEXIST, ifname + " already has an XDP program: " + ex.names +
                               "; vdevd does not replace it unless told to (--force)"};
    // A stale program of ours (vdevd was killed) or --force: remove it.
    if (auto st = removeExisting(ifindex, ifname, ex.names.find(kDispatcherName) != std::string::npos); !st)
      return st.error();
  }

  std::unique_ptr<XdpProgram> p(new XdpProgram());
  p->ifindex_ = ifindex;
  p->ifname_ = ifname;
  // Loaded first, attached last: the maps (host MACs, sockets) are filled
  // before the program sees its first frame.
  p->skel_.reset(vdev_xdp__open());
  if (!p->skel_) return errnoError("open XDP program for " + ifname);
  p->skel_->rodata->port_index = fast.port_index;
  // fast-rx off: the maps are shared all the same (the port stays a
  // destination, which is the devmap's business, not its program's), but
  // the program itself never redirects there.
  p->skel_->rodata->fast_enabled = fast.fast && fast.rx ? 1 : 0;
  if (fast.fast) {
    // One set of fast-path maps for every port's program.
    const std::pair<struct bpf_map*, int> shared[] = {
        {p->skel_->maps.fast_fdb, fast.fast->fdbFd()},
        {p->skel_->maps.fast_ports, fast.fast->portsFd()},
        {p->skel_->maps.fast_stats, fast.fast->statsFd()},
        {p->skel_->maps.fast_ifindex, fast.fast->ifindexFd()}};
    for (const auto& [map, fd] : shared)
      if (int err = bpf_map__reuse_fd(map, fd); err)
        return Error{-err, "XDP program for " + ifname + ": share fast-path map " + bpf_map__name(map)};
  } else {
    // Unused without the fast path: keep them minimal.
    (void)bpf_map__set_max_entries(p->skel_->maps.fast_fdb, 1);
    (void)bpf_map__set_max_entries(p->skel_->maps.fast_ports, 1);
    (void)bpf_map__set_max_entries(p->skel_->maps.fast_stats, 1);
    (void)bpf_map__set_max_entries(p->skel_->maps.fast_ifindex, 1);
  }
  if (vdev_xdp__load(p->skel_.get())) return errnoError("load XDP program for " + ifname);
  if (prepare)
    if (auto st = prepare(*p); !st) return st.error();
  // An error comes back as an error pointer, which is nobody's to close.
  struct xdp_program* prog = xdp_program__from_fd(bpf_program__fd(p->skel_->progs.vdev_xdp));
  if (long err = libxdp_get_error(prog); err || !prog)
    return Error{int(err ? -err : EINVAL), "create XDP program for " + ifname};
  p->prog_.reset(prog);

  std::vector<XdpMode> tries;
  if (mode == XdpMode::kAuto)
    tries = {XdpMode::kNative, XdpMode::kGeneric};
  else
    tries = {mode};
  int err = 0;
  std::string log;
  if (!g_verbose) g_capture = &log;
  for (XdpMode m : tries) {
    err = xdp_program__attach(p->prog_.get(), ifindex,
                              m == XdpMode::kNative ? XDP_MODE_NATIVE : XDP_MODE_SKB, 0);
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

XdpProgram::~XdpProgram() { detach(); }  // then prog_, then skel_

void XdpProgram::detach() {
  if (!attached_) return;
  attached_ = false;
  // The device may be gone (deleted with its program); nothing to do then.
  char name[IF_NAMESIZE];
  if (!if_indextoname(ifindex_, name)) return;
  // Attached alone (the usual case): detach exactly our program with libbpf
  // (see existingPrograms on libxdp's fd leak); behind libxdp's dispatcher,
  // through libxdp.
  const int fd = bpf_program__fd(skel_->progs.vdev_xdp);
  struct bpf_prog_info info = {};
  uint32_t len = sizeof info;
  LIBBPF_OPTS(bpf_xdp_query_opts, q);
  const uint32_t mode_flag = mode_ == XdpMode::kNative ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
  int err;
  if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && bpf_xdp_query(ifindex_, 0, &q) == 0 &&
      (mode_flag == XDP_FLAGS_DRV_MODE ? q.drv_prog_id : q.skb_prog_id) == info.id) {
    LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = fd);
    err = bpf_xdp_detach(ifindex_, mode_flag | XDP_FLAGS_REPLACE, &opts);
  } else {
    err = xdp_program__detach(prog_.get(), ifindex_, mode_ == XdpMode::kNative ? XDP_MODE_NATIVE : XDP_MODE_SKB, 0);
  }
  if (err && err != -ENOENT && err != -ENODEV)
    std::fprintf(stderr, "vdevd: detach XDP program from %s: %s\n", ifname_.c_str(),
                 xdpStrerror(err).c_str());
}

int XdpProgram::xsksMapFd() const { return bpf_map__fd(skel_->maps.xsks_map); }

Status XdpProgram::addHostMac(const uint8_t mac[6]) {
  uint64_t key = 0;
  std::memcpy(&key, mac, 6);
  uint32_t one = 1;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.host_macs), &key, &one, BPF_ANY))
    return errnoError("add host MAC on " + ifname_);
  return {};
}

Status XdpProgram::setHostIpv4(const std::vector<uint32_t>& addrs) {
  if (addrs == host_ipv4_) return {};
  const int fd = bpf_map__fd(skel_->maps.host_ipv4);
  for (uint32_t a : host_ipv4_)
    if (std::find(addrs.begin(), addrs.end(), a) == addrs.end()) (void)bpf_map_delete_elem(fd, &a);
  uint32_t one = 1;
  for (uint32_t a : addrs)
    if (bpf_map_update_elem(fd, &a, &one, BPF_ANY)) return errnoError("add host address on " + ifname_);
  host_ipv4_ = addrs;
  return {};
}

Status XdpProgram::setHostIpv6(const std::vector<std::array<uint8_t, 16>>& addrs) {
  if (addrs == host_ipv6_) return {};
  const int fd = bpf_map__fd(skel_->maps.host_ipv6);
  for (const auto& a : host_ipv6_)
    if (std::find(addrs.begin(), addrs.end(), a) == addrs.end()) (void)bpf_map_delete_elem(fd, a.data());
  uint32_t one = 1;
  for (const auto& a : addrs)
    if (bpf_map_update_elem(fd, a.data(), &one, BPF_ANY)) return errnoError("add host IPv6 address on " + ifname_);
  host_ipv6_ = addrs;
  return {};
}

Status XdpProgram::setPortFlags(uint32_t flags) {
  if (flags == port_flags_) return {};
  uint32_t zero = 0;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.port_flags), &zero, &flags, BPF_ANY))
    return errnoError("set the host's frames on " + ifname_);
  port_flags_ = flags;
  return {};
}

Status XdpProgram::setSocket(uint32_t queue, int xsk_fd) {
  if (bpf_map_update_elem(xsksMapFd(), &queue, &xsk_fd, BPF_ANY))
    return errnoError("register AF_XDP socket for " + ifname_ + " queue " + std::to_string(queue));
  return {};
}

Status XdpProgram::clearSocket(uint32_t queue) {
  if (bpf_map_delete_elem(xsksMapFd(), &queue) && errno != ENOENT)
    return errnoError("unregister AF_XDP socket for " + ifname_);
  return {};
}

XdpProgCounters XdpProgram::counters() const {
  XdpProgCounters c;
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return c;
  std::vector<uint64_t> v(static_cast<size_t>(ncpu));
  int fd = bpf_map__fd(skel_->maps.vdev_xdp_stats);
  uint64_t* out[] = {&c.pass, &c.redirect, &c.no_socket, &c.fast};
  for (uint32_t k = 0; k < VDEV_XDP_NCOUNTERS; k++) {
    if (bpf_map_lookup_elem(fd, &k, v.data())) continue;
    for (uint64_t x : v) *out[k] += x;
  }
  return c;
}

}  // namespace vdev::datapath
