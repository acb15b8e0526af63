// PortTable: the ports of one Datapath by index, and the list of them that
// the hot loops walk.
//
// A port's index is its name inside the datapath: FDB entries, frames
// (Frame::in_port_index), the pending batches and the kernel fast path's
// maps all hold it. A removed port leaves its index free; the next port
// added takes the lowest free one (indexes stay small, and the FDB entries
// of the removed port were flushed with it).
//
// Thread safety: owned by the datapath thread (changed only between bursts,
// by control requests; see Datapath::runOnDatapath).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "datapath/port.h"

namespace vdev::datapath {

class PortTable {
 public:
  // Indexes go up to kMaxPorts - 1.
  static constexpr size_t kMaxPorts = 0xfff0;

  // The port at index, null if the index is free. The index must be below
  // the table's size (every index an FDB entry or a frame names is).
  Port* operator[](size_t index) const noexcept { return by_index_[index].get(); }
  // The port at index, null if free or beyond the table.
  Port* get(size_t index) const noexcept { return index < by_index_.size() ? by_index_[index].get() : nullptr; }
  Port* find(const std::string& name) const noexcept;
  // The ports, in index order (the hot loops walk this).
  const std::vector<Port*>& active() const noexcept { return active_; }
  size_t size() const noexcept { return active_.size(); }

  // The lowest free index (one past the last when none is free).
  size_t freeIndex() const noexcept;
  // Puts p at p->index(), which must be free.
  void put(std::unique_ptr<Port> p);
  // Destroys the port at index; the index is free again.
  void remove(size_t index);

 private:
  void rebuildActive();

  std::vector<std::unique_ptr<Port>> by_index_;  // null: a free index
  std::vector<Port*> active_;                     // the non-null ones, in index order
};

}  // namespace vdev::datapath
