#include "datapath/fast_path.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "vdev_fast.skel.h"
#include "vdev_xdp_shared.h"

namespace vdev::datapath {

static_assert(kFastPathPorts == VDEV_FAST_MAX_PORTS);

void FastPath::SkelDeleter::operator()(struct ::vdev_fast* s) const noexcept { vdev_fast__destroy(s); }
void FastPath::LinkDeleter::operator()(struct ::bpf_link* l) const noexcept { bpf_link__destroy(l); }
void FastPath::PerfBufferDeleter::operator()(struct ::perf_buffer* pb) const noexcept { perf_buffer__free(pb); }

Result<std::unique_ptr<FastPath>> FastPath::create(uint32_t fdb_capacity) {
  std::unique_ptr<FastPath> f(new FastPath());
  f->ncpu_ = libbpf_num_possible_cpus();
  if (f->ncpu_ <= 0) return makeError(-f->ncpu_, "kernel fast path: count CPUs");
  f->percpu_.resize(size_t(f->ncpu_));
  f->skel_.reset(vdev_fast__open());
  if (!f->skel_) return errnoError("kernel fast path: open BPF object");
  if (bpf_map__set_max_entries(f->skel_->maps.fast_fdb, fdb_capacity < 16 ? 16 : fdb_capacity))
    return errnoError("kernel fast path: size the MAC map");
  if (vdev_fast__load(f->skel_.get())) return errnoError("kernel fast path: load BPF maps and tracepoints");
  struct bpf_map_info info = {};
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(bpf_map__fd(f->skel_->maps.fast_ports), &info, &len))
    return errnoError("kernel fast path: devmap id");
  f->skel_->bss->fast_ports_id = info.id;
  for (struct bpf_program* p : {f->skel_->progs.vdev_fast_xmit, f->skel_->progs.vdev_fast_redirect_err}) {
    struct bpf_link* l = bpf_program__attach(p);
    if (!l) return errnoError(std::string("kernel fast path: attach tracepoint ") + bpf_program__name(p));
    f->links_.emplace_back(l);
  }
  // The capture copies' misses, read without a syscall.
  const size_t rows = size_t(VDEV_FAST_MAX_PORTS) * sizeof(uint64_t);
  const long page = sysconf(_SC_PAGESIZE);
  f->capture_missed_len_ = (rows + size_t(page) - 1) / size_t(page) * size_t(page);
  void* m = mmap(nullptr, f->capture_missed_len_, PROT_READ, MAP_SHARED, f->captureMissedFd(), 0);
  if (m == MAP_FAILED) return errnoError("kernel fast path: map the capture counters");
  f->capture_missed_ = static_cast<const volatile uint64_t*>(m);
  return f;
}

FastPath::~FastPath() {
  capture_reader_.reset();
  if (capture_missed_) munmap(const_cast<uint64_t*>(capture_missed_), capture_missed_len_);
  // then links_, then skel_
}

int FastPath::fdbFd() const { return bpf_map__fd(skel_->maps.fast_fdb); }
int FastPath::portsFd() const { return bpf_map__fd(skel_->maps.fast_ports); }
int FastPath::statsFd() const { return bpf_map__fd(skel_->maps.fast_stats); }
int FastPath::ifindexFd() const { return bpf_map__fd(skel_->maps.fast_ifindex); }
int FastPath::captureFd() const { return bpf_map__fd(skel_->maps.fast_capture); }
int FastPath::captureEventsFd() const { return bpf_map__fd(skel_->maps.fast_capture_events); }
int FastPath::captureMissedFd() const { return bpf_map__fd(skel_->maps.fast_capture_missed); }
int FastPath::vlansFd() const { return bpf_map__fd(skel_->maps.fast_vlans); }

Status FastPath::setVlans(uint16_t port_index, uint16_t untagged, const VidSet& tagged) {
  if (port_index >= VDEV_FAST_MAX_PORTS) return makeError(ENOSPC, "port number beyond the fast path's maps");
  uint32_t key = port_index;
  struct vdev_fast_vlan v = {};
  v.untagged = untagged;
  for (size_t vid = 1; vid <= kVidMax; vid++)
    if (tagged[vid]) v.tagged[vid / 64] |= uint64_t(1) << (vid % 64);
  if (bpf_map_update_elem(vlansFd(), &key, &v, BPF_ANY)) return errnoError("fast path: VLAN map");
  return {};
}

Status FastPath::setCapture(uint16_t port_index, uint8_t dirs, uint32_t snaplen, const vdev_capture_filter* filter) {
  if (port_index >= VDEV_FAST_MAX_PORTS) return makeError(ENOSPC, "port number beyond the fast path's maps");
  uint32_t key = port_index;
  struct vdev_capture_conf c = {dirs, snaplen, filter ? *filter : vdev_capture_filter{}};
  if (bpf_map_update_elem(captureFd(), &key, &c, BPF_ANY)) return errnoError("fast path: capture map");
  return {};
}

const volatile uint64_t* FastPath::captureMissedRow(uint16_t port_index) const noexcept {
  static const volatile uint64_t kNone = 0;
  return port_index < VDEV_FAST_MAX_PORTS ? capture_missed_ + port_index : &kNone;
}

