// Reading a reply: ReplyAssembler takes datagrams as they come, checks
// each message against the request it answers, and reads the objects.
#include "codec_attrs.h"

namespace vdev::proto {

using namespace codec_detail;

namespace {

// Reply objects.
Result<PortInfo> readPortInfo(const Attrs& tb) {
  PortInfo p;
  if (!tb[kAttrPortName]) return invalid("port reply without attribute PORT_NAME");
  p.name = getStr(tb[kAttrPortName]);
  if (auto s = checkPortName(p.name); !s) return s.error();
  if (tb[kAttrPortType]) p.type = static_cast<PortType>(getU8(tb[kAttrPortType]));
  if (tb[kAttrIfindex]) p.ifindex = getU32(tb[kAttrIfindex]);
  if (tb[kAttrQueues]) p.queues = getU32(tb[kAttrQueues]);
  if (tb[kAttrQueuesBound]) p.queues_bound = getU32(tb[kAttrQueuesBound]);
  if (tb[kAttrXdpMode]) p.xdp_mode = static_cast<XdpMode>(getU8(tb[kAttrXdpMode]));
  if (tb[kAttrBindMode]) p.bind_mode = static_cast<BindMode>(getU8(tb[kAttrBindMode]));
  if (tb[kAttrMtu]) p.mtu = getU32(tb[kAttrMtu]);
  if (tb[kAttrLive]) p.live = getU8(tb[kAttrLive]) != 0;
  if (tb[kAttrMac]) p.mac = getMac(tb[kAttrMac]);
  if (tb[kAttrFastRx]) p.fast_rx = getU8(tb[kAttrFastRx]) != 0;
  if (tb[kAttrOwnerUid]) p.owner_uid = getU32(tb[kAttrOwnerUid]);
  if (tb[kAttrPortTag]) p.tag = getStr(tb[kAttrPortTag]);
  if (tb[kAttrHook]) p.hook = static_cast<PortHook>(getU8(tb[kAttrHook]));
  if (tb[kAttrTcAttach]) p.tc_attach = static_cast<TcAttach>(getU8(tb[kAttrTcAttach]));
  if (tb[kAttrHookNote]) p.hook_note = printable(getStr(tb[kAttrHookNote]));
  if (tb[kAttrLinkNote]) p.link_note = printable(getStr(tb[kAttrLinkNote]));
  if (tb[kAttrUplink]) p.uplink = getU8(tb[kAttrUplink]) != 0;
  if (tb[kAttrIsolated]) p.isolated = getU8(tb[kAttrIsolated]) != 0;
  // A daemon that has limits sends all its numbers; one that sends any is
  // taken to have them (a missing one reads as 0), one that sends none to
  // have none. The others are there only while set: a guard by its
  // presence.
  bool any_number = false;
  spec::forEachPolicyField([&](const auto& r) {
    using T = typename std::decay_t<decltype(r)>::Type;
    if (spec::kIsNumber<T> && tb[r.attr]) any_number = true;
  });
  if (any_number) {
    Limits& l = p.limits.emplace();
    // Absent numbers read as 0, not as the struct's defaults.
    spec::forEachPolicyField([&](const auto& r) {
      using T = typename std::decay_t<decltype(r)>::Type;
      if constexpr (std::is_same_v<T, bool>)
        l.*r.value = tb[r.attr] != nullptr;
      else if (auto v = getPolicy(tb, r.attr, PolicyType<T>{}))
        l.*r.value = *v;
      else
        l.*r.value = T{};
    });
  }
  return p;
}

Result<PortStatsMsg> readPortStats(const Attrs& tb) {
  PortStatsMsg s;
  auto p = readPortInfo(tb);
  if (!p) return p.error();
  s.port = std::move(*p);
  if (tb[kAttrStats]) {
    auto a = parseAttrs(kStatsSpace, nestHead(tb[kAttrStats]), nla_len(tb[kAttrStats]), false, 0,
                        "STATS");
    if (!a) return a.error();
    // Absent (an older daemon): 0.
    for (const vdev::stats::CounterDef& c : vdev::stats::kPortCounters)
      if ((*a)[c.attr]) s.counters[c] = getU64((*a)[c.attr]);
  }
  return s;
}

Result<PoolMsg> readPool(const nlattr* nest) {
  auto a = parseAttrs(kPoolSpace, nestHead(nest), nla_len(nest), false, 0, "POOL");
  if (!a) return a.error();
  PoolMsg p;
  for (const vdev::stats::CounterDef& c : vdev::stats::kPoolCounters)
    if ((*a)[c.attr]) p[c] = getU64((*a)[c.attr]);
  return p;
}

Result<FdbEntryMsg> readFdb(const Attrs& tb) {
  if (!tb[kAttrMac]) return invalid("FDB reply without attribute MAC");
  if (!tb[kAttrPortName]) return invalid("FDB reply without attribute PORT_NAME");
  FdbEntryMsg e;
  e.mac = getMac(tb[kAttrMac]);
  e.port = getStr(tb[kAttrPortName]);
  if (auto s = checkPortName(e.port); !s) return s.error();
  if (tb[kAttrFdbStatic]) e.is_static = getU8(tb[kAttrFdbStatic]) != 0;
  if (tb[kAttrFdbAgeMs]) e.age_ms = getU64(tb[kAttrFdbAgeMs]);
  if (tb[kAttrVlanId]) e.vid = getU16(tb[kAttrVlanId]);  // absent: an older daemon, VLAN 1
  return e;
}

// Each Wire record of a bytes attribute of up to kUidUseMax records
// (absent: none), copied out (the payload has no alignment).
template <class Wire, class Fn>
Status forEachRecord(const nlattr* a, const char* name, Fn fn) {
  if (!a) return {};
  const size_t n = size_t(nla_len(a));
  if (n % sizeof(Wire) || n / sizeof(Wire) > kUidUseMax)
    return invalid(std::string("attribute ") + name + ": payload of " + std::to_string(n) + " bytes, not up to " +
                   std::to_string(kUidUseMax) + " records of " + std::to_string(sizeof(Wire)));
  const auto* p = static_cast<const uint8_t*>(nla_data(a));
  for (size_t k = 0; k < n; k += sizeof(Wire)) {
    Wire r;
    std::memcpy(&r, p + k, sizeof r);
    if (auto st = fn(r); !st) return st;
  }
  return {};
}

Result<InfoMsg> readInfo(const Attrs& tb) {
  if (!tb[kAttrVersion]) return invalid("INFO reply without attribute VERSION");
  InfoMsg i;
  i.version = getStr(tb[kAttrVersion]);
  if (auto s = checkVersion(i.version); !s) return s.error();
  if (tb[kAttrThreads]) i.threads = getU32(tb[kAttrThreads]);
  if (tb[kAttrSwitchMode]) i.mode = static_cast<SwitchMode>(getU8(tb[kAttrSwitchMode]));
  if (tb[kAttrUptime]) i.uptime_s = getU64(tb[kAttrUptime]);
  if (tb[kAttrNumPorts]) i.num_ports = getU32(tb[kAttrNumPorts]);
  if (tb[kAttrFdLimit]) i.fd_limit = getU32(tb[kAttrFdLimit]);
  if (tb[kAttrPortsFdLeft]) i.ports_fd_left = getU32(tb[kAttrPortsFdLeft]);
  if (tb[kAttrPortsPoolLeft]) i.ports_pool_left = getU32(tb[kAttrPortsPoolLeft]);
  if (tb[kAttrPortsMapLeft]) i.ports_map_left = getU32(tb[kAttrPortsMapLeft]);
  if (tb[kAttrStartIssues]) {
    i.start_issues = getStr(tb[kAttrStartIssues]);
    for (char& c : i.start_issues)
      if (c != '\n' && (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)) c = '?';
  }
  if (tb[kAttrTcAttach]) i.tc_attach = static_cast<TcAttach>(getU8(tb[kAttrTcAttach]));
  if (tb[kAttrKernelFeatures]) i.kernel_features = getU64(tb[kAttrKernelFeatures]);
  if (const nlattr* a = tb[kAttrUidCaps]) {
    if (nla_len(a) != int(sizeof(UidCapsWire)))
      return invalid("attribute UID_CAPS: payload of " + std::to_string(nla_len(a)) + " bytes, expected " +
                     std::to_string(sizeof(UidCapsWire)));
    UidCapsWire c;
    std::memcpy(&c, nla_data(a), sizeof c);
    i.uid_caps = InfoMsg::UidCaps{c.ports, c.fdb, c.capture_bytes, c.rate, c.burst};
  }
  if (auto st = forEachRecord<UidUseWire>(tb[kAttrUidUse], "UID_USE", [&](const UidUseWire& r) -> Status {
        i.uid_use.push_back(InfoMsg::UidUse{r.uid, r.ports, r.fdb, r.capture_bytes});
        return {};
      });
      !st)
    return st.error();
  if (auto st = forEachRecord<UidRequestsWire>(tb[kAttrUidRequests], "UID_REQUESTS", [&](const UidRequestsWire& r) -> Status {
        // Beside its UID_USE record (every uid with requests has one).
        auto it = std::find_if(i.uid_use.begin(), i.uid_use.end(), [&](const auto& u) { return u.uid == r.uid; });
        if (it == i.uid_use.end())
          return invalid("attribute UID_REQUESTS: uid " + std::to_string(r.uid) + " has no UID_USE record");
        it->requests = r.taken;
        it->requests_refused = r.refused;
        return {};
      });
      !st)
    return st.error();
  return i;
}

Result<CaptureMsg> readCapture(const Attrs& tb) {
  if (!tb[kAttrCaptureId]) return invalid("capture reply without attribute CAPTURE_ID");
  CaptureMsg c;
  c.id = getU32(tb[kAttrCaptureId]);
  if (tb[kAttrCaptureSnaplen]) c.snaplen = getU32(tb[kAttrCaptureSnaplen]);
  if (const nlattr* f = tb[kAttrCaptureFrames]) {
    const auto* p = static_cast<const uint8_t*>(nla_data(f));
    c.frames.assign(p, p + nla_len(f));
    if (auto r = parseCaptureFrames(c.frames); !r) return r.error();
  }
  if (tb[kAttrCaptureTaken]) c.taken = getU64(tb[kAttrCaptureTaken]);
  if (tb[kAttrCaptureDrops]) c.drops = getU64(tb[kAttrCaptureDrops]);
  c.ended = tb[kAttrCaptureEnded] != nullptr;
  return c;
}

Reply emptyBodyFor(Cmd c) {
  switch (c) {
    case kCmdPortGet: return PortList{};
    case kCmdStatsGet: return StatsReply{};
    case kCmdFdbGet: return FdbList{};
    case kCmdInfoGet: return InfoMsg{};
    case kCmdCaptureStart:
    case kCmdCaptureRead:
    case kCmdCaptureStop: return CaptureMsg{};
    default: return Ack{};
  }
}

// The extack message after an NLMSG_ERROR / NLMSG_DONE payload.
Result<std::string> readExtack(const uint8_t* tlv, size_t len) {
  if (len > INT_MAX) return invalid("oversized extack");
  auto a = parseAttrs(kErrSpace, reinterpret_cast<const nlattr*>(tlv), static_cast<int>(len), false,
                      0, "NLMSG_ERROR");
  if (!a) return a.error();
  if (!(*a)[NLMSGERR_ATTR_MSG]) return std::string();
  std::string s = getStr((*a)[NLMSGERR_ATTR_MSG]);
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return s;
}

}  // namespace

// ---------------------------------------------------- reply assembling

ReplyAssembler::ReplyAssembler(const Expect& expect)
    : expect_(expect), body_(emptyBodyFor(expect.cmd)) {}

Status ReplyAssembler::feed(std::span<const uint8_t> dg) {
  if (failed_) return *failed_;
  auto fail = [&](Error e) -> Status {
    failed_ = e;
    return e;
  };
  if (done_) return fail(Error{EPROTO, "data after the end of the reply"});
  if (dg.size() > INT_MAX) return fail(Error{EMSGSIZE, "oversized datagram"});
  if (dg.empty()) return fail(invalid("empty datagram"));
  Aligned buf(dg);
  int rem = static_cast<int>(buf.size());
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(buf.data());
  while (rem > 0) {
    if (done_) return fail(Error{EPROTO, "trailing messages after the end of the reply"});
    if (!nlmsg_ok(nlh, rem)) {
      if (rem < static_cast<int>(NLMSG_HDRLEN))
        return fail(invalid("truncated netlink header: " + std::to_string(rem) + " bytes"));
      return fail(invalid("netlink length field " + std::to_string(nlh->nlmsg_len) +
                          " does not fit the " + std::to_string(rem) + " bytes left"));
    }
    if (auto s = feedOne(nlh); !s) return fail(s.error());
    // nlmsg_next(); the last message may omit its padding.
    int total = static_cast<int>(NLMSG_ALIGN(nlh->nlmsg_len));
    if (total > rem) total = rem;
    rem -= total;
    nlh = reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const uint8_t*>(nlh) + total);
  }
  return {};
}

