// rtnetlink device management: veth pairs into network namespaces, persistent
// taps for unprivileged VMs, and queries (libnl-route-3 underneath).
//
// Ownership mark. Every device these functions create carries the interface
// alias (IFLA_IFALIAS) kManagedAlias, "vdev:managed", on its host end.
// deleteManagedLink() deletes nothing without it, so vdev never removes a
// device it did not make. Why the alias: it is kernel state (survives a vdevd
// restart or crash with no state file to get out of sync), it is visible to
// the operator (`ip link show` prints "alias vdev:managed"), and every
// device type has one. An operator who changes the alias takes the device
// over: vdev then refuses to delete it, which is the safe direction.
//
// Identity. The mark alone says "vdev made this", not "vdev made this one":
// a device vdevd made for a port, deleted, and a device of the same name
// made later by someone else are told apart only by what the device
// carries. So a port's device gets a per-device id in the mark,
// "vdev:managed id=<16 hex digits>" (managedAlias(newDeviceId()), given as
// VethSpec::id / TapSpec::id), which vdevd keeps in its state file and
// checks before it attaches to a device of the port's name again and
// before it deletes one (deleteManagedLink with the id). A device marked
// with the bare kManagedAlias (made before ids, or by a caller that gave
// none: the punt device) still counts as vdev's.
//
// Errors. Each function returns a Result whose Error carries a positive errno
// and the operation with its subjects, e.g.
//   "create veth vdc1 <-> eth0 in netns web1: File exists".
// The kernel's errno is taken from the netlink error message itself (not
// libnl's lossy NLE_* code); where the kernel adds an extended-ack text it
// is appended as "(kernel: ...)". A function that fails after creating a
// device deletes that device again before returning: no half-made device.
//
// Namespaces. Everything happens in the caller's network namespace, except
// where a NetnsRef names another one. A veth peer is created inside its
// namespace directly (IFLA_NET_NS_FD: CAP_NET_ADMIN there). Bringing it up
// there, and getLink() with a NetnsRef, use a netlink socket opened inside
// the namespace by a short-lived helper thread that setns()es (CAP_SYS_ADMIN;
// under systemd, RestrictNamespaces= must allow "net"). The calling thread
// never changes namespace.
//
// Thread safety: every function opens its own netlink socket; any thread may
// call any of them concurrently. Blocking: each waits for the kernel's
// acknowledgement (microseconds to a few milliseconds); control plane only.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mac.h"
#include "base/result.h"

namespace vdev::rtnl {

using vdev::Error;
using vdev::Result;
using vdev::Status;

inline constexpr const char* kManagedAlias = "vdev:managed";

// A new device id: 16 lowercase hex digits from getrandom() (64 bits: two
// devices never share one by chance).
std::string newDeviceId();
// The mark of a device with id `id`: "vdev:managed id=ID"; kManagedAlias
// for an empty id.
std::string managedAlias(std::string_view id);
// Whether `alias` is vdev's mark, with or without an id.
bool isManagedAlias(std::string_view alias);

// The same type as vdev::proto::Mac (codec.h); spelled out so that this header
// does not need the protocol's.
using vdev::Mac;

// A random locally administered unicast MAC (02-style, bit 1 of byte 0 set,
// bit 0 clear), from getrandom().
Mac randomMac();

// Checks a Linux interface name: 1..15 bytes, not "." or "..", no '/', ':',
// '%' or whitespace ('%' would make the kernel take it as a pattern). EINVAL with the reason otherwise. Every function below
// checks its names first (libnl would silently truncate a long one).
Status validateIfname(std::string_view name);

// A network namespace, named as `ip netns` does (/run/netns/NAME), by a path
// to a namespace file (/proc/PID/ns/net, a bind mount), or by a process in it.
class NetnsRef {
 public:
  enum class Kind { kCurrent, kName, kPath, kPid };

