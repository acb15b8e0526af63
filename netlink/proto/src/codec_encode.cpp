// Building the control protocol's messages with libnl-3 (nlmsg_alloc_size,
// genlmsg_put, nla_put_*, nla_nest_start, owned by NlMsgPtr): requests,
// replies, ACKs and errors.
#include "codec_attrs.h"

namespace vdev::proto {

using namespace codec_detail;

namespace {

// ------------------------------------------------------------- building

// Attribute writer over one nl_msg. The first failed nla_put (no room:
// -NLE_NOMEM) is remembered and every later put skipped, so building code is
// linear and checks once.
class Writer {
 public:
  explicit Writer(nl_msg* m) : m_(m) {}
  bool ok() const { return err_ == 0; }
  int err() const { return err_; }
  void u8(int t, uint8_t v) { note(ok() ? nla_put_u8(m_, t, v) : 0); }
  void u16(int t, uint16_t v) { note(ok() ? nla_put_u16(m_, t, v) : 0); }
  void vids(int t, const VidSet& s) {
    std::vector<uint16_t> r;
    for (const auto& [a, b] : vidRanges(s)) r.insert(r.end(), {a, b});
    note(ok() ? nla_put(m_, t, static_cast<int>(2 * r.size()), r.data()) : 0);
  }
  // A port's VLAN settings: all three when given (VLAN_PVID 0 alone: none).
  void vlan(const VlanConfig& v) {
    u16(kAttrVlanPvid, v.pvid);
    if (v.tagged.any()) vids(kAttrVlanTagged, v.tagged);
    if (v.untagged.any()) vids(kAttrVlanUntagged, v.untagged);
  }
  // A policy field (spec/port_policy.h) by its type; VLAN: its three.
  void policy(int t, uint32_t v) { u32(t, v); }
  void policy(int t, uint64_t v) { u64(t, v); }
  void policy(int t, bool v) { u8(t, v ? 1 : 0); }
  void policy(int t, const Mac& v) { mac(t, v); }
  void policy(int t, const std::vector<IpAddr>& v) { addrs(t, v); }
  void policy(int, const VlanConfig& v) { vlan(v); }
  void u32(int t, uint32_t v) { note(ok() ? nla_put_u32(m_, t, v) : 0); }
  void u64(int t, uint64_t v) { note(ok() ? nla_put_u64(m_, t, v) : 0); }
  void str(int t, const std::string& s) {
    // Exact bytes plus the NUL (nla_put_string would stop at an inner NUL).
    if (s.size() >= 0xffff - NLA_HDRLEN) return note(-NLE_NOMEM);
    note(ok() ? nla_put(m_, t, static_cast<int>(s.size() + 1), s.c_str()) : 0);
  }
  void mac(int t, const Mac& m) { note(ok() ? nla_put(m_, t, 6, m.data()) : 0); }
  void bytes(int t, const std::vector<uint8_t>& v) {
    if (v.size() > 0xffff - NLA_HDRLEN) return note(-NLE_NOMEM);
    note(ok() ? nla_put(m_, t, static_cast<int>(v.size()), v.data()) : 0);
  }
  void addrs(int t, const std::vector<IpAddr>& v) {
    // std::array<uint8_t, 16> elements: contiguous, no padding.
    note(ok() ? nla_put(m_, t, static_cast<int>(16 * v.size()), v.data()) : 0);
  }
  nlattr* nestStart(int t) {
    if (!ok()) return nullptr;
    nlattr* a = nla_nest_start(m_, t);
    if (!a) note(-NLE_NOMEM);
    return a;
  }
  void nestEnd(nlattr* a) {
    // keep_empty: an empty CREATE means "create with defaults".
    if (ok() && a) note(nla_nest_end_keep_empty(m_, a));
  }

