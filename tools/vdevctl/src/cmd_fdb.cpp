// vdevctl fdb show | add | del
#include <algorithm>
#include <tuple>

#include "commands.h"

namespace vdev::ctl {

int cmdFdbShow(Context& ctx, Args& a) {
  a.done();
  auto r = ctx.client().fdbGet();
  if (!r) return Context::fail(r.error());
  auto entries = std::move(r.value());
  std::sort(entries.begin(), entries.end(), [](const auto& x, const auto& y) {
    return std::tie(x.port, x.vid, x.mac) < std::tie(y.port, y.vid, y.mac);
  });
  if (ctx.opt().json) {
    Json a = Json::array();
    for (const auto& e : entries) {
      Json o = Json::object();
      o["mac"] = vdev::formatMac(e.mac);
      o["vlan"] = e.vid;
      o["port"] = e.port;
      o["static"] = e.is_static;
      o["age_ms"] = e.age_ms;
      a.push_back(std::move(o));
    }
    return Context::print(jsonText(a, ctx.opt().pretty));
  }
  Table t({{"MAC"}, {"VLAN", true}, {"PORT"}, {"TYPE"}, {"AGE", true}});
  for (const auto& e : entries)
    t.row({vdev::formatMac(e.mac), std::to_string(e.vid), e.port, e.is_static ? "static" : "learned",
           e.is_static ? "-" : fixed(double(e.age_ms) / 1000.0, 1) + "s"});
  return Context::print(t.render());
}

int cmdFdbAdd(Context& ctx, Args& a) {
  const vdev::proto::Mac mac = a.mac("MAC");
  if (!a.accept("port")) {
    if (a.empty()) a.usage("missing 'port IFNAME'");
    a.usage("expected 'port IFNAME', not '" + a.peek() + "'");
  }
  const std::string port = a.ifname("interface name after 'port'");
  const uint16_t vid = a.accept("vlan") ? uint16_t(a.u32("vlan", 1, vdev::kVidMax)) : vdev::kVidDefault;
  a.done();
  if (auto st = ctx.client().fdbAdd(mac, port, true, vid); !st) return Context::fail(st.error());
  return kExitOk;
}

int cmdFdbDel(Context& ctx, Args& a) {
  const vdev::proto::Mac mac = a.mac("MAC");
  const uint16_t vid = a.accept("vlan") ? uint16_t(a.u32("vlan", 1, vdev::kVidMax)) : vdev::kVidDefault;
  a.done();
  if (auto st = ctx.client().fdbDel(mac, vid); !st) return Context::fail(st.error());
  return kExitOk;
}

}  // namespace vdev::ctl
