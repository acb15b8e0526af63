// frame.cpp - see frame.h.
#include "frame.h"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include <cassert>
#include <cstdio>
#include <cstring>
#include <string>

#include "../bpf/bench_shared.h"

namespace vdev::bench {

static_assert(sizeof(struct vb_payload) == 16, "vb_payload layout is shared with BPF");
static_assert(sizeof(struct vb_counters) == 32, "vb_counters layout is shared with BPF");
// The smallest frame must hold every header plus the payload header the sink
// checks, or the sink would count 64-byte frames as "other".
static_assert(ETH_HLEN + sizeof(iphdr) + sizeof(udphdr) + sizeof(vb_payload) <= kMinFrameSize - kFcsLen);

uint16_t inetChecksum(const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += (p[i] << 8) | p[i + 1];
  if (len & 1) sum += p[len - 1] << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return htons(static_cast<uint16_t>(~sum));
}

std::vector<uint8_t> buildFrame(const FrameSpec& spec) {
  assert(spec.frameSize >= kMinFrameSize && spec.frameSize <= kMaxFrameSize);
  std::vector<uint8_t> f(spec.frameSize - kFcsLen, 0);

  std::memcpy(f.data(), spec.dst.data(), ETH_ALEN);
  std::memcpy(f.data() + ETH_ALEN, spec.src.data(), ETH_ALEN);
  uint16_t proto = htons(ETH_P_IP);
  std::memcpy(f.data() + 2 * ETH_ALEN, &proto, sizeof proto);

  auto* ip = reinterpret_cast<iphdr*>(f.data() + ETH_HLEN);
  size_t ipLen = f.size() - ETH_HLEN;
  ip->version = 4;
  ip->ihl = 5;
  ip->tos = 0;
  ip->tot_len = htons(static_cast<uint16_t>(ipLen));
  ip->id = 0;
  ip->frag_off = htons(0x4000);  // DF
  ip->ttl = 64;
  ip->protocol = IPPROTO_UDP;
  ip->saddr = htonl(spec.srcIp);
  ip->daddr = htonl(spec.dstIp);
  ip->check = 0;
  ip->check = inetChecksum(ip, sizeof(iphdr));

  auto* udp = reinterpret_cast<udphdr*>(f.data() + ETH_HLEN + sizeof(iphdr));
  udp->source = htons(spec.srcPort);
  udp->dest = htons(spec.dstPort);
  udp->len = htons(static_cast<uint16_t>(ipLen - sizeof(iphdr)));
  udp->check = 0;

  auto* pl = reinterpret_cast<vb_payload*>(udp + 1);
  pl->magic = spec.magic ? htonl(VB_MAGIC) : 0;
  return f;
}

std::string formatMac(const Mac& m) {
  char b[18];
  snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return b;
}

}  // namespace vdev::bench
