// vdevctl info
#include "commands.h"

namespace vdev::ctl {

namespace {

std::vector<std::string> issueLines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    size_t j = text.find('\n', i);
    if (j == std::string::npos) j = text.size();
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace

int cmdInfo(Context& ctx, Args& a) {
  a.done();
  auto r = ctx.client().info();
  if (!r) return Context::fail(r.error());
  const vdev::proto::InfoMsg& m = *r;
  if (ctx.opt().json) {
    Json o = Json::object();
    o["version"] = m.version;
    o["mode"] = vdev::proto::switchModeName(m.mode);
    o["threads"] = m.threads;
    o["uptime_s"] = m.uptime_s;
    o["ports"] = m.num_ports;
    if (m.fd_limit) o["fd_limit"] = *m.fd_limit;
    if (m.ports_fd_left) o["ports_fd_left"] = *m.ports_fd_left;
    if (m.ports_pool_left) o["ports_pool_left"] = *m.ports_pool_left;
    if (m.ports_map_left) o["ports_map_left"] = *m.ports_map_left;
    o["start_issues"] = issueLines(m.start_issues);
    if (m.tc_attach) o["tc_attach"] = vdev::proto::tcAttachName(*m.tc_attach);
    if (m.kernel_features) {
      Json& k = o["kernel_features"] = Json::object();
      for (uint8_t b = 0; b < vdev::proto::kKfCount; b++)
        k[vdev::proto::kernelFeatureName(b)] = ((*m.kernel_features >> b) & 1) != 0;
    }
    if (m.uid_caps) {
      const auto& c = *m.uid_caps;
      o["uid_caps"] = Json{{"ports", c.ports}, {"fdb", c.fdb}, {"capture_bytes", c.capture_bytes},
                           {"rate", c.rate}, {"burst", c.burst}};
      Json& u = o["uid_use"] = Json::array();
      for (const auto& x : m.uid_use)
        u.push_back(Json{{"uid", x.uid},
                         {"ports", x.ports},
                         {"fdb", x.fdb},
                         {"capture_bytes", x.capture_bytes},
                         {"requests", x.requests},
                         {"requests_refused", x.requests_refused}});
    }
    return Context::print(jsonText(o, ctx.opt().pretty));
  }
  std::string o;
  o += "version:  " + m.version + "\n";
  o += std::string("mode:     ") + vdev::proto::switchModeName(m.mode) + "\n";
  o += "threads:  " + std::to_string(m.threads) + "\n";
  o += "uptime:   " + duration(m.uptime_s) + "\n";
  o += "ports:    " + std::to_string(m.num_ports) + "\n";
  if (m.fd_limit)
    o += "fds:      limit " + std::to_string(*m.fd_limit) +
         (m.ports_fd_left ? ", room for " + std::to_string(*m.ports_fd_left) + " more ports" : std::string()) + "\n";
  if (m.ports_pool_left)
    o += "pool:     room for " + std::to_string(*m.ports_pool_left) + " more ports at the XDP hook\n";
  if (m.ports_map_left)
    o += "maps:     room for " + std::to_string(*m.ports_map_left) + " more ports on the fast path\n";
  if (m.tc_attach) o += std::string("tc attach: ") + vdev::proto::tcAttachName(*m.tc_attach) + "\n";
  if (m.kernel_features) {
    // The features in use, by name (a newer daemon's unknown bits by number).
    std::string used;
    for (uint8_t b = 0; b < 64; b++) {
      if (!((*m.kernel_features >> b) & 1)) continue;
      const char* n = vdev::proto::kernelFeatureName(b);
      used += (used.empty() ? "" : " ") + (n ? std::string(n) : "bit" + std::to_string(b));
    }
    o += "kernel:   " + (used.empty() ? std::string("-") : used) + "\n";
  }
  if (m.uid_caps) {
    // 0 in a cap is none.
    const auto cap = [](uint64_t v) { return v ? std::to_string(v) : std::string("-"); };
    const auto& c = *m.uid_caps;
    o += "uid caps: ports " + cap(c.ports) + ", fdb " + cap(c.fdb) + ", capture " + cap(c.capture_bytes) +
         " bytes, " + cap(c.rate) + " requests/s (burst " + std::to_string(c.burst) + ")\n";
    for (const auto& x : m.uid_use)
      o += "uid " + std::to_string(x.uid) + ": ports " + std::to_string(x.ports) + ", fdb " + std::to_string(x.fdb) + ", capture " +
           std::to_string(x.capture_bytes) + " bytes, requests " + std::to_string(x.requests) + " (" +
           std::to_string(x.requests_refused) + " refused by the rate)\n";
  }
  o += "socket:   " + ctx.opt().socket + "\n";
  // What vdevd could not restore when it started (the state file, --port).
  for (const auto& line : issueLines(m.start_issues)) o += "not restored: " + line + "\n";
  return Context::print(o);
}

}  // namespace vdev::ctl
