// The counter schema: every statistic vdev reports, named once.
//
// One row per counter: its id (the index into PortValues / PoolValues), its
// attribute inside the control protocol's STATS or POOL nest, its JSON path,
// its text label, its Prometheus metric (name, type, help), where its value
// comes from and whether it counts lost frames. Everything that carries or
// prints counters works from these rows and names nothing itself: the
// datapath fills the values by id (vdev/datapath/src/stats.cpp), the codec puts
// and reads one u64 attribute per row (netlink/proto/src/codec_*.cpp), the writers
// (stats/format.h: vdevd's --stats-json and SIGUSR1 table, `vdevctl stats`
// text, -j and --prometheus, `port show -s -j`) name each counter as its row
// does, and readers (tests, vdev-bench) find a counter by its JSON path.
//
// Adding a counter: a row in VDEV_STATS_DROPS (a drop reason) or
// VDEV_STATS_PORT (any other per-port counter), and the datapath code that
// counts it: a drop reason or a kCounted counter is incremented on the hot
// path (PortCounters, datapath/counters.h), a kRead one is set where the
// statistics are gathered (vdev/datapath/src/stats.cpp).
//
// Wire ABI (proto/protocol.h): `attr` is never renumbered or reused; a new
// counter takes the next free number. A client ignores attributes it does
// not know and reads a counter its peer did not send as 0. Ids are internal
// (not on the wire) and may change.
//
// Header only and constexpr, so that the protocol's fuzz target builds
// without this module's library. Thread safe (constants).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace vdev::stats {

enum class MetricType : uint8_t { kCounter, kGauge };

// Where a port counter's value comes from.
enum class Origin : uint8_t {
  kCounted,  // vdevd counts it per frame (summed over the datapath threads); a
             // removed port's count stays in vdevd's totals (removed_ports)
  kRead,     // read when the statistics are taken (TX rings, the kernel's
             // socket statistics, the XDP program's map, the device): it goes
             // with the port
};

// A Prometheus metric. `label` set: one family for several counters, told
// apart by this label, whose value is each counter's name (drops by reason,
// the pool's places).
struct Metric {
  const char* name;
  MetricType type;
  const char* help;
  const char* label = nullptr;
};

struct CounterDef {
  uint32_t id;       // index into the values (PortValues, PoolValues)
  uint16_t attr;     // attribute inside STATS (port) or POOL (pool): u64
  const char* path;  // JSON: "rx_packets" (a field of the object itself) or
                     // "drops.runt" (field "runt" of the nested object "drops")
  const char* text;  // text label: "rx packets", "drops runt": the line, then the counter
  Metric metric;
  Origin origin;
  bool lost;  // counts frames lost at the port (vdevctl's DROPS, DROPS/S)

  // The two parts of `path`: "" and "rx_packets", "drops" and "runt".
  constexpr std::string_view group() const {
    const std::string_view p = path;
    const size_t dot = p.find('.');
    return dot == std::string_view::npos ? std::string_view() : p.substr(0, dot);
  }
  constexpr std::string_view name() const {
    const std::string_view p = path;
    const size_t dot = p.find('.');
    return dot == std::string_view::npos ? p : p.substr(dot + 1);
  }
  // The two parts of `text`: "rx" and "packets".
  constexpr std::string_view textLine() const {
    const std::string_view t = text;
    return t.substr(0, t.find(' '));
  }
  constexpr std::string_view textLabel() const {
    const std::string_view t = text;
    const size_t sp = t.find(' ');
    return sp == std::string_view::npos ? t : t.substr(sp + 1);
  }
};

// ------------------------------------------------------------------ the table

