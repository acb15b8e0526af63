// ControlServer + ControlClient on a real socket in a temporary directory,
// with a fake handler: every command, authorisation, clients that misbehave.
#include <grp.h>
#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "proto/client.h"
#include "proto/server.h"

namespace vdev::proto {
namespace {

using namespace std::chrono_literals;

constexpr Mac kMac1{0x02, 0, 0, 0, 0, 0x01};

PortStatsMsg stat(const std::string& name, uint32_t i) {
  PortStatsMsg s;
  s.port.name = name;
  s.port.ifindex = i + 1;
  s.port.queues = 1;
  s.port.mtu = 1500;
  s.counters[vdev::stats::kRxPackets] = i;
  s.counters[vdev::stats::kDropPortDown] = i * 2;
  return s;
}

// Answers from canned data; records what it was asked.
class FakeHandler : public ControlHandler {
 public:
  Reply handle(const Request& req, const PeerCred& peer) override {
    {
      std::lock_guard<std::mutex> l(mu);
      requests.push_back(req);
      last_peer = peer;
    }
    if (delay.count()) std::this_thread::sleep_for(delay);
    return std::visit([&](const auto& b) { return answer(b); }, req.body);
  }

  Reply answer(const PortAddRequest& r) {
    if (r.name == "exists") return ErrorReply{EEXIST, "port exists already"};
    return Ack{};
  }
  Reply answer(const PortDelRequest& r) {
    if (r.name == "missing") return ErrorReply{ENODEV, "no port named missing"};
    return Ack{};
  }
  Reply answer(const PortGetRequest& r) {
    if (r.name.empty()) return ports;
    for (const auto& p : ports.ports)
      if (p.name == r.name) return PortList{{p}};
    return ErrorReply{ENODEV, "no port named " + r.name};
  }
  Reply answer(const StatsGetRequest& r) {
    if (r.name.empty()) return stats;
    if (r.name == "wrongkind") return Ack{};  // a handler bug
    StatsReply one{{stat(r.name, 1)}, stats.pool, stats.fdb_entries};
    return one;
  }
  Reply answer(const FdbGetRequest&) { return fdb; }
  Reply answer(const FdbAddRequest&) { return Ack{}; }
  Reply answer(const FdbDelRequest&) { return Ack{}; }
  Reply answer(const PortSetRequest&) { return Ack{}; }
  Reply answer(const InfoGetRequest&) { return InfoMsg{"0.1.0", 1, SwitchMode::kSwitch, 42, 3}; }
  Reply answer(const CaptureStartRequest&) { return CaptureMsg{.id = 7, .snaplen = 2048}; }
  Reply answer(const CaptureReadRequest& r) { return CaptureMsg{.id = r.id, .taken = 3}; }
  Reply answer(const CaptureStopRequest& r) { return CaptureMsg{.id = r.id, .taken = 3}; }
  void disconnected(uint64_t conn) override {
    std::lock_guard<std::mutex> l(mu);
    gone.push_back(conn);
  }

  size_t count() {
    std::lock_guard<std::mutex> l(mu);
    return requests.size();
  }
  Request last() {
    std::lock_guard<std::mutex> l(mu);
    return requests.back();
  }
  PeerCred lastPeer() {
    std::lock_guard<std::mutex> l(mu);
    return last_peer;
  }

  std::mutex mu;
  std::vector<Request> requests;
  PeerCred last_peer;
  std::vector<uint64_t> gone;  // connections closed (disconnected)
  std::chrono::milliseconds delay{0};
  PortList ports;
  StatsReply stats;
  FdbList fdb;
};

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/vdev-proto-test-XXXXXX";
    path_ = mkdtemp(tmpl);
    ::chmod(path_.c_str(), 0755);  // reachable by `nobody` in the fork test
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs a server's event loop on its own thread, like vdevd's control thread.
class ServerThread {
 public:
  explicit ServerThread(ControlServer& s) : srv_(s), t_([this] { run(); }) {}
  ~ServerThread() {
    stop_ = true;
    t_.join();
  }

