// vdevd's scrape endpoint (daemon/metrics_server.h) on the loopback, with
// a fixed body instead of vdevd's metrics: --metrics-listen's address forms,
// GET /metrics and its Content-Type, HEAD, 404 and 405, the connection
// limit, the idle timeout, and every descriptor closed with the server.
// Unprivileged; the server runs in a thread of the test that polls and
// calls run(), as vdevd's control thread does.
#include "daemon/metrics_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using vdev::daemon::ListenAddress;
using vdev::daemon::MetricsServer;
using vdev::daemon::parseListenAddress;

std::string text(const ListenAddress& a) {
  return vdev::daemon::formatAddress(reinterpret_cast<const sockaddr*>(&a.addr), a.len);
}

TEST(ListenAddress, Forms) {
  const std::pair<const char*, const char*> ok[] = {
      {"9469", "127.0.0.1:9469"},       {":9469", "127.0.0.1:9469"},  {"127.0.0.1:9469", "127.0.0.1:9469"},
      {"0.0.0.0:80", "0.0.0.0:80"},     {"198.18.0.1:0", "198.18.0.1:0"}, {"[::1]:9469", "[::1]:9469"},
      {"[::]:65535", "[::]:65535"},     {"0", "127.0.0.1:0"},
  };
  for (const auto& [in, want] : ok) {
    auto a = parseListenAddress(in);
    ASSERT_TRUE(a) << in << ": " << a.error().message();
    EXPECT_EQ(text(*a), want) << in;
  }
}

TEST(ListenAddress, RefusesWhatIsNotAnAddress) {
  const std::pair<const char*, const char*> bad[] = {
      {"", "port"},
      {"localhost:9469", "host names"},
      {"::1:9469", "brackets"},
      {"[::1]", ":PORT"},
      {"[::1:9469", "']'"},
      {"[127.0.0.1]:9469", "IPv6"},
      {"127.0.0.1:", "port"},
      {"127.0.0.1:65536", "0..65535"},
      {"127.0.0.1:-1", "port"},
      {"127.0.0.1:0x50", "port"},
      {"1.2.3:80", "IPv4"},
  };
  for (const auto& [in, why] : bad) {
    auto a = parseListenAddress(in);
    ASSERT_FALSE(a) << in << " was taken as " << text(*a);
    EXPECT_EQ(a.error().err, EINVAL) << in;
    EXPECT_NE(a.error().what.find(std::string("'") + in + "'"), std::string::npos) << a.error().what;
    EXPECT_NE(a.error().what.find(why), std::string::npos) << in << ": " << a.error().what;
  }
}

size_t openFds() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') n++;
    ::closedir(d);
  }
  return n;
}

