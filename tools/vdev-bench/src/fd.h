// fd.h - owning file descriptor: vdev's FileDesc, under vdev-bench's name.
#pragma once

#include "base/fd.h"

namespace vdev::bench {

using Fd = vdev::FileDesc;

}  // namespace vdev::bench