Status FastPath::openCaptureReader(CaptureFn fn, void* ctx) {
  if (capture_reader_) return {};
  capture_fn_ = fn;
  capture_ctx_ = ctx;
  // 512 KiB a CPU: a few hundred full-length copies while the datapath
  // thread is elsewhere; what does not fit is counted (captureMissed).
  constexpr size_t kPages = 128;
  // A wake-up every kCaptureWakeup copies, not every one: while the copies
  // stream, the datapath thread is not woken for each (an IPI apiece);
  // fewer wait for its idle timeout, kCaptureIdleMs (Datapath).
  struct perf_event_attr attr = {};
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_BPF_OUTPUT;
  attr.sample_type = PERF_SAMPLE_RAW;
  attr.sample_period = 1;
  attr.wakeup_events = kCaptureWakeup;
  auto event = [](void* c, int, struct perf_event_header* e) -> enum bpf_perf_event_ret {
    if (e->type != PERF_RECORD_SAMPLE) return LIBBPF_PERF_EVENT_CONT;  // PERF_RECORD_LOST: counted by the programs
    auto* f = static_cast<FastPath*>(c);
    struct Raw {
      struct perf_event_header header;
      uint32_t size;
      uint8_t data[];
    };
    const auto* raw = reinterpret_cast<const Raw*>(e);
    struct vdev_capture_hdr h;
    if (raw->size < sizeof h) return LIBBPF_PERF_EVENT_CONT;
    std::memcpy(&h, raw->data, sizeof h);
    if (h.kept > raw->size - sizeof h) h.kept = uint32_t(raw->size - sizeof h);
    f->capture_fn_(f->capture_ctx_, uint16_t(h.port_index), uint8_t(h.dir), h.time_ns, h.wire_len,
                   raw->data + sizeof h, h.kept);
    return LIBBPF_PERF_EVENT_CONT;
  };
  struct perf_buffer* pb = perf_buffer__new_raw(captureEventsFd(), kPages, &attr, event, this, nullptr);
  if (!pb) return errnoError("fast path: capture buffers");
  capture_reader_.reset(pb);
  return {};
}

int FastPath::captureReaderFd() const { return capture_reader_ ? perf_buffer__epoll_fd(capture_reader_.get()) : -1; }

void FastPath::consumeCaptures() {
  if (capture_reader_) (void)perf_buffer__consume(capture_reader_.get());
}

Status FastPath::enablePort(uint16_t port_index, int ifindex) {
  if (port_index >= VDEV_FAST_MAX_PORTS) return makeError(ENOSPC, "port number beyond the fast path's devmap");
  uint32_t key = port_index, v = uint32_t(ifindex);
  if (bpf_map_update_elem(ifindexFd(), &v, &key, BPF_ANY)) return errnoError("fast path: ifindex map");
  if (bpf_map_update_elem(portsFd(), &key, &v, BPF_ANY)) return errnoError("fast path: devmap");
  return {};
}

void FastPath::disablePort(uint16_t port_index, int ifindex) {
  uint32_t key = port_index;
  (void)bpf_map_delete_elem(portsFd(), &key);
  // The ifindex entry stays until the index gets a new port: drops of
  // frames already queued for the device are still counted.
  (void)ifindex;
}

FastPortStats FastPath::read(uint16_t port_index) const {
  FastPortStats s;
  if (port_index >= VDEV_FAST_MAX_PORTS) return s;
  uint64_t* out[VDEV_FAST_NSTATS] = {&s.rx_packets, &s.rx_bytes, &s.tx_packets,
                                     &s.tx_bytes,   &s.drops,    &s.refused,
                                     &s.queue_full, &s.oversize};
  std::vector<uint64_t> percpu(percpu_.size());  // the caller's own: any thread (Datapath::stats)
  for (uint32_t c = 0; c < VDEV_FAST_NSTATS; c++) {
    uint32_t k = uint32_t(port_index) * VDEV_FAST_NSTATS + c;
    if (bpf_map_lookup_elem(statsFd(), &k, percpu.data())) continue;
    for (uint64_t v : percpu) *out[c] += v;
  }
  return s;
}

void FastPath::reset(uint16_t port_index) {
  if (port_index >= VDEV_FAST_MAX_PORTS) return;
  std::fill(percpu_.begin(), percpu_.end(), 0);
  for (uint32_t c = 0; c < VDEV_FAST_NSTATS; c++) {
    uint32_t k = uint32_t(port_index) * VDEV_FAST_NSTATS + c;
    (void)bpf_map_update_elem(statsFd(), &k, percpu_.data(), BPF_ANY);
  }
}

Status FastPath::set(uint64_t mac, uint16_t port_index, uint64_t now_ns, bool isolated) {
  struct vdev_fast_entry e = {};
  e.port_index = port_index;
  e.flags = isolated ? VDEV_FAST_ISOLATED : 0;
  e.seen_ns = now_ns;
  if (bpf_map_update_elem(fdbFd(), &mac, &e, BPF_ANY)) return errnoError("fast path: MAC map");
  return {};
}

void FastPath::erase(uint64_t mac) { (void)bpf_map_delete_elem(fdbFd(), &mac); }

uint64_t FastPath::seen(uint64_t mac, uint16_t port_index) const noexcept {
  struct vdev_fast_entry e;
  if (bpf_map_lookup_elem(fdbFd(), &mac, &e) != 0 || e.port_index != port_index) return 0;
  return e.seen_ns;
}

void FastPath::clear() {
  uint64_t key, next;
  while (bpf_map_get_next_key(fdbFd(), nullptr, &next) == 0) {
    key = next;
    if (bpf_map_delete_elem(fdbFd(), &key)) break;
  }
}

void FastPath::forEach(const std::function<void(uint64_t, uint16_t, uint64_t)>& fn) const {
  uint64_t key = 0, next;
  const uint64_t* prev = nullptr;
  while (bpf_map_get_next_key(fdbFd(), prev, &next) == 0) {
    struct vdev_fast_entry e;
    if (bpf_map_lookup_elem(fdbFd(), &next, &e) == 0) fn(next, uint16_t(e.port_index), e.seen_ns);
    key = next;
    prev = &key;
  }
}

}  // namespace vdev::datapath
