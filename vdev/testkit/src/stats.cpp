#include "testkit/stats.h"

#include <signal.h>
#include <unistd.h>

#include "stats/format.h"
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

std::string stringOf(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

Result<PortStats> parsePort(const nlohmann::json& p) {
  PortStats ps;
  if (!p.is_object() || !p.contains("name") || !p["name"].is_string())
    return Error{EINVAL, "statistics: a port without a name: " + text(p)};
  ps.name = p["name"].get<std::string>();
  const auto bad = [&](const Error& e) { return Error{EINVAL, "port " + ps.name + ": " + e.what}; };
  // What every document has; the counters' values come from the table below.
  for (const char* name : {"rx_packets", "rx_bytes", "tx_packets", "tx_bytes"})
    if (auto v = counter(p, name); !v) return bad(v.error());
  if (!p.contains("drops") || !p["drops"].is_object()) return bad(Error{ENOENT, "statistics: no drops"});
  auto values = stats::readPortCounters(p);
  if (!values) return bad(values.error());
  static_cast<stats::PortValues&>(ps) = *values;
  // The descriptive fields: absent from older documents.
  const auto optional = [&](const char* name) { return p.contains(name) ? counter(p, name) : Result<uint64_t>(0); };
  auto ifindex = counter(p, "ifindex"), queues = optional("queues"), mtu = optional("mtu");
  for (auto* r : {&ifindex, &queues, &mtu})
    if (!*r) return bad(r->error());
  ps.ifindex = int(*ifindex);
  ps.queues = int(*queues);
  ps.mtu = int(*mtu);
  ps.xdp_mode = stringOf(p, "xdp_mode");
  ps.bind_mode = stringOf(p, "bind_mode");
  return ps;
}

// The counter at `path` in the table, or ENOENT naming it.
Result<uint64_t> byPath(const PortStats& p, const std::string& path) {
  const auto id = stats::findPortCounter(path);
  if (!id) return Error{ENOENT, "statistics: no counter " + path + " in the counter table"};
  return p[stats::PortCounter(*id)];
}

}  // namespace

Result<uint64_t> PortStats::drop(std::string_view reason) const {
  return byPath(*this, "drops." + std::string(reason));
}

Result<uint64_t> PortStats::xdp(std::string_view stat) const {
  return byPath(*this, "xdp_stats." + std::string(stat));
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
