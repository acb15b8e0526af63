// UidQuota (uid_quota.h): the caps per non-root uid and their refusals.
#include "uid_quota.h"

#include <algorithm>
#include <cerrno>

namespace vdev::daemon {

namespace {
std::string uidText(uid_t uid) { return "uid " + std::to_string(uid); }
}  // namespace

Status UidQuota::takeRequest(uid_t uid, uint64_t now_ns) {
  if (uid == 0) return {};
  RequestCount& count = requests_[uid];
  if (caps_.rate == 0) {
    count.taken++;
    return {};
  }
  // A uid seen for the first time starts with a full bucket. Buckets are
  // kept for every uid that ever asked: members of one group, few.
  auto [it, fresh] = buckets_.try_emplace(uid, Bucket{double(caps_.burst), now_ns});
  Bucket& b = it->second;
  if (!fresh && now_ns > b.at_ns) {
    b.tokens = std::min(double(caps_.burst), b.tokens + double(now_ns - b.at_ns) * caps_.rate / 1e9);
    b.at_ns = now_ns;
  }
  if (b.tokens >= 1) {
    b.tokens -= 1;
    count.taken++;
    return {};
  }
  count.refused++;
  const uint64_t wait_ms = uint64_t((1 - b.tokens) * 1000 / caps_.rate) + 1;
  return Error{EAGAIN, uidText(uid) + " sent more than " + std::to_string(caps_.rate) +
                           " requests a second (a burst of " + std::to_string(caps_.burst) +
                           "), the most --uid-max-rate allows; try again in " + std::to_string(wait_ms) + " ms"};
}

Status UidQuota::checkPortAdd(uid_t uid, uint32_t ports) const {
  if (uid == 0 || ports < caps_.ports) return {};
  return Error{EDQUOT, uidText(uid) + " has " + std::to_string(ports) + " ports, the most --uid-max-ports allows"};
}

Status UidQuota::reserveCapture(uid_t uid, uint64_t bytes) {
  if (uid == 0) return {};
  const uint64_t used = captureBytes(uid);
  if (bytes > caps_.capture_bytes || used > caps_.capture_bytes - bytes)
    return Error{ENOBUFS, uidText(uid) + " has " + std::to_string(used) + " bytes in captures and asks " +
                              std::to_string(bytes) + " more, beyond the " + std::to_string(caps_.capture_bytes) +
                              " --uid-max-capture allows (fewer slots with 'buffer N', or a smaller 'snaplen')"};
  if (bytes) capture_bytes_[uid] = used + bytes;
  return {};
}

void UidQuota::captureDone(uid_t uid, uint64_t bytes) {
  auto it = capture_bytes_.find(uid);
  if (it == capture_bytes_.end()) return;
  it->second -= std::min(it->second, bytes);
  if (it->second == 0) capture_bytes_.erase(it);
}

uint16_t UidQuota::fdbGroup(uid_t uid) {
  if (uid == 0) return 0;
  if (auto it = fdb_groups_.find(uid); it != fdb_groups_.end()) return it->second;
  if (fdb_groups_.size() + 1 >= max_groups_) return 0;
  const uint16_t g = uint16_t(fdb_groups_.size() + 1);
  fdb_groups_.emplace(uid, g);
  return g;
}

uint64_t UidQuota::captureBytes(uid_t uid) const {
  auto it = capture_bytes_.find(uid);
  return it == capture_bytes_.end() ? 0 : it->second;
}

}  // namespace vdev::daemon
