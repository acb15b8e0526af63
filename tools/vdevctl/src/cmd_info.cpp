// vdevctl info
#include "commands.h"

namespace vdev::ctl {

int cmdInfo(Context& ctx, Args& a) {
  a.done();
  auto r = ctx.client().info();
  if (!r) return Context::fail(r.error());
  const vdev::proto::InfoMsg& m = *r;
  if (ctx.opt().json) {
    JsonWriter w(ctx.opt().pretty);
    w.beginObject();
    w.field("version", m.version);
    w.field("mode", vdev::proto::switchModeName(m.mode));
    w.field("threads", m.threads);
    w.field("uptime_s", m.uptime_s);
    w.field("ports", m.num_ports);
    w.endObject();
    return Context::print(w.str());
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
