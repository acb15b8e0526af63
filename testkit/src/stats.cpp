#include "testkit/stats.h"

#include <signal.h>
#include <unistd.h>

#include "testkit/files.h"
#include "testkit/wait.h"

namespace vdev::testkit {

namespace {
// For messages: never throws, whatever bytes a string holds.
std::string text(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }
}  // namespace

Result<uint64_t> counter(const nlohmann::json& node, std::string_view name) {
  const nlohmann::json* at = &node;
  std::string_view rest = name;
  while (!rest.empty()) {
    const size_t dot = rest.find('.');
    const std::string key(rest.substr(0, dot));
    if (!at->is_object()) return Error{ENOENT, "statistics: no counter " + std::string(name)};
    const auto it = at->find(key);
    if (it == at->end()) return Error{ENOENT, "statistics: no counter " + std::string(name)};
    at = &*it;
    rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
  }
  if (!at->is_number_unsigned())
    return Error{EINVAL, "statistics: counter " + std::string(name) + " is not an unsigned integer: " + text(*at)};
  return at->get<uint64_t>();
}

namespace {

Result<uint64_t> mapped(const std::map<std::string, uint64_t>& m, const std::string& port, const char* group,
                        std::string_view key) {
  const auto it = m.find(std::string(key));
  if (it == m.end()) return Error{ENOENT, "statistics: port " + port + " has no " + group + "." + std::string(key)};
  return it->second;
}

// Every counter of `group` ("drops", ...) in a port object, by name.
Status readGroup(const nlohmann::json& port, const char* group, std::map<std::string, uint64_t>& out) {
  const auto g = port.find(group);
  if (g == port.end() || !g->is_object()) return Error{ENOENT, std::string("statistics: no ") + group};
  for (const auto& [key, value] : g->items()) {
    auto v = counter(port, std::string(group) + "." + key);
    if (!v) return v.error();
    out[key] = *v;
  }
  return {};
}

std::string stringOf(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

Result<PortStats> parsePort(const nlohmann::json& p) {
  PortStats ps;
  if (!p.is_object() || !p.contains("name") || !p["name"].is_string())
    return Error{EINVAL, "statistics: a port without a name: " + text(p)};
  ps.name = p["name"].get<std::string>();
  const auto need = [&](const char* name, uint64_t& out) -> Status {
    auto v = counter(p, name);
    if (!v) return Error{EINVAL, "port " + ps.name + ": " + v.error().what};
    out = *v;
    return {};
  };
  // Optional: absent from older documents and the descriptive fields.
  const auto optional = [&](const char* name) { return p.contains(name) ? counter(p, name) : Result<uint64_t>(0); };
  uint64_t ifindex = 0;
  for (auto [name, out] : {std::pair{"ifindex", &ifindex}, std::pair{"rx_packets", &ps.rx_packets},
                           std::pair{"rx_bytes", &ps.rx_bytes}, std::pair{"tx_packets", &ps.tx_packets},
                           std::pair{"tx_bytes", &ps.tx_bytes}})
    if (Status s = need(name, *out); !s) return s.error();
  ps.ifindex = int(ifindex);
  auto queues = optional("queues"), mtu = optional("mtu"), outstanding = optional("tx_outstanding");
  for (auto* r : {&queues, &mtu, &outstanding})
    if (!*r) return r->error();
  ps.queues = int(*queues);
  ps.mtu = int(*mtu);
  ps.tx_outstanding = *outstanding;
  ps.xdp_mode = stringOf(p, "xdp_mode");
  ps.bind_mode = stringOf(p, "bind_mode");
  if (Status s = readGroup(p, "drops", ps.drops); !s) return Error{EINVAL, "port " + ps.name + ": " + s.error().what};
  for (auto [group, out] : {std::pair{"xdp_stats", &ps.xdp_stats}, std::pair{"xdp_prog", &ps.xdp_prog}})
    if (p.contains(group))
      if (Status s = readGroup(p, group, *out); !s) return Error{EINVAL, "port " + ps.name + ": " + s.error().what};
  if (p.contains("dev")) {
    auto v = counter(p, "dev.tx_dropped");
    if (!v) return Error{EINVAL, "port " + ps.name + ": " + v.error().what};
    ps.dev_tx_dropped = *v;
  }
  return ps;
}

}  // namespace

Result<uint64_t> PortStats::drop(std::string_view reason) const { return mapped(drops, name, "drops", reason); }

uint64_t PortStats::dropsTotal() const {
  uint64_t n = 0;
  for (const auto& [k, v] : drops) n += v;
  return n;
}

Result<uint64_t> PortStats::xdp(std::string_view stat) const { return mapped(xdp_stats, name, "xdp_stats", stat); }

Result<uint64_t> PortStats::xdpRxDrops() const {
  uint64_t n = 0;
  for (const char* k : {"rx_dropped", "rx_ring_full"}) {
    auto v = xdp(k);
    if (!v) return v.error();
    n += *v;
  }
  return n;
}

const PortStats* Stats::findPort(std::string_view name) const {
  for (const auto& p : ports)
    if (p.name == name) return &p;
  return nullptr;
}

Result<Stats> parseStats(std::string_view text) {
  Stats s;
  s.raw = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (s.raw.is_discarded()) return Error{EINVAL, "statistics: not JSON"};
  if (!s.raw.is_object() || !s.raw.contains("ports") || !s.raw["ports"].is_array())
    return Error{EINVAL, "statistics: no \"ports\" array"};
  for (const nlohmann::json& p : s.raw["ports"]) {
    auto ps = parsePort(p);
    if (!ps) return ps.error();
    s.ports.push_back(std::move(*ps));
  }
  if (!s.raw.contains("pool")) return Error{EINVAL, "statistics: no \"pool\""};
  const nlohmann::json& pool = s.raw["pool"];
  for (const stats::CounterDef& c : stats::kPoolCounters) {
    auto v = counter(pool, c.path);
    if (!v) return Error{EINVAL, "pool: " + v.error().what};
    s.pool[c] = *v;
  }
  auto sum = counter(pool, "sum");
  if (!sum) return Error{EINVAL, "pool: " + sum.error().what};
  s.pool.reported_sum = *sum;
  return s;
}

Result<std::string> requestStats(Child& vdevd, const std::string& path, std::chrono::nanoseconds timeout) {
  ::unlink(path.c_str());
  if (Status s = vdevd.signal(SIGUSR1); !s) return s.error();
  const bool written =
      waitUntil([&] { return ::access(path.c_str(), F_OK) == 0 || !vdevd.running(); }, timeout, 2ms);
  if (!vdevd.running()) return Error{ECHILD, "vdevd exited while asked for statistics"};
  if (!written)
    return Error{ETIMEDOUT, "vdevd wrote no " + path + " within " +
                                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) +
                                " ms of SIGUSR1"};
  return readFile(path);
}

}  // namespace vdev::testkit
