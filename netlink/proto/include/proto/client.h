// ControlClient: the client library of the vdev control protocol. vdevctl
// and the CNI plugin reach vdevd only through it.
//
// One request at a time on one connection: each call sends a request with
// the next sequence number and waits (bounded by the timeout) for its whole
// reply, multipart dumps included, checking that every message answers that
// request. The daemon's error replies come back as Error{errno, message},
// the message being the daemon's (e.g. "attribute QUEUES: 0 out of range
// 1..64"); Error::message() appends strerror. Local failures: the errno of
// the syscall, ETIMEDOUT (no reply in time), ECONNRESET (the daemon closed the
// connection), EPROTO (a reply that does not answer the request). After a
// timeout or protocol error the connection is unusable (ENOTCONN): connect
// again. Requests are validated before sending with the daemon's own rules.
//
// Thread safety: none; use one client per thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/fd.h"
#include "proto/codec.h"

namespace vdev::proto {

class ControlClient {
 public:
  static constexpr int kDefaultTimeoutMs = 30000;  // PORT_ADD may create devices, attach XDP

  // Connects to vdevd's control socket. timeout_ms (<= 0: the default)
  // bounds each call's wait for its whole reply. Errors: those of connect(2)
  // (ENOENT: vdevd is not running; EACCES: not allowed to open the socket).
  static Result<ControlClient> connect(const std::string& path = kDefaultSocketPath,
                                       int timeout_ms = kDefaultTimeoutMs);

  ControlClient(ControlClient&&) noexcept = default;
  ControlClient& operator=(ControlClient&&) noexcept = default;

  Status portAdd(const PortAddRequest& req);
  Status portSet(const PortSetRequest& req);
  Status portDel(const std::string& name);
  Result<PortInfo> portGet(const std::string& name);
  Result<std::vector<PortInfo>> portList();  // dump
  // One port's counters (plus the pool), or with an empty name every port's.
  Result<StatsReply> stats(const std::string& name = {});
  Result<std::vector<FdbEntryMsg>> fdbGet();  // dump
  Status fdbAdd(const Mac& mac, const std::string& port, bool is_static = true, uint16_t vid = kVidDefault);
  Status fdbDel(const Mac& mac, uint16_t vid = kVidDefault);
  Result<InfoMsg> info();
  // A capture of this connection's (protocol.h, CAPTURE_*): it ends when
  // this client is closed.
  Result<CaptureMsg> captureStart(const CaptureStartRequest& req);
  Result<CaptureMsg> captureRead(uint32_t id);
  Result<CaptureMsg> captureStop(uint32_t id);

  // Any request. The daemon's ErrorReply is a value here, not an Error.
  Result<Reply> call(const RequestBody& body);

  int fd() const { return fd_.get(); }
  uint32_t lastSeq() const { return seq_; }

 private:
  ControlClient(vdev::FileDesc fd, int timeout_ms);
  template <typename T>
  Result<T> expect(const RequestBody& body);
  Status expectAck(const RequestBody& body);
  Result<Reply> brokenWith(Error e);
  Result<Reply> pendingError(Error fallback);

  vdev::FileDesc fd_;
  int timeout_ms_;
  uint32_t seq_ = 0;
  bool broken_ = false;
  std::vector<uint8_t> buf_;
};

}  // namespace vdev::proto
