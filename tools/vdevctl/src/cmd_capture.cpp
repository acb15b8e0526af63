// vdevctl capture: a copy of what a port receives and sends, as pcapng
// (base/pcapng.h) or one line per frame.
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "base/pcapng.h"
#include "commands.h"

namespace vdev::ctl {

namespace {

// Writes all of buf to fd. false: it could not (errno set).
bool writeAll(int fd, const std::vector<uint8_t>& buf) {
  size_t at = 0;
  while (at < buf.size()) {
    const ssize_t n = ::write(fd, buf.data() + at, buf.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += size_t(n);
  }
  return true;
}

uint64_t realtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// One line of the text form: time, direction, MACs, EtherType, length.
std::string frameLine(const vdev::proto::CapturedFrame& f) {
  const time_t s = time_t(f.time_ns / 1000000000);
  struct tm tm {};
  localtime_r(&s, &tm);
  char t[32];
  std::snprintf(t, sizeof t, "%02d:%02d:%02d.%06u", tm.tm_hour, tm.tm_min, tm.tm_sec,
                unsigned(f.time_ns % 1000000000 / 1000));
  std::string line = std::string(t) + (f.dir == vdev::proto::CaptureDir::kRx ? " rx " : " tx ");
  if (f.data.size() >= 14) {
    vdev::Mac dst, src;
    std::memcpy(dst.data(), f.data.data(), 6);
    std::memcpy(src.data(), f.data.data() + 6, 6);
    char type[16];
    std::snprintf(type, sizeof type, "0x%04x", unsigned(f.data[12]) << 8 | f.data[13]);
    line += vdev::formatMac(src) + " > " + vdev::formatMac(dst) + " type " + type;
  } else {
    line += "runt";
  }
  return line + " length " + std::to_string(f.wire_len) + "\n";
}

// One filter option (--mac, --vlan, --ethertype, --ip, --proto, --port)
// and its value, into f; a usage error for a bad value or one given twice.
void filterOption(Args& a, const std::string& arg, vdev::proto::CaptureFilter& f) {
  auto twice = [&](bool given) {
    if (given) a.usage(arg + " given twice (a filter's fields all must match: give each once)");
  };
  if (arg == "--mac") {
    twice(f.mac.has_value());
    const std::string v = a.next("a MAC address after --mac");
    f.mac = vdev::parseMac(v);
    if (!f.mac) a.usage("--mac '" + v + "': expected a MAC address (aa:bb:cc:dd:ee:ff)");
  } else if (arg == "--vlan") {
    twice(f.vlan.has_value());
    f.vlan = uint16_t(a.u32(arg, 1, vdev::kVidMax));
  } else if (arg == "--ethertype") {
    twice(f.ethertype.has_value());
    const std::string v = a.next("an EtherType after --ethertype");
    f.ethertype = vdev::proto::parseCaptureEthertype(v);
    if (!f.ethertype)
      a.usage("--ethertype '" + v + "': expected arp, ipv4, ipv6 or a number from 0x0600 to 0xffff");
  } else if (arg == "--ip") {
    twice(f.ip.has_value());
    const std::string v = a.next("an IPv4 or IPv6 address after --ip");
    f.ip = vdev::parseIp(v);
    if (!f.ip || *f.ip == vdev::IpAddr{}) a.usage("--ip '" + v + "': expected an IPv4 or IPv6 address");
  } else if (arg == "--proto") {
    twice(f.proto.has_value());
    const std::string v = a.next("a protocol after --proto");
    f.proto = vdev::proto::parseCaptureProto(v);
    if (!f.proto) a.usage("--proto '" + v + "': expected tcp, udp, icmp, icmpv6 or a number from 0 to 255");
  } else {
    twice(f.port.has_value());
    f.port = uint16_t(a.u32(arg, 0, 65535));
  }
}

// The filter's own contradictions, as the codec refuses them, before vdevd
// is asked: a usage error naming the options.
void checkFilter(Args& a, const vdev::proto::CaptureFilter& f) {
  if (f.port && f.proto && *f.proto != 6 && *f.proto != 17)
    a.usage("--port with --proto " + std::to_string(*f.proto) + ": ports are TCP's and UDP's (--proto tcp or udp)");
  if ((f.ip || f.proto || f.port) && f.ethertype && *f.ethertype != 0x0800 && *f.ethertype != 0x86dd)
    a.usage("--ip, --proto and --port match IPv4 and IPv6 frames only: --ethertype must be ipv4 or ipv6 with them");
}

}  // namespace

int cmdCapture(Context& ctx, Args& a) {
  const std::string port = a.ifname("IFNAME");
  vdev::proto::CaptureStartRequest req;
  req.name = port;
  std::optional<uint32_t> count;
  std::optional<std::string> file;
  while (!a.empty()) {
    const std::string arg = a.next("option");
    if (arg == "--direction" || arg == "-d" || arg == "direction") {
      const std::string d = a.next("rx, tx or both after " + arg);
      auto dir = vdev::proto::parseCaptureDir(d);
      if (!dir) a.usage("direction '" + d + "': expected rx, tx or both");
      req.dir = *dir;
    } else if (arg == "--count" || arg == "-c" || arg == "count") {
      count = a.u32(arg, 1, UINT32_MAX);
    } else if (arg == "--snaplen" || arg == "snaplen") {
      req.snaplen = a.u32(arg, vdev::proto::kCaptureSnaplenMin, vdev::proto::kCaptureSnaplenMax);
    } else if (arg == "--buffer" || arg == "buffer") {
      req.buffer = a.u32(arg, vdev::proto::kCaptureBufferMin, vdev::proto::kCaptureBufferMax);
    } else if (arg == "--mac" || arg == "--vlan" || arg == "--ethertype" || arg == "--ip" || arg == "--proto" ||
               arg == "--port") {
      if (!req.filter) req.filter.emplace();
      filterOption(a, arg, *req.filter);
    } else if (arg == "-w" || arg == "--write" || arg == "write") {
      file = a.next("a file name (or - for stdout) after " + arg);
    } else {
      a.unknown(arg);
    }
  }
  if (ctx.opt().json) a.usage("-j/--json does not apply: the capture is pcapng (-w) or text");
  if (req.filter) checkFilter(a, *req.filter);

  // SIGINT/SIGTERM end the capture normally, taken synchronously between
  // reads; a reader of stdout that goes away is a write error, not a signal.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigprocmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const bool pcap = file.has_value();
  auto& client = ctx.client();
  auto started = client.captureStart(req);
  if (!started) return Context::fail(started.error());
  const uint32_t id = started->id;
  // The file once vdevd took the capture: a refused one leaves it as it was.
  int out = STDOUT_FILENO;
  if (file && *file != "-") {
    out = ::open(file->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) {
      const vdev::Error e = vdev::errnoError("open " + *file);
      (void)client.captureStop(id);
      return Context::fail(e);
    }
  }
  const uint32_t snaplen = started->snaplen.value_or(req.snaplen.value_or(vdev::proto::kCaptureSnaplenMax));
  std::fprintf(stderr, "vdevctl: capturing %s on %s (snaplen %u%s)%s\n",
               vdev::proto::captureDirName(req.dir), port.c_str(), snaplen, req.filter ? ", filtered" : "",
               count ? "" : "; Ctrl-C stops");
  std::vector<uint8_t> buf;
  if (pcap) {
    buf = vdev::pcapng::sectionHeader("vdevctl capture");
    auto idb = vdev::pcapng::interfaceDescription(port, snaplen);
    buf.insert(buf.end(), idb.begin(), idb.end());
  }

  uint64_t written = 0;
  std::string why;  // why it ended early ("" : asked to, or the count)
  bool write_failed = false;
  vdev::proto::CaptureMsg last;
  bool stopping = false;  // SIGINT or SIGTERM came
  constexpr int kFinalReads = 64;
  int final_reads = 0;
  for (;;) {
    auto r = client.captureRead(id);
    if (!r) return Context::fail(r.error());
    last = *r;
    auto frames = vdev::proto::parseCaptureFrames(r->frames);
    if (!frames) return Context::fail(frames.error());
    std::string text;
    for (const auto& f : *frames) {
      if (count && written == *count) break;
      written++;
      if (pcap) {
        auto b = vdev::pcapng::enhancedPacket(0, f.time_ns, f.data, f.wire_len,
                                              f.dir == vdev::proto::CaptureDir::kRx ? vdev::pcapng::kInbound
                                                                                    : vdev::pcapng::kOutbound);
        buf.insert(buf.end(), b.begin(), b.end());
      } else {
        text += frameLine(f);
      }
    }
    if (!buf.empty() || !text.empty()) {
      if (!writeAll(out, pcap ? buf : std::vector<uint8_t>(text.begin(), text.end()))) {
        why = std::string("writing ") + (file && *file != "-" ? *file : "stdout") + ": " + std::strerror(errno);
        write_failed = true;
        break;
      }
      buf.clear();
    }
    if (count && written == *count) break;
    if (r->ended) {
      why = "port " + port + " was removed";
      break;
    }
    if (stopping) {
      // Asked to stop: what vdevd copied until then is still written, in
      // a bounded number of reads (a port that keeps sending would never
      // leave the capture empty).
      if (frames->empty() || ++final_reads == kFinalReads) break;
      continue;
    }
    // More may be waiting: read again at once; nothing now: look again in
    // 10 ms. Unless asked to stop.
    timespec wait{0, frames->empty() ? 10 * 1000 * 1000 : 0};
    if (::sigtimedwait(&sigs, nullptr, &wait) > 0) stopping = true;
  }
  auto stopped = client.captureStop(id);
  if (stopped) last = *stopped;
  if (pcap && !write_failed) {
    buf = vdev::pcapng::interfaceStatistics(0, realtimeNs(), last.taken + last.drops, last.drops);
    (void)writeAll(out, buf);
  }
  if (out != STDOUT_FILENO) ::close(out);
  const uint64_t unread = last.taken > written ? last.taken - written : 0;
  std::fprintf(stderr, "vdevctl: %llu frames written; %llu missed by the capture (its buffer full: --buffer)%s%s\n",
               (unsigned long long)written, (unsigned long long)last.drops,
               unread ? (", " + std::to_string(unread) + " more copied but not written (after the end)").c_str() : "",
               why.empty() ? "" : ("; stopped: " + why).c_str());
  if (!stopped) return Context::fail(stopped.error());
  return write_failed ? kExitFail : kExitOk;
}

}  // namespace vdev::ctl