Status ReplyAssembler::feedOne(const nlmsghdr* nlh) {
  const uint32_t seq = nlh->nlmsg_seq;
  const bool first = !started_ && !done_;
  if (!expect_.seq) {
    expect_.seq = seq;
  } else if (seq != *expect_.seq) {
    // seq 0: a connection-level error sent before any request was read.
    if (!(nlh->nlmsg_type == NLMSG_ERROR && seq == 0 && first))
      return Error{EPROTO, "reply seq " + std::to_string(seq) + " does not match request seq " +
                               std::to_string(*expect_.seq)};
  }
  const size_t plen = nlh->nlmsg_len - NLMSG_HDRLEN;
  const auto* payload = static_cast<const uint8_t*>(nlmsg_data(nlh));
  switch (nlh->nlmsg_type) {
    case NLMSG_NOOP: return {};
    case NLMSG_ERROR: {
      if (plen < sizeof(nlmsgerr))
        return invalid("truncated NLMSG_ERROR: " + std::to_string(plen) + " bytes");
      nlmsgerr e;
      std::memcpy(&e, payload, sizeof e);
      if (e.error > 0 || e.error < -4095)
        return invalid("NLMSG_ERROR with invalid error " + std::to_string(e.error));
      std::string msg;
      if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
        // TLVs follow the echoed request: its header only when capped.
        uint64_t off = sizeof(nlmsgerr);
        if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
          off = sizeof(int) + ((uint64_t{e.msg.nlmsg_len} + 3) & ~uint64_t{3});
        if (off > plen) return invalid("NLMSG_ERROR: echoed request exceeds the message");
        auto m = readExtack(payload + off, plen - off);
        if (!m) return m.error();
        msg = std::move(*m);
      }
      if (e.error == 0) {
        if (!isAction(expect_.cmd))
          return Error{EPROTO, std::string("unexpected ACK to ") + cmdName(expect_.cmd)};
        if (started_) return Error{EPROTO, "ACK inside a dump"};
        body_ = Ack{};
      } else {
        body_ = ErrorReply{-e.error, std::move(msg)};
      }
      done_ = true;
      return {};
    }
    case NLMSG_DONE: {
      // (A dump's data messages all carry NLM_F_MULTI: dataMsg() checks.)
      if (!expect_.dump) return Error{EPROTO, "NLMSG_DONE answering a request that is no dump"};
      if (plen >= sizeof(int)) {
        int err;
        std::memcpy(&err, payload, sizeof err);
        if (err > 0 || err < -4095)
          return invalid("NLMSG_DONE with invalid error " + std::to_string(err));
        if (err < 0) {
          std::string msg;
          if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
            auto m = readExtack(payload + sizeof(int), plen - sizeof(int));
            if (!m) return m.error();
            msg = std::move(*m);
          }
          body_ = ErrorReply{-err, std::move(msg)};
        }
      } else if (plen != 0) {
        return invalid("truncated NLMSG_DONE");
      }
      done_ = true;
      return {};
    }
    case kFamilyId: return dataMsg(nlh);
    default: return invalid("unexpected message type " + hex(nlh->nlmsg_type));
  }
}

