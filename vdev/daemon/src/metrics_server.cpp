#include "daemon/metrics_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "base/parse.h"
#include "proto/metrics.h"

namespace vdev::daemon {

namespace {

uint64_t monotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace

Result<ListenAddress> parseListenAddress(std::string_view text) {
  const auto bad = [&](const char* why) { return Error{EINVAL, "'" + std::string(text) + "': " + why}; };
  std::string_view host, port;
  bool v6 = false;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return bad("no ']' after the IPv6 address");
    if (close + 1 >= text.size() || text[close + 1] != ':') return bad("no :PORT after [ADDRESS]");
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    v6 = true;
  } else if (const size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    if (host.find(':') != std::string_view::npos) return bad("an IPv6 address goes in brackets: [ADDRESS]:PORT");
    port = text.substr(colon + 1);
  } else {
    port = text;
  }
  const auto p = parseU32(port, 0, 65535);
  if (!p) return bad("the port must be a number 0..65535");
  ListenAddress a;
  const std::string h(host);
  if (v6) {
    sockaddr_in6 s{};
    s.sin6_family = AF_INET6;
    s.sin6_port = htons(uint16_t(*p));
    if (::inet_pton(AF_INET6, h.c_str(), &s.sin6_addr) != 1) return bad("not a numeric IPv6 address");
    std::memcpy(&a.addr, &s, sizeof s);
    a.len = sizeof s;
  } else {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    s.sin_port = htons(uint16_t(*p));
    if (h.empty())
      s.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (::inet_pton(AF_INET, h.c_str(), &s.sin_addr) != 1)
      return bad("not a numeric IPv4 address (host names are not looked up)");
    std::memcpy(&a.addr, &s, sizeof s);
    a.len = sizeof s;
  }
  return a;
}

Result<std::vector<AllowedNet>> parseAllowList(std::string_view text) {
  std::vector<AllowedNet> out;
  for (;;) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const auto bad = [&](const char* why) { return Error{EINVAL, "'" + std::string(item) + "': " + why}; };
    if (item.empty()) return Error{EINVAL, "an empty item (CIDR[,CIDR...])"};
    const size_t slash = item.find('/');
    const std::string host(item.substr(0, slash));
    AllowedNet n;
    if (::inet_pton(AF_INET, host.c_str(), n.addr) == 1)
      n.family = AF_INET;
    else if (::inet_pton(AF_INET6, host.c_str(), n.addr) == 1)
      n.family = AF_INET6;
    else
      return bad("not a numeric IPv4 or IPv6 address (host names are not looked up)");
    const unsigned bits = n.family == AF_INET ? 32 : 128;
    n.prefix = bits;
    if (slash != std::string_view::npos) {
      const auto p = parseU32(item.substr(slash + 1), 0, bits);
      if (!p) return bad(n.family == AF_INET ? "the prefix must be 0..32" : "the prefix must be 0..128");
      n.prefix = *p;
    }
    out.push_back(n);
    if (comma == std::string_view::npos) return out;
    text.remove_prefix(comma + 1);
  }
}

bool AllowedNet::contains(const sockaddr* a, socklen_t len) const {
  const uint8_t* bytes = nullptr;
  if (a->sa_family == AF_INET && len >= socklen_t(sizeof(sockaddr_in))) {
    if (family != AF_INET) return false;
    bytes = reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in*>(a)->sin_addr);
  } else if (a->sa_family == AF_INET6 && len >= socklen_t(sizeof(sockaddr_in6))) {
    const in6_addr& a6 = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr;
    if (family == AF_INET6)
      bytes = a6.s6_addr;
    else if (IN6_IS_ADDR_V4MAPPED(&a6))
      bytes = a6.s6_addr + 12;  // an IPv4 client of a dual-stack socket
    else
      return false;
  } else {
    return false;
  }
  const unsigned whole = prefix / 8, rest = prefix % 8;
  if (std::memcmp(bytes, addr, whole) != 0) return false;
  if (!rest) return true;
  const uint8_t mask = uint8_t(0xff << (8 - rest));
  return (bytes[whole] & mask) == (addr[whole] & mask);
}