 private:
  void run() {
    while (!stop_) {
      pollfd p{srv_.fd(), POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) srv_.processEvents();
    }
  }
  ControlServer& srv_;
  std::atomic<bool> stop_{false};
  std::thread t_;
};

class CtlServer : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg.path = dir.path() + "/run/vdevd.sock";
    cfg.group = getegid();
    cfg.log = [this](std::string_view m) {
      std::lock_guard<std::mutex> l(log_mu);
      log.emplace_back(m);
    };
    handler.ports = PortList{{PortInfo{"vd0", PortType::kVeth, 5, 1, XdpMode::kGeneric,
                                       BindMode::kCopy, 1500, true, kMac1},
                              PortInfo{"vd1", PortType::kTap, 6, 2, XdpMode::kNative,
                                       BindMode::kZerocopy, 9000, false, std::nullopt}}};
    handler.stats.pool = PoolMsg{};
    handler.stats.pool->v = {100, 90, 10};
    handler.stats.fdb_entries = 2;
    handler.stats.ports = {stat("vd0", 1), stat("vd1", 2)};
    handler.fdb = FdbList{{{kMac1, "vd0", false, 1500}}};
  }
  void start() {
    auto s = ControlServer::create(cfg, handler);
    ASSERT_TRUE(s.ok()) << s.error().message();
    server = std::move(*s);
    thread = std::make_unique<ServerThread>(*server);
  }
  void TearDown() override {
    thread.reset();
    server.reset();
  }
  // As root: a non-member (a child that becomes `nobody`) is refused.
  void refusedAsNobody();
  ControlClient client(int timeout_ms = 5000) {
    auto c = ControlClient::connect(cfg.path, timeout_ms);
    EXPECT_TRUE(c.ok()) << c.error().message();
    return std::move(*c);
  }
  // A raw connection for misbehaving clients.
  int rawConnect() {
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, cfg.path.c_str());
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
    return fd;
  }
  bool waitFor(const std::function<bool()>& cond, std::chrono::milliseconds t = 5s) {
    auto end = std::chrono::steady_clock::now() + t;
    while (std::chrono::steady_clock::now() < end) {
      if (cond()) return true;
      std::this_thread::sleep_for(5ms);
    }
    return cond();
  }
  bool logged(const std::string& what) {
    std::lock_guard<std::mutex> l(log_mu);
    for (auto& m : log)
      if (m.find(what) != std::string::npos) return true;
    return false;
  }

  TempDir dir;
  ServerConfig cfg;
  FakeHandler handler;
  std::unique_ptr<ControlServer> server;
  std::unique_ptr<ServerThread> thread;
  std::mutex log_mu;
  std::vector<std::string> log;
};

std::vector<uint8_t> encoded(uint32_t seq, const RequestBody& body) {
  auto r = encodeRequest(seq, body);
  EXPECT_TRUE(r.ok());
  return r.ok() ? std::move(r).value() : std::vector<uint8_t>{};
}

// Reads one datagram with a timeout; -1: timeout, 0: EOF.
ssize_t recvTimeout(int fd, std::vector<uint8_t>& buf, int ms = 5000) {
  buf.resize(kMaxMessageSize);
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) <= 0) return -1;
  ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
  if (n >= 0) buf.resize(static_cast<size_t>(n));
  return n;
}

// --------------------------------------------------------------- socket file

TEST_F(CtlServer, CreatesDirectoryAndSocketWithModeAndGroup) {
  start();
  struct stat st;
  ASSERT_EQ(::stat((dir.path() + "/run").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_EQ(::stat(cfg.path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(st.st_gid, getegid());
  TearDown();
  EXPECT_NE(::access(cfg.path.c_str(), F_OK), 0) << "socket file left behind";
}

TEST_F(CtlServer, RemovesStaleSocket) {
  std::filesystem::create_directories(dir.path() + "/run");
  {
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, cfg.path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::close(fd);  // a daemon that died: the file stays, nobody listens
  }
  start();
  auto c = client();
  EXPECT_TRUE(c.info().ok());
}

TEST_F(CtlServer, RefusesWhenAnotherDaemonListens) {
  start();
  FakeHandler other;
  auto second = ControlServer::create(cfg, other);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().err, EADDRINUSE);
  // The first one is untouched.
  auto c = client();
  EXPECT_TRUE(c.info().ok());
}

TEST_F(CtlServer, RefusesToReplaceANonSocket) {
  std::filesystem::create_directories(dir.path() + "/run");
  std::ofstream(cfg.path) << "precious";
  auto s = ControlServer::create(cfg, handler);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().err, EEXIST);
  EXPECT_TRUE(std::filesystem::is_regular_file(cfg.path));
}

TEST_F(CtlServer, LeavesASuccessorsSocketAlone) {
  start();
  thread.reset();
  ::unlink(cfg.path.c_str());
  std::ofstream(cfg.path) << "successor";
  server.reset();
  EXPECT_TRUE(std::filesystem::is_regular_file(cfg.path));
}

TEST_F(CtlServer, PathTooLong) {
  cfg.path = "/tmp/" + std::string(200, 'x');
  auto s = ControlServer::create(cfg, handler);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().err, ENAMETOOLONG);
}

// ------------------------------------------------------------------ commands

TEST_F(CtlServer, EveryCommand) {
  start();
  auto c = client();

  CreateOptions veth;
  veth.peer_netns_name = "ctr1";
  veth.peer_ifname = "eth0";
  veth.mtu = 1450;
  PortAddRequest add{"vd2", PortType::kVeth, 2u, XdpMode::kGeneric, veth};
  ASSERT_TRUE(c.portAdd(add).ok());
  EXPECT_EQ(std::get<PortAddRequest>(handler.last().body), add);
  EXPECT_EQ(handler.last().hdr.seq, c.lastSeq());
  EXPECT_EQ(handler.lastPeer().uid, geteuid());
  EXPECT_EQ(handler.lastPeer().pid, getpid());

  ASSERT_TRUE(c.portDel("vd2").ok());
  EXPECT_EQ(std::get<PortDelRequest>(handler.last().body).name, "vd2");

  auto p = c.portGet("vd1");
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(*p, handler.ports.ports[1]);

  auto all = c.portList();
  ASSERT_TRUE(all.ok()) << all.error().message();
  EXPECT_EQ(*all, handler.ports.ports);

  auto s1 = c.stats("vd0");
  ASSERT_TRUE(s1.ok()) << s1.error().message();
  ASSERT_EQ(s1->ports.size(), 1u);
  EXPECT_EQ(s1->ports[0], stat("vd0", 1));
  EXPECT_EQ(s1->pool, handler.stats.pool);

  auto sa = c.stats();
  ASSERT_TRUE(sa.ok()) << sa.error().message();
  EXPECT_EQ(*sa, handler.stats);

  auto f = c.fdbGet();
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f, handler.fdb.entries);
  ASSERT_TRUE(c.fdbAdd(kMac1, "vd0").ok());
  EXPECT_EQ(std::get<FdbAddRequest>(handler.last().body), (FdbAddRequest{kMac1, "vd0", true}));
  ASSERT_TRUE(c.fdbDel(kMac1).ok());

  auto i = c.info();
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->version, "0.1.0");
  EXPECT_EQ(i->uptime_s, 42u);
  EXPECT_EQ(handler.count(), 10u);
}

