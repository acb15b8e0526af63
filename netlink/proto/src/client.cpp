// ControlClient: see client.h.
#include "proto/client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace vdev::proto {

namespace {

Error fromReply(const ErrorReply& e, Cmd cmd) {
  return Error{e.err, e.msg.empty() ? std::string("vdevd: ") + cmdName(cmd) : e.msg};
}

}  // namespace

ControlClient::ControlClient(vdev::FileDesc fd, int timeout_ms)
    : fd_(std::move(fd)), timeout_ms_(timeout_ms), buf_(kMaxMessageSize) {}

Result<ControlClient> ControlClient::connect(const std::string& path, int timeout_ms) {
  if (timeout_ms <= 0) timeout_ms = kDefaultTimeoutMs;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(a.sun_path))
    return Error{ENAMETOOLONG, "control socket path \"" + path + "\""};
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  vdev::FileDesc fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return vdev::errnoError("socket");
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
    return vdev::errnoError("connect " + path);
  // Sends block at most this long (a reply is waited for with poll()).
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
    return vdev::errnoError("setsockopt SO_SNDTIMEO");
  return ControlClient(std::move(fd), timeout_ms);
}

Result<Reply> ControlClient::brokenWith(Error e) {
  broken_ = true;
  return e;
}

// The daemon refused the connection before reading our request (EBUSY) or
// closed it: its error may still be waiting in our receive queue.
Result<Reply> ControlClient::pendingError(Error fallback) {
  ssize_t n;
  // A reset is reported (once) before the data still queued: read past it.
  do {
    n = ::recv(fd_.get(), buf_.data(), buf_.size(), MSG_DONTWAIT);
  } while (n < 0 && (errno == ECONNRESET || errno == EINTR));
  if (n > 0) {
    auto r = decodeReply({buf_.data(), static_cast<size_t>(n)}, Expect{0, kCmdUnspec, false});
    if (r && std::holds_alternative<ErrorReply>(*r)) {
      broken_ = true;
      return *r;
    }
  }
  return brokenWith(std::move(fallback));
}

Result<Reply> ControlClient::call(const RequestBody& body) {
  if (!fd_.valid() || broken_)
    return Error{ENOTCONN, "control connection unusable after an earlier failure; reconnect"};
  const uint32_t seq = ++seq_ == 0 ? ++seq_ : seq_;  // 0 is the connection-level seq
  auto dg = encodeRequest(seq, body);
  if (!dg) return dg.error();
  const Cmd cmd = cmdOf(body);

  ssize_t w;
  do {
    w = ::send(fd_.get(), dg->data(), dg->size(), MSG_NOSIGNAL);
  } while (w < 0 && errno == EINTR);
  if (w < 0) {
    if (errno == EPIPE || errno == ECONNRESET)
      return pendingError(vdev::errnoError(std::string("send ") + cmdName(cmd)));
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return brokenWith(
          Error{ETIMEDOUT, std::string("send ") + cmdName(cmd) + ": vdevd does not read"});
    return brokenWith(vdev::errnoError(std::string("send ") + cmdName(cmd)));
  }

  ReplyAssembler asm_(Expect{seq, cmd, isDump(body)});
  bool reset = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  while (!asm_.done()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return brokenWith(Error{ETIMEDOUT, std::string("no reply from vdevd to ") + cmdName(cmd) +
                                             " within " + std::to_string(timeout_ms_) + " ms"});
    pollfd p{fd_.get(), POLLIN, 0};
    int pr = ::poll(&p, 1, static_cast<int>(left.count()));
    if (pr < 0) {
      if (errno == EINTR) continue;
      return brokenWith(vdev::errnoError("poll"));
    }
    if (pr == 0) continue;  // the deadline check above reports it
    msghdr mh{};
    iovec iov{buf_.data(), buf_.size()};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    ssize_t n = ::recvmsg(fd_.get(), &mh, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      // vdevd closed the connection with a request of ours unread (e.g. EBUSY:
      // too many clients). Linux reports ECONNRESET once, before the
      // datagrams still queued for us, which may hold the daemon's answer.
      if (errno == ECONNRESET && !reset) {
        reset = true;
        continue;
      }
      return brokenWith(vdev::errnoError(std::string("recv ") + cmdName(cmd)));
    }
    if (n == 0)
      return brokenWith(
          Error{ECONNRESET, std::string("vdevd closed the connection during ") + cmdName(cmd)});
    if (mh.msg_flags & MSG_TRUNC)
      return brokenWith(Error{
          EMSGSIZE, "reply datagram larger than " + std::to_string(kMaxMessageSize) + " bytes"});
    if (auto s = asm_.feed({buf_.data(), static_cast<size_t>(n)}); !s) {
      Error e = s.error();
      e.what = "bad reply from vdevd: " + e.what;
      return brokenWith(std::move(e));
    }
  }
  auto r = asm_.finish();
  if (!r) return brokenWith(r.error());
  return r;
}

template <typename T>
Result<T> ControlClient::expect(const RequestBody& body) {
  auto r = call(body);
  if (!r) return r.error();
  if (auto* e = std::get_if<ErrorReply>(&*r)) return fromReply(*e, cmdOf(body));
  if (auto* v = std::get_if<T>(&*r)) return std::move(*v);
  return Error{EPROTO, std::string("unexpected reply to ") + cmdName(cmdOf(body))};
}

Status ControlClient::expectAck(const RequestBody& body) {
  auto r = expect<Ack>(body);
  if (!r) return r.error();
  return {};
}

Status ControlClient::portAdd(const PortAddRequest& req) { return expectAck(req); }
Status ControlClient::portSet(const PortSetRequest& req) { return expectAck(req); }
Status ControlClient::portDel(const std::string& name) { return expectAck(PortDelRequest{name}); }

Result<PortInfo> ControlClient::portGet(const std::string& name) {
  if (name.empty()) return Error{EINVAL, "portGet needs a port name (portList() lists all)"};
  auto r = expect<PortList>(PortGetRequest{name});
  if (!r) return r.error();
  if (r->ports.size() != 1) return Error{EPROTO, "PORT_GET answered with no port"};
  return std::move(r->ports[0]);
}

Result<std::vector<PortInfo>> ControlClient::portList() {
  auto r = expect<PortList>(PortGetRequest{});
  if (!r) return r.error();
  return std::move(r->ports);
}

Result<StatsReply> ControlClient::stats(const std::string& name) {
  return expect<StatsReply>(StatsGetRequest{name});
}

Result<std::vector<FdbEntryMsg>> ControlClient::fdbGet() {
  auto r = expect<FdbList>(FdbGetRequest{});
  if (!r) return r.error();
  return std::move(r->entries);
}

Status ControlClient::fdbAdd(const Mac& mac, const std::string& port, bool is_static, uint16_t vid) {
  return expectAck(FdbAddRequest{mac, port, is_static, vid});
}

Status ControlClient::fdbDel(const Mac& mac, uint16_t vid) { return expectAck(FdbDelRequest{mac, vid}); }

Result<InfoMsg> ControlClient::info() { return expect<InfoMsg>(InfoGetRequest{}); }
Result<CaptureMsg> ControlClient::captureStart(const CaptureStartRequest& req) { return expect<CaptureMsg>(req); }
Result<CaptureMsg> ControlClient::captureRead(uint32_t id) { return expect<CaptureMsg>(CaptureReadRequest{id}); }
Result<CaptureMsg> ControlClient::captureStop(uint32_t id) { return expect<CaptureMsg>(CaptureStopRequest{id}); }

}  // namespace vdev::proto
