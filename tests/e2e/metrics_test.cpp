// vdevd's Prometheus scrape endpoint (--metrics-listen, docs/vdevd.md)
// end to end: a vdevd with two containers' veths and the endpoint on a free
// loopback port, a known number of frames each way, then GET /metrics parsed
// by Prometheus' own text parser (Debian's python3-prometheus-client,
// prom_scrape.py): the rx/tx counters equal what the stations sent and
// read, the text equals `vdevctl stats --prometheus` but for the values
// that change by themselves, other paths are 404 and other methods 405,
// and SIGTERM closes an open scrape connection and exits 0. Bad addresses
// (MetricsUsage.*) need no root.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <atomic>
#include <chrono>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "base/fd.h"
#include "flows.h"
#include "harness.h"
#include "vdevctl_fixture.h"
#include "wait.h"

namespace vdev::e2e {
namespace {

const char kScrape[] = VDEV_E2E_PROM_SCRAPE;

// Debian's python3, whose packages python3-prometheus-client installs into
// (another python3 may come first in $PATH).
std::string python() { return ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3"; }

// Why Prometheus' parser cannot be run here, or nullopt.
std::optional<std::string> parserProblem() {
  const CmdResult r = runArgv({python(), kScrape, "check"});
  if (r.ok()) return std::nullopt;
  return "python3 with prometheus_client (Debian: python3-prometheus-client, scripts/install-deps.sh) "
         "not available: " + r.err;
}

struct Scrape {
  int status = 0;
  std::string content_type, allow, body;
  Json families;  // [{name, type, help, samples: [{name, labels, value}]}]
};

// One request through prom_scrape.py.
Scrape scrape(const std::string& url, const std::string& method = "GET") {
  const CmdResult r = runArgv({python(), kScrape, url, method});
  if (!r.ok()) throw HarnessError("prom_scrape.py " + url + " " + method + ": exit " + std::to_string(r.status) +
                                  "\n" + r.err + "\n" + r.out);
  const Json j = Json::parse(r.out);
  Scrape s;
  s.status = int(j.at("status").get<uint64_t>());
  s.content_type = j.at("content_type").get<std::string>();
  s.allow = j.at("allow").get<std::string>();
  s.body = j.at("body").get<std::string>();
  if (j.contains("families")) s.families = j.at("families");
  return s;
}

// The value of the one sample `name` whose labels include `labels`.
uint64_t sample(const Json& families, const std::string& name, const std::map<std::string, std::string>& labels) {
  const Json* found = nullptr;
  for (const Json& f : families)
    for (const Json& s : f.at("samples")) {
      if (s.at("name").get<std::string>() != name) continue;
      bool match = true;
      for (const auto& [k, v] : labels) match = match && s.at("labels").contains(k) && s.at("labels").at(k).get<std::string>() == v;
      if (!match) continue;
      if (found) throw HarnessError("two samples " + name);
      found = &s;
    }
  if (!found) throw HarnessError("no sample " + name);
  return found->at("value").get<uint64_t>();
}

// The exposition text with the values of the samples that change by
// themselves between two reads replaced by "*": the uptime, the room the
// open-file limit leaves (each reader's connection is a descriptor of
// vdevd's) and the kernel's count of TX wakeups that found the ring empty
// (it grows while idle). Every other line stays as it is.
std::string masked(const std::string& text) {
  static const std::regex kChanging(
      R"(^(vdev_uptime_seconds|vdev_ports_room\{limit="fds"\}|vdev_port_xdp_tx_ring_empty_descs_total\{[^}]*\}) [0-9]+$)");
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) out += std::regex_replace(line, kChanging, "$1 *") + "\n";
  return out;
}

// "vdevd: metrics at http://ADDR/metrics" on vdevd's stdout -> ADDR.
std::string metricsAddress(Vdevd& d) {
  static const std::regex kLine(R"(vdevd: metrics at http://(\S+)/metrics)");
  std::smatch m;
  const std::string out = d.child().out();
  if (!std::regex_search(out, m, kLine)) throw HarnessError("vdevd did not say where the metrics are\n" + d.logs());
  return m[1];
}

struct Container {
  explicit Container(const std::string& label) : veth(ns), sock(veth.peerName(), &ns) {
    sock.setLabel(label);
    waitTxReady(veth.peerName(), &ns);
  }
  const std::string& port() const { return veth.hostName(); }
  Netns ns;
  VethPair veth;
  PacketSocket sock;
};

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requireRoot();
    if (IsSkipped()) return;
    VDEV_E2E_REQUIRE_VDEVD();
    if (vdevctlBinary().empty()) GTEST_SKIP() << "vdevctl not built and $VDEVCTL not set";
    if (auto p = parserProblem()) GTEST_SKIP() << *p;
  }
  TempDir dir_;
  const std::string sock_ = dir_.file("vdevd.sock");
};