 private:
  void note(int rc) {
    if (rc < 0 && err_ == 0) err_ = rc;
  }
  nl_msg* m_;
  int err_ = 0;
};

std::vector<uint8_t> bytesOf(nl_msg* m) {
  const nlmsghdr* h = nlmsg_hdr(m);
  const auto* p = reinterpret_cast<const uint8_t*>(h);
  return std::vector<uint8_t>(p, p + h->nlmsg_len);
}

// Builds one generic netlink message: header + fill(Writer&). Tries a page
// first and the full datagram size if that is too small.
template <typename Fill>
Result<std::vector<uint8_t>> buildGenl(uint32_t pid, uint32_t seq, uint16_t flags, uint8_t cmd,
                                       Fill&& fill) {
  for (size_t cap : {size_t{4096}, kMaxMessageSize}) {
    NlMsgPtr m(nlmsg_alloc_size(cap));
    if (!m) return Error{ENOMEM, "nlmsg_alloc_size"};
    if (!genlmsg_put(m.get(), pid, seq, kFamilyId, 0, flags, cmd, kProtocolVersion))
      return Error{EMSGSIZE, "genlmsg_put"};
    Writer w(m.get());
    fill(w);
    if (w.ok()) return bytesOf(m.get());
    if (w.err() != -NLE_NOMEM)
      return Error{EINVAL, std::string("nla_put: ") + nl_geterror(w.err())};
  }
  return Error{EMSGSIZE, std::string(cmdName(cmd)) + ": one object does not fit in " +
                             std::to_string(kMaxMessageSize) + " bytes"};
}

// Datagrams of at most kMaxMessageSize bytes, each holding whole messages.
class Packer {
 public:
  void add(std::vector<uint8_t>&& msg) {
    if (!cur_.empty() && cur_.size() + msg.size() > kMaxMessageSize) flush();
    if (cur_.empty()) {
      cur_ = std::move(msg);
    } else {
      cur_.insert(cur_.end(), msg.begin(), msg.end());
    }
  }
  std::vector<std::vector<uint8_t>> finish() {
    flush();
    return std::move(out_);
  }