TEST_F(CtlServer, HandlerErrorsReachTheClient) {
  start();
  auto c = client();
  auto d = c.portDel("missing");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().err, ENODEV);
  EXPECT_EQ(d.error().what, "no port named missing");
  EXPECT_EQ(d.error().message(), "no port named missing: No such device");
  auto g = c.portGet("nope");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().err, ENODEV);
  // A reply of the wrong kind is the handler's bug: EIO, and the connection lives on.
  auto w = c.stats("wrongkind");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().err, EIO);
  EXPECT_TRUE(c.info().ok());
}

TEST_F(CtlServer, ClientValidatesBeforeSending) {
  start();
  auto c = client();
  auto r = c.portAdd(PortAddRequest{"vd0", PortType::kTap, 100u, XdpMode::kAuto, {}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err, EINVAL);
  EXPECT_EQ(handler.count(), 0u);
  EXPECT_TRUE(c.info().ok());  // nothing broken
}

TEST_F(CtlServer, InvalidRequestGetsErrorAndConnectionStays) {
  start();
  int fd = rawConnect();
  // QUEUES 0 (a client that skips validation).
  uint8_t msg[] = {// nlmsghdr: len 44, type 0x7664, flags NLM_F_REQUEST, seq 77, pid 0
                   44, 0, 0, 0, 0x64, 0x76, 1, 0, 77, 0, 0, 0, 0, 0, 0, 0,
                   // genl: PORT_ADD v1
                   kCmdPortAdd, 1, 0, 0,
                   // PORT_NAME "a"
                   6, 0, kAttrPortName, 0, 'a', 0, 0, 0,
                   // PORT_TYPE veth
                   5, 0, kAttrPortType, 0, 2, 0, 0, 0,
                   // QUEUES 0
                   8, 0, kAttrQueues, 0, 0, 0, 0, 0};
  ASSERT_EQ(::send(fd, msg, sizeof msg, 0), static_cast<ssize_t>(sizeof msg));
  std::vector<uint8_t> buf;
  ASSERT_GT(recvTimeout(fd, buf), 0);
  auto r = decodeReply(buf, Expect{77, kCmdPortAdd, false});
  ASSERT_TRUE(r.ok()) << r.error().message();
  auto& e = std::get<ErrorReply>(*r);
  EXPECT_EQ(e.err, EINVAL);
  EXPECT_EQ(e.msg, "attribute QUEUES: 0 out of range 1..64");
  // Still connected: a valid request is answered.
  auto info = encodeRequest(78, InfoGetRequest{});
  ASSERT_EQ(::send(fd, info->data(), info->size(), 0), static_cast<ssize_t>(info->size()));
  ASSERT_GT(recvTimeout(fd, buf), 0);
  EXPECT_TRUE(decodeReply(buf, Expect{78, kCmdInfoGet, false}).ok());
  EXPECT_EQ(handler.count(), 1u);
  ::close(fd);
}

TEST_F(CtlServer, GarbageGetsErrorThenDisconnect) {
  start();
  int fd = rawConnect();
  ASSERT_EQ(::send(fd, "hello", 5, 0), 5);
  std::vector<uint8_t> buf;
  ASSERT_GT(recvTimeout(fd, buf), 0);
  auto r = decodeReply(buf, Expect{0, kCmdUnspec, false});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(std::get<ErrorReply>(*r).err, EINVAL);
  EXPECT_NE(std::get<ErrorReply>(*r).msg.find("truncated message: 5 bytes"), std::string::npos);
  EXPECT_EQ(recvTimeout(fd, buf), 0) << "not disconnected";
  ::close(fd);

  // A header whose length field lies: the error echoes its seq.
  fd = rawConnect();
  uint8_t lie[20] = {200, 0, 0, 0, 0x64, 0x76, 1, 0, 9, 0, 0, 0};
  ASSERT_EQ(::send(fd, lie, sizeof lie, 0), 20);
  ASSERT_GT(recvTimeout(fd, buf), 0);
  auto l = decodeReply(buf, Expect{9, kCmdInfoGet, false});
  ASSERT_TRUE(l.ok()) << l.error().message();
  EXPECT_NE(std::get<ErrorReply>(*l).msg.find("length field 200"), std::string::npos);
  EXPECT_EQ(recvTimeout(fd, buf), 0);
  ::close(fd);
  EXPECT_TRUE(waitFor([&] { return server->numClients() == 0; }));
  EXPECT_EQ(handler.count(), 0u);
}

TEST_F(CtlServer, OversizedDatagramGetsEmsgsize) {
  start();
  int fd = rawConnect();
  int sndbuf = 1 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  auto info = encoded(5, InfoGetRequest{});
  std::vector<uint8_t> big(kMaxMessageSize + 1000, 0);
  std::memcpy(big.data(), info.data(), info.size());
  ASSERT_EQ(::send(fd, big.data(), big.size(), 0), static_cast<ssize_t>(big.size()));
  std::vector<uint8_t> buf;
  ASSERT_GT(recvTimeout(fd, buf), 0);
  auto r = decodeReply(buf, Expect{5, kCmdInfoGet, false});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(std::get<ErrorReply>(*r).err, EMSGSIZE);
  EXPECT_EQ(recvTimeout(fd, buf), 0);
  ::close(fd);
}

TEST_F(CtlServer, PipelinedRequestsAnsweredInOrder) {
  start();
  int fd = rawConnect();
  for (uint32_t seq = 100; seq < 103; ++seq) {
    auto b = encoded(seq, seq == 101 ? RequestBody{PortGetRequest{}} : InfoGetRequest{});
    ASSERT_EQ(::send(fd, b.data(), b.size(), 0), static_cast<ssize_t>(b.size()));
  }
  std::vector<uint8_t> buf;
  for (uint32_t seq = 100; seq < 103; ++seq) {
    ASSERT_GT(recvTimeout(fd, buf), 0);
    auto h = reinterpret_cast<const nlmsghdr*>(buf.data());
    EXPECT_EQ(h->nlmsg_seq, seq);
    auto r = decodeReply(buf, Expect{seq, seq == 101 ? kCmdPortGet : kCmdInfoGet, seq == 101});
    EXPECT_TRUE(r.ok()) << r.error().message();
  }
  ::close(fd);
}

TEST_F(CtlServer, ClientTimeoutThenNotConnected) {
  handler.delay = 600ms;
  start();
  auto c = client(200);
  auto r = c.info();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err, ETIMEDOUT);
  auto again = c.info();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().err, ENOTCONN);
}

