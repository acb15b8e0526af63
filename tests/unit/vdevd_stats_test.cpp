// vdevd's statistics outputs (daemon/stats_format.h): the --stats-json
// document keeps the fields, nesting and order docs/vdevd.md documents, and
// the SIGUSR1 table shows every counter of every port.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "daemon/stats_format.h"
#include "stats/format.h"

namespace vdev::daemon {
namespace {

using stats::Json;

datapath::DatapathStats sample() {
  datapath::DatapathStats d;
  for (const char* name : {"vd0", "vm1"}) {
    datapath::PortStats p;
    p.name = name;
    p.ifindex = 12;
    p.queues = 2;
    p.queues_bound = 1;
    p.xdp_mode = vdev::datapath::XdpMode::kNative;
    p.bind_mode = vdev::datapath::BindMode::kCopy;
    p.mtu = 1500;
    p.live = true;
    p.fast_rx = name[1] == 'd';
    for (const stats::CounterDef& c : stats::kPortCounters) p.counters[c] = 1000 * (name[1] == 'd') + c.id + 1;
    d.ports.push_back(p);
  }
  d.removed_ports = 3;
  for (const stats::CounterDef& c : stats::kPortCounters)
    if (c.origin == stats::Origin::kCounted) d.removed[c] = 50 + c.id;
  for (const stats::CounterDef& c : stats::kPoolCounters) d.pool[c] = 10 * c.id;
  d.pool[stats::kPoolTotal] = d.pool.sum();
  d.fdb_entries = 4;
  return d;
}

std::vector<std::string> keys(const Json& o) {
  std::vector<std::string> k;
  for (const auto& [key, v] : o.items()) k.push_back(key);
  return k;
}

// `head`, then the fields the table's rows make at the top of an object (a
// counter, or its group at its first row), in row order.
std::vector<std::string> withCounters(std::vector<std::string> head,
                                      std::optional<stats::Origin> only = std::nullopt) {
  for (const stats::CounterDef& c : stats::kPortCounters) {
    if (only && c.origin != *only) continue;
    const std::string k(c.group().empty() ? c.name() : c.group());
    if (head.back() != k) head.push_back(k);
  }
  return head;
}

// `doc` appears in `got` in this order (other fields may come between:
// counters added later).
void expectInOrder(const std::vector<std::string>& got, const std::vector<std::string>& doc) {
  size_t at = 0;
  for (const std::string& k : got)
    if (at < doc.size() && k == doc[at]) ++at;
  EXPECT_EQ(at, doc.size()) << "documented field " << (at < doc.size() ? doc[at] : "") << " missing or out of order";
}

TEST(VdevdStats, JsonFieldsNestingAndOrder) {
  const datapath::DatapathStats d = sample();
  const std::string text = statsJson(d);
  ASSERT_EQ(text.back(), '\n');
  const Json j = Json::parse(text);
  EXPECT_EQ(keys(j), (std::vector<std::string>{"ports", "removed_ports", "pool", "fdb_entries"}));
  ASSERT_EQ(j["ports"].size(), 2u);
  const Json& p = j["ports"][0];
  const std::vector<std::string> info = {"name", "ifindex", "queues", "queues_bound", "xdp_mode",
                                         "hook", "bind_mode", "mtu",  "live",         "fast_rx"};
  EXPECT_EQ(keys(p), withCounters(info));
  // As docs/vdevd.md shows it.
  expectInOrder(keys(p), {"name", "ifindex", "queues", "queues_bound", "xdp_mode", "hook", "bind_mode", "mtu",
                          "live", "fast_rx", "rx_packets", "rx_bytes", "tx_packets", "tx_bytes",
                          "tx_outstanding", "drops", "xdp_stats", "xdp_prog", "dev"});
  EXPECT_EQ(p["name"], "vd0");
  EXPECT_EQ(p["xdp_mode"], "native");
  EXPECT_EQ(p["hook"], "xdp");
  EXPECT_EQ(p["live"], true);
  EXPECT_EQ(p["fast_rx"], true);
  EXPECT_EQ(j["ports"][1]["fast_rx"], false);
  for (size_t i = 0; i < 2; ++i) {
    auto back = stats::readPortCounters(j["ports"][i]);
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(*back, d.ports[i].counters);
  }
  const Json& removed = j["removed_ports"];
  EXPECT_EQ(keys(removed), withCounters({"count"}, stats::Origin::kCounted));
  expectInOrder(keys(removed), {"count", "rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "drops"});
  EXPECT_EQ(removed["count"], 3u);
  EXPECT_EQ(removed["drops"].size(), size_t(stats::kNumDropReasons));
  auto r = stats::readPortCounters(removed);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, d.removed);
  EXPECT_EQ(keys(j["pool"]), (std::vector<std::string>{"total", "free", "fill_ring", "kernel_rx", "rx_ring",
                                                       "rx_burst", "port_rings", "tx_ring", "kernel_tx",
                                                       "comp_ring", "kernel_held", "sum"}));
  EXPECT_EQ(j["pool"]["sum"], d.pool.sum());
  EXPECT_EQ(j["fdb_entries"], 4u);
}

// A port with an skb program says how it is attached (and, at clsact,
// whether vdevd made the qdisc); one that auto took to XDP says why. Both
// after "hook"; absent otherwise (above).
TEST(VdevdStats, JsonTcAttachAndHookNote) {
  datapath::DatapathStats d = sample();
  d.ports[0].hook = vdev::datapath::PortHook::kTc;
  d.ports[0].tc_attach = vdev::datapath::TcAttach::kClsact;
  d.ports[0].clsact_made = true;
  d.ports[1].tc_attach = vdev::datapath::TcAttach::kTcx;
  d.ports[1].hook_note = "at the XDP hook, not tc: no";
  const Json j = Json::parse(statsJson(d));
  const Json& tc = j["ports"][0];
  expectInOrder(keys(tc), {"name", "xdp_mode", "hook", "tc_attach", "clsact_made", "bind_mode"});
  EXPECT_EQ(tc["tc_attach"], "clsact");
  EXPECT_EQ(tc["clsact_made"], true);
  EXPECT_FALSE(tc.contains("hook_note"));
  const Json& moved = j["ports"][1];
  expectInOrder(keys(moved), {"hook", "hook_note", "tc_attach", "bind_mode"});
  EXPECT_EQ(moved["hook_note"], "at the XDP hook, not tc: no");
  EXPECT_EQ(moved["tc_attach"], "tcx");
  EXPECT_FALSE(moved.contains("clsact_made")) << "only at clsact";
}

TEST(VdevdStats, TableShowsEveryCounterOfEveryPort) {
  const datapath::DatapathStats d = sample();
  const std::string t = statsTable(d);
  EXPECT_EQ(t.rfind("vd0: ifindex 12, 1/2 queue(s) bound, hook xdp, xdp native, copy, mtu 1500\n", 0), 0u) << t;
  EXPECT_NE(t.find("vm1: ifindex 12, 1/2 queue(s) bound, hook xdp, xdp native, copy, mtu 1500, fast-rx off\n"),
            std::string::npos)
      << t;
  for (const datapath::PortStats& p : d.ports) EXPECT_NE(t.find(stats::portText(p.counters)), std::string::npos);
  EXPECT_NE(t.find("removed ports (3):\n" + stats::portText(d.removed, stats::Origin::kCounted)),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("pool: " + stats::poolText(d.pool) + "\n"), std::string::npos) << t;
  EXPECT_NE(t.find("adds up"), std::string::npos) << t;
}

// The punt device is reported beside the ports, never among them: tools that
// walk "ports" see ports only.
TEST(VdevdStats, PuntDeviceIsItsOwnObject) {
  datapath::DatapathStats d = sample();
  datapath::PortStats punt;
  punt.name = "vdp1234abcdu";
  punt.ifindex = 40;
  punt.mtu = 1774;
  punt.live = true;
  punt.punt = true;
  punt.counters[stats::kDropNoRoute] = 7;
  d.ports.push_back(punt);
  const Json j = Json::parse(statsJson(d));
  ASSERT_EQ(j["ports"].size(), 2u) << j.dump();
  for (const Json& p : j["ports"]) EXPECT_NE(p["name"], "vdp1234abcdu");
  ASSERT_TRUE(j.contains("punt")) << j.dump();
  EXPECT_EQ(j["punt"]["name"], "vdp1234abcdu");
  EXPECT_EQ(j["punt"]["mtu"], 1774);
  EXPECT_EQ(j["punt"]["drops"]["no_route"], 7);
  const std::string t = statsTable(d);
  EXPECT_NE(t.find("punt device vdp1234abcdu: ifindex 40, mtu 1774\n"), std::string::npos) << t;
  EXPECT_FALSE(Json::parse(statsJson(sample())).contains("punt"));
}

}  // namespace
}  // namespace vdev::daemon