// The drop reasons, in DropReason order: D(Id, attr, name). Each dropped
// frame is counted once, under one reason, at the port named in the comment
// (docs/vdevd.md, "Statistics JSON"). JSON "drops.<name>", text
// "drops <name>", Prometheus vdev_port_drops_total{reason="<name>"}.
#define VDEV_STATS_DROPS(D)                                                                   \
  D(RingFull, 6, "ring_full")         /* destination port ring full (xmitBulk); destination */ \
  D(TxRingFull, 7, "tx_ring_full")    /* destination TX ring full after reclaim + kick + retries */ \
  D(NoRoute, 8, "no_route")           /* nowhere to send; ingress */                         \
  D(PortDown, 9, "port_down")         /* destination had no live queue; destination */        \
  D(Oversize, 10, "oversize")         /* longer than the destination MTU or the frame size */ \
  D(Runt, 11, "runt")                 /* shorter than an Ethernet header; ingress */          \
  D(PoolEmpty, 12, "pool_empty")      /* no frame for a flood copy; destination */            \
  D(InvalidSrc, 13, "invalid_src")    /* multicast, all-zero or (switch mode) a host MAC as  \
                                         source; ingress */                                   \
  D(BadType, 24, "bad_type")          /* type/length neither a length (<= 1500) nor a type   \
                                         (>= 0x0600), or an 802.3 length longer than the     \
                                         frame; ingress */                                    \
  D(MacLimit, 25, "mac_limit")        /* new source MAC, but the port (or its uid's ports)   \
                                         holds its limit of learned MACs; ingress */          \
  D(MacLocked, 26, "mac_locked")      /* source MAC static on another port, or held by       \
                                         another; ingress */                                  \
  D(Inflight, 27, "inflight_limit")   /* the ingress port's frames in flight reached its     \
                                         bound; ingress */                                    \
  D(FastXmit, 28, "fast_xmit")        /* kernel fast path: the destination device refused    \
                                         the frame; destination */                            \
  D(LinkLocal, 31, "link_local")      /* an 802.1D link-local group destination (STP, LACP,  \
                                         802.1X, LLDP: 01:80:c2:00:00:0x) from a port the    \
                                         host is not behind: never bridged; ingress */       \
  D(Isolated, 32, "isolated")         /* unicast from an isolated port to a station learned \
                                         on another isolated port; ingress */                \
  D(StormBcast, 33, "storm_bcast")    /* broadcast beyond the port's storm limit (its      \
                                         program's token bucket); ingress */                  \
  D(StormMcast, 34, "storm_mcast")    /* multicast beyond the port's storm limit (its      \
                                         program's token bucket); ingress */                  \
  D(StormUnknown, 35, "storm_unknown") /* unicast to an unknown MAC (a flood) beyond the    \
                                         port's storm limit (vdevd's bucket); ingress */      \
  D(Police, 36, "police")             /* beyond the port's ingress policer (packets/s or   \
                                         bits/s; its program's token buckets); ingress */     \
  D(SpoofMac, 37, "spoof_mac")       /* source MAC other than the port's allowed one (its  \
                                         program's anti-spoofing); ingress */                 \
  D(SpoofIp, 38, "spoof_ip")         /* a source address (IPv4, ARP sender, IPv6, NA      \
                                         target) other than the port's allowed ones, or    \
                                         another EtherType, on a port with allowed         \
                                         addresses (its program); ingress */               \
  D(RaGuard, 39, "ra_guard")         /* a Router Advertisement from a port with ra-guard  \
                                         (its program); ingress */                         \
  D(DhcpGuard, 40, "dhcp_guard")     /* a DHCP/DHCPv6 server's message from a port with   \
                                         dhcp-guard (its program); ingress */              \
  D(VlanFiltered, 41, "vlan_filtered") /* a VLAN the port does not carry: a tag not among  \
                                         its VIDs, an untagged frame on a trunk without a  \
                                         native VLAN, an 802.1ad tag; ingress */