TEST_F(CtlServer, ConnectToNothing) {
  auto c = ControlClient::connect(dir.path() + "/absent.sock");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().err, ENOENT);
}

// ----------------------------------------------------------- misbehaviour

TEST_F(CtlServer, ClientThatNeverReadsDoesNotBlockOthers) {
  // ~5000 ports of statistics: megabytes, far more than a socket buffer.
  for (uint32_t i = 0; i < 5000; ++i)
    handler.stats.ports.push_back(stat("p" + std::to_string(i), i));
  start();
  int lazy = rawConnect();
  auto req = encoded(1, StatsGetRequest{});
  ASSERT_EQ(::send(lazy, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  ASSERT_TRUE(waitFor([&] { return handler.count() == 1; }));

  // Others are served while the dump sits unread.
  // (The client's timeout bounds every wait.)
  auto c = client(3000);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(c.info().ok());
  auto big = c.stats();
  ASSERT_TRUE(big.ok()) << big.error().message();
  EXPECT_EQ(big->ports.size(), 5002u);
  EXPECT_EQ(server->numClients(), 2u);

  // And the lazy client, reading at last, gets all of it.
  ReplyAssembler a(Expect{1, kCmdStatsGet, true});
  std::vector<uint8_t> buf;
  while (!a.done()) {
    ASSERT_GT(recvTimeout(lazy, buf), 0);
    ASSERT_TRUE(a.feed(buf).ok());
  }
  auto r = a.finish();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::get<StatsReply>(*r).ports.size(), 5002u);
  ::close(lazy);
}

// A client that stops reading its reply is dropped once the reply has made
// no progress for stall_timeout (not for the reply's size: see
// DumpsOfAnySizeArriveWhole).
TEST_F(CtlServer, ClientThatStopsReadingIsDroppedAfterTheStallTimeout) {
  for (uint32_t i = 0; i < 5000; ++i)
    handler.stats.ports.push_back(stat("p" + std::to_string(i), i));
  cfg.stall_timeout = 300ms;
  start();
  int lazy = rawConnect();
  auto req = encoded(1, StatsGetRequest{});
  ASSERT_EQ(::send(lazy, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  auto c = client(3000);
  ASSERT_TRUE(waitFor([&] { return logged("does not read its replies"); }));
  EXPECT_TRUE(c.info().ok());
  EXPECT_TRUE(waitFor([&] { return server->numClients() == 1; }));
  // What reached the lazy client's socket buffer, then EOF: never a complete reply.
  ReplyAssembler a(Expect{1, kCmdStatsGet, true});
  std::vector<uint8_t> buf;
  ssize_t n;
  while ((n = recvTimeout(lazy, buf)) > 0) ASSERT_TRUE(a.feed(buf).ok());
  EXPECT_EQ(n, 0);
  EXPECT_FALSE(a.done());
  ::close(lazy);
}

// The limit on all connections together. Root is held to it alone; any
// other user also to its own cap and to what root_reserve leaves it
// (PerUidCapAndRootReserve): lifted here, so that the test means the same
// with root and without.
TEST_F(CtlServer, TooManyClients) {
  cfg.max_clients = 2;
  cfg.root_reserve = 0;
  cfg.max_clients_per_uid = 2;
  start();
  auto a = client();
  auto b = client();
  ASSERT_TRUE(a.info().ok());
  ASSERT_TRUE(b.info().ok());
  auto c = client();
  auto r = c.info();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err, EBUSY);
  EXPECT_NE(r.error().what.find("too many control clients"), std::string::npos);
  EXPECT_TRUE(a.info().ok());
}

// The default limit (README: "hold 64 connections"): 64 clients are all
// served at once, the 65th is refused, and the 64 are still served after.
// As in TooManyClients, the other users' own limits are lifted.
TEST_F(CtlServer, DefaultLimitServes64ClientsAndRefusesThe65th) {
  ASSERT_EQ(cfg.max_clients, 64u) << "the README's figure follows ServerConfig's default";
  cfg.root_reserve = 0;
  cfg.max_clients_per_uid = cfg.max_clients;
  start();
  std::vector<ControlClient> held;
  for (int i = 0; i < 64; ++i) {
    held.push_back(client());
    auto r = held.back().info();
    ASSERT_TRUE(r.ok()) << "client " << i << ": " << r.error().message();
  }
  auto extra = client();
  auto r = extra.info();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err, EBUSY);
  for (size_t i = 0; i < held.size(); ++i) EXPECT_TRUE(held[i].info().ok()) << "client " << i;
  EXPECT_EQ(server->numClients(), 64u);
}

TEST_F(CtlServer, OutOfFdsRefusesWithoutSpinning) {
  auto s = ControlServer::create(cfg, handler);
  ASSERT_TRUE(s.ok()) << s.error().message();
  server = std::move(*s);
  int a = rawConnect(), b = rawConnect();  // waiting in the backlog
  // Use up every fd number up to the highest one open; the limit just above.
  int highest = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
    highest = std::max(highest, std::atoi(e.path().filename().c_str()));
  std::vector<int> fill;
  for (int fd; (fd = ::dup(0)) >= 0 && fd <= highest;) fill.push_back(fd);
  ::close(highest + 1);  // the dup that went past the holes
  rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit lim = old;
  lim.rlim_cur = static_cast<rlim_t>(highest + 1);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lim), 0);
  server->processEvents();  // returns: the pending connections are refused, not left pending
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  for (int fd : fill) ::close(fd);
  EXPECT_TRUE(logged("out of file descriptors, connection refused"));
  EXPECT_EQ(server->numClients(), 0u);
  std::vector<uint8_t> buf;
  EXPECT_EQ(recvTimeout(a, buf), 0);
  EXPECT_EQ(recvTimeout(b, buf), 0);
  ::close(a);
  ::close(b);
  thread = std::make_unique<ServerThread>(*server);
  auto c = client();
  EXPECT_TRUE(c.info().ok());
}