  NetnsRef() = default;  // the caller's own namespace
  static NetnsRef current() { return NetnsRef(); }
  static NetnsRef byName(std::string name) { return NetnsRef(Kind::kName, std::move(name), 0); }
  static NetnsRef byPath(std::string path) { return NetnsRef(Kind::kPath, std::move(path), 0); }
  static NetnsRef byPid(pid_t pid) { return NetnsRef(Kind::kPid, {}, pid); }

  Kind kind() const { return kind_; }
  bool isCurrent() const { return kind_ == Kind::kCurrent; }
  const std::string& name() const { return text_; }  // kName
  const std::string& path() const { return text_; }  // kPath
  pid_t pid() const { return pid_; }                 // kPid

  // The namespace file: /run/netns/NAME, the path, or /proc/PID/ns/net;
  // "" for kCurrent.
  std::string filePath() const;
  // For messages: "netns web1", "netns /proc/42/ns/net", "netns of pid 42",
  // "" for kCurrent.
  std::string describe() const;

  // Opens the namespace file and checks that it is a network namespace,
  // without ever blocking or opening anything else: O_PATH first, then the
  // file's filesystem must be nsfs (fstatfs), and only then is it opened
  // for reading (through /proc/self/fd) and its type checked
  // (NS_GET_NSTYPE). A FIFO, a device or a regular file is refused at once.
  // Returns the fd (O_RDONLY | O_CLOEXEC); the caller owns it.
  // Errors: EINVAL (kCurrent, a bad name, not a network namespace), ENOENT
  // (no such namespace/process), ESRCH (no such pid), EACCES/EPERM.
  Result<int> open() const;

