// Text and JSON renderings of a statistics snapshot.
#pragma once

#include <string>

#include "datapath/datapath.h"

namespace vdev::daemon {

// JSON object as documented in docs/vdevd.md ("Statistics JSON").
std::string statsJson(const datapath::DatapathStats& s);
// A table for people, one block per port.
std::string statsTable(const datapath::DatapathStats& s);

}  // namespace vdev::daemon