TEST_F(CtlServer, OutOfFdsEvenForTheSpareParksTheListener) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);  // low fd numbers, freed below the spare later
  auto s = ControlServer::create(cfg, handler);
  ASSERT_TRUE(s.ok()) << s.error().message();
  server = std::move(*s);
  int a = rawConnect(), b = rawConnect();
  ::close(p[0]);
  ::close(p[1]);
  int lowest = ::dup(0);
  ::close(lowest);
  rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit lim = old;
  lim.rlim_cur = static_cast<rlim_t>(lowest);  // below the spare fd: freeing it does not help
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lim), 0);
  server->processEvents();  // must return, not spin
  pollfd pf{server->fd(), POLLIN, 0};
  int ready = ::poll(&pf, 1, 0);  // parked: the epoll fd is quiet
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  EXPECT_EQ(ready, 0);
  EXPECT_TRUE(logged("not accepting for now"));
  // A second later the server's timer makes it listen again, and the
  // waiting clients are served.
  ASSERT_EQ(::poll(&pf, 1, 3000), 1);
  server->processEvents();  // the timer: re-arm
  server->processEvents();  // the listener: accept
  EXPECT_EQ(server->numClients(), 2u);
  ::close(a);
  ::close(b);
  thread = std::make_unique<ServerThread>(*server);
  auto c = client();
  EXPECT_TRUE(c.info().ok());
}

