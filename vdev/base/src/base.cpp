#include <charconv>
#include <cmath>
#include <cstdio>

#include <arpa/inet.h>

#include "base/ip.h"
#include "base/mac.h"
#include "base/parse.h"
#include "base/vlan.h"

namespace vdev {

std::optional<uint64_t> parseU64(std::string_view s, uint64_t lo, uint64_t hi) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<uint64_t> parseRate(std::string_view s) {
  uint64_t scale = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'k': scale = 1000; break;
      case 'M': scale = 1000000; break;
      case 'G': scale = 1000000000; break;
      default: break;
    }
  }
  if (scale != 1) s.remove_suffix(1);
  const auto v = parseU64(s, 0, UINT64_MAX / scale);  // the bound: no overflow below
  if (!v) return std::nullopt;
  return *v * scale;
}

std::optional<double> parseDouble(std::string_view s, double lo, double hi) {
  if (s.empty() || !(s.front() == '-' || s.front() == '.' || (s.front() >= '0' && s.front() <= '9')))
    return std::nullopt;  // from_chars would take "inf" and "nan"
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v < lo || v > hi)
    return std::nullopt;
  return v;
}

namespace {
int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::optional<Mac> parseMac(std::string_view s) {
  if (s.size() != 17) return std::nullopt;
  Mac m{};
  for (size_t i = 0; i < 6; i++) {
    const int hi = hexDigit(s[i * 3]), lo = hexDigit(s[i * 3 + 1]);
    if (hi < 0 || lo < 0 || (i < 5 && s[i * 3 + 2] != ':')) return std::nullopt;
    m[i] = uint8_t(hi << 4 | lo);
  }
  return m;
}

std::string formatMac(const Mac& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return buf;
}

std::optional<IpAddr> parseIp(std::string_view s) {
  if (s.empty() || s.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  const std::string z(s);  // NUL-terminated for inet_pton
  IpAddr a{};
  if (::inet_pton(AF_INET, z.c_str(), a.data() + 12) == 1) {
    a[10] = a[11] = 0xff;
    return a;
  }
  if (::inet_pton(AF_INET6, z.c_str(), a.data()) == 1) return a;
  return std::nullopt;
}

std::optional<std::vector<IpAddr>> parseIpList(std::string_view s, std::string* bad) {
  std::vector<IpAddr> out;
  if (s == "any") return out;
  while (true) {
    const size_t comma = s.find(',');
    const std::string_view one = s.substr(0, comma);
    const auto ip = parseIp(one);
    if (!ip) {
      if (bad) *bad = std::string(one);
      return std::nullopt;
    }
    out.push_back(*ip);
    if (comma == std::string_view::npos) return out;
    s.remove_prefix(comma + 1);
  }
}

std::string formatIp(const IpAddr& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ipIsV4(a)) ::inet_ntop(AF_INET, a.data() + 12, buf, sizeof buf);
  else ::inet_ntop(AF_INET6, a.data(), buf, sizeof buf);
  return buf;
}

std::optional<VidSet> parseVidList(std::string_view s) {
  VidSet out;
  if (s.empty()) return std::nullopt;
  while (true) {
    const size_t comma = s.find(',');
    const std::string_view item = s.substr(0, comma);
    const size_t dash = item.find('-');
    const auto a = parseU32(item.substr(0, dash), 1, kVidMax);
    const auto b = dash == std::string_view::npos ? a : parseU32(item.substr(dash + 1), 1, kVidMax);
    if (!a || !b || *a > *b) return std::nullopt;
    for (uint32_t v = *a; v <= *b; v++) out.set(v);
    if (comma == std::string_view::npos) return out;
    s.remove_prefix(comma + 1);
  }
}

std::vector<std::pair<uint16_t, uint16_t>> vidRanges(const VidSet& s) {
  std::vector<std::pair<uint16_t, uint16_t>> out;
  for (uint32_t v = 0; v < s.size(); v++) {
    if (!s[v]) continue;
    uint32_t e = v;
    while (e + 1 < s.size() && s[e + 1]) e++;
    out.emplace_back(uint16_t(v), uint16_t(e));
    v = e;
  }
  return out;
}

std::string formatVidList(const VidSet& s) {
  std::string out;
  for (const auto& [a, b] : vidRanges(s)) {
    if (!out.empty()) out += ',';
    out += std::to_string(a);
    if (b != a) out += (b == a + 1 ? "," : "-") + std::to_string(b);
  }
  return out;
}

std::string vlanConfigError(const VlanConfig& v) {
  if (v.tagged[0] || v.tagged[4095] || v.untagged[0] || v.untagged[4095])
    return "VLAN IDs are 1 to " + std::to_string(kVidMax);
  if (v.pvid > kVidMax) return "VLAN " + std::to_string(v.pvid) + " out of range (1 to " + std::to_string(kVidMax) + ")";
  if ((v.tagged & v.untagged).any())
    return "VLAN " + formatVidList(v.tagged & v.untagged) + " both tagged and untagged";
  if (v.pvid && !v.untagged[v.pvid]) return "the native VLAN " + std::to_string(v.pvid) + " is not among the untagged ones";
  return "";
}

std::string formatVlanConfig(const VlanConfig& v) {
  if (!v.configured()) return "";
  std::string out;
  VidSet extra = v.untagged;
  if (v.tagged.any()) {
    out = "trunk " + formatVidList(v.tagged);
    if (v.pvid) out += " native " + std::to_string(v.pvid);
  } else if (v.pvid) {
    out = "vlan " + std::to_string(v.pvid);
  }
  if (v.pvid) extra.reset(v.pvid);
  if (extra.any()) out += (out.empty() ? "" : " ") + std::string("untagged ") + formatVidList(extra);
  return out;
}

}  // namespace vdev
