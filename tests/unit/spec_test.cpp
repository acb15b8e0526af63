// spec: the modes' numbers and names, and the policy table (spec/port_spec.h,
// spec/port_policy.h).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "spec/port_policy.h"
#include "spec/port_spec.h"

namespace vdev::spec {
namespace {

// Every value reads back by its name, and a name is one value's.
template <class E, size_t N>
void expectNamesRoundTrip(const Named<E> (&table)[N]) {
  std::set<std::string> names;
  for (const Named<E>& n : table) {
    EXPECT_STREQ(nameOfValue(n.value), n.name);
    EXPECT_EQ(byName(n.name, {n.value}), n.value) << n.name;
    EXPECT_TRUE(names.insert(n.name).second) << n.name << " twice";
  }
  EXPECT_EQ(byName<E>("Auto", {table[0].value}), std::nullopt) << "one spelling";
}

TEST(Spec, NamesRoundTrip) {
  expectNamesRoundTrip(kPortTypeNames);
  expectNamesRoundTrip(kPortHookNames);
  expectNamesRoundTrip(kTcAttachNames);
  expectNamesRoundTrip(kXdpModeNames);
  expectNamesRoundTrip(kBindModeNames);
  expectNamesRoundTrip(kSwitchModeNames);
  EXPECT_STREQ(portHookName(PortHook(9)), "unknown");
  EXPECT_EQ(byName("auto", {PortHook::kXdp, PortHook::kTc}), std::nullopt) << "only the values asked for";
}

// The wire's numbers (protocol.h: an ABI); the datapath's own values after them.
TEST(Spec, WireNumbers) {
  EXPECT_EQ(int(PortType::kTap), 1);
  EXPECT_EQ(int(PortType::kPunt), 4);
  EXPECT_EQ(int(PortHook::kXdp), 1);
  EXPECT_EQ(int(PortHook::kTc), 2);
  EXPECT_EQ(int(PortHook::kAuto), 3);
  EXPECT_EQ(int(TcAttach::kTcx), 1);
  EXPECT_EQ(int(TcAttach::kClsact), 2);
  EXPECT_EQ(int(XdpMode::kNone), 0);
  EXPECT_EQ(int(XdpMode::kAuto), 3);
  EXPECT_EQ(int(BindMode::kClosed), 3);
  EXPECT_EQ(int(SwitchMode::kXconnect), 2);
}

// over(): each given field replaces the one under it, the others stay.
TEST(Spec, PolicyOver) {
  const PortPolicy base{.storm_bcast = 1, .storm_mcast = 2, .police_bps = 3};
  EXPECT_EQ(PortPolicyOptions{}.over(base), base);
  EXPECT_EQ(base.police_burst_ms, PortPolicy::kDefaultPoliceBurstMs);
  PortPolicyOptions o;
  o.storm_mcast = 0;
  o.allowed_mac = Mac{2, 0, 0, 0, 0, 1};
  o.vlan = VlanConfig{};
  PortPolicy want = base;
  want.storm_mcast = 0;
  want.allowed_mac = Mac{2, 0, 0, 0, 0, 1};
  EXPECT_EQ(o.over(base), want);
  PortPolicyOptions saved;
  saved.storm_mcast = 7;
  saved.police_pps = 5;
  const PortPolicyOptions merged = o.overOptions(saved);
  EXPECT_EQ(merged.storm_mcast, 0u);
  EXPECT_EQ(merged.police_pps, 5u);
  EXPECT_EQ(merged.allowed_mac, o.allowed_mac);
  EXPECT_EQ(merged.vlan, VlanConfig{});
}

// The table: a row per field, in the wire's order, every name once (the
// header checks uniqueness at compile time; this names the rows).
TEST(Spec, PolicyTable) {
  std::vector<std::string> keys;
  forEachPolicyField([&](const auto& r) { keys.emplace_back(r.key); });
  EXPECT_EQ(keys, (std::vector<std::string>{"storm_bcast", "storm_mcast", "storm_unknown", "police_pps", "police_bps",
                                            "police_burst_ms", "allowed_mac", "allowed_ips", "ra_guard", "dhcp_guard",
                                            "vlan"}));
  EXPECT_STREQ(policyAttrName(kAttrPoliceBurst), "POLICE_BURST");
  EXPECT_STREQ(policyAttrName(kAttrVlanUntagged), "VLAN_UNTAGGED");
  EXPECT_EQ(policyAttrName(32), nullptr);
}

}  // namespace
}  // namespace vdev::spec
