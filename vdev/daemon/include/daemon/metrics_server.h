// vdevd's Prometheus scrape endpoint (--metrics-listen ADDR:PORT): GET
// /metrics answers the text exposition format that `vdevctl stats
// --prometheus` prints (proto/metrics.h), HEAD the same without the body;
// any other path is 404, any other method 405.
//
// The HTTP side is Debian's libmicrohttpd in its "external epoll" mode: no
// thread of its own. The caller polls fd() for POLLIN with at most
// timeoutMs() and then calls run(), which accepts, reads, answers and times
// out connections without blocking, and calls `render` for each GET on the
// caller's thread. vdevd does that on its control thread, the one that
// answers control requests (render takes the snapshot the way STATS_GET
// does), never on the datapath thread. Connections are bounded: at most
// Config::max_connections at once (further ones are accepted and closed at
// once), and one idle for Config::timeout_s seconds is closed. Answers
// are paced: at most Config::max_per_second scrapes a second (a token
// bucket of a second's worth); a scrape beyond that waits, its connection
// suspended, first come first served, until its turn. A client scraping in
// a tight loop then sleeps in its read instead of taking CPU from the
// host's forwarding, and the control thread does a bounded amount of work
// for any number of scrapers.
//
// Thread safety: one thread (the one that calls run()).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/fd.h"
#include "base/result.h"

struct MHD_Daemon;
struct MHD_Connection;

namespace vdev::daemon {

// Where --metrics-listen says to listen.
struct ListenAddress {
  sockaddr_storage addr{};
  socklen_t len = 0;
};

// "ADDR:PORT", "[ADDR6]:PORT", ":PORT" or "PORT": ADDR is a numeric IPv4
// address, ADDR6 a numeric IPv6 one in brackets; no address means the
// loopback 127.0.0.1. PORT 0..65535 (0: the kernel picks a free one).
// EINVAL, saying what is wrong, for anything else (a host name, an IPv6
// address without brackets, a port out of range).
Result<ListenAddress> parseListenAddress(std::string_view text);

// "127.0.0.1:9469", "[::1]:9469".
std::string formatAddress(const sockaddr* addr, socklen_t len);

// A TCP socket bound to `a` and listening (non-blocking, close-on-exec,
// SO_REUSEADDR). The error names the address.
Result<FileDesc> listenTcp(const ListenAddress& a, int backlog = 64);

// One network of --metrics-allow: an address and a prefix length.
struct AllowedNet {
  sa_family_t family = AF_INET;
  uint8_t addr[16] = {};  // network byte order; 4 bytes used for AF_INET
  unsigned prefix = 0;    // 0..32 (AF_INET), 0..128 (AF_INET6)
  bool contains(const sockaddr* a, socklen_t len) const;
};
// "CIDR[,CIDR...]": each a numeric IPv4 or IPv6 address with an optional
// /PREFIX (none: the address alone). EINVAL, naming the bad item, for
// anything else (host names, a prefix too long, an empty item). An IPv4
// network also matches IPv4-mapped IPv6 clients (::ffff:a.b.c.d) of a
// socket bound to an IPv6 address.
Result<std::vector<AllowedNet>> parseAllowList(std::string_view text);

class MetricsServer {
 public:
  struct Config {
    unsigned max_connections = 16;
    unsigned timeout_s = 10;  // an idle connection is closed after this
    // Connections from one client address at the same time: a scraper on
    // another host cannot take every place from Prometheus (0: no limit).
    // Clients on this host share one address (the loopback).
    unsigned max_per_address = 8;
    // The clients that may connect (--metrics-allow); empty: any that can
    // reach the address. Others are closed at accept, before a byte is read.
    std::vector<AllowedNet> allow;
    // Scrapes answered a second, at most (0: no limit). Prometheus asks
    // once every 15 s by default, so 20 serves hundreds of servers; more
    // requests wait their turn rather than being refused.
    unsigned max_per_second = 20;
    // libmicrohttpd's own messages (a refused connection, a failed accept).
    std::function<void(std::string_view)> log;
  };
  // The body of GET /metrics, shared: a response holds a reference while
  // it is sent instead of a copy (every scrape of a period gets the same
  // text, half a megabyte with 200 ports).
  using Render = std::function<std::shared_ptr<const std::string>()>;

  // Serves on `listener` (listenTcp()'s; closed with the server).
  static Result<std::unique_ptr<MetricsServer>> start(FileDesc listener, const Config& cfg, Render render);
  // Closes every connection and the listening socket.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The address it listens on, the port the kernel picked included.
  const std::string& address() const { return address_; }
  // Poll this for POLLIN.
  int fd() const { return epoll_fd_; }
  // The longest the caller may poll before calling run() (-1: no limit).
  int timeoutMs() const;
  // Does whatever is ready; never blocks (but in render).
  void run();
  // Scrapes that waited for their turn (max_per_second), since the start.
  uint64_t delayed() const { return delayed_; }

 private:
  MetricsServer() = default;
  friend struct MetricsCallbacks;  // libmicrohttpd's callbacks (metrics_server.cpp)

  // The pacing's token bucket and the scrapes waiting for a token, oldest
  // first (suspended connections; at most max_connections of them).
  void refill();
  bool takeTurn(MHD_Connection* c);
  double tokens_ = 0;
  uint64_t tokens_ns_ = 0;  // CLOCK_MONOTONIC of the last refill
  std::deque<MHD_Connection*> waiting_;
  uint64_t delayed_ = 0;

  MHD_Daemon* mhd_ = nullptr;
  int epoll_fd_ = -1;
  std::string address_;
  Config cfg_;
  Render render_;
};

}  // namespace vdev::daemon