 private:
  NetnsRef(Kind k, std::string text, pid_t pid) : kind_(k), text_(std::move(text)), pid_(pid) {}
  Kind kind_ = Kind::kCurrent;
  std::string text_;
  pid_t pid_ = 0;
};

// The uid that owns the user namespace owning the network namespace `nsfd`
// (an fd from NetnsRef::open()): 0 for the host's and for every namespace
// root made; the user's own uid for one made by a rootless runtime
// (unshare -Urn, rootless podman). That user administers it already.
// Errors: those of the NS_GET_USERNS / NS_GET_OWNER_UID ioctls.
Result<uid_t> netnsOwnerUid(int nsfd);

// ---------------------------------------------------------------------------
// veth

struct VethSpec {
  std::string name;      // host end: stays in the caller's namespace, vdevd's port
  std::string peerName;  // the container's interface, e.g. "eth0"
  NetnsRef peerNetns;    // where the peer goes; current() keeps it here
  std::optional<Mac> mac;      // host end; default: the kernel's random MAC
  std::optional<Mac> peerMac;  // default: randomMac() (so VethInfo knows it)
  int mtu = 0;                     // both ends; 0 keeps the kernel default (1500)
  // GRO on the peer: gives it NAPI, so that XDP frames redirected into the
  // host end (vdevd --fast-path) are delivered; the container then receives
  // through NAPI and GRO instead of the backlog.
  bool peerGro = false;
  // TX checksum offload off on the container's end, for a port at vdevd's
  // XDP hook: a frame the container's stack leaves for the "hardware" to
  // checksum (CHECKSUM_PARTIAL) would reach vdevd through XDP unfinished,
  // and AF_XDP carries no offload state to finish it later. (Off, it also
  // turns TSO off.) The skb path needs none of this.
  bool peerTxCsumOff = false;
  // The device id in the host end's mark (managedAlias(id)); "" marks it
  // with the bare kManagedAlias.
  std::string id;
};

struct VethInfo {
  std::string name;
  int ifindex = 0;      // in the caller's namespace
  std::string peerName;
  int peerIfindex = 0;  // in the peer's namespace
  Mac mac{};        // host end
  Mac peerMac{};
  int mtu = 0;          // both ends
};

// Creates a veth pair in one request (RTM_NEWLINK, NLM_F_EXCL): the host end
// `name` here, the peer `peerName` directly inside spec.peerNetns, both with
// `mtu`, the peer with peerMac, both down. Then marks the host end (alias
// kManagedAlias), disables IPv6 on it (sysctl
// net.ipv6.conf.NAME.disable_ipv6=1, so the host sends nothing on a switch
// port by itself: no router solicitation, no MLD report, no DAD), brings it
// up, and brings the peer up inside its namespace. On any failure after the
// create, deletes the pair. The peer's IPv6 and addresses are the
// container's business.
// Errors: EEXIST (either name taken), EINVAL (bad name, MTU out of range, not
// a network namespace), ENOENT (no such namespace), ESRCH (no such pid),
// EPERM.
Result<VethInfo> createVeth(const VethSpec& spec);

// ---------------------------------------------------------------------------
// netkit (Linux 6.7+, CONFIG_NETKIT)

// Creates a netkit pair in L2 mode, as createVeth() makes a veth pair, from
// the same spec (peerGro and peerTxCsumOff do not apply: a netkit has no
// NAPI and nothing of vdev's runs at XDP on it): the primary end `name`
// here, the peer `peerName` inside spec.peerNetns with peerMac (the
// primary's MAC is the kernel's random one), both with `mtu`; marked, IPv6
// off on the primary, both up. The peer's default policy is drop: while no
// program is attached to the pair (before vdevd attaches its own, after
// vdevd is gone and its BPF link with it), what the container sends is
// dropped, never handed to the host's stack through the primary. The
// primary's stays pass: frames redirected into it reach the container.
// libnl knows no netkit; the request is built by hand (IFLA_NETKIT_*).
// Errors: createVeth()'s, and EOPNOTSUPP with "Linux 6.7 or later with
// CONFIG_NETKIT" in the message on a kernel without netkit.
Result<VethInfo> createNetkit(const VethSpec& spec);

// TX checksum offload (and with it TSO) off on the peer end `peerName`
// inside `peerNetns`, as VethSpec::peerTxCsumOff does at creation: for a
// veth made for vdevd's tc hook whose port went to its XDP hook after all.
// Errors: NetnsRef::open()'s, ENODEV, EPERM.
Status setPeerTxCsumOff(const NetnsRef& peerNetns, const std::string& peerName);

// ---------------------------------------------------------------------------
// tap

struct TapSpec {
  std::string name;               // "" lets the kernel choose "tapN" (see TapInfo)
  std::optional<uid_t> owner;     // TUNSETOWNER: this user may attach (QEMU's user)
  std::optional<gid_t> group;     // TUNSETGROUP: members of this group may attach
  bool multiQueue = false;        // IFF_MULTI_QUEUE: attachers must ask for it too
  std::optional<Mac> mac;     // the host end's MAC (not the guest's)
  int mtu = 0;                    // 0 keeps 1500
  std::string id;                 // the device id in its mark, as VethSpec::id
};

struct TapInfo {
  std::string name;
  int ifindex = 0;
  Mac mac{};
  int mtu = 0;
  bool multiQueue = false;
};

// Creates a persistent tap through /dev/net/tun, so that an unprivileged
// process can later attach to it with TUNSETIFF of the same name, as QEMU
// does. Order: TUNSETIFF (IFF_TAP | IFF_NO_PI [| IFF_MULTI_QUEUE] |
// IFF_TUN_EXCL); MAC, MTU and the mark; IPv6 off; up; TUNSETOWNER,
// TUNSETGROUP; TUNSETPERSIST 1 last. Until then the creating fd holds the
// device, so a failure (or a crash) at any step leaves no device behind.
// Its carrier is off until a process attaches.
//
// Who may attach (the kernel's tun_not_capable()): with an owner, only that
// euid; with a group, only members of it; with BOTH, only that user AND only
// while a member of that group. Without either, only CAP_NET_ADMIN. The
// attacher also needs read-write access to /dev/net/tun itself (mode 0666 on
// most distributions) and must ask for the same IFF_MULTI_QUEUE setting.
//
// Errors: EEXIST (a device of that name exists, of any type: never taken
// over), EINVAL, EPERM, ENOENT (no /dev/net/tun).
Result<TapInfo> createTap(const TapSpec& spec);

// ---------------------------------------------------------------------------
// deleting and queries (caller's namespace unless a NetnsRef is given)

// Deletes `name` (RTM_DELLINK by ifindex) if and only if it carries the
// mark. Deleting a veth end deletes its peer too; deleting a tap that a VM
// still holds detaches the VM's queues (its reads and writes then fail).
// With an `id`, the mark must be exactly managedAlias(id): vdev's device,
// and the one made with that id (a device of the same name made since by
// anyone else is not deleted).
// Errors: ENODEV (no such device), EPERM ("not created by vdev": the alias is
// not vdev's mark, or not the one with `id`; nothing is deleted).
Status deleteManagedLink(const std::string& name, std::string_view id = {});

struct LinkState {
  int ifindex = 0;
  std::string name;
  std::string kind;   // IFLA_INFO_KIND: "veth", "tun" (also taps), "" for hardware
  Mac mac{};      // zero if the device has no 6-byte address
  int mtu = 0;
  unsigned flags = 0; // IFF_*
  bool up = false;      // IFF_UP: administratively up
  bool carrier = false; // IFF_LOWER_UP
  std::string alias;
  bool managed = false; // isManagedAlias(alias)
  int linkIfindex = 0;  // IFLA_LINK (a veth's peer, in the peer's namespace), 0 if none
  // IFLA_LINK_NETNSID is there: the device's link (a veth's peer) is in
  // another network namespace than the device. The kernel sends it only
  // then (rtnl_fill_link_netnsid).
  bool linkElsewhere = false;
};

// The device's current state. Errors: ENODEV, EINVAL (bad name), and the
// NetnsRef's open() errors.
Result<LinkState> getLink(const std::string& name, const NetnsRef& netns = {});

// The device's ifindex. Errors: ENODEV, EINVAL.
Result<int> ifindexOf(const std::string& name);

// Offload features of a device here (legacy ethtool ioctls; each one set
// only if given). Errors: ENODEV, EOPNOTSUPP (the device cannot change it),
// EPERM.
struct Offloads {
  std::optional<bool> tso;      // tcp-segmentation-offload
  std::optional<bool> gso;      // generic-segmentation-offload
  std::optional<bool> tx_csum;  // tx-checksumming
  std::optional<bool> tx_vlan;  // tx-vlan-offload: off makes the kernel write an
                                // accelerated VLAN tag into the frame on transmit
  std::optional<bool> gro;
};
Status setOffloads(const std::string& name, const Offloads& o);

// Every device here (one RTM_GETLINK dump). Errors: those of the socket.
Result<std::vector<LinkState>> listLinks();

// Sets the alias (IFLA_IFALIAS) of `name` here. Not for a device's host
// end, whose alias is the mark (kManagedAlias): the caller's own devices'
// other ends only. Errors: ENODEV, EINVAL (bad name, alias over 255 bytes),
// EPERM.
Status setAlias(const std::string& name, const std::string& alias);

// The tun/tap owner uid of `name` (TUNSETOWNER), from its sysfs attribute
// `owner`, checked to be the device with `ifindex` (sysfs shows the
// namespace it was mounted in: another device of the same name there is
// not this one). nullopt: the device has no owner (-1).
// Errors: ENODEV (no such device, or sysfs shows another one with this
// name), ENOENT (not a tun/tap: no `owner`), EIO (unreadable).
Result<std::optional<uid_t>> tunOwner(const std::string& name, int ifindex);

// True if `name` exists here. False also when that cannot be determined (a
// netlink error): use getLink() to tell the two apart.
bool linkExists(const std::string& name);

// True if `name` exists and carries the mark; false otherwise, also on error
// (deleteManagedLink checks again itself, so false only ever errs on the
// side of not deleting).
bool linkIsManaged(const std::string& name);

}  // namespace vdev::rtnl