// Every per-port counter, in output order (JSON, text, Prometheus, and the
// order of the attributes in a STATS nest): X(Id, attr, path, text, metric,
// type, help, origin, lost); the drop reasons come where DROPS stands.
// Counters of one JSON group and of one text line are next to each other.
#define VDEV_STATS_PORT(X, DROPS)                                                              \
  X(RxPackets, 1, "rx_packets", "rx packets", "vdev_port_rx_packets_total", kCounter,            \
    "Frames received on the port's AF_XDP sockets.", kCounted, false)                            \
  X(RxBytes, 2, "rx_bytes", "rx bytes", "vdev_port_rx_bytes_total", kCounter,                    \
    "Bytes received on the port's AF_XDP sockets.", kCounted, false)                             \
  X(TxPackets, 3, "tx_packets", "tx packets", "vdev_port_tx_packets_total", kCounter,            \
    "Frames put on the port's AF_XDP TX rings.", kCounted, false)                                \
  X(TxBytes, 4, "tx_bytes", "tx bytes", "vdev_port_tx_bytes_total", kCounter,                    \
    "Bytes put on the port's AF_XDP TX rings.", kCounted, false)                                 \
  X(TxOutstanding, 5, "tx_outstanding", "tx outstanding", "vdev_port_tx_outstanding", kGauge,    \
    "Frames sent on the port and not completed yet.", kRead, false)                              \
  DROPS                                                                                          \
  X(XdpRxDropped, 14, "xdp_stats.rx_dropped", "xdp_stats rx_dropped",                            \
    "vdev_port_xdp_rx_dropped_total", kCounter,                                                  \
    "XDP_STATISTICS rx_dropped of the port's sockets (no fill buffer, frame too long).", kRead,  \
    true)                                                                                        \
  X(XdpRxInvalidDescs, 15, "xdp_stats.rx_invalid_descs", "xdp_stats rx_invalid_descs",           \
    "vdev_port_xdp_rx_invalid_descs_total", kCounter,                                            \
    "XDP_STATISTICS rx_invalid_descs of the port's sockets.", kRead, false)                      \
  X(XdpTxInvalidDescs, 16, "xdp_stats.tx_invalid_descs", "xdp_stats tx_invalid_descs",           \
    "vdev_port_xdp_tx_invalid_descs_total", kCounter,                                            \
    "XDP_STATISTICS tx_invalid_descs of the port's sockets.", kRead, false)                      \
  X(XdpRxRingFull, 17, "xdp_stats.rx_ring_full", "xdp_stats rx_ring_full",                       \
    "vdev_port_xdp_rx_ring_full_total", kCounter,                                                \
    "XDP_STATISTICS rx_ring_full of the port's sockets.", kRead, true)                           \
  /* Not lost: the same events as rx_dropped. */                                                 \
  X(XdpRxFillRingEmptyDescs, 18, "xdp_stats.rx_fill_ring_empty_descs",                           \
    "xdp_stats rx_fill_ring_empty_descs", "vdev_port_xdp_rx_fill_ring_empty_descs_total",        \
    kCounter,                                                                                    \
    "XDP_STATISTICS rx_fill_ring_empty_descs of the port's sockets (same events as rx_dropped).", \
    kRead, false)                                                                                \
  X(XdpTxRingEmptyDescs, 19, "xdp_stats.tx_ring_empty_descs", "xdp_stats tx_ring_empty_descs",   \
    "vdev_port_xdp_tx_ring_empty_descs_total", kCounter,                                         \
    "XDP_STATISTICS tx_ring_empty_descs of the port's sockets.", kRead, false)                   \
  X(ProgPass, 20, "xdp_prog.pass", "xdp_prog pass", "vdev_port_xdp_prog_pass_total", kCounter,   \
    "Frames the port's XDP program passed to the host stack.", kRead, false)                     \
  X(ProgRedirect, 21, "xdp_prog.redirect", "xdp_prog redirect",                                  \
    "vdev_port_xdp_prog_redirect_total", kCounter,                                               \
    "Frames the port's XDP program redirected to vdevd.", kRead, false)                          \
  X(ProgNoSocket, 22, "xdp_prog.no_socket", "xdp_prog no_socket",                                \
    "vdev_port_xdp_prog_no_socket_total", kCounter,                                              \
    "Frames the port's XDP program dropped: no socket bound to the queue.", kRead, false)        \
  X(ProgFast, 29, "xdp_prog.fast", "xdp_prog fast", "vdev_port_xdp_prog_fast_total", kCounter,   \
    "Frames the port's XDP program sent on the kernel fast path (--fast-path).", kRead, false)   \
  X(DevTxDropped, 23, "dev.tx_dropped", "dev tx_dropped", "vdev_port_dev_tx_dropped_total",      \
    kCounter, "The port device's own tx_dropped.", kRead, true)                                  \
  X(LinkFlapWaits, 30, "link.flap_waits", "link flap_waits", "vdev_port_link_flap_waits_total",  \
    kCounter,                                                                                    \
    "Times the port's link came back but re-attaching it waited: the link flapped more than "    \
    "20 times in a second.", kCounted, false)

