// vdev-vm guest: a virtio-net guest whose network stack is a namespace's.
//
// QEMU with its default tap options (vnet_hdr on) and vhost-net moves a
// guest's buffers to and from the tap with a virtio-net header in front of
// each frame: the guest hands over TCP with a partial checksum
// (VIRTIO_NET_HDR_F_NEEDS_CSUM) and GSO frames up to 64 KB, and takes the
// same from the host. vdev-vm plays that guest with a real TCP/IP stack: a
// second tap, inside a network namespace, opened the same way, whose
// frames and headers vdev-vm copies to the host's tap and back. The
// namespace's kernel is then the guest's kernel with its default offloads.
#pragma once

#include <string>

namespace vdev::vm {

// Opens a tap the way QEMU does by default: IFF_TAP | IFF_NO_PI |
// IFF_VNET_HDR, a 12-byte header (virtio_net_hdr_mrg_rxbuf, what a modern
// virtio-net device uses) and the offloads a virtio-net guest announces
// (TUNSETOFFLOAD: checksum, TSO4, TSO6). Non-blocking. Exits 1 on failure.
int openVnetTap(const std::string& name, bool multiQueue);

// Creates the namespace's tap `ifname` (non-persistent: it goes when
// vdev-vm exits), prints "vdev-vm: ready", relays until SIGTERM/SIGINT and
// prints counts as JSON. `netns` is a name under /run/netns or a path.
int runGuest(int hostTap, const std::string& netns, const std::string& ifname);

}  // namespace vdev::vm