std::string formatAddress(const sockaddr* addr, socklen_t len) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (addr->sa_family == AF_INET6 && len >= socklen_t(sizeof(sockaddr_in6))) {
    const auto* s = reinterpret_cast<const sockaddr_in6*>(addr);
    ::inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(s->sin6_port));
  }
  if (addr->sa_family == AF_INET && len >= socklen_t(sizeof(sockaddr_in))) {
    const auto* s = reinterpret_cast<const sockaddr_in*>(addr);
    ::inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(s->sin_port));
  }
  return "?";
}

Result<FileDesc> listenTcp(const ListenAddress& a, int backlog) {
  const auto* sa = reinterpret_cast<const sockaddr*>(&a.addr);
  const std::string where = formatAddress(sa, a.len);
  FileDesc fd(::socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return errnoError("socket for " + where);
  const int on = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0)
    return errnoError("SO_REUSEADDR on " + where);
  if (::bind(fd.get(), sa, a.len) != 0) return errnoError("cannot bind " + where);
  if (::listen(fd.get(), backlog) != 0) return errnoError("cannot listen on " + where);
  return fd;
}

// libmicrohttpd calls these with the server as their closure.
struct MetricsCallbacks {
  static MHD_Result respond(MHD_Connection* c, unsigned status, std::string_view body,
                            const char* content_type, const char* allow = nullptr) {
    MHD_Response* r =
        MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;  // out of memory: the connection is closed
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (allow) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    const MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
  }