Status ReplyAssembler::dataMsg(const nlmsghdr* nlh) {
  const bool multi = nlh->nlmsg_flags & NLM_F_MULTI;
  if (isAction(expect_.cmd))
    return Error{EPROTO, std::string("unexpected data answering ") + cmdName(expect_.cmd)};
  if (multi != expect_.dump)
    return Error{EPROTO, multi ? "NLM_F_MULTI answering a request that is no dump"
                               : "dump answered without NLM_F_MULTI"};
  const int payload = static_cast<int>(nlh->nlmsg_len - NLMSG_HDRLEN);
  if (payload < kGenlHdrLen) return invalid("truncated generic netlink header");
  const auto* g = static_cast<const genlmsghdr*>(nlmsg_data(nlh));
  if (g->version == 0) return invalid("reply with protocol version 0");
  if (g->cmd != expect_.cmd)
    return Error{EPROTO, std::string("reply command ") + cmdName(g->cmd) + " answering " +
                             cmdName(expect_.cmd)};
  started_ = true;
  auto attrs =
      parseAttrs(kTop, genlmsg_attrdata(g, 0), payload - kGenlHdrLen, false, 0, cmdName(g->cmd));
  if (!attrs) return attrs.error();
  const Attrs& tb = *attrs;
  switch (expect_.cmd) {
    case kCmdPortGet: {
      auto p = readPortInfo(tb);
      if (!p) return p.error();
      std::get<PortList>(body_).ports.push_back(std::move(*p));
      break;
    }
    case kCmdStatsGet: {
      auto& r = std::get<StatsReply>(body_);
      bool any = false;
      if (tb[kAttrPool]) {
        if (pool_seen_) return invalid("attribute POOL sent twice in one reply");
        pool_seen_ = any = true;
        auto p = readPool(tb[kAttrPool]);
        if (!p) return p.error();
        r.pool = *p;
      }
      if (tb[kAttrFdbEntries]) {
        if (fdb_entries_seen_) return invalid("attribute FDB_ENTRIES sent twice in one reply");
        fdb_entries_seen_ = any = true;
        r.fdb_entries = getU64(tb[kAttrFdbEntries]);
      }
      if (tb[kAttrPortName] || !multi) {
        auto s = readPortStats(tb);
        if (!s) return s.error();
        r.ports.push_back(std::move(*s));
        any = true;
      }
      if (!any) return invalid("STATS_GET reply message with neither PORT_NAME nor POOL");
      break;
    }
    case kCmdFdbGet: {
      auto e = readFdb(tb);
      if (!e) return e.error();
      std::get<FdbList>(body_).entries.push_back(std::move(*e));
      break;
    }
    case kCmdInfoGet: {
      auto i = readInfo(tb);
      if (!i) return i.error();
      body_ = std::move(*i);
      break;
    }
    case kCmdCaptureStart:
    case kCmdCaptureRead:
    case kCmdCaptureStop: {
      auto c = readCapture(tb);
      if (!c) return c.error();
      body_ = std::move(*c);
      break;
    }
    default: return Error{EPROTO, "unexpected data"};
  }
  if (!multi) done_ = true;
  return {};
}

Result<Reply> ReplyAssembler::finish() {
  if (failed_) return *failed_;
  if (!done_) return Error{EPROTO, "incomplete reply"};
  return body_;
}

Result<Reply> decodeReply(std::span<const uint8_t> bytes, const Expect& expect) {
  ReplyAssembler a(expect);
  if (auto s = a.feed(bytes); !s) return s.error();
  return a.finish();
}

}  // namespace vdev::proto
