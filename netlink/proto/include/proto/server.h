// ControlServer: vdevd's end of the control socket.
//
// Listens on an AF_UNIX SOCK_SEQPACKET socket, reads one request per
// datagram, authorises it by the peer's credentials, decodes it, hands it to
// the daemon's ControlHandler and sends the reply. Nothing blocks: the
// daemon's control thread polls fd() together with its other fds and calls
// processEvents() when it is readable.
//
// Protection against clients: credentials are checked when a connection is
// accepted (not root and not in the group: EPERM, closed). At most
// max_clients connections in all, of which root_reserve only for root; each
// other uid at most max_clients_per_uid (more are answered EBUSY and
// closed). A connection that sends no request for idle_timeout is closed.
// Sends are non-blocking into a per-client queue; while a client has unsent
// output its requests are not read (one reply in flight per client), so a
// client that never reads costs at most one reply's memory and never stalls
// the others; one whose queued reply makes no progress for stall_timeout is
// dropped. A reply of any size (a dump of every port or MAC) is sent whole.
// Garbage gets an error reply; a datagram without a sane netlink header also
// closes the connection.
//
// Thread safety: one thread (the daemon's control thread) calls everything
// but numClients(), which any thread may call.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/fd.h"
#include "proto/codec.h"

namespace vdev::proto {

// Credentials of a connected peer, taken when it connected (SO_PEERCRED,
// SO_PEERGROUPS).
struct PeerCred {
  pid_t pid = 0;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  std::vector<gid_t> groups;  // supplementary groups
  uint64_t conn = 0;          // the connection (ControlServer: unique while it runs; 0: none)
};

// The peer of a connected AF_UNIX socket. Supplementary groups from
// SO_PEERGROUPS (Linux 4.13+), else from /proc/PID/status, else from the
// group database (getgrouplist). Errors: those of getsockopt.
Result<PeerCred> peerCred(int fd);
// The "Groups:" line of a /proc/PID/status text.
std::vector<gid_t> parseProcStatusGroups(std::string_view status);
// Root, or a member of `group` (primary or supplementary). No group: root only.
bool isAuthorized(const PeerCred& peer, std::optional<gid_t> group);
// gid of a group name. Errors: ENOENT (no such group), or getgrnam_r's.
Result<gid_t> groupByName(const std::string& name);

// The daemon's side. handle() runs on the thread that calls processEvents(),
// once per authorised, well-formed, validated request; it must answer every
// request with a reply of the kind its command calls for (see Reply in
// codec.h), or an ErrorReply{errno, message}. A reply of the wrong kind is
// sent as EIO. It may take its time (it blocks only the control thread).
class ControlHandler {
 public:
  virtual ~ControlHandler() = default;
  virtual Reply handle(const Request& req, const PeerCred& peer) = 0;
  // The connection PeerCred::conn closed (or was dropped): what it held
  // (its captures) goes with it. Same thread as handle().
  virtual void disconnected(uint64_t /*conn*/) {}
};

struct ServerConfig {
  std::string path = kDefaultSocketPath;
  // Group of the socket file and the group whose members may send requests
  // (besides root). nullopt: root only, socket group unchanged.
  std::optional<gid_t> group;
  mode_t mode = 0660;      // socket file mode
  mode_t dir_mode = 0755;  // for directories created on the way to `path`
  size_t max_clients = 64;          // connections in all
  size_t root_reserve = 16;         // of those, kept for root (uid 0)
  size_t max_clients_per_uid = 8;   // connections of one other uid
  std::chrono::milliseconds idle_timeout{120000};  // no request for this long: closed
  std::chrono::milliseconds stall_timeout{10000};  // a queued reply not read for this long: dropped
  unsigned max_requests_per_event = 16;  // fairness: per client per processEvents()
  // Client events worth a log line (rejected, dropped, malformed). Optional.
  std::function<void(std::string_view)> log;
};

class ControlServer {
 public:
  // Creates the directory of config.path if missing (dir_mode) and checks
  // it: a real directory (not a symlink), owned by this process's euid, not
  // writable by group or others -- else nobody else could have replaced
  // the socket. Removes a stale socket file (one nobody listens on). Binds
  // in a private directory made inside it, sets group and mode there (no
  // path anyone else can redirect), renames the socket into place, listens.
  // Errors: EADDRINUSE (another daemon listens on path), EEXIST (path
  // exists and is not a socket), EPERM (an unsafe directory), ENOTDIR,
  // ENAMETOOLONG, and those of the syscalls. `handler` must outlive the
  // server.
  static Result<std::unique_ptr<ControlServer>> create(const ServerConfig& config,
                                                       ControlHandler& handler);
  // Closes every connection and removes the socket file if it is still ours.
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // An epoll fd: readable when processEvents() has work. Poll it for POLLIN.
  int fd() const { return epoll_.get(); }
  // Accepts, reads, answers and flushes whatever is ready; never blocks.
  void processEvents();
  // Connected clients (any thread).
  size_t numClients() const { return num_clients_.load(std::memory_order_relaxed); }
  const std::string& path() const { return cfg_.path; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Client {
    uint64_t id = 0;
    vdev::FileDesc fd;
    PeerCred cred;
    std::deque<std::vector<uint8_t>> out;
    size_t out_bytes = 0;
    uint32_t events = 0;  // current epoll interest
    Clock::time_point last_progress;  // connected, last request read, last datagram sent
  };

  ControlServer(const ServerConfig& config, ControlHandler& handler);
  void acceptAll();
  void rearmListener();
  void onClientEvent(uint64_t id, uint32_t events);
  // These return false when the client was dropped (and `c` is gone).
  bool readRequests(Client& c);
  bool handleDatagram(Client& c, std::span<const uint8_t> dg, bool& keep);
  bool enqueue(Client& c, std::vector<uint8_t> dg);
  bool flush(Client& c);
  void updateInterest(Client& c);
  void drop(uint64_t id, std::string_view why);
  void log(std::string_view msg) const;
  // Why a new connection from `cred` is refused ("" if it is not).
  std::string refusal(const PeerCred& cred) const;
  void sweep();  // idle and stalled clients

  ServerConfig cfg_;
  ControlHandler& handler_;
  vdev::FileDesc listen_;
  vdev::FileDesc epoll_;
  vdev::FileDesc spare_;        // /dev/null, given up to refuse a connection when out of fds
  vdev::FileDesc rearm_timer_;  // timerfd: listens again 1 s after fd exhaustion parked it
  vdev::FileDesc sweep_timer_;  // timerfd, periodic: idle and stalled clients
  bool listening_ = true;       // listener in the epoll set
  dev_t sock_dev_ = 0;
  ino_t sock_ino_ = 0;
  uint64_t next_id_ = 1;  // 0 is the listening socket
  std::map<uint64_t, Client> clients_;
  std::map<uid_t, size_t> per_uid_;  // connections by uid
  std::atomic<size_t> num_clients_{0};
  std::vector<uint8_t> rx_;  // receive buffer, kMaxMessageSize
};

}  // namespace vdev::proto