// The limits README.md ("Reliability and security") and
// docs/control-protocol.md state are the defaults vdevd runs with (it keeps
// ServerConfig's): the tests above exercise each mechanism with smaller
// values (5 per uid, a reserve of 8, 300 ms), which only a test of the
// defaults themselves ties to what the documents promise.
TEST(CtlServerConfig, ShippedDefaultsAreTheDocumentedOnes) {
  const ServerConfig d;
  EXPECT_EQ(d.max_clients, 64u);
  EXPECT_EQ(d.root_reserve, 16u);
  EXPECT_EQ(d.max_clients_per_uid, 8u);
  EXPECT_EQ(d.idle_timeout, std::chrono::seconds(120));
  EXPECT_EQ(d.stall_timeout, std::chrono::seconds(10));
  EXPECT_EQ(d.mode, 0660u);
}

// ---------------------------------------------------------- authorisation

TEST(CtlAuth, Rules) {
  PeerCred root{1, 0, 0, {}};
  PeerCred member{2, 1000, 1000, {27, 555}};
  PeerCred primary{3, 1001, 555, {}};
  PeerCred other{4, 1002, 1002, {27}};
  EXPECT_TRUE(isAuthorized(root, std::nullopt));
  EXPECT_TRUE(isAuthorized(root, 555));
  EXPECT_TRUE(isAuthorized(member, 555));
  EXPECT_TRUE(isAuthorized(primary, 555));
  EXPECT_FALSE(isAuthorized(other, 555));
  EXPECT_FALSE(isAuthorized(member, std::nullopt));
  EXPECT_FALSE(isAuthorized(PeerCred{}, 555));
}

TEST(CtlAuth, ProcStatusGroups) {
  EXPECT_EQ(parseProcStatusGroups("Name:\tx\nUid:\t1\nGroups:\t4 24 27 1000 \nNgid:\t0\n"),
            (std::vector<gid_t>{4, 24, 27, 1000}));
  EXPECT_EQ(parseProcStatusGroups("Groups:\t\n"), std::vector<gid_t>{});
  EXPECT_EQ(parseProcStatusGroups("Groups: 5"), std::vector<gid_t>{5});
  EXPECT_EQ(parseProcStatusGroups("Name: x\n"), std::vector<gid_t>{});
  EXPECT_EQ(parseProcStatusGroups("Groups:\t1 x2 99999999999 3\n"), (std::vector<gid_t>{1, 3}));
}

TEST(CtlAuth, PeerCredOfASocketPair) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
  auto c = peerCred(sv[0]);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->uid, geteuid());
  EXPECT_EQ(c->gid, getegid());
  EXPECT_EQ(c->pid, getpid());
  std::vector<gid_t> mine(static_cast<size_t>(getgroups(0, nullptr)));
  getgroups(static_cast<int>(mine.size()), mine.data());
  std::sort(mine.begin(), mine.end());
  auto theirs = c->groups;
  std::sort(theirs.begin(), theirs.end());
  EXPECT_EQ(theirs, mine);
  ::close(sv[0]);
  ::close(sv[1]);
  EXPECT_FALSE(peerCred(-1).ok());
}

TEST(CtlAuth, GroupByName) {
  auto root = groupByName("root");
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(*root, 0u);
  auto none = groupByName("no-such-group-vdev");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().err, ENOENT);
}

// A non-member is refused. Root is always authorised, so as root the
// request comes from a forked child that becomes `nobody`; otherwise from this
// process, which is not root and (group unset) in no allowed group. One test
// for both, so that neither case is a skip where the other runs.
TEST_F(CtlServer, NonMemberGetsEperm) {
  if (geteuid() == 0) {
    refusedAsNobody();
    return;
  }
  cfg.group = std::nullopt;  // root only
  start();
  auto c = client();
  auto r = c.info();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err, EPERM);
  EXPECT_EQ(handler.count(), 0u);
}

