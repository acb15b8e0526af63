// The daemon's persistent configuration: the ports added at run time, so
// that they are there again after a restart.
//
// Text, one record per line, written to a temporary file in the same
// directory, fsync'ed and renamed over the old one: a crash leaves either the
// old or the new file, never half of one. The temporary file is created
// O_EXCL | O_NOFOLLOW: a symlink planted at its name is never written
// through.
//
//   # vdevd state v1
//   port name=vdc1 type=veth queues=0 xdp-mode=auto managed=1
//   port name=vm1 type=tap queues=0 xdp-mode=auto managed=1 fast-rx=0 uid=1000 id=5f0c2a9e41d7b3c8 tun-owner=1000
//   port name=vdn2xk3... type=veth queues=0 xdp-mode=auto managed=1 tag=cni:net1
//   port name=vdc2 type=veth queues=0 xdp-mode=auto managed=1 storm_bcast=100 police_bps=100000000
//
// fast-rx is written only when off, uid (who added the port; 0 = root) only
// when not 0, tag (the adder's label, PORT_TAG) only when given: a file
// without them (older vdevd, or every port on and added by root) means on,
// root, no tag, and a file that uses no new option stays readable by a
// vdevd older than the keys it uses.
//
// Versions. A key missing from a record has its default (above: what the
// vdevd before the key did). A newer vdevd adds keys and record kinds and
// keeps "v1": this vdevd keeps what it does not know and writes it back,
// so a downgrade followed by an upgrade loses nothing.
//  - A port record's key it does not know ([a-z][a-z0-9_-]*=VALUE) is kept
//    in PortRecord::unknown, not applied, and reported at start (vdevd
//    names the port and the keys in its log and in `vdevctl info`); the
//    port starts with what this vdevd knows. A setting that a newer vdevd
//    enforces is therefore not enforced by an older one: a downgrade is the
//    operator's, and the report says what is not applied.
//  - A line of another record kind (a keyword, then key=value words) is
//    kept in DaemonState::other_records and written back after the ports.
//  - Only a change older vdevds cannot read right changes the header
//    ("# vdevd state v2"); this vdevd reads none of such a file and keeps
//    it as PATH.rejected (loadStateLenient).
// vdevds before this rule refused a record with a key they did not know
// (loadStateLenient: the record is left out, the file kept as .rejected).
//
// storm_bcast, storm_mcast, storm_unknown (frames/s), police_pps,
// police_bps (bits/s) and police_burst_ms are the port's own limits, each
// written only when the port was given it (0 = no limit is written too):
// a port without one follows vdevd's default (--storm-bcast ...), also
// after a restart with another default. allowed_mac (anti-spoofing: the
// one source MAC the port may send; 00:00:00:00:00:00, any) and
// allowed_ips (the addresses it may send from, comma-separated; any),
// ra_guard and dhcp_guard (0 or 1) likewise.
//
// Records are written only after vdevd accepted the request that made or
// changed the port, so vdevd trusts them at restore, with one check: a
// member's record (uid not 0) that sets a field only PORT_ADD sets and only
// root may set (hook, queues, xdp-mode, an existing device) is not
// restored -- only that member's add can have written it, so it comes from
// a vdevd before that check or from a hand edit (vdev/daemon/src/port_policy.h).
//
// Reading: parseState() is strict (a line that is not a record, a bad value
// of a known key or a duplicate port refuses the whole text, with the line
// number);
// loadStateLenient(), what vdevd uses at start, keeps every good record and
// reports each bad one, so that one bad line cannot keep vdevd (and under
// systemd, its restart loop) from starting with the rest.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "proto/codec.h"
#include "spec/port_spec.h"

