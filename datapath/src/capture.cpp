// Capture (capture.h): the slots, made once when a capture starts.
#include "datapath/capture.h"

namespace vdev::datapath {

Capture::Capture(uint16_t port_index, uint8_t dirs, uint32_t slots, uint32_t snaplen)
    : port_index_(port_index),
      dirs_(dirs),
      snaplen_(snaplen),
      bytes_(size_t(slots) * snaplen),
      meta_(slots),
      free_(slots),
      full_(slots) {
  for (uint32_t i = 0; i < slots; i++) free_.push(i);
}

}  // namespace vdev::datapath