  static MHD_Result request(void* cls, MHD_Connection* c, const char* url, const char* method,
                            const char* /*version*/, const char* /*upload*/, size_t* upload_size,
                            void** con_cls) {
    auto* self = static_cast<MetricsServer*>(cls);
    constexpr const char kText[] = "text/plain; charset=utf-8";
    // Another method is refused at the first call, with the headers: its
    // body is never read (libmicrohttpd closes the connection after).
    if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 && std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
      return respond(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n", kText, "GET, HEAD");
    // GET and HEAD are answered at the second call, once the whole request
    // is in: a reply queued at the first would make libmicrohttpd close the
    // connection, which a scraper keeps open from one scrape to the next.
    static int seen, waited;
    if (*con_cls == nullptr) {
      *con_cls = &seen;
      return MHD_YES;
    }
    if (*upload_size != 0) return MHD_NO;  // a GET with a body: dropped
    if (std::strcmp(url, "/metrics") != 0) return respond(c, MHD_HTTP_NOT_FOUND, "vdevd serves /metrics\n", kText);
    // Its turn: now, or once run() resumes it with a token taken for it.
    if (*con_cls != &waited && !self->takeTurn(c)) {
      *con_cls = &waited;
      return MHD_YES;
    }
    // Sent from the shared snapshot, no copy (libmicrohttpd only reads it);
    // the response's reference is dropped when libmicrohttpd is done.
    using Body = std::shared_ptr<const std::string>;
    auto* body = new Body(self->render_());
    MHD_Response* r = MHD_create_response_from_buffer_with_free_callback_cls(
        (*body)->size(), const_cast<char*>((*body)->data()), [](void* b) { delete static_cast<Body*>(b); }, body);
    if (!r) {
      delete body;
      return MHD_NO;  // out of memory: the connection is closed
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, proto::kPrometheusContentType);
    const MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
  }

  // libmicrohttpd's accept policy: --metrics-allow, checked before the
  // connection takes a place or a byte is read.
  static MHD_Result accept(void* cls, const sockaddr* addr, socklen_t len) {
    const auto* self = static_cast<const MetricsServer*>(cls);
    if (self->cfg_.allow.empty()) return MHD_YES;
    for (const AllowedNet& n : self->cfg_.allow)
      if (n.contains(addr, len)) return MHD_YES;
    return MHD_NO;
  }

  static void log(void* cls, const char* fmt, va_list ap) {
    auto* self = static_cast<MetricsServer*>(cls);
    if (!self->cfg_.log) return;
    char buf[512];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    std::string_view m(buf);
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.remove_suffix(1);
    self->cfg_.log(m);
  }
};

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(FileDesc listener, const Config& cfg, Render render) {
  std::unique_ptr<MetricsServer> s(new MetricsServer);
  s->cfg_ = cfg;
  s->render_ = std::move(render);
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    return errnoError("getsockname of the metrics socket");
  s->address_ = formatAddress(reinterpret_cast<const sockaddr*>(&ss), len);
  // From here the socket is libmicrohttpd's: MHD_stop_daemon() closes it.
  const int fd = listener.release();
  s->tokens_ = cfg.max_per_second;
  s->tokens_ns_ = monotonicNs();
  s->mhd_ = MHD_start_daemon(
      MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME, 0, &MetricsCallbacks::accept, s.get(), &MetricsCallbacks::request, s.get(),
      MHD_OPTION_EXTERNAL_LOGGER, &MetricsCallbacks::log, s.get(), MHD_OPTION_LISTEN_SOCKET, MHD_socket(fd),
      MHD_OPTION_CONNECTION_LIMIT, cfg.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg.max_per_address,
      MHD_OPTION_CONNECTION_TIMEOUT, cfg.timeout_s, MHD_OPTION_END);
  if (!s->mhd_) {
    if (::fcntl(fd, F_GETFD) >= 0) ::close(fd);  // not taken
    return Error{EIO, "cannot start the HTTP server on " + s->address_};
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(s->mhd_, MHD_DAEMON_INFO_EPOLL_FD);
  if (!info) return Error{EIO, "libmicrohttpd has no epoll descriptor for " + s->address_};
  s->epoll_fd_ = info->epoll_fd;
  return s;
}

MetricsServer::~MetricsServer() {
  if (!mhd_) return;
  // Suspended connections are libmicrohttpd's to close once resumed.
  for (MHD_Connection* c : waiting_) MHD_resume_connection(c);
  MHD_stop_daemon(mhd_);
}

void MetricsServer::refill() {
  const uint64_t now = monotonicNs();
  const double cap = cfg_.max_per_second;
  tokens_ = std::min(cap, tokens_ + double(now - tokens_ns_) * cap / 1e9);
  tokens_ns_ = now;
}

bool MetricsServer::takeTurn(MHD_Connection* c) {
  if (cfg_.max_per_second == 0) return true;
  refill();
  // First come, first served: none may pass a scrape that waits.
  if (waiting_.empty() && tokens_ >= 1) {
    tokens_ -= 1;
    return true;
  }
  MHD_suspend_connection(c);
  waiting_.push_back(c);
  delayed_++;
  return false;
}

int MetricsServer::timeoutMs() const {
  MHD_UNSIGNED_LONG_LONG t = 0;
  int ms = MHD_get_timeout(mhd_, &t) == MHD_YES ? (t > uint64_t(INT_MAX) ? INT_MAX : int(t)) : -1;
  if (!waiting_.empty()) {
    // The next token's time (rounded up, at least 1 ms).
    const double need = tokens_ >= 1 ? 0 : (1 - tokens_) * 1000.0 / cfg_.max_per_second;
    const uint64_t since_ms = (monotonicNs() - tokens_ns_) / 1000000;
    const int turn = std::max(1, int(std::ceil(need)) - int(std::min<uint64_t>(since_ms, INT_MAX)));
    ms = ms < 0 ? turn : std::min(ms, turn);
  }
  return ms;
}

void MetricsServer::run() {
  if (!waiting_.empty()) {
    refill();
    // Each resumed scrape has its token taken here; libmicrohttpd answers
    // it in the MHD_run below.
    while (!waiting_.empty() && tokens_ >= 1) {
      tokens_ -= 1;
      MHD_resume_connection(waiting_.front());
      waiting_.pop_front();
    }
  }
  (void)MHD_run(mhd_);
}

}  // namespace vdev::daemon