 private:
  void flush() {
    if (!cur_.empty()) out_.push_back(std::move(cur_));
    cur_.clear();
  }
  std::vector<std::vector<uint8_t>> out_;
  std::vector<uint8_t> cur_;
};

void putCreate(Writer& w, const CreateOptions& c) {
  nlattr* n = w.nestStart(kAttrCreate);
  if (c.peer_netns_name) w.str(kCreatePeerNetnsName, *c.peer_netns_name);
  if (c.peer_netns_path) w.str(kCreatePeerNetnsPath, *c.peer_netns_path);
  if (c.peer_netns_pid) w.u32(kCreatePeerNetnsPid, *c.peer_netns_pid);
  if (c.peer_ifname) w.str(kCreatePeerIfname, *c.peer_ifname);
  if (c.peer_mac) w.mac(kCreatePeerMac, *c.peer_mac);
  if (c.mtu) w.u32(kCreateMtu, *c.mtu);
  if (c.owner_uid) w.u32(kCreateOwnerUid, *c.owner_uid);
  if (c.group_gid) w.u32(kCreateGroupGid, *c.group_gid);
  if (c.multi_queue) w.u8(kCreateMultiQueue, *c.multi_queue ? 1 : 0);
  if (c.mac) w.mac(kCreateMac, *c.mac);
  w.nestEnd(n);
}

// Each field given, in the table's order.
void putLimits(Writer& w, const LimitOptions& l) {
  spec::forEachPolicyField([&](const auto& r) {
    if (l.*r.option) w.policy(r.attr, *(l.*r.option));
  });
}

void putBody(Writer& w, const PortAddRequest& r) {
  w.str(kAttrPortName, r.name);
  w.u8(kAttrPortType, static_cast<uint8_t>(r.type));
  if (r.queues) w.u32(kAttrQueues, *r.queues);
  w.u8(kAttrXdpMode, static_cast<uint8_t>(r.xdp_mode));
  if (r.create) putCreate(w, *r.create);
  if (r.fast_rx) w.u8(kAttrFastRx, *r.fast_rx ? 1 : 0);
  if (r.tag) w.str(kAttrPortTag, *r.tag);
  if (r.hook) w.u8(kAttrHook, static_cast<uint8_t>(*r.hook));
  if (r.isolated) w.u8(kAttrIsolated, *r.isolated ? 1 : 0);
  putLimits(w, r.limits);
}
void putBody(Writer& w, const PortDelRequest& r) { w.str(kAttrPortName, r.name); }
void putBody(Writer& w, const PortSetRequest& r) {
  w.str(kAttrPortName, r.name);
  if (r.isolated) w.u8(kAttrIsolated, *r.isolated ? 1 : 0);
  putLimits(w, r.limits);
}
void putBody(Writer& w, const PortGetRequest& r) {
  if (!r.name.empty()) w.str(kAttrPortName, r.name);
}
void putBody(Writer& w, const StatsGetRequest& r) {
  if (!r.name.empty()) w.str(kAttrPortName, r.name);
}
void putBody(Writer&, const FdbGetRequest&) {}
void putBody(Writer& w, const FdbAddRequest& r) {
  w.mac(kAttrMac, r.mac);
  w.str(kAttrPortName, r.port);
  w.u8(kAttrFdbStatic, r.is_static ? 1 : 0);
  if (r.vid != kVidDefault) w.u16(kAttrVlanId, r.vid);
}
void putBody(Writer& w, const FdbDelRequest& r) {
  w.mac(kAttrMac, r.mac);
  if (r.vid != kVidDefault) w.u16(kAttrVlanId, r.vid);
}
void putBody(Writer&, const InfoGetRequest&) {}
void putBody(Writer& w, const CaptureStartRequest& r) {
  w.str(kAttrPortName, r.name);
  if (r.dir != CaptureDir::kBoth) w.u8(kAttrCaptureDir, static_cast<uint8_t>(r.dir));
  if (r.snaplen) w.u32(kAttrCaptureSnaplen, *r.snaplen);
  if (r.buffer) w.u32(kAttrCaptureBuffer, *r.buffer);
  if (r.filter) {
    const CaptureFilter& f = *r.filter;
    nlattr* n = w.nestStart(kAttrCaptureFilter);
    if (f.mac) w.mac(kCapFilterMac, *f.mac);
    if (f.vlan) w.u16(kCapFilterVlan, *f.vlan);
    if (f.ethertype) w.u16(kCapFilterEthertype, *f.ethertype);
    if (f.ip) w.addrs(kCapFilterIp, std::vector<IpAddr>{*f.ip});
    if (f.proto) w.u8(kCapFilterProto, *f.proto);
    if (f.port) w.u16(kCapFilterPort, *f.port);
    w.nestEnd(n);
  }
}
void putBody(Writer& w, const CaptureReadRequest& r) { w.u32(kAttrCaptureId, r.id); }
void putBody(Writer& w, const CaptureStopRequest& r) { w.u32(kAttrCaptureId, r.id); }

void putCapture(Writer& w, const CaptureMsg& c) {
  w.u32(kAttrCaptureId, c.id);
  if (c.snaplen) w.u32(kAttrCaptureSnaplen, *c.snaplen);
  if (!c.frames.empty()) w.bytes(kAttrCaptureFrames, c.frames);
  w.u64(kAttrCaptureTaken, c.taken);
  w.u64(kAttrCaptureDrops, c.drops);
  if (c.ended) w.u8(kAttrCaptureEnded, 1);
}

void putPortInfo(Writer& w, const PortInfo& p) {
  w.str(kAttrPortName, p.name);
  w.u8(kAttrPortType, static_cast<uint8_t>(p.type));
  w.u32(kAttrIfindex, p.ifindex);
  w.u32(kAttrQueues, p.queues);
  w.u32(kAttrQueuesBound, p.queues_bound);
  w.u8(kAttrXdpMode, static_cast<uint8_t>(p.xdp_mode));
  w.u8(kAttrBindMode, static_cast<uint8_t>(p.bind_mode));
  w.u32(kAttrMtu, p.mtu);
  w.u8(kAttrLive, p.live ? 1 : 0);
  if (p.mac) w.mac(kAttrMac, *p.mac);
  w.u8(kAttrFastRx, p.fast_rx ? 1 : 0);
  if (p.owner_uid) w.u32(kAttrOwnerUid, *p.owner_uid);
  if (!p.tag.empty()) w.str(kAttrPortTag, p.tag);
  if (p.hook) w.u8(kAttrHook, static_cast<uint8_t>(*p.hook));
  if (p.tc_attach) w.u8(kAttrTcAttach, static_cast<uint8_t>(*p.tc_attach));
  if (!p.hook_note.empty()) w.str(kAttrHookNote, printable(p.hook_note.substr(0, kHookNoteMax)));
  if (!p.link_note.empty()) w.str(kAttrLinkNote, printable(p.link_note.substr(0, kHookNoteMax)));
  if (p.uplink) w.u8(kAttrUplink, 1);
  if (p.isolated) w.u8(kAttrIsolated, 1);
  if (p.limits) {
    // The numbers always, 0s included: a 0 here says "no limit", where
    // absence would say "an older daemon". The others only while the port
    // has one (a MAC, addresses, a guard on, VLAN settings).
    spec::forEachPolicyField([&](const auto& r) {
      using T = typename std::decay_t<decltype(r)>::Type;
      const T& v = (*p.limits).*r.value;
      if (spec::kIsNumber<T> || v != T{}) w.policy(r.attr, v);
    });
  }
}

void putPortStats(Writer& w, const PortStatsMsg& s) {
  putPortInfo(w, s.port);
  nlattr* n = w.nestStart(kAttrStats);
  for (const vdev::stats::CounterDef& c : vdev::stats::kPortCounters) w.u64(c.attr, s.counters[c]);
  w.nestEnd(n);
}

void putGlobals(Writer& w, const StatsReply& r) {
  if (r.pool) {
    const PoolMsg& p = *r.pool;
    nlattr* n = w.nestStart(kAttrPool);
    for (const vdev::stats::CounterDef& c : vdev::stats::kPoolCounters) w.u64(c.attr, p[c]);
    w.nestEnd(n);
  }
  if (r.fdb_entries) w.u64(kAttrFdbEntries, *r.fdb_entries);
}

void putFdb(Writer& w, const FdbEntryMsg& e) {
  w.mac(kAttrMac, e.mac);
  w.str(kAttrPortName, e.port);
  w.u8(kAttrFdbStatic, e.is_static ? 1 : 0);
  w.u64(kAttrFdbAgeMs, e.age_ms);
  w.u16(kAttrVlanId, e.vid);
}

void putInfo(Writer& w, const InfoMsg& i) {
  w.str(kAttrVersion, i.version);
  w.u32(kAttrThreads, i.threads);
  w.u8(kAttrSwitchMode, static_cast<uint8_t>(i.mode));
  w.u64(kAttrUptime, i.uptime_s);
  w.u32(kAttrNumPorts, i.num_ports);
  if (i.fd_limit) w.u32(kAttrFdLimit, *i.fd_limit);
  if (i.ports_fd_left) w.u32(kAttrPortsFdLeft, *i.ports_fd_left);
  if (i.ports_pool_left) w.u32(kAttrPortsPoolLeft, *i.ports_pool_left);
  if (i.ports_map_left) w.u32(kAttrPortsMapLeft, *i.ports_map_left);
  if (!i.start_issues.empty()) w.str(kAttrStartIssues, i.start_issues.substr(0, kStartIssuesMax));
  if (i.tc_attach) w.u8(kAttrTcAttach, static_cast<uint8_t>(*i.tc_attach));
  if (i.kernel_features) w.u64(kAttrKernelFeatures, *i.kernel_features);
  if (i.uid_caps) {
    const UidCapsWire c{i.uid_caps->ports, i.uid_caps->fdb, i.uid_caps->capture_bytes, i.uid_caps->rate,
                        i.uid_caps->burst};
    const auto* p = reinterpret_cast<const uint8_t*>(&c);
    w.bytes(kAttrUidCaps, std::vector<uint8_t>(p, p + sizeof c));
  }
  if (!i.uid_use.empty()) {
    std::vector<uint8_t> b;
    for (size_t k = 0; k < i.uid_use.size() && k < kUidUseMax; k++) {
      const auto& u = i.uid_use[k];
      const UidUseWire r{u.uid, u.ports, u.fdb, 0, u.capture_bytes};
      const auto* p = reinterpret_cast<const uint8_t*>(&r);
      b.insert(b.end(), p, p + sizeof r);
    }
    w.bytes(kAttrUidUse, b);
    b.clear();
    for (size_t k = 0; k < i.uid_use.size() && k < kUidUseMax; k++) {
      const auto& u = i.uid_use[k];
      if (!u.requests && !u.requests_refused) continue;
      const UidRequestsWire r{u.uid, 0, u.requests, u.requests_refused};
      const auto* p = reinterpret_cast<const uint8_t*>(&r);
      b.insert(b.end(), p, p + sizeof r);
    }
    if (!b.empty()) w.bytes(kAttrUidRequests, b);
  }
}

Error handlerBug(const char* what, Cmd cmd) {
  return Error{EIO,
               std::string("internal error: handler answered ") + cmdName(cmd) + " with " + what};
}

std::vector<uint8_t> buildErrorMsg(const MsgHeader& orig, int err, std::string_view msg) {
  // err >= 0 here; 0 is an ACK.
  std::string text;
  text.reserve(std::min(msg.size(), kErrorMsgMax));
  for (size_t i = 0; i < msg.size() && i < kErrorMsgMax; ++i) {
    unsigned char c = static_cast<unsigned char>(msg[i]);
    text += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  const uint16_t flags = NLM_F_CAPPED | (text.empty() ? 0 : NLM_F_ACK_TLVS);
  NlMsgPtr m(nlmsg_alloc_size(NLMSG_HDRLEN + sizeof(nlmsgerr) + NLA_HDRLEN + kErrorMsgMax + 8));
  if (!m) return {};
  nlmsghdr* h = nlmsg_put(m.get(), orig.pid, orig.seq, NLMSG_ERROR, sizeof(nlmsgerr), flags);
  if (!h) return {};
  nlmsgerr e{};
  e.error = -err;
  e.msg.nlmsg_len = orig.len;
  e.msg.nlmsg_type = orig.type;
  e.msg.nlmsg_flags = orig.flags;
  e.msg.nlmsg_seq = orig.seq;
  e.msg.nlmsg_pid = orig.pid;
  std::memcpy(nlmsg_data(h), &e, sizeof e);
  if (!text.empty())
    nla_put(m.get(), NLMSGERR_ATTR_MSG, static_cast<int>(text.size() + 1), text.c_str());
  return bytesOf(m.get());
}

std::vector<uint8_t> buildDone(const MsgHeader& orig) {
  NlMsgPtr m(nlmsg_alloc_size(NLMSG_HDRLEN + 8));
  if (!m) return {};
  nlmsghdr* h = nlmsg_put(m.get(), orig.pid, orig.seq, NLMSG_DONE, sizeof(int), NLM_F_MULTI);
  if (!h) return {};
  int zero = 0;
  std::memcpy(nlmsg_data(h), &zero, sizeof zero);
  return bytesOf(m.get());
}

// A dump (or a single object): one message per item, packed.
template <typename T, typename Put>
Result<std::vector<std::vector<uint8_t>>> encodeObjects(const Request& req, bool dump,
                                                        const std::vector<T>& items, Put&& put,
                                                        const StatsReply* globals) {
  const Cmd cmd = cmdOf(req.body);
  const uint16_t flags = dump ? NLM_F_MULTI : 0;
  Packer pk;
  if (!dump) {
    // Exactly one object; STATS_GET puts the globals in the same message.
    auto msg = buildGenl(req.hdr.pid, req.hdr.seq, 0, cmd, [&](Writer& w) {
      put(w, items[0]);
      if (globals) putGlobals(w, *globals);
    });
    if (!msg) return msg.error();
    pk.add(std::move(*msg));
    return pk.finish();
  }
  if (globals && (globals->pool || globals->fdb_entries)) {
    auto msg = buildGenl(req.hdr.pid, req.hdr.seq, flags, cmd,
                         [&](Writer& w) { putGlobals(w, *globals); });
    if (!msg) return msg.error();
    pk.add(std::move(*msg));
  }
  for (const T& it : items) {
    auto msg = buildGenl(req.hdr.pid, req.hdr.seq, flags, cmd, [&](Writer& w) { put(w, it); });
    if (!msg) return msg.error();
    pk.add(std::move(*msg));
  }
  auto done = buildDone(req.hdr);
  if (done.empty()) return Error{ENOMEM, "NLMSG_DONE"};
  pk.add(std::move(done));
  return pk.finish();
}

}  // namespace

// --------------------------------------------------------------- encode

Result<std::vector<uint8_t>> encodeRequest(uint32_t seq, const RequestBody& body) {
  if (auto s = validate(body); !s) return s.error();
  const Cmd cmd = cmdOf(body);
  uint16_t flags = NLM_F_REQUEST;
  if (isDump(body)) flags |= NLM_F_DUMP;
  if (isAction(cmd)) flags |= NLM_F_ACK;
  auto msg = buildGenl(0, seq, flags, cmd,
                       [&](Writer& w) { std::visit([&](const auto& b) { putBody(w, b); }, body); });
  if (!msg) return msg.error();
  if (msg->size() > kMaxMessageSize) return Error{EMSGSIZE, "request too large"};
  return msg;
}

std::vector<uint8_t> encodeAck(const MsgHeader& orig) { return buildErrorMsg(orig, 0, {}); }

std::vector<uint8_t> encodeError(const MsgHeader& orig, int err, std::string_view msg) {
  if (err < 0) err = -err;
  if (err == 0 || err > 4095) err = EIO;
  return buildErrorMsg(orig, err, msg);
}

Result<std::vector<std::vector<uint8_t>>> encodeReply(const Request& req, const Reply& reply) {
  const Cmd cmd = cmdOf(req.body);
  const bool dump = isDump(req.body);
  using Out = Result<std::vector<std::vector<uint8_t>>>;
  struct Visitor {
    const Request& req;
    Cmd cmd;
    bool dump;
    static Out one(std::vector<uint8_t> m) {
      if (m.empty()) return Error{ENOMEM, "encode reply"};
      return std::vector<std::vector<uint8_t>>{std::move(m)};
    }
    Out operator()(const Ack&) const {
      if (!isAction(cmd)) return handlerBug("ACK", cmd);
      return one(encodeAck(req.hdr));
    }
    Out operator()(const ErrorReply& e) const { return one(encodeError(req.hdr, e.err, e.msg)); }
    Out operator()(const PortList& l) const {
      if (cmd != kCmdPortGet) return handlerBug("a port list", cmd);
      if (!dump && l.ports.size() != 1) return handlerBug("not exactly one port", cmd);
      for (const auto& p : l.ports)
        if (auto s = checkPortName(p.name); !s)
          return Error{EIO, "invalid reply: " + s.error().what};
      return encodeObjects(req, dump, l.ports, putPortInfo, nullptr);
    }
    Out operator()(const StatsReply& r) const {
      if (cmd != kCmdStatsGet) return handlerBug("statistics", cmd);
      if (!dump && r.ports.size() != 1) return handlerBug("not exactly one port", cmd);
      for (const auto& p : r.ports)
        if (auto s = checkPortName(p.port.name); !s)
          return Error{EIO, "invalid reply: " + s.error().what};
      return encodeObjects(req, dump, r.ports, putPortStats, &r);
    }
    Out operator()(const FdbList& l) const {
      if (cmd != kCmdFdbGet) return handlerBug("an FDB list", cmd);
      for (const auto& e : l.entries)
        if (auto s = checkPortName(e.port); !s)
          return Error{EIO, "invalid reply: " + s.error().what};
      return encodeObjects(req, true, l.entries, putFdb, nullptr);
    }
    Out operator()(const InfoMsg& i) const {
      if (cmd != kCmdInfoGet) return handlerBug("INFO", cmd);
      if (auto s = checkVersion(i.version); !s)
        return Error{EIO, "invalid reply: " + s.error().what};
      std::vector<InfoMsg> v{i};
      return encodeObjects(req, false, v, putInfo, nullptr);
    }
    Out operator()(const CaptureMsg& c) const {
      if (cmd != kCmdCaptureStart && cmd != kCmdCaptureRead && cmd != kCmdCaptureStop)
        return handlerBug("a capture", cmd);
      std::vector<CaptureMsg> v{c};
      return encodeObjects(req, false, v, putCapture, nullptr);
    }
  };
  return std::visit(Visitor{req, cmd, dump}, reply);
}

}  // namespace vdev::proto
