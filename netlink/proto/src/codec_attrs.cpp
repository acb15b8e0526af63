// The attribute walk every received message goes through (parseAttrs) and
// the helpers the codec's parts share; see codec_attrs.h.
#include "codec_attrs.h"

#include <bitset>
#include <cstdio>

namespace vdev::proto::codec_detail {

std::string attrLabel(const Space& sp, uint16_t t) {
  AttrSpec s = t <= sp.max ? sp.spec(t) : AttrSpec{};
  if (s.name) return std::string(sp.prefix) + s.name;
  return std::string(sp.prefix) + "type " + std::to_string(t);
}

const char* kindText(Kind k) {
  switch (k) {
    case Kind::kFlag: return "u8 0|1";
    case Kind::kU8: return "u8";
    case Kind::kU16: return "u16";
    case Kind::kU32: return "u32";
    case Kind::kU64: return "u64";
    case Kind::kString: return "string";
    case Kind::kMac: return "MAC address";
    case Kind::kAddrs: return "IP addresses, 16 bytes each";
    case Kind::kVids: return "VLAN ID ranges, u16 pairs";
    case Kind::kBytes: return "bytes";
    case Kind::kNested: return "nested";
    case Kind::kNone: break;
  }
  return "?";
}

// Walks `len` bytes of attributes at `head` and checks each one; then indexes
// them with nla_parse(). strict (requests): unknown types, type 0 and
// types outside `allowed` (bit per type) are errors; lenient (replies): they
// are skipped. `ctx` names the command for "not valid for" messages.
Result<Attrs> parseAttrs(const Space& sp, const nlattr* head, int len, bool strict,
                         uint64_t allowed, const char* ctx) {
  Attrs out;
  std::bitset<kMaxSpaceAttrs> seen;
  int rem = len;
  const nlattr* nla = head;
  while (rem > 0) {
    if (!nla_ok(nla, rem)) {
      if (rem < NLA_HDRLEN)
        return invalid("truncated attribute header: " + std::to_string(rem) +
                       " bytes left at the end of " + sp.where);
      const uint16_t t = nla->nla_type & NLA_TYPE_MASK;
      if (nla->nla_len < NLA_HDRLEN)
        return invalid("attribute " + attrLabel(sp, t) + ": length field " +
                       std::to_string(nla->nla_len) + " is smaller than its header");
      return invalid("attribute " + attrLabel(sp, t) + ": length field " +
                     std::to_string(nla->nla_len) + " exceeds the " + std::to_string(rem) +
                     " bytes left (truncated)");
    }
    const uint16_t raw = nla->nla_type;
    const uint16_t t = raw & NLA_TYPE_MASK;
    const int plen = nla_len(nla);
    const AttrSpec s = t <= sp.max ? sp.spec(t) : AttrSpec{};
    // Built only for an error message (dumps carry tens of thousands of attributes).
    auto label = [&] { return "attribute " + attrLabel(sp, t); };
    if (s.kind == Kind::kNone) {
      if (strict) return invalid(label() + ": unknown attribute");
    } else {
      if (strict && !(allowed & (uint64_t{1} << t)))
        return invalid(label() + " is not valid for " + ctx);
      if (seen.test(t)) return invalid(label() + ": appears more than once");
      seen.set(t);
      if (raw & NLA_F_NET_BYTEORDER)
        return invalid(label() + ": NLA_F_NET_BYTEORDER not supported");
      if ((raw & NLA_F_NESTED) && s.kind != Kind::kNested)
        return invalid(label() + ": NLA_F_NESTED set on a " + kindText(s.kind) + " attribute");
      int want = -1;
      switch (s.kind) {
        case Kind::kFlag:
        case Kind::kU8: want = 1; break;
        case Kind::kU16: want = 2; break;
        case Kind::kU32: want = 4; break;
        case Kind::kU64: want = 8; break;
        case Kind::kMac: want = 6; break;
        default: break;
      }
      if (want >= 0 && plen != want)
        return invalid(label() + ": payload of " + std::to_string(plen) + " bytes, expected " +
                       std::to_string(want) + " (" + kindText(s.kind) + ")");
      if (s.kind == Kind::kAddrs && (plen % 16 || plen > 16 * kAddrsMax))
        return invalid(label() + ": payload of " + std::to_string(plen) + " bytes, expected " +
                       "16 bytes an address, at most " + std::to_string(kAddrsMax) + " (" + kindText(s.kind) + ")");
      if (s.kind == Kind::kVids) {
        if (plen % 4 || plen > 4 * kVidRangesMax)
          return invalid(label() + ": payload of " + std::to_string(plen) + " bytes, expected " +
                         "4 bytes a range, at most " + std::to_string(kVidRangesMax) + " (" + kindText(s.kind) + ")");
        const auto* d = static_cast<const uint8_t*>(nla_data(nla));
        for (int i = 0; i < plen; i += 4) {
          uint16_t r[2];
          std::memcpy(r, d + i, 4);
          if (r[0] < 1 || r[1] > kVidMax || r[0] > r[1])
            return invalid(label() + ": range " + std::to_string(r[0]) + "-" + std::to_string(r[1]) +
                           ", expected VLAN IDs 1 to " + std::to_string(kVidMax) + ", first <= last");
        }
      }
      if (s.kind == Kind::kFlag) {
        uint8_t v = nla_get_u8(nla);
        if (v > 1) return invalid(label() + ": " + std::to_string(v) + ", expected 0 or 1");
      }
      if (s.kind == Kind::kString) {
        const char* d = static_cast<const char*>(nla_data(nla));
        if (plen < 1 || d[plen - 1] != '\0')
          return invalid(label() + ": string is not NUL-terminated");
        const size_t n = strnlen(d, static_cast<size_t>(plen));
        if (n + 1 != static_cast<size_t>(plen))
          return invalid(label() + ": NUL byte inside the string");
        if (n > s.max_chars)
          return invalid(label() + ": " + std::to_string(n) + " characters, at most " +
                         std::to_string(s.max_chars));
      }
    }
    // nla_next(); the last attribute may omit its padding.
    int total = NLA_ALIGN(nla->nla_len);
    if (total > rem) total = rem;
    rem -= total;
    nla = reinterpret_cast<const nlattr*>(reinterpret_cast<const char*>(nla) + total);
  }
  // Index with libnl; after the walk above its length policy cannot fail.
  int err = nla_parse(out.tb, sp.max, const_cast<nlattr*>(head), len, sp.policy);
  if (err < 0)
    return invalid(std::string("malformed attributes (libnl error ") + std::to_string(-err) + ")");
  out.tb[0] = nullptr;
  return out;
}

std::string printable(std::string t) {
  for (char& c : t)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return t;
}

Status checkPortName(const std::string& n) { return validateIfname(n, "PORT_NAME"); }
Status checkVersion(const std::string& v) {
  if (v.empty() || v.size() > kVersionMax)
    return invalid("attribute VERSION: length " + std::to_string(v.size()) + ", expected 1.." +
                   std::to_string(kVersionMax));
  for (char c : v)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)
      return invalid("attribute VERSION: non-printable characters");
  return {};
}

bool isAction(Cmd c) {
  return c == kCmdPortAdd || c == kCmdPortDel || c == kCmdPortSet || c == kCmdFdbAdd || c == kCmdFdbDel;
}

MsgHeader readHeader(const uint8_t* p) {
  nlmsghdr h;
  std::memcpy(&h, p, sizeof h);
  return MsgHeader{h.nlmsg_len, h.nlmsg_type, h.nlmsg_flags, h.nlmsg_seq, h.nlmsg_pid};
}

std::string hex(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

}  // namespace vdev::proto::codec_detail