// Where every UMEM frame is, besides the total: P(Id, attr, name). JSON
// "pool.<name>", Prometheus vdev_pool_frames{place="<name>"}. The places add
// up to the total.
#define VDEV_STATS_POOL_PLACES(P) \
  P(Free, 2, "free")              \
  P(FillRing, 3, "fill_ring")     \
  P(KernelRx, 4, "kernel_rx")     \
  P(RxRing, 5, "rx_ring")         \
  P(RxBurst, 6, "rx_burst")       \
  P(PortRings, 7, "port_rings")   \
  P(TxRing, 8, "tx_ring")         \
  P(KernelTx, 9, "kernel_tx")     \
  P(CompRing, 10, "comp_ring")    \
  P(KernelHeld, 11, "kernel_held")

inline constexpr Metric kDropsMetric{
    "vdev_port_drops_total", MetricType::kCounter,
    "Frames vdevd dropped, by reason, charged to this port (see docs/vdevd.md).", "reason"};
inline constexpr Metric kPoolTotalMetric{"vdev_pool_capacity_frames", MetricType::kGauge,
                                         "UMEM frames in total."};
inline constexpr Metric kPoolPlaceMetric{"vdev_pool_frames", MetricType::kGauge,
                                         "UMEM frames by where they are now.", "place"};
inline constexpr uint16_t kPoolTotalAttr = 1;

// ------------------------------------------------------------------ ids

// A drop reason is its own port counter id: ids 0 .. kNumDropReasons - 1.
enum DropReason : uint32_t {
#define VDEV_STATS_DROP_ENUM(Id, attr, name) kDrop##Id,
  VDEV_STATS_DROPS(VDEV_STATS_DROP_ENUM)
#undef VDEV_STATS_DROP_ENUM
  kNumDropReasons
};

namespace detail {
enum PortOrdinal : uint32_t {
#define VDEV_STATS_PORT_ORDINAL(Id, ...) k##Id,
  VDEV_STATS_PORT(VDEV_STATS_PORT_ORDINAL, )
#undef VDEV_STATS_PORT_ORDINAL
  kNumOther
};
}  // namespace detail

// The other port counters, after the drop reasons.
enum PortCounter : uint32_t {
#define VDEV_STATS_PORT_ENUM(Id, ...) k##Id = uint32_t{kNumDropReasons} + detail::k##Id,
  VDEV_STATS_PORT(VDEV_STATS_PORT_ENUM, )
#undef VDEV_STATS_PORT_ENUM
  kNumPortCounters = uint32_t{kNumDropReasons} + detail::kNumOther
};

enum PoolCounter : uint32_t {
  kPoolTotal = 0,
#define VDEV_STATS_POOL_ENUM(Id, attr, name) kPool##Id,
  VDEV_STATS_POOL_PLACES(VDEV_STATS_POOL_ENUM)
#undef VDEV_STATS_POOL_ENUM
  kNumPoolCounters
};