TEST_F(MetricsTest, ScrapeCountsTheTrafficAndEqualsVdevctl) {
  Container a("A"), b("B");
  Vdevd d({"--port", a.port(), "--port", b.port(), "--socket", sock_, "--metrics-listen", "127.0.0.1:0"});
  const std::string addr = metricsAddress(d);
  ASSERT_EQ(addr.rfind("127.0.0.1:", 0), 0u) << addr;
  const std::string url = "http://" + addr + "/metrics";
  const Endpoints all = {&a.sock, &b.sock};

  // A known number of frames each way (flooded at first, then learned).
  constexpr uint32_t kAtoB = 120, kBtoA = 75;
  sendMixed(a.sock, b.sock.mac(), 1, kAtoB);
  sendMixed(b.sock, a.sock.mac(), 2, kBtoA);
  ASSERT_EQ(a.sock.sentFrames(), kAtoB);
  ASSERT_EQ(b.sock.sentFrames(), kBtoA);
  expectFlow(all, 1, {{&b.sock, kAtoB}});  // and a marker each way: counted below like any frame
  expectFlow(all, 2, {{&a.sock, kBtoA}});

  // The scrape's counters reach what was sent (tx is counted when a frame
  // goes on the TX ring, before the station reads it: wait for it), then
  // equal it exactly.
  Scrape s;
  const auto counted = [&] {
    s = scrape(url);
    return s.status == 200 &&
           sample(s.families, "vdev_port_rx_packets_total", {{"port", a.port()}}) == a.sock.sentFrames() &&
           sample(s.families, "vdev_port_tx_packets_total", {{"port", b.port()}}) == b.sock.rx().frames() &&
           sample(s.families, "vdev_port_rx_packets_total", {{"port", b.port()}}) == b.sock.sentFrames() &&
           sample(s.families, "vdev_port_tx_packets_total", {{"port", a.port()}}) == a.sock.rx().frames();
  };
  waitUntil(counted, 5s, 50ms);
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_EQ(s.content_type.rfind("text/plain; version=0.0.4", 0), 0u) << s.content_type;
  for (const Container* c : {&a, &b}) {
    SCOPED_TRACE("port " + c->port() + " (" + c->sock.label() + ")");
    const std::map<std::string, std::string> port = {{"port", c->port()}};
    EXPECT_EQ(sample(s.families, "vdev_port_rx_packets_total", port), c->sock.sentFrames());
    EXPECT_EQ(sample(s.families, "vdev_port_rx_bytes_total", port), c->sock.sentBytes());
    EXPECT_EQ(sample(s.families, "vdev_port_tx_packets_total", port), c->sock.rx().frames());
    EXPECT_EQ(sample(s.families, "vdev_port_tx_bytes_total", port), c->sock.rx().bytesRead());
    EXPECT_EQ(sample(s.families, "vdev_port_up", port), 1u);
    uint64_t drops = 0;
    for (const Json& f : s.families)
      if (f.at("name").get<std::string>() == "vdev_port_drops")
        for (const Json& x : f.at("samples"))
          if (x.at("labels").at("port").get<std::string>() == c->port()) drops += x.at("value").get<uint64_t>();
    EXPECT_EQ(drops, 0u) << s.body;
  }
  EXPECT_EQ(a.sock.sentFrames(), b.sock.rx().frames());
  EXPECT_EQ(b.sock.sentFrames(), a.sock.rx().frames());
  // Prometheus' parser took every family with its TYPE and HELP.
  std::set<std::string> types;
  for (const Json& f : s.families) {
    types.insert(f.at("type").get<std::string>());
    EXPECT_FALSE(f.at("help").get<std::string>().empty()) << f.at("name").get<std::string>();
  }
  EXPECT_EQ(types, (std::set<std::string>{"counter", "gauge"}));

  // The same text as vdevctl's, but for the values that change by themselves.
  const CmdResult ctl = runArgv({vdevctlBinary(), "-S", sock_, "stats", "--prometheus"});
  ASSERT_TRUE(ctl.ok()) << ctl.err;
  const Scrape again = scrape(url);
  EXPECT_EQ(masked(again.body), masked(ctl.out));

  // Another path, another method.
  for (const char* path : {"/", "/metric", "/metrics/x"}) {
    const Scrape r = scrape("http://" + addr + path);
    EXPECT_EQ(r.status, 404) << path;
  }
  for (const char* method : {"POST", "PUT", "DELETE"}) {
    const Scrape r = scrape(url, method);
    EXPECT_EQ(r.status, 405) << method;
    EXPECT_EQ(r.allow, "GET, HEAD") << method;
  }
  EXPECT_EQ(scrape(url, "HEAD").status, 200);

  // A scraper's connection open at SIGTERM: closed, and vdevd stops cleanly.
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(uint16_t(std::stoul(addr.substr(addr.rfind(':') + 1))));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  FileDesc conn(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(::connect(conn.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << std::strerror(errno);
  const std::string partial = "GET /metrics HTTP/1.1\r\n";
  ASSERT_EQ(::send(conn.get(), partial.data(), partial.size(), MSG_NOSIGNAL), ssize_t(partial.size()));
  EXPECT_TRUE(expectCleanStop(d));
  char c;
  timeval tv{5, 0};
  ::setsockopt(conn.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  EXPECT_EQ(::recv(conn.get(), &c, 1, 0), 0) << "the scrape connection was not closed: " << std::strerror(errno);
}

// Scrapes in a row while frames flow: whoever scrapes, the statistics are
// collected on the datapath thread at most once per 250 ms (docs/vdevd.md),
// so the scrapes of one period show the same counters. Each scrape used to
// take its own snapshot: as many different counts as scrapes.
TEST_F(MetricsTest, ScrapesShareOneSnapshotPerPeriod) {
  Container a("A"), b("B");
  Vdevd d({"--port", a.port(), "--port", b.port(), "--socket", sock_, "--metrics-listen", "127.0.0.1:0"});
  const std::string url = "http://" + metricsAddress(d) + "/metrics";
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    for (uint32_t seq = 0; !stop.load(std::memory_order_relaxed); seq++) {
      a.sock.send(mixedSpec(a.sock, b.sock.mac(), 3, seq));
      if (seq % 8 == 7) std::this_thread::sleep_for(1ms);
    }
  });
  std::set<uint64_t> seen;
  uint64_t first = 0, last = 0;
  const auto start = std::chrono::steady_clock::now();
  constexpr int kScrapes = 16;
  for (int i = 0; i < kScrapes; i++) {
    const Scrape s = scrape(url);
    if (s.status != 200) {
      ADD_FAILURE() << s.body;
      break;
    }
    last = sample(s.families, "vdev_port_rx_packets_total", {{"port", a.port()}});
    if (i == 0) first = last;
    seen.insert(last);
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  stop = true;
  sender.join();
  ASSERT_GT(last, first) << "no frames counted while scraping: nothing to tell snapshots apart";
  const size_t periods = size_t(elapsed / 250ms) + 1;
  EXPECT_LE(seen.size(), periods + 1) << kScrapes << " scrapes in "
                                      << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
                                      << " ms showed " << seen.size() << " different counts";
}

// Each non-root uid's use of its caps in /metrics (vdev_uid_*), as `vdevctl
// info` has it: a member's ports, its capture's memory while it runs, and
// its control requests, answered and refused by the rate; the samples equal
// `vdevctl stats --prometheus` (the same counters through INFO's wire) and
// `info -j`, and root has none.
class MetricsUidTest : public VdevctlFixture {
 protected:
  void SetUp() override {
    VdevctlFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (auto p = parserProblem()) GTEST_SKIP() << *p;
    char d[] = "/run/vdev-e2e-metrics.XXXXXX";
    ASSERT_NE(::mkdtemp(d), nullptr) << std::strerror(errno);
    run_ = d;
    ASSERT_EQ(::chmod(run_.c_str(), 0755), 0);  // the socket, for the member's vdevctl
    sock_ = run_ + "/vdevd.sock";
  }
  void TearDown() override {
    if (!run_.empty()) std::filesystem::remove_all(run_);
  }
  // The vdev_uid_* lines of an exposition text.
  static std::string uidLines(const std::string& text) {
    std::istringstream in(text);
    std::string out, line;
    while (std::getline(in, line))
      if (line.rfind("vdev_uid_", 0) == 0) out += line + "\n";
    return out;
  }
  std::string run_;
};

TEST_F(MetricsUidTest, AMembersUseOfItsCapsIsInMetrics) {
  const std::string t = uniqueName('t');
  DeviceGuard guard({t});
  auto d = startVdevd({"--group", "nogroup", "--uid-max-rate", "1", "--uid-rate-burst", "8", "--uid-max-ports", "5",
                       "--metrics-listen", "127.0.0.1:0"});
  const std::string url = "http://" + metricsAddress(*d) + "/metrics";
  const std::string uid = std::to_string(kNobody);
  ok({"port", "add", t, "type", "tap", "create"}, kNobodyCreds);

  // A capture of the member's own port: its slots count for it while it runs.
  Child cap("capture", {"setpriv", "--reuid=" + uid, "--regid=" + std::to_string(kNogroup), "--clear-groups",
                        vdevctlForOthers(), "-S", sock_, "capture", t, "buffer", "16", "snaplen", "1024"});
  Scrape s;
  ASSERT_TRUE(waitUntil(
      [&] {
        s = scrape(url);
        return s.status == 200 && s.body.find("vdev_uid_capture_bytes{uid=\"" + uid + "\"} 0\n") == std::string::npos &&
               s.body.find("vdev_uid_capture_bytes{uid=\"" + uid + "\"}") != std::string::npos;
      },
      10s, 100ms))
      << s.body << cap.logs();
  EXPECT_GE(sample(s.families, "vdev_uid_capture_bytes", {{"uid", uid}}), 16u * 1024) << s.body;
  cap.signal(SIGINT);
  ASSERT_TRUE(cap.wait(10s)) << cap.logs();
  ASSERT_TRUE(waitUntil(
      [&] {
        s = scrape(url);
        return s.body.find("vdev_uid_capture_bytes{uid=\"" + uid + "\"} 0\n") != std::string::npos;
      },
      10s, 100ms))
      << "the stopped capture's memory is still the member's:\n" << s.body;

  // Requests beyond the burst: refused, and counted as such.
  int refusals = 0;
  for (int i = 0; i < 40 && refusals < 3; i++) {
    const CmdResult r = ctl({"port", "show"}, kNobodyCreds);
    if (r.ok()) continue;
    ASSERT_NE(r.err.find("requests a second"), std::string::npos) << r.err;
    refusals++;
  }
  ASSERT_EQ(refusals, 3) << "40 requests at once within a burst of 8 at 1/s";

  // Scrapes within 250 ms share one text (SnapshotGate): the next one shows them.
  EXPECT_TRUE(waitUntil(
      [&] {
        s = scrape(url);
        return s.status == 200 && sample(s.families, "vdev_uid_requests_refused_total", {{"uid", uid}}) == 3;
      },
      5s, 50ms))
      << s.body;
  EXPECT_EQ(sample(s.families, "vdev_uid_ports", {{"uid", uid}}), 1u) << s.body;
  EXPECT_EQ(sample(s.families, "vdev_uid_fdb_entries", {{"uid", uid}}), 0u) << s.body;
  EXPECT_EQ(sample(s.families, "vdev_uid_capture_bytes", {{"uid", uid}}), 0u) << s.body;
  // Refused only once the burst was spent: the port add, the capture's start
  // and the port shows took its 8 tokens, and what refilled meanwhile.
  EXPECT_GE(sample(s.families, "vdev_uid_requests_total", {{"uid", uid}}), 8u) << s.body;
  EXPECT_EQ(sample(s.families, "vdev_uid_cap", {{"resource", "ports"}}), 5u) << s.body;
  EXPECT_EQ(sample(s.families, "vdev_uid_cap", {{"resource", "requests_per_second"}}), 1u) << s.body;
  EXPECT_EQ(sample(s.families, "vdev_uid_cap", {{"resource", "request_burst"}}), 8u) << s.body;
  EXPECT_EQ(s.body.find("uid=\"0\""), std::string::npos) << "root is never capped nor counted:\n" << s.body;
  // The member's requests stand still now (root's are not counted): the
  // same samples through vdevctl, in the text and in info -j.
  EXPECT_EQ(uidLines(ok({"stats", "--prometheus"})), uidLines(s.body));
  const Json info = json({"info"});
  ASSERT_EQ(info.at("uid_use").size(), 1u) << info.dump();
  const Json& use = info.at("uid_use").at(0);
  EXPECT_EQ(use.at("requests").get<uint64_t>(), sample(s.families, "vdev_uid_requests_total", {{"uid", uid}})) << info.dump();
  EXPECT_EQ(use.at("requests_refused").get<uint64_t>(), 3u) << info.dump();

  ok({"port", "del", t});
  EXPECT_TRUE(expectCleanStop(*d));
}

// Addresses vdevd cannot use: it exits at once, naming the address; no root.
class MetricsUsage : public ::testing::Test {
 protected:
  void SetUp() override { VDEV_E2E_REQUIRE_VDEVD(); }
};

TEST_F(MetricsUsage, MalformedOrUnusableAddressesStopVdevd) {
  for (const char* bad : {"localhost:9469", "::1:9469", "[::1]", "127.0.0.1:65536", "1.2.3:80", ""}) {
    const CmdResult r = Vdevd::runExpectingExit({"--port", "vtnone0", "--metrics-listen", bad});
    EXPECT_EQ(r.status, 2) << bad << "\n" << r.err;
    EXPECT_NE(r.err.find(std::string("--metrics-listen '") + bad + "'"), std::string::npos) << r.err;
  }
  // In use: a socket of the test's listens on it.
  FileDesc taken(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::bind(taken.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << std::strerror(errno);
  ASSERT_EQ(::listen(taken.get(), 1), 0);
  ASSERT_EQ(::getsockname(taken.get(), reinterpret_cast<sockaddr*>(&sa), &len), 0);
  const std::string in_use = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  CmdResult r = Vdevd::runExpectingExit({"--port", "vtnone0", "--metrics-listen", in_use});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("cannot bind " + in_use), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::strerror(EADDRINUSE)), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("vdevd: ready"), std::string::npos) << r.out;
  // Not an address of this host (one of the test range no test gives a device).
  r = Vdevd::runExpectingExit({"--port", "vtnone0", "--metrics-listen", "198.19.255.254:9469"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("cannot bind 198.19.255.254:9469"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace vdev::e2e