// Root: a forked child that becomes `nobody` connects to a world-writable
// socket and is refused by credentials, not by file permissions.
void CtlServer::refusedAsNobody() {
  cfg.mode = 0666;
  cfg.group = 0;
  start();
  ASSERT_EQ(::chmod((dir.path() + "/run").c_str(), 0755), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: only _exit codes, no gtest.
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
    auto c = ControlClient::connect(cfg.path, 5000);
    if (!c.ok()) _exit(11);
    auto r = c->info();
    if (r.ok()) _exit(12);
    if (r.error().err != EPERM) _exit(13);
    if (r.error().what.find("permission denied: uid 65534") == std::string::npos) _exit(14);
    // The connection is closed after the refusal.
    auto again = c->info();
    if (again.ok()) _exit(15);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child failed at step " << WEXITSTATUS(status);
  EXPECT_EQ(handler.count(), 0u) << "a refused request was executed";
  EXPECT_TRUE(logged("permission denied"));
  // Root still is served.
  auto c = client();
  EXPECT_TRUE(c.info().ok());
}

// ------------------------------------------------------------- hardening

// A dump larger than the old 8 MiB per-client queue limit (which dropped the
// client, contrary to "a dump is never truncated"): every entry arrives.
TEST_F(CtlServer, DumpsOfAnySizeArriveWhole) {
  handler.fdb.entries.clear();
  for (uint32_t i = 0; i < 300000; ++i) {
    Mac m{0x02, 0, uint8_t(i >> 24), uint8_t(i >> 16), uint8_t(i >> 8), uint8_t(i)};
    handler.fdb.entries.push_back({m, "vd" + std::to_string(i % 8), false, i});
  }
  start();
  auto c = client(20000);
  auto r = c.fdbGet();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->size(), 300000u);
  EXPECT_EQ((*r)[299999].age_ms, 299999u);
  EXPECT_FALSE(logged("does not read"));
}

// Connections a child holds as (uid, gid) until the returned fd is closed;
// the child reports on the pipe when it has made its connections.
struct Holder {
  pid_t pid = -1;
  int release = -1;  // closing it lets the child exit
  ~Holder() {
    if (release >= 0) ::close(release);
    if (pid > 0) {
      int ws;
      ::waitpid(pid, &ws, 0);
    }
  }
};
std::unique_ptr<Holder> holdConnections(const std::string& path, uid_t uid, gid_t gid, int n) {
  int ready[2], rel[2];
  if (::pipe(ready) != 0 || ::pipe(rel) != 0) return nullptr;
  auto h = std::make_unique<Holder>();
  h->pid = ::fork();
  if (h->pid == 0) {
    ::close(ready[0]);
    ::close(rel[1]);
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) _exit(10);
    std::vector<int> fds;
    for (int i = 0; i < n; ++i) {
      int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
      sockaddr_un a{};
      a.sun_family = AF_UNIX;
      std::strcpy(a.sun_path, path.c_str());
      if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) _exit(11);
      fds.push_back(fd);
    }
    char one = 1;
    (void)!::write(ready[1], &one, 1);
    char b;
    (void)!::read(rel[0], &b, 1);  // until the parent closes its end
    _exit(0);
  }
  ::close(ready[1]);
  ::close(rel[0]);
  h->release = rel[1];
  char b = 0;
  const bool ok = ::read(ready[0], &b, 1) == 1;
  ::close(ready[0]);
  return ok ? std::move(h) : nullptr;
}

// The tests that need root (to setuid() a child to other users, to chown):
// a ctest entry of their own, ctl_server_test (tests/unit/CMakeLists.txt),
// which without root shows as skipped; ctl_server_test_unprivileged runs
// the others.
class CtlServerAsRoot : public CtlServer {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: a child setuid()s to other users, a directory is chowned";
    CtlServer::SetUp();
  }
};

// Credentials are checked at accept: connections from a uid that may not
// use the socket hold no slot, so they cannot lock root out.
TEST_F(CtlServerAsRoot, NonMembersAreRefusedAtAcceptAndHoldNoSlot) {
  cfg.mode = 0666;
  cfg.group = 0;  // nobody is not a member
  start();
  ASSERT_EQ(::chmod((dir.path() + "/run").c_str(), 0755), 0);
  auto h = holdConnections(cfg.path, 65534, 65534, 70);
  ASSERT_TRUE(h);
  ASSERT_TRUE(waitFor([&] { return logged("connection refused: permission denied"); }));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(server->numClients(), 0u);
  auto c = client();
  EXPECT_TRUE(c.info().ok()) << "root locked out by connections that may not talk to vdevd";
  EXPECT_EQ(handler.count(), 1u);
}

// A member of the group holds at most max_clients_per_uid connections, and
// all non-root users together leave root_reserve for root.
TEST_F(CtlServerAsRoot, PerUidCapAndRootReserve) {
  cfg.mode = 0666;
  cfg.group = 65534;
  cfg.max_clients = 24;
  cfg.root_reserve = 8;
  cfg.max_clients_per_uid = 5;
  start();
  ASSERT_EQ(::chmod((dir.path() + "/run").c_str(), 0755), 0);
  auto nobody = holdConnections(cfg.path, 65534, 65534, 9);
  ASSERT_TRUE(nobody);
  ASSERT_TRUE(waitFor([&] { return server->numClients() == 5u && logged("5 per uid"); }))
      << server->numClients();
  // Other uids share 24 - 8 = 16 slots: 5 + 5 + 5, then 1 more.
  auto u2 = holdConnections(cfg.path, 65533, 65534, 5);
  auto u3 = holdConnections(cfg.path, 65532, 65534, 5);
  auto u4 = holdConnections(cfg.path, 65531, 65534, 5);
  ASSERT_TRUE(u2 && u3 && u4);
  ASSERT_TRUE(waitFor([&] { return server->numClients() == 16u && logged("for users other than root"); }))
      << server->numClients();
  // Root still has its reserve.
  std::vector<ControlClient> roots;
  for (int i = 0; i < 8; ++i) {
    roots.push_back(client());
    ASSERT_TRUE(roots.back().info().ok()) << "root connection " << i;
  }
  EXPECT_EQ(server->numClients(), 24u);
  auto extra = client();
  auto r = extra.info();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err, EBUSY);
}