// ------------------------------------------------------------------ rows

// Every port counter, in output order.
inline constexpr CounterDef kPortCounters[] = {
#define VDEV_STATS_DROP_ROW(Id, attr, name) \
  {kDrop##Id, attr, "drops." name, "drops " name, kDropsMetric, Origin::kCounted, true},
#define VDEV_STATS_PORT_ROW(Id, attr, path, text, metric, type, help, origin, lost) \
  {k##Id, attr, path, text, {metric, MetricType::type, help}, Origin::origin, lost},
    VDEV_STATS_PORT(VDEV_STATS_PORT_ROW, VDEV_STATS_DROPS(VDEV_STATS_DROP_ROW))
#undef VDEV_STATS_PORT_ROW
#undef VDEV_STATS_DROP_ROW
};

// The pool: the total, then the places.
inline constexpr CounterDef kPoolCounters[] = {
    {kPoolTotal, kPoolTotalAttr, "total", "total", kPoolTotalMetric, Origin::kRead, false},
#define VDEV_STATS_POOL_ROW(Id, attr, name) \
  {kPool##Id, attr, name, name, kPoolPlaceMetric, Origin::kRead, false},
    VDEV_STATS_POOL_PLACES(VDEV_STATS_POOL_ROW)
#undef VDEV_STATS_POOL_ROW
};

// ------------------------------------------------------------------ lookups

namespace detail {

constexpr uint16_t maxAttr(std::span<const CounterDef> rows) {
  uint16_t m = 0;
  for (const CounterDef& c : rows) m = c.attr > m ? c.attr : m;
  return m;
}

// Row index by id; every id exactly once (else not a constant expression).
template <size_t N>
constexpr std::array<uint8_t, N> indexById(std::span<const CounterDef> rows) {
  std::array<uint8_t, N> idx{};
  std::array<bool, N> seen{};
  if (rows.size() != N) throw "the rows do not cover every id";
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].id >= N || seen[rows[i].id]) throw "an id out of range or twice";
    seen[rows[i].id] = true;
    idx[rows[i].id] = uint8_t(i);
  }
  return idx;
}

// Row index + 1 by attribute (0: no such attribute); every attribute once.
template <size_t Max>
constexpr std::array<uint8_t, Max + 1> indexByAttr(std::span<const CounterDef> rows) {
  std::array<uint8_t, Max + 1> idx{};
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].attr == 0 || idx[rows[i].attr]) throw "attribute 0 or an attribute twice";
    idx[rows[i].attr] = uint8_t(i + 1);
  }
  return idx;
}

// Rows of one JSON group, and of one text line, are contiguous: writing in
// row order then gives every object its fields in that order.
constexpr bool contiguous(std::span<const CounterDef> rows, bool text) {
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto key = [&](size_t k) { return text ? rows[k].textLine() : rows[k].group(); };
    if (i && key(i) == key(i - 1)) continue;
    for (size_t j = 0; j < i; ++j)
      if (key(j) == key(i)) return false;
  }
  return true;
}

}  // namespace detail

// The largest attribute number inside STATS and POOL.
inline constexpr uint16_t kPortAttrMax = detail::maxAttr(kPortCounters);
inline constexpr uint16_t kPoolAttrMax = detail::maxAttr(kPoolCounters);

namespace detail {
inline constexpr auto kPortById = indexById<kNumPortCounters>(kPortCounters);
inline constexpr auto kPoolById = indexById<kNumPoolCounters>(kPoolCounters);
inline constexpr auto kPortByAttr = indexByAttr<kPortAttrMax>(kPortCounters);
inline constexpr auto kPoolByAttr = indexByAttr<kPoolAttrMax>(kPoolCounters);
static_assert(kPortAttrMax < 0x4000 && kPoolAttrMax < 0x4000);  // below NLA_F_* flags
static_assert(contiguous(kPortCounters, false) && contiguous(kPortCounters, true));
static_assert(std::size(kPortCounters) < 256 && std::size(kPoolCounters) < 256);
}  // namespace detail

