// Reading a request: the header, the generic netlink header, every
// attribute (codec_attrs.cpp), then the typed body and its validation.
#include "codec_attrs.h"

namespace vdev::proto {

using namespace codec_detail;

namespace {

// ----------------------------------------------------------- decoding

// Allowed request attributes per command (bit per type).
uint64_t allowedFor(Cmd c) {
  auto bit = [](uint16_t t) { return uint64_t{1} << t; };
  uint64_t limits = 0;  // every attribute of the policy table
  spec::forEachPolicyField([&](const auto& r) { limits |= policyAttrBits(r); });
  switch (c) {
    case kCmdPortAdd:
      return bit(kAttrPortName) | bit(kAttrPortType) | bit(kAttrQueues) | bit(kAttrXdpMode) |
             bit(kAttrCreate) | bit(kAttrFastRx) | bit(kAttrPortTag) | bit(kAttrHook) | bit(kAttrIsolated) |
             limits;
    case kCmdPortSet: return bit(kAttrPortName) | bit(kAttrIsolated) | limits;
    case kCmdPortDel:
    case kCmdPortGet:
    case kCmdStatsGet: return bit(kAttrPortName);
    case kCmdFdbAdd: return bit(kAttrMac) | bit(kAttrPortName) | bit(kAttrFdbStatic) | bit(kAttrVlanId);
    case kCmdFdbDel: return bit(kAttrMac) | bit(kAttrVlanId);
    case kCmdCaptureStart:
      return bit(kAttrPortName) | bit(kAttrCaptureDir) | bit(kAttrCaptureSnaplen) | bit(kAttrCaptureBuffer) |
             bit(kAttrCaptureFilter);
    case kCmdCaptureRead:
    case kCmdCaptureStop: return bit(kAttrCaptureId);
    default: return 0;
  }
}

Error missing(const char* attr, Cmd c) {
  return invalid(std::string("missing attribute ") + attr + " (required by " + cmdName(c) + ")");
}

Result<CreateOptions> decodeCreate(const nlattr* nest) {
  auto a = parseAttrs(kCreateSpace, nestHead(nest), nla_len(nest), true, ~uint64_t{0}, "CREATE");
  if (!a) return a.error();
  const Attrs& tb = *a;
  CreateOptions c;
  if (tb[kCreatePeerNetnsName]) c.peer_netns_name = getStr(tb[kCreatePeerNetnsName]);
  if (tb[kCreatePeerNetnsPath]) c.peer_netns_path = getStr(tb[kCreatePeerNetnsPath]);
  if (tb[kCreatePeerNetnsPid]) c.peer_netns_pid = getU32(tb[kCreatePeerNetnsPid]);
  if (tb[kCreatePeerIfname]) c.peer_ifname = getStr(tb[kCreatePeerIfname]);
  if (tb[kCreatePeerMac]) c.peer_mac = getMac(tb[kCreatePeerMac]);
  if (tb[kCreateMtu]) c.mtu = getU32(tb[kCreateMtu]);
  if (tb[kCreateOwnerUid]) c.owner_uid = getU32(tb[kCreateOwnerUid]);
  if (tb[kCreateGroupGid]) c.group_gid = getU32(tb[kCreateGroupGid]);
  if (tb[kCreateMultiQueue]) c.multi_queue = getU8(tb[kCreateMultiQueue]) != 0;
  if (tb[kCreateMac]) c.mac = getMac(tb[kCreateMac]);
  return c;
}

Result<CaptureFilter> decodeCaptureFilter(const nlattr* nest) {
  auto a = parseAttrs(kCaptureFilterSpace, nestHead(nest), nla_len(nest), true, ~uint64_t{0}, "CAPTURE_FILTER");
  if (!a) return a.error();
  const Attrs& tb = *a;
  CaptureFilter f;
  if (tb[kCapFilterMac]) f.mac = getMac(tb[kCapFilterMac]);
  if (tb[kCapFilterVlan]) f.vlan = getU16(tb[kCapFilterVlan]);
  if (tb[kCapFilterEthertype]) f.ethertype = getU16(tb[kCapFilterEthertype]);
  if (const nlattr* ip = tb[kCapFilterIp]) {
    if (nla_len(ip) != 16)
      return invalid("attribute CAPTURE_FILTER.IP: payload of " + std::to_string(nla_len(ip)) +
                     " bytes, expected 16 (one address)");
    f.ip = getAddrs(ip).front();
  }
  if (tb[kCapFilterProto]) f.proto = getU8(tb[kCapFilterProto]);
  if (tb[kCapFilterPort]) f.port = getU16(tb[kCapFilterPort]);
  return f;
}

LimitOptions getLimits(const Attrs& tb) {
  LimitOptions l;
  spec::forEachPolicyField([&](const auto& r) {
    l.*r.option = getPolicy(tb, r.attr, PolicyType<typename std::decay_t<decltype(r)>::Type>{});
  });
  return l;
}

Result<RequestBody> decodeBody(Cmd cmd, bool dump, const Attrs& tb) {
  switch (cmd) {
    case kCmdPortAdd: {
      PortAddRequest r;
      if (!tb[kAttrPortName]) return missing("PORT_NAME", cmd);
      if (!tb[kAttrPortType]) return missing("PORT_TYPE", cmd);
      r.name = getStr(tb[kAttrPortName]);
      r.type = static_cast<PortType>(getU8(tb[kAttrPortType]));
      if (tb[kAttrQueues]) r.queues = getU32(tb[kAttrQueues]);
      if (tb[kAttrXdpMode]) r.xdp_mode = static_cast<XdpMode>(getU8(tb[kAttrXdpMode]));
      if (tb[kAttrCreate]) {
        auto c = decodeCreate(tb[kAttrCreate]);
        if (!c) return c.error();
        r.create = std::move(*c);
      }
      if (tb[kAttrFastRx]) r.fast_rx = getU8(tb[kAttrFastRx]) != 0;
      if (tb[kAttrPortTag]) r.tag = getStr(tb[kAttrPortTag]);
      if (tb[kAttrHook]) r.hook = static_cast<PortHook>(getU8(tb[kAttrHook]));
      if (tb[kAttrIsolated]) r.isolated = getU8(tb[kAttrIsolated]) != 0;
      r.limits = getLimits(tb);
      return RequestBody{std::move(r)};
    }
    case kCmdPortDel:
      if (!tb[kAttrPortName]) return missing("PORT_NAME", cmd);
      return RequestBody{PortDelRequest{getStr(tb[kAttrPortName])}};
    case kCmdPortSet: {
      PortSetRequest r;
      if (!tb[kAttrPortName]) return missing("PORT_NAME", cmd);
      r.name = getStr(tb[kAttrPortName]);
      if (tb[kAttrIsolated]) r.isolated = getU8(tb[kAttrIsolated]) != 0;
      r.limits = getLimits(tb);
      return RequestBody{std::move(r)};
    }
    case kCmdPortGet:
    case kCmdStatsGet: {
      std::string name;
      if (dump && tb[kAttrPortName])
        return invalid(std::string("attribute PORT_NAME is not valid in a dump (NLM_F_DUMP): ") +
                       cmdName(cmd) + " of one port is not a dump");
      if (!dump) {
        if (!tb[kAttrPortName])
          return invalid(std::string(cmdName(cmd)) +
                         " needs attribute PORT_NAME, or NLM_F_DUMP for every port");
        name = getStr(tb[kAttrPortName]);
      }
      if (cmd == kCmdPortGet) return RequestBody{PortGetRequest{std::move(name)}};
      return RequestBody{StatsGetRequest{std::move(name)}};
    }
    case kCmdFdbGet: return RequestBody{FdbGetRequest{}};
    case kCmdFdbAdd: {
      FdbAddRequest r;
      if (!tb[kAttrMac]) return missing("MAC", cmd);
      if (!tb[kAttrPortName]) return missing("PORT_NAME", cmd);
      r.mac = getMac(tb[kAttrMac]);
      r.port = getStr(tb[kAttrPortName]);
      if (tb[kAttrFdbStatic]) r.is_static = getU8(tb[kAttrFdbStatic]) != 0;
      if (tb[kAttrVlanId]) r.vid = getU16(tb[kAttrVlanId]);
      return RequestBody{std::move(r)};
    }
    case kCmdFdbDel: {
      if (!tb[kAttrMac]) return missing("MAC", cmd);
      FdbDelRequest r{getMac(tb[kAttrMac])};
      if (tb[kAttrVlanId]) r.vid = getU16(tb[kAttrVlanId]);
      return RequestBody{std::move(r)};
    }
    case kCmdInfoGet: return RequestBody{InfoGetRequest{}};
    case kCmdCaptureStart: {
      if (!tb[kAttrPortName]) return missing("PORT_NAME", cmd);
      CaptureStartRequest r;
      r.name = getStr(tb[kAttrPortName]);
      if (tb[kAttrCaptureDir]) r.dir = static_cast<CaptureDir>(getU8(tb[kAttrCaptureDir]));
      if (tb[kAttrCaptureSnaplen]) r.snaplen = getU32(tb[kAttrCaptureSnaplen]);
      if (tb[kAttrCaptureBuffer]) r.buffer = getU32(tb[kAttrCaptureBuffer]);
      if (tb[kAttrCaptureFilter]) {
        auto f = decodeCaptureFilter(tb[kAttrCaptureFilter]);
        if (!f) return f.error();
        r.filter = std::move(*f);
      }
      return RequestBody{std::move(r)};
    }
    case kCmdCaptureRead:
      if (!tb[kAttrCaptureId]) return missing("CAPTURE_ID", cmd);
      return RequestBody{CaptureReadRequest{getU32(tb[kAttrCaptureId])}};
    case kCmdCaptureStop:
      if (!tb[kAttrCaptureId]) return missing("CAPTURE_ID", cmd);
      return RequestBody{CaptureStopRequest{getU32(tb[kAttrCaptureId])}};
    default: break;
  }
  return Error{EOPNOTSUPP, "unknown command " + std::to_string(cmd)};
}

bool dumpable(Cmd c) { return c == kCmdPortGet || c == kCmdStatsGet || c == kCmdFdbGet; }

}  // namespace

// --------------------------------------------------------------- decode

MsgHeader peekHeader(std::span<const uint8_t> dg) {
  if (dg.size() < NLMSG_HDRLEN) return {};
  return readHeader(dg.data());
}

Result<MsgHeader> decodeHeader(std::span<const uint8_t> dg) {
  if (dg.size() < NLMSG_HDRLEN)
    return invalid("truncated message: " + std::to_string(dg.size()) +
                   " bytes, a netlink header needs " + std::to_string(NLMSG_HDRLEN));
  if (dg.size() > kMaxMessageSize)
    return Error{EMSGSIZE, "message of " + std::to_string(dg.size()) + " bytes exceeds the " +
                               std::to_string(kMaxMessageSize) + "-byte limit"};
  MsgHeader h = readHeader(dg.data());
  if (h.len < NLMSG_HDRLEN)
    return invalid("length field " + std::to_string(h.len) + " is smaller than the header");
  if (h.len > dg.size())
    return invalid("length field " + std::to_string(h.len) + " exceeds the " +
                   std::to_string(dg.size()) + " bytes received (truncated message)");
  if (dg.size() > NLMSG_ALIGN(h.len))
    return invalid(std::to_string(dg.size() - NLMSG_ALIGN(h.len)) +
                   " bytes after the message: one request per datagram");
  if (h.type != kFamilyId)
    return invalid("message type " + hex(h.type) + " is not the vdev family " + hex(kFamilyId));
  if (!(h.flags & NLM_F_REQUEST)) return invalid("NLM_F_REQUEST not set");
  return h;
}

Result<Request> decodeRequest(std::span<const uint8_t> dg) {
  auto hr = decodeHeader(dg);
  if (!hr) return hr.error();
  const MsgHeader h = *hr;
  constexpr uint16_t kKnownFlags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_ROOT | NLM_F_MATCH;
  if (h.flags & ~kKnownFlags) return invalid("unsupported flags " + hex(h.flags & ~kKnownFlags));
  const uint16_t dumpBits = h.flags & NLM_F_DUMP;
  if (dumpBits != 0 && dumpBits != NLM_F_DUMP)
    return invalid("NLM_F_ROOT and NLM_F_MATCH must be set together (NLM_F_DUMP)");
  const bool dump = dumpBits == NLM_F_DUMP;

  Aligned buf(dg);
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(buf.data());
  const int payload = static_cast<int>(h.len - NLMSG_HDRLEN);
  if (payload < kGenlHdrLen)
    return invalid("truncated generic netlink header: " + std::to_string(payload) +
                   " bytes, needs " + std::to_string(kGenlHdrLen));
  const auto* g = static_cast<const genlmsghdr*>(nlmsg_data(nlh));
  if (g->version == 0 || g->version > kProtocolVersion)
    return Error{EPROTONOSUPPORT, "protocol version " + std::to_string(g->version) +
                                      " not supported (vdevd speaks 1.." +
                                      std::to_string(kProtocolVersion) + ")"};
  if (g->reserved != 0) return invalid("generic netlink header: reserved field is not zero");
  if (g->cmd == kCmdUnspec || g->cmd > kCmdMax)
    return Error{EOPNOTSUPP, "unknown command " + std::to_string(g->cmd)};
  const Cmd cmd = static_cast<Cmd>(g->cmd);
  if (dump && !dumpable(cmd))
    return Error{EOPNOTSUPP, std::string(cmdName(cmd)) + " cannot be dumped (NLM_F_DUMP)"};
  if (!dump && cmd == kCmdFdbGet)
    return Error{EOPNOTSUPP, "FDB_GET is a dump only: set NLM_F_DUMP"};

  auto attrs = parseAttrs(kTop, genlmsg_attrdata(g, 0), payload - kGenlHdrLen, true,
                          allowedFor(cmd), cmdName(cmd));
  if (!attrs) return attrs.error();
  auto body = decodeBody(cmd, dump, *attrs);
  if (!body) return body.error();
  if (auto s = validate(*body); !s) return s.error();
  return Request{h, g->version, std::move(*body)};
}

}  // namespace vdev::proto
