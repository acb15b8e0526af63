// Text and JSON renderings of a statistics snapshot.
#pragma once

#include <string>

#include "vdev/datapath.h"

namespace vdev {

// JSON object as documented in docs/vdevd.md ("Statistics JSON").
std::string statsJson(const DatapathStats& s);
// A table for people, one block per port.
std::string statsTable(const DatapathStats& s);

}  // namespace vdev
