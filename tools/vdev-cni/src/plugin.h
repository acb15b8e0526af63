// vdev-cni: the CNI plugin that attaches containers to vdevd
// (docs/containers.md). main() is `return vdev::cni::run();`.
#pragma once

#include <string>

#include "cni.h"

namespace vdev::cni {

inline constexpr const char* kPortPrefix = "vc";

// The host-side veth name (and vdevd port) of one attachment: "vc", 3
// characters from the network name, 10 from (network, container ID, ifname),
// lower-case base32 of FNV-1a hashes: 15 characters, the longest interface
// name. Deterministic, so DEL and CHECK find what ADD made from the same
// inputs; the network part lets GC recognise its own network's ports.
std::string portName(const std::string& network, const std::string& containerId,
                     const std::string& ifname);
// "vc" + the network's 3 characters: every port of that network starts so.
std::string portPrefix(const std::string& network);
// PORT_TAG of the ports an ADD of `network` makes: "cni:NETWORK". GC
// deletes only ports that carry its network's tag.
std::string portTag(const std::string& network);

// Reads the environment and stdin, runs the command, writes the result or
// the error JSON on stdout. Returns the exit status (0 success, 1 error).
int run();

}  // namespace vdev::cni