TEST_F(CtlServer, IdleClientsAreClosed) {
  cfg.idle_timeout = 300ms;
  start();
  int idle = rawConnect();
  auto busy = client();
  ASSERT_TRUE(waitFor([&] { return server->numClients() == 2u; }));
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(busy.info().ok());
    std::this_thread::sleep_for(60ms);
  }
  std::vector<uint8_t> buf;
  EXPECT_EQ(recvTimeout(idle, buf, 3000), 0) << "the idle connection was not closed";
  EXPECT_TRUE(logged("idle (no request for 300 ms)"));
  EXPECT_TRUE(busy.info().ok()) << "a client that keeps asking is not idle";
  ::close(idle);
}

// The socket's directory must be vdevd's alone: a symlink, a directory
// someone else may write to, or one owned by another uid is refused.
TEST_F(CtlServer, UnsafeSocketDirectoryIsRefused) {
  const std::string real = dir.path() + "/real";
  ASSERT_EQ(::mkdir(real.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(real.c_str(), (dir.path() + "/link").c_str()), 0);
  cfg.path = dir.path() + "/link/vdevd.sock";
  auto s = ControlServer::create(cfg, handler);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().err, EPERM);
  EXPECT_NE(s.error().what.find("symbolic link"), std::string::npos) << s.error().what;

  ASSERT_EQ(::chmod(real.c_str(), 0775), 0);
  cfg.path = real + "/vdevd.sock";
  s = ControlServer::create(cfg, handler);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().what.find("writable by its group or by others"), std::string::npos) << s.error().what;
  ASSERT_EQ(::chmod(real.c_str(), 01777), 0);
  s = ControlServer::create(cfg, handler);
  ASSERT_FALSE(s.ok());

  ASSERT_EQ(::chmod(real.c_str(), 0755), 0);
  s = ControlServer::create(cfg, handler);
  ASSERT_TRUE(s.ok()) << s.error().message();
  // Nothing of the private bind directory is left beside the socket.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(real)) {
    (void)e;
    entries++;
  }
  EXPECT_EQ(entries, 1);
}

// ... and one owned by another uid (only root can make one).
TEST_F(CtlServerAsRoot, SocketDirectoryOfAnotherUidIsRefused) {
  const std::string real = dir.path() + "/real";
  ASSERT_EQ(::mkdir(real.c_str(), 0755), 0);
  ASSERT_EQ(::chown(real.c_str(), 65534, 65534), 0);
  cfg.path = real + "/vdevd.sock";
  auto s = ControlServer::create(cfg, handler);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().err, EPERM);
  EXPECT_NE(s.error().what.find("owned by uid 65534"), std::string::npos) << s.error().what;
  ASSERT_EQ(::chown(real.c_str(), 0, 0), 0);
  s = ControlServer::create(cfg, handler);
  ASSERT_TRUE(s.ok()) << s.error().message();
}

// Each connection has its own PeerCred::conn, and the handler hears when
// it closes (what vdevd's captures are tied to); capture replies arrive.
TEST_F(CtlServer, TheHandlerHearsWhichConnectionClosed) {
  start();
  uint64_t first = 0;
  {
    ControlClient c = client();
    auto r = c.captureStart(CaptureStartRequest{"vd0"});
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->id, 7u);
    EXPECT_EQ(r->snaplen, 2048u);
    auto rd = c.captureRead(7);
    ASSERT_TRUE(rd.ok()) << rd.error().message();
    EXPECT_EQ(rd->taken, 3u);
    first = handler.lastPeer().conn;
    EXPECT_NE(first, 0u);
    ControlClient other = client();
    ASSERT_TRUE(other.info().ok());
    EXPECT_NE(handler.lastPeer().conn, first) << "two connections, two ids";
    std::lock_guard<std::mutex> l(handler.mu);
    EXPECT_TRUE(handler.gone.empty());
  }
  ASSERT_TRUE(waitFor([&] {
    std::lock_guard<std::mutex> l(handler.mu);
    return handler.gone.size() == 2;
  }));
  std::lock_guard<std::mutex> l(handler.mu);
  EXPECT_NE(std::find(handler.gone.begin(), handler.gone.end(), first), handler.gone.end());
}

}  // namespace
}  // namespace vdev::proto
