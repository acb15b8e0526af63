// IpAddr: an IPv6 address, or an IPv4 one mapped into IPv6 (::ffff:a.b.c.d),
// and its text forms ("198.18.0.2", "2001:db8::2"), as anti-spoofing keeps
// a port's allowed addresses (vdevctl port add ... allowed-ip).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vdev {

using IpAddr = std::array<uint8_t, 16>;

inline bool ipIsV4(const IpAddr& a) {
  for (int i = 0; i < 10; i++)
    if (a[i]) return false;
  return a[10] == 0xff && a[11] == 0xff;
}

// A dotted IPv4 address (mapped) or an IPv6 address in any of its text
// forms, without a prefix length or a zone; anything else: nullopt.
std::optional<IpAddr> parseIp(std::string_view s);
// IPv4 dotted, IPv6 as inet_ntop() writes it (RFC 5952).
std::string formatIp(const IpAddr& a);
// "198.18.0.2,2001:db8::2": addresses as parseIp() takes them,
// comma-separated; "any": none (an empty list). nullopt for anything else,
// the first item that is no address in *bad if given.
std::optional<std::vector<IpAddr>> parseIpList(std::string_view s, std::string* bad = nullptr);

}  // namespace vdev
