// vdev-cni's network configuration (tools/vdev-cni/src/cni.cpp): the keys
// of vdev-cni's own, their errors and codes. (The plugin against vdevd is in
// tests/e2e/cni_test.cpp.)
#include <gtest/gtest.h>

#include <string>

#include "cni.h"

namespace vdev::cni {
namespace {

// A configuration with `extra` (",\"key\": value...") after the required keys.
std::string conf(const std::string& extra) {
  return R"({"cniVersion":"1.0.0","name":"net1","type":"vdev-cni")" + extra + "}";
}

// Parsing fails with `code` and a message containing `what`.
void expectError(const std::string& text, unsigned code, const std::string& what) {
  try {
    (void)parseNetConf(text, Command::kAdd);
    ADD_FAILURE() << "accepted: " << text;
  } catch (const CniError& e) {
    EXPECT_EQ(e.code, code) << e.msg;
    EXPECT_NE(e.msg.find(what), std::string::npos) << "message \"" << e.msg << "\" lacks \"" << what << "\"";
  }
}

// bridge CNI's VLAN keys: vlan, vlanTrunk, preserveDefaultVlan (default
// true: VLAN 1 stays on the port, untagged).
TEST(CniConf, VlanKeysMeanWhatBridgeCniMeans) {
  auto vlanOf = [](const std::string& extra) { return parseNetConf(conf(extra), Command::kAdd).limits.vlan; };
  EXPECT_FALSE(vlanOf(""));
  EXPECT_FALSE(vlanOf(R"(,"vlan":0)")) << "0: no VLAN";
  auto a = vlanOf(R"(,"vlan":10)");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->pvid, 10);
  EXPECT_EQ(formatVidList(a->untagged), "1,10") << "the default VLAN kept";
  EXPECT_TRUE(a->tagged.none());
  a = vlanOf(R"(,"vlan":10,"preserveDefaultVlan":false)");
  EXPECT_EQ(formatVidList(a->untagged), "10");
  auto t = vlanOf(R"(,"vlanTrunk":[{"id":10},{"minID":20,"maxID":22}])");
  ASSERT_TRUE(t);
  EXPECT_EQ(formatVidList(t->tagged), "10,20-22");
  EXPECT_EQ(t->pvid, 1) << "the default VLAN, its native one";
  t = vlanOf(R"(,"vlanTrunk":[{"id":10}],"preserveDefaultVlan":false)");
  EXPECT_EQ(t->pvid, 0);
  EXPECT_TRUE(t->untagged.none());
  t = vlanOf(R"(,"vlan":5,"vlanTrunk":[{"id":10}])");
  EXPECT_EQ(t->pvid, 5);
  EXPECT_EQ(formatVidList(t->tagged), "10");
  expectError(conf(R"(,"vlan":4095)"), kErrInvalidConfig, "vlan: 4095 is not a VLAN ID (0..4094)");
  expectError(conf(R"(,"vlan":"10")"), kErrInvalidConfig, "vlan: \"10\" is not a VLAN ID");
  expectError(conf(R"(,"vlanTrunk":[{"id":0}])"), kErrInvalidConfig, "vlanTrunk[].id: 0 is not a VLAN ID (1..4094)");
  expectError(conf(R"(,"vlanTrunk":[{"minID":30,"maxID":20}])"), kErrInvalidConfig, "minID 30 is greater than maxID 20");
  expectError(conf(R"(,"vlanTrunk":[{"minID":30}])"), kErrInvalidConfig, "\"minID\" and \"maxID\" together");
  expectError(conf(R"(,"vlanTrunk":[{"ID":30}])"), kErrInvalidConfig, "vlanTrunk[]: unknown key \"ID\"");
  expectError(conf(R"(,"vlanTrunk":5)"), kErrDecode, "vlanTrunk: expected an array");
  expectError(conf(R"(,"vlan":10,"vlanTrunk":[{"id":10}])"), kErrInvalidConfig, "vlan 10 is in vlanTrunk too");
}

// stormControl and ingressPolicer: each field the port's own limit (0 = no
// limit), each field left out vdevd's default (not sent).
TEST(CniConf, StormControlAndIngressPolicer) {
  const NetConf none = parseNetConf(conf(""), Command::kAdd);
  EXPECT_EQ(none.limits, vdev::proto::LimitOptions{});
  const NetConf all = parseNetConf(
      conf(R"(,"stormControl":{"broadcastPps":100,"multicastPps":0,"unknownUnicastPps":4294967295},)"
           R"("ingressPolicer":{"pps":100000,"bps":18446744073709551615,"burstMs":20})"),
      Command::kAdd);
  EXPECT_EQ(all.limits, (vdev::proto::LimitOptions{100, 0, 4294967295u, 100000, 18446744073709551615ull, 20}));
  const NetConf some =
      parseNetConf(conf(R"(,"stormControl":{"multicastPps":50},"ingressPolicer":{"bps":100000000})"), Command::kAdd);
  vdev::proto::LimitOptions want;
  want.storm_mcast = 50;
  want.police_bps = 100000000;
  EXPECT_EQ(some.limits, want);
  // JSON null is a field left out, as for every other key.
  EXPECT_EQ(parseNetConf(conf(R"(,"stormControl":null,"ingressPolicer":{"pps":null})"), Command::kAdd).limits,
            vdev::proto::LimitOptions{});
}

TEST(CniConf, BadLimitsAreDecodeOrConfigErrors) {
  // Wrong JSON types: kErrDecode (6) naming the field, as for every key.
  expectError(conf(R"(,"stormControl":5)"), kErrDecode, "decoding the network configuration.stormControl: expected an object");
  expectError(conf(R"(,"ingressPolicer":[1])"), kErrDecode, "ingressPolicer: expected an object");
  expectError(conf(R"(,"stormControl":{"broadcastPps":-1})"), kErrDecode,
              "decoding stormControl.broadcastPps: expected an unsigned 32-bit integer");
  expectError(conf(R"(,"stormControl":{"multicastPps":"100"})"), kErrDecode, "stormControl.multicastPps");
  expectError(conf(R"(,"stormControl":{"unknownUnicastPps":4294967296})"), kErrDecode,
              "stormControl.unknownUnicastPps: expected an unsigned 32-bit integer");
  expectError(conf(R"(,"ingressPolicer":{"pps":1.5})"), kErrDecode,
              "decoding ingressPolicer.pps: expected an unsigned 64-bit integer");
  expectError(conf(R"(,"ingressPolicer":{"bps":true})"), kErrDecode, "ingressPolicer.bps");
  expectError(conf(R"(,"ingressPolicer":{"bps":1e20})"), kErrDecode, "ingressPolicer.bps");
  expectError(conf(R"(,"ingressPolicer":{"burstMs":-5})"), kErrDecode, "ingressPolicer.burstMs");
  // Values and keys: kErrInvalidConfig (7).
  expectError(conf(R"(,"ingressPolicer":{"burstMs":0})"), kErrInvalidConfig, "ingressPolicer.burstMs: 0 is no burst");
  expectError(conf(R"(,"stormControl":{"broadcastPPS":10})"), kErrInvalidConfig,
              "stormControl: unknown key \"broadcastPPS\" (broadcastPps, multicastPps, unknownUnicastPps)");
  expectError(conf(R"(,"ingressPolicer":{"rate":"100M"})"), kErrInvalidConfig,
              "ingressPolicer: unknown key \"rate\" (pps, bps, burstMs)");
}

}  // namespace
}  // namespace vdev::cni
