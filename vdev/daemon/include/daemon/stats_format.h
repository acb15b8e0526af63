// Text and JSON renderings of a statistics snapshot. The counters in both
// are written by the counter table's writers (stats/format.h), so they bear
// the same names as `vdevctl stats`.
#pragma once

#include <string>

#include "datapath/datapath.h"

namespace vdev::daemon {

// JSON object as documented in docs/vdevd.md ("Statistics JSON"), one line.
std::string statsJson(const datapath::DatapathStats& s);
// A table for people, one block per port.
std::string statsTable(const datapath::DatapathStats& s);

}  // namespace vdev::daemon