// A TCP connection to the server, blocking, with a receive timeout.
class Conn {
 public:
  explicit Conn(const std::string& address) {
    const size_t colon = address.rfind(':');
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(std::stoul(address.substr(colon + 1))));
    ::inet_pton(AF_INET, address.substr(0, colon).c_str(), &a.sin_addr);
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    setTimeout(10s);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~Conn() { close(); }
  bool connected() const { return fd_ >= 0; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool send(const std::string& s) { return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size()); }
  // How long a read waits for data (10 s unless set).
  void setTimeout(std::chrono::milliseconds t) {
    timeval tv{time_t(t.count() / 1000), suseconds_t(t.count() % 1000 * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  // Everything until the server closes (or an error, or the timeout).
  std::string readAll() {
    std::string out;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out;
      out.append(buf, size_t(n));
    }
  }
  // One reply whose body has a Content-Length, on a connection kept open.
  std::string readReply() {
    std::string out;
    char buf[4096];
    for (;;) {
      const size_t end = out.find("\r\n\r\n");
      if (end != std::string::npos) {
        const size_t cl = out.find("Content-Length: ");
        if (cl != std::string::npos && cl < end &&
            out.size() >= end + 4 + std::stoul(out.substr(cl + 16, out.find("\r\n", cl) - cl - 16)))
          return out;
      }
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out;
      out.append(buf, size_t(n));
    }
  }

 private:
  int fd_ = -1;
};

struct Reply {
  int status = 0;
  std::string head;  // the status line and headers
  std::string body;
};

std::optional<Reply> parseReply(const std::string& raw) {
  const size_t end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || end == std::string::npos) return std::nullopt;
  Reply r;
  r.status = std::stoi(raw.substr(9, 3));
  r.head = raw.substr(0, end);
  r.body = raw.substr(end + 4);
  return r;
}

std::string header(const Reply& r, const std::string& name) {
  const std::string key = "\r\n" + name + ": ";
  size_t i = r.head.find(key);
  if (i == std::string::npos) return "(none)";
  i += key.size();
  return r.head.substr(i, r.head.find("\r\n", i) - i);
}

class MetricsServerTest : public ::testing::Test {
 protected:
  void start(MetricsServer::Config cfg = {}) {
    fds_before_ = openFds();
    auto a = parseListenAddress("127.0.0.1:0");
    ASSERT_TRUE(a);
    auto l = vdev::daemon::listenTcp(*a);
    ASSERT_TRUE(l) << l.error().message();
    cfg.log = [](std::string_view m) { std::fprintf(stderr, "metrics: %.*s\n", int(m.size()), m.data()); };
    auto s = MetricsServer::start(std::move(l.value()), cfg, [this] {
      renders_++;
      return std::make_shared<const std::string>("# TYPE vdev_test gauge\nvdev_test 1\n");
    });
    ASSERT_TRUE(s) << s.error().message();
    server_ = std::move(s.value());
    address_ = server_->address();
    ASSERT_EQ(address_.rfind("127.0.0.1:", 0), 0u) << address_;
    ASSERT_NE(address_, "127.0.0.1:0");
    thread_ = std::thread([this] {
      while (!stop_) {
        int t = server_->timeoutMs();
        if (t < 0 || t > 20) t = 20;  // to see stop_
        pollfd p{server_->fd(), POLLIN, 0};
        ::poll(&p, 1, t);
        server_->run();
      }
    });
  }
  void stopServer() {
    if (!server_) return;
    stop_ = true;
    thread_.join();
    server_.reset();
  }
  void TearDown() override {
    stopServer();
    if (fds_before_) {
      EXPECT_EQ(openFds(), fds_before_) << "descriptors left open by the server";
    }
  }

  std::optional<Reply> request(const std::string& req) {
    Conn c(address_);
    if (!c.connected() || !c.send(req)) return std::nullopt;
    return parseReply(c.readAll());
  }
  static std::string get(const std::string& path, const std::string& method = "GET") {
    return method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  }

