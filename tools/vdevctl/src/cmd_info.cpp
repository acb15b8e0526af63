// vdevctl info
#include "commands.h"

namespace vdev::ctl {

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
    return Context::print(jsonText(o, ctx.opt().pretty));
  }
  std::string o;
  o += "version:  " + m.version + "\n";
  o += std::string("mode:     ") + vdev::proto::switchModeName(m.mode) + "\n";
  o += "threads:  " + std::to_string(m.threads) + "\n";
  o += "uptime:   " + duration(m.uptime_s) + "\n";
  o += "ports:    " + std::to_string(m.num_ports) + "\n";
  o += "socket:   " + ctx.opt().socket + "\n";
  return Context::print(o);
}

}  // namespace vdev::ctl
