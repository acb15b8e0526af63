// Caps per non-root uid: what one member of --group may take of
// vdevd, so that one tenant cannot exhaust what the others share.
//
//   ports     ports it added (--uid-max-ports): each holds sockets, rings,
//             fill-ring frames of the one pool and a slot of the maps;
//   fdb       MACs learned on all its ports together (--uid-max-fdb): the
//             datapath's Fdb holds this one (Fdb::setGroupLimit), the
//             per-port --fdb-port-limit times many ports would fill the
//             table, and every station then learned nowhere is flooded;
//   capture   bytes of its running captures' slots (--uid-max-capture);
//   rate      control requests a second, a token bucket (--uid-max-rate,
//             --uid-rate-burst): every request is the control thread's
//             time, which the datapath's requests wait behind.
// Root is never capped: the caps bound members, not the operator.
//
// This class keeps what only the daemon knows (the buckets, the capture
// bytes) and formats every refusal, so that each names its cap and the use:
// "uid 65534 has 64 ports, the most --uid-max-ports allows".
//
// Thread safety: the control thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

#include "base/result.h"

namespace vdev::daemon {

struct UidCaps {
  uint32_t ports = 64;                   // --uid-max-ports
  uint32_t fdb = 1024;                   // --uid-max-fdb (default: a quarter of --fdb-size)
  uint64_t capture_bytes = 256ull << 20; // --uid-max-capture
  uint32_t rate = 100;                   // --uid-max-rate, requests a second
  uint32_t burst = 200;                  // --uid-rate-burst, requests at once
};

class UidQuota {
 public:
  // max_groups: the FDB groups there are (group 0 is none).
  explicit UidQuota(UidCaps caps = {}, uint32_t max_groups = 1024) : caps_(caps), max_groups_(max_groups) {}
  const UidCaps& caps() const noexcept { return caps_; }

  // One control request of uid at now_ns (monotonic). Root: always ok.
  // EAGAIN when its bucket is empty, naming the rate and when to retry.
  // Counted in requests() either way (root's are not).
  Status takeRequest(uid_t uid, uint64_t now_ns);
  // Requests of each uid since vdevd started: taken, and refused by the
  // rate (for vdevctl info and /metrics, where their rate is the use).
  struct RequestCount {
    uint64_t taken = 0, refused = 0;
  };
  const std::map<uid_t, RequestCount>& requests() const noexcept { return requests_; }
  // A port add by uid that has `ports` ports now. EDQUOT at the cap.
  Status checkPortAdd(uid_t uid, uint32_t ports) const;
  // A capture of `bytes` by uid: reserved (captureDone gives it back), or
  // ENOBUFS naming the cap and what its running captures hold.
  Status reserveCapture(uid_t uid, uint64_t bytes);
  void captureDone(uid_t uid, uint64_t bytes);
  uint64_t captureBytes(uid_t uid) const;
  // The FDB group of uid's ports (datapath::Fdb::setPortGroup): 0 for
  // root (no group, no cap); one per uid, given out in order, for as long
  // as vdevd runs. Past Fdb::kMaxGroups - 1 uids, 0: the per-port limit
  // alone bounds them (a group's members are few; docs/vdevd.md).
  uint16_t fdbGroup(uid_t uid);
  const std::map<uid_t, uint16_t>& fdbGroups() const noexcept { return fdb_groups_; }
  // Uids with a running capture (for vdevctl info).
  const std::map<uid_t, uint64_t>& captures() const noexcept { return capture_bytes_; }

 private:
  struct Bucket {
    double tokens = 0;
    uint64_t at_ns = 0;
  };
  UidCaps caps_;
  uint32_t max_groups_;
  std::map<uid_t, Bucket> buckets_;
  std::map<uid_t, uint64_t> capture_bytes_;
  std::map<uid_t, uint16_t> fdb_groups_;
  std::map<uid_t, RequestCount> requests_;
};

}  // namespace vdev::daemon