constexpr const CounterDef& portCounter(uint32_t id) { return kPortCounters[detail::kPortById[id]]; }
constexpr const CounterDef& poolCounter(uint32_t id) { return kPoolCounters[detail::kPoolById[id]]; }
// The row of a STATS / POOL attribute; nullptr for one this table does not
// have (a newer peer's).
constexpr const CounterDef* portCounterByAttr(uint16_t attr) {
  if (attr > kPortAttrMax || !detail::kPortByAttr[attr]) return nullptr;
  return &kPortCounters[detail::kPortByAttr[attr] - 1];
}
constexpr const CounterDef* poolCounterByAttr(uint16_t attr) {
  if (attr > kPoolAttrMax || !detail::kPoolByAttr[attr]) return nullptr;
  return &kPoolCounters[detail::kPoolByAttr[attr] - 1];
}
// A port counter by its JSON path ("rx_packets", "drops.runt"); nullopt if
// there is none.
constexpr std::optional<uint32_t> findPortCounter(std::string_view path) {
  for (const CounterDef& c : kPortCounters)
    if (path == c.path) return c.id;
  return std::nullopt;
}
constexpr std::optional<uint32_t> findPoolCounter(std::string_view path) {
  for (const CounterDef& c : kPoolCounters)
    if (path == c.path) return c.id;
  return std::nullopt;
}
// The JSON path of a port counter: jsonPath(kDropRunt) == "drops.runt".
constexpr const char* jsonPath(uint32_t id) { return portCounter(id).path; }
// A drop reason's name: "ring_full", ...
constexpr std::string_view dropName(DropReason r) { return portCounter(r).name(); }

// ------------------------------------------------------------------ values

// Counter values by id. Plain data: copied, summed and compared whole.
// Indexed by a row too (values[row]): a row of the matching table
// (kPortCounters for PortValues, kPoolCounters for PoolValues).
template <typename Id, uint32_t N>
struct Values {
  std::array<uint64_t, N> v{};

  uint64_t& operator[](Id id) noexcept { return v[id]; }
  uint64_t operator[](Id id) const noexcept { return v[id]; }
  uint64_t& operator[](const CounterDef& c) noexcept { return v[c.id]; }
  uint64_t operator[](const CounterDef& c) const noexcept { return v[c.id]; }
  Values& operator+=(const Values& o) noexcept {
    for (uint32_t i = 0; i < N; ++i) v[i] += o.v[i];
    return *this;
  }
  bool operator==(const Values&) const = default;
};

// Every counter of one port (or a sum of ports).
struct PortValues : Values<PortCounter, kNumPortCounters> {
  using Values::operator[];
  uint64_t& operator[](DropReason r) noexcept { return v[r]; }
  uint64_t operator[](DropReason r) const noexcept { return v[r]; }
  // Every drop reason.
  uint64_t totalDrops() const noexcept {
    uint64_t s = 0;
    for (uint32_t r = 0; r < kNumDropReasons; ++r) s += v[r];
    return s;
  }
  // Frames lost at the port, wherever counted: the counters marked `lost`.
  uint64_t lost() const noexcept {
    uint64_t s = 0;
    for (const CounterDef& c : kPortCounters)
      if (c.lost) s += v[c.id];
    return s;
  }
  bool operator==(const PortValues&) const = default;
};

// Where every UMEM frame is.
struct PoolValues : Values<PoolCounter, kNumPoolCounters> {
  // The places (every counter but the total): equals the total when the
  // accounting adds up.
  uint64_t sum() const noexcept {
    uint64_t s = 0;
    for (uint32_t i = 0; i < kNumPoolCounters; ++i)
      if (i != kPoolTotal) s += v[i];
    return s;
  }
  bool operator==(const PoolValues&) const = default;
};

}  // namespace vdev::stats
