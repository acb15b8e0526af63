// FillBudget (fill_budget.h): what port add and the control path ask of the
// fill rings' share of the pool; the per-queue targets are inline there.
#include "datapath/fill_budget.h"

namespace vdev::datapath {

uint64_t FillBudget::floors() const {
  uint64_t n = 0;
  const auto add = [&](const Port& p) {
    if (p.receives()) n += uint64_t(p.queues().size()) * floor(p.fillSize());
  };
  if (punt_) add(*punt_);
  for (const Port* p : ports_.active()) add(*p);
  return n;
}

void FillBudget::recount() noexcept {
  uint64_t n = 0;
  const auto add = [&](const Port& p) {
    for (const auto& q : p.queues()) n += q->fill_extra;
  };
  if (punt_) add(*punt_);
  for (const Port* p : ports_.active()) add(*p);
  extra_ = n;
  recount_ = false;
}

uint32_t FillBudget::room(uint32_t fill_size) const {
  const uint64_t used = floors();
  return uint32_t(used < floorBudget() ? (floorBudget() - used) / floor(fill_size) : 0);
}

Status FillBudget::checkRoom(const std::string& ifname, const PortConfig& pc) const {
  // queues 0: every RX queue the device has, each a socket of its own.
  const uint32_t fill_size = pc.xsk.fill_size;
  const uint64_t need = uint64_t(pc.queues ? pc.queues : deviceQueues(ifname)) * floor(fill_size);
  const uint64_t have = floors();
  if (have + need <= floorBudget()) return {};
  return Error{ENOSPC, "port " + ifname + ": the frame pool is full: its " + std::to_string(pool_frames_) +
                           " frames (--frames) keep at most half of them, " + std::to_string(floorBudget()) +
                           ", for the fill rings' floors of " + std::to_string(floor(fill_size)) +
                           " frames per receiving queue, and " + std::to_string(have / floor(fill_size)) +
                           " queues hold " + std::to_string(have) +
                           "; raise --frames, or attach the port at the tc hook (hook tc), which takes none"};
}

}  // namespace vdev::datapath