namespace vdev::daemon {

// The modes a state-file record or an option names, read back by the
// names vdev prints (spec/port_spec.h), never a second spelling.
inline std::optional<spec::XdpMode> xdpModeByName(std::string_view v) {
  return spec::byName(v, {spec::XdpMode::kNative, spec::XdpMode::kGeneric, spec::XdpMode::kAuto});
}
inline std::optional<spec::PortHook> portHookByName(std::string_view v) {
  return spec::byName(v, {spec::PortHook::kXdp, spec::PortHook::kTc, spec::PortHook::kAuto});
}

struct PortRecord {
  std::string name;
  std::string type = "netdev";    // tap | veth | netdev
  uint32_t queues = 0;            // 0: every queue the device has
  std::string xdp_mode = "auto";  // native | generic | auto
  bool managed = false;           // vdev created the device (port del removes it)
  // The device id in the mark of the device vdev created (rtnl::managedAlias):
  // the port attaches to, and port del deletes, only the device that carries
  // it. "" for a port vdev did not create, and for one saved before ids.
  std::string id;
  // A created tap's TUNSETOWNER uid (nullopt: none), checked with the id.
  std::optional<uint32_t> tun_owner;
  bool fast_rx = true;            // false: the port's received frames never take the kernel fast path
  uint32_t owner_uid = 0;         // the uid that added it (only that uid, or root, may delete it)
  std::string tag;                // PORT_TAG given at add (vdev-cni: "cni:NETWORK"); "" none
  std::string hook;  // xdp | tc | auto (chosen by the device) | "" (vdevd's --default-hook)
  bool isolated = false;  // talks only to ports that are not isolated
  proto::LimitOptions limits;  // the port's own storm control and policer, as PORT_ADD gave them
  // "key=value" words of keys this vdevd does not know (a newer vdevd's), as
  // read: not applied, written back after the known keys on every save.
  std::vector<std::string> unknown;
  bool operator==(const PortRecord&) const = default;
};

struct DaemonState {
  std::vector<PortRecord> ports;
  // Lines of record kinds this vdevd does not know (a newer vdevd's), as
  // read: written back after the ports on every save.
  std::vector<std::string> other_records;
  bool operator==(const DaemonState&) const = default;
};

inline constexpr size_t kStateFileMax = 1u << 20;  // larger files are not read

std::string serializeState(const DaemonState& st);
// Errors: EINVAL with "LINE: what is wrong".
Result<DaemonState> parseState(const std::string& text);

// Every good record of `text`, and one problem ("line N: ...") per record or
// line that was left out.
struct LenientState {
  DaemonState state;
  std::vector<std::string> problems;
};
LenientState parseStateLenient(std::string_view text);

// A missing file is an empty state; an unreadable or corrupt one an error.
Result<DaemonState> loadState(const std::string& path);
// What vdevd uses at start: never fails. A missing file: empty, no
// problems. An unreadable or oversized file, or one without the header:
// empty state and the problem. Otherwise the good records and a problem per
// bad line. Whenever there is a problem the file is renamed to PATH.rejected
// (replacing an older one), so that what it held is not lost when the
// cleaned state is saved.
LenientState loadStateLenient(const std::string& path);
// Atomic replace (temporary file + fsync + rename + fsync of the directory).
// A failed fsync of the directory is a warning, not an error (see
// writeFileAtomic): printed on stderr when `warning` is null.
Status saveState(const std::string& path, const DaemonState& st, std::string* warning = nullptr);

// Writes `data` to `path` atomically: PATH.tmp created O_EXCL | O_NOFOLLOW
// with `mode` (a stale one, or a symlink at that name, is removed first),
// written, fsync'ed, renamed over `path`, and the directory fsync'ed. Every
// step's error up to the rename is returned (and the temporary file
// removed). After the rename the new file is what every reader, and the
// next vdevd, sees: failing then would make a caller undo a change that is
// on disk (a port add rolled back while its record stays in the file). So
// a directory that cannot be opened or fsync'ed is reported in `warning`
// (only a power loss could still lose the rename) and the write succeeds.
Status writeFileAtomic(const std::string& path, std::string_view data, mode_t mode,
                       std::string* warning = nullptr);

// Creates `dir` and missing parents with `mode` (0700 for the state
// directory), then checks it: a real directory (not a symlink), owned by
// this process's euid, not writable by group or others. Errors: EPERM
// (unsafe), ENOTDIR, and those of mkdir/lstat.
Status ensurePrivateDir(const std::string& dir, mode_t mode);

}  // namespace vdev::daemon
