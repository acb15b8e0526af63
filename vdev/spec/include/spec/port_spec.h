// The modes of a port and of vdevd, defined once for the datapath and the
// control protocol: each enum's values and their one name.
//
// The numbers are the wire's (proto/protocol.h): an ABI, never renumbered
// or reused. A value only the datapath needs (PortHook::kAuto,
// TcAttach::kAuto: "decide for me") takes a number of its own, after the
// wire's, which the protocol's validation refuses in a request and a reply
// never carries. Names are what every tool prints and every reader (the
// state file, options, vdevctl's words) takes back: one spelling each.
//
// Thread safety: constants and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace vdev::spec {

// kPunt: replies only -- the punt device's far end in STATS_GET (the frames
// lost on their way from the ports' skb programs to vdevd), not a port.
// kNetkit: a container's netkit pair in L2 mode (Linux 6.7+, CONFIG_NETKIT),
// its skb program run by the netkit device itself (docs/architecture.md).
enum class PortType : uint8_t { kTap = 1, kVeth = 2, kNetdev = 3, kPunt = 4, kNetkit = 5 };
// Where a port's received frames enter vdev. kXdp: vdevd's XDP program and
// AF_XDP sockets (NIC-like sources); kTc: the skb-level program at tcx
// ingress (senders that hand the kernel skbs: containers' veths, VMs'
// taps). kAuto (datapath only): chosen by the device (datapath/port.h).
enum class PortHook : uint8_t { kXdp = 1, kTc = 2, kAuto = 3 };
// How skb programs are attached. kTcx: tcx (Linux 6.6); kClsact: a cls_bpf
// filter at the clsact qdisc (classic tc, where the kernel has no tcx).
// kAuto (datapath only): kTcx where the kernel has it (probeTcAttach()).
enum class TcAttach : uint8_t { kTcx = 1, kClsact = 2, kAuto = 3 };
// kNone: no XDP program (replies); kAuto: native where the driver has it.
enum class XdpMode : uint8_t { kNone = 0, kNative = 1, kGeneric = 2, kAuto = 3 };
// How a port's AF_XDP sockets are bound; kClosed: it has none now.
enum class BindMode : uint8_t { kNone = 0, kCopy = 1, kZerocopy = 2, kClosed = 3 };
enum class SwitchMode : uint8_t { kSwitch = 1, kXconnect = 2 };

// One row of an enum's names.
template <class E>
struct Named {
  E value;
  const char* name;
};

// Every value of each enum, with its name: the only place a name is spelt.
inline constexpr Named<PortType> kPortTypeNames[] = {
    {PortType::kTap, "tap"}, {PortType::kVeth, "veth"}, {PortType::kNetdev, "netdev"}, {PortType::kPunt, "punt"},
    {PortType::kNetkit, "netkit"}};
inline constexpr Named<PortHook> kPortHookNames[] = {
    {PortHook::kXdp, "xdp"}, {PortHook::kTc, "tc"}, {PortHook::kAuto, "auto"}};
inline constexpr Named<TcAttach> kTcAttachNames[] = {
    {TcAttach::kTcx, "tcx"}, {TcAttach::kClsact, "clsact"}, {TcAttach::kAuto, "auto"}};
inline constexpr Named<XdpMode> kXdpModeNames[] = {
    {XdpMode::kNone, "none"}, {XdpMode::kNative, "native"}, {XdpMode::kGeneric, "generic"}, {XdpMode::kAuto, "auto"}};
inline constexpr Named<BindMode> kBindModeNames[] = {
    {BindMode::kNone, "none"}, {BindMode::kCopy, "copy"}, {BindMode::kZerocopy, "zerocopy"},
    {BindMode::kClosed, "closed"}};
inline constexpr Named<SwitchMode> kSwitchModeNames[] = {
    {SwitchMode::kSwitch, "switch"}, {SwitchMode::kXconnect, "xconnect"}};

namespace detail {
template <class E, size_t N>
constexpr const char* nameIn(const Named<E> (&t)[N], E e) {
  for (const Named<E>& n : t)
    if (n.value == e) return n.name;
  return "unknown";  // a value of a newer peer's
}
}  // namespace detail

// The name of each value; "unknown" for a number this code does not know
// (a newer daemon's, in a reply).
constexpr const char* portTypeName(PortType t) { return detail::nameIn(kPortTypeNames, t); }
constexpr const char* portHookName(PortHook h) { return detail::nameIn(kPortHookNames, h); }
constexpr const char* tcAttachName(TcAttach a) { return detail::nameIn(kTcAttachNames, a); }
constexpr const char* xdpModeName(XdpMode m) { return detail::nameIn(kXdpModeNames, m); }
constexpr const char* bindModeName(BindMode m) { return detail::nameIn(kBindModeNames, m); }
constexpr const char* switchModeName(SwitchMode m) { return detail::nameIn(kSwitchModeNames, m); }

// The same, as one overload set (byName()).
constexpr const char* nameOfValue(PortType v) { return portTypeName(v); }
constexpr const char* nameOfValue(PortHook v) { return portHookName(v); }
constexpr const char* nameOfValue(TcAttach v) { return tcAttachName(v); }
constexpr const char* nameOfValue(XdpMode v) { return xdpModeName(v); }
constexpr const char* nameOfValue(BindMode v) { return bindModeName(v); }
constexpr const char* nameOfValue(SwitchMode v) { return switchModeName(v); }


// The value among `among` whose name is `s`: readers list the values they
// take (the state file's hook: xdp, tc or auto; a request's: xdp or tc),
// and read them by the name they are printed with, never another spelling.
template <class E>
constexpr std::optional<E> byName(std::string_view s, std::initializer_list<E> among) {
  for (E e : among)
    if (s == nameOfValue(e)) return e;
  return std::nullopt;
}

// The same for any enum with a name function (a datapath's own, such as
// XdpFeatures::Source).
template <class E>
constexpr std::optional<E> byName(std::string_view s, std::initializer_list<E> among, const char* (*name)(E)) {
  for (E e : among)
    if (s == name(e)) return e;
  return std::nullopt;
}

static_assert(xdpModeName(XdpMode::kAuto) == std::string_view("auto"));
static_assert(portHookName(PortHook(0)) == std::string_view("unknown"));

}  // namespace vdev::spec