  size_t fds_before_ = 0;
  std::unique_ptr<MetricsServer> server_;
  std::string address_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> renders_{0};
};

TEST_F(MetricsServerTest, ServesMetricsAndOnlyMetrics) {
  start();
  auto r = request(get("/metrics"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->head;
  EXPECT_EQ(header(*r, "Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r->body, "# TYPE vdev_test gauge\nvdev_test 1\n");
  EXPECT_EQ(renders_, 1);

  r = request(get("/metrics", "HEAD"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->head;
  EXPECT_EQ(r->body, "");

  for (const char* path : {"/", "/metrics/", "/metricsx", "/stats"}) {
    r = request(get(path));
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path << "\n" << r->head;
  }
  // A query string is no part of the path.
  r = request(get("/metrics?name[]=vdev_test"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);

  for (const char* m : {"POST", "PUT", "DELETE", "OPTIONS"}) {
    r = request(std::string(m) + " /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc");
    ASSERT_TRUE(r) << m;
    EXPECT_EQ(r->status, 405) << m << "\n" << r->head;
    EXPECT_EQ(header(*r, "Allow"), "GET, HEAD") << m;
  }
  // Only what answered 200 rendered the metrics: the GET, the HEAD (its body
  // left out) and the GET with a query string.
  EXPECT_EQ(renders_, 3);
}

// Prometheus keeps its connection open from one scrape to the next.
TEST_F(MetricsServerTest, KeepAliveServesSeveralScrapes) {
  start();
  Conn c(address_);
  ASSERT_TRUE(c.connected());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")) << i;
    auto r = parseReply(c.readReply());
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->status, 200) << i;
    EXPECT_EQ(r->body, "# TYPE vdev_test gauge\nvdev_test 1\n") << i;
  }
  EXPECT_EQ(renders_, 3);
}

// Scrapes beyond max_per_second wait their turn, suspended, and are all
// answered; a client that gives up while it waits costs nothing.
TEST_F(MetricsServerTest, ScrapesArePacedNotRefused) {
  MetricsServer::Config cfg;
  cfg.max_per_second = 5;
  start(cfg);
  {
    Conn gone(address_);  // its scrape waits, then its client is gone
    ASSERT_TRUE(gone.connected());
    for (int i = 0; i < 5; ++i) {  // the bucket's 5 tokens
      auto r = request(get("/metrics"));
      ASSERT_TRUE(r) << i;
      EXPECT_EQ(r->status, 200) << i;
    }
    ASSERT_TRUE(gone.send(get("/metrics")));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (server_->delayed() < 1 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(server_->delayed(), 1u) << "the sixth scrape within a second did not wait";
  }
  const auto t0 = std::chrono::steady_clock::now();
  // 7: with the given-up one still held, the per-address limit's 8.
  std::vector<std::unique_ptr<Conn>> conns;
  for (int i = 0; i < 7; ++i) {
    conns.push_back(std::make_unique<Conn>(address_));
    ASSERT_TRUE(conns.back()->connected()) << i;
    ASSERT_TRUE(conns.back()->send(get("/metrics"))) << i;
  }
  for (int i = 0; i < 7; ++i) {
    auto r = parseReply(conns[size_t(i)]->readAll());
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->status, 200) << i;
    EXPECT_EQ(r->body, "# TYPE vdev_test gauge\nvdev_test 1\n") << i;
  }
  // 8 scrapes (the one given up included) at 5 a second from an empty
  // bucket: the last is answered no sooner than 8/5 s after the first waited.
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1300));
  EXPECT_EQ(server_->delayed(), 8u);
  EXPECT_GE(renders_, 12) << "5 at once and 7 in turn";
  EXPECT_LE(renders_, 13) << "and at most the given-up one, answered into a closed socket";
}

TEST_F(MetricsServerTest, ConnectionsAreBounded) {
  MetricsServer::Config cfg;
  cfg.max_connections = 2;
  cfg.timeout_s = 30;
  start(cfg);
  // Two connections in the middle of a request hold both places...
  Conn a(address_), b(address_);
  ASSERT_TRUE(a.connected() && b.connected());
  ASSERT_TRUE(a.send("GET /metrics HTTP/1.1\r\n") && b.send("GET /metrics HTTP/1.1\r\n"));
  // ...so a third one waits in the listening socket's backlog, unanswered
  // (libmicrohttpd stops accepting at the limit; a wait that ends too early
  // here would only miss a bug, never report one that is not there).
  Conn c(address_);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.send(get("/metrics")));
  c.setTimeout(500ms);
  EXPECT_EQ(c.readAll(), "") << "a third connection was served beside two";
  EXPECT_EQ(renders_, 0);
  // One of the two finishes its request and closes: the third takes its place.
  ASSERT_TRUE(a.send("Host: x\r\nConnection: close\r\n\r\n"));
  auto r = parseReply(a.readAll());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  a.close();
  c.setTimeout(10s);
  r = parseReply(c.readAll());
  ASSERT_TRUE(r) << "the waiting connection was not served once a place was free";
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(renders_, 2);
}

TEST(MetricsAllow, ParsesAndMatches) {
  using vdev::daemon::parseAllowList;
  auto l = parseAllowList("127.0.0.1,10.1.0.0/16,::1,fd00::/8");
  ASSERT_TRUE(l) << l.error().message();
  ASSERT_EQ(l->size(), 4u);
  const auto v4 = [](const char* a) {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    ::inet_pton(AF_INET, a, &s.sin_addr);
    return s;
  };
  const auto v6 = [](const char* a) {
    sockaddr_in6 s{};
    s.sin6_family = AF_INET6;
    ::inet_pton(AF_INET6, a, &s.sin6_addr);
    return s;
  };
  const auto any = [&](const auto& s) {
    for (const auto& n : *l)
      if (n.contains(reinterpret_cast<const sockaddr*>(&s), sizeof s)) return true;
    return false;
  };
  EXPECT_TRUE(any(v4("127.0.0.1")));
  EXPECT_FALSE(any(v4("127.0.0.2")));
  EXPECT_TRUE(any(v4("10.1.255.3")));
  EXPECT_FALSE(any(v4("10.2.0.1")));
  EXPECT_TRUE(any(v6("::1")));
  EXPECT_TRUE(any(v6("fd12::5")));
  EXPECT_FALSE(any(v6("fe80::1")));
  EXPECT_TRUE(any(v6("::ffff:10.1.2.3")));  // IPv4 client of a dual-stack socket
  EXPECT_FALSE(any(v6("::ffff:10.9.2.3")));
  for (const char* bad : {"", "127.0.0.1,", "localhost", "10.0.0.0/33", "::/129", "10.0.0.0/x"}) {
    auto b = parseAllowList(bad);
    EXPECT_FALSE(b) << bad;
    if (!b) {
      EXPECT_EQ(b.error().err, EINVAL) << bad;
    }
  }
}

// A client not in the allow-list is closed at accept: no reply, no render.
TEST_F(MetricsServerTest, AllowListRefusesOthers) {
  MetricsServer::Config cfg;
  auto allow = vdev::daemon::parseAllowList("198.18.0.0/15");
  ASSERT_TRUE(allow);
  cfg.allow = *allow;
  start(cfg);
  Conn c(address_);
  ASSERT_TRUE(c.connected());
  (void)c.send(get("/metrics"));
  c.setTimeout(2s);
  EXPECT_EQ(c.readAll(), "") << "a client outside --metrics-allow was answered";
  EXPECT_EQ(renders_, 0);
}

TEST_F(MetricsServerTest, AllowListServesItsClients) {
  MetricsServer::Config cfg;
  auto allow = vdev::daemon::parseAllowList("198.18.0.0/15,127.0.0.1");
  ASSERT_TRUE(allow);
  cfg.allow = *allow;
  start(cfg);
  auto r = request(get("/metrics"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(renders_, 1);
}

TEST_F(MetricsServerTest, IdleConnectionsAreClosed) {
  MetricsServer::Config cfg;
  cfg.timeout_s = 1;
  start(cfg);
  Conn c(address_);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.send("GET /metrics HTTP/1.1\r\n"));  // and nothing more
  const auto t0 = Clock::now();
  EXPECT_EQ(c.readAll(), "");
  const auto took = Clock::now() - t0;
  EXPECT_GE(took, 900ms) << "closed before its timeout";
  EXPECT_LT(took, 8s) << "an idle connection was kept (the read gave up at 10 s)";
}

TEST_F(MetricsServerTest, StoppingClosesOpenConnections) {
  start();
  Conn c(address_);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.send("GET /metrics HTTP/1.1\r\n"));
  // Accepted before the stop: a request answered on a second connection
  // comes after this one's accept.
  auto r = request(get("/metrics"));
  ASSERT_TRUE(r);
  stopServer();
  const auto t0 = Clock::now();
  EXPECT_EQ(c.readAll(), "");
  EXPECT_LT(Clock::now() - t0, 5s) << "not closed by the server (the read gave up at 10 s)";
  Conn late(address_);
  EXPECT_FALSE(late.connected()) << "the listening socket is still open";
}

}  // namespace
