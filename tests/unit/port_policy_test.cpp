// Who may set which port field (vdev/daemon/src/port_policy.h): the matrix of
// every row of kPortFields against every caller, for PORT_ADD and PORT_SET,
// through the one check; the refusal's text; the restore of a member's
// saved record.
#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "port_policy.h"

namespace vdev::daemon {
namespace {

using namespace vdev::proto;

// What a --group member may set on its own port: the security rule this
// test holds, written out once more on purpose. Every other row is root's.
const std::set<std::string_view> kMembersMay = {"fast-rx", "tag",   "netns", "peer",        "peer-mac",
                                                "mtu",     "owner", "group", "multi-queue", "mac"};

// A member's plain request: a tap or veth to create, nothing else. It sets
// no row.
PortAddRequest plainAdd(PortType t = PortType::kTap) {
  return PortAddRequest{"p1", t, std::nullopt, XdpMode::kAuto, CreateOptions{}};
}

VlanConfig vlanOf(uint16_t pvid, std::initializer_list<uint16_t> tagged, std::initializer_list<uint16_t> untagged) {
  VlanConfig v;
  v.pvid = pvid;
  for (uint16_t t : tagged) v.tagged.set(t);
  for (uint16_t u : untagged) v.untagged.set(u);
  return v;
}

// Per row: a change to a plain request that sets that row and no other.
// PORT_SET's only where the row has in_set. A row without an entry here
// fails RowsAreTheExamples: a new field gets an example, and so its place
// in the matrix.
struct Example {
  std::function<void(PortAddRequest&)> add;
  std::function<void(LimitOptions&, std::optional<bool>&)> set;  // nullptr: not in PORT_SET
};
using L = LimitOptions;
using I = std::optional<bool>;
const std::map<std::string_view, Example>& examples() {
  static const std::map<std::string_view, Example> m = {
      {"attach", {[](PortAddRequest& r) { r.type = PortType::kNetdev, r.create.reset(); }, nullptr}},
      {"queues", {[](PortAddRequest& r) { r.queues = 4; }, nullptr}},
      {"xdp-mode", {[](PortAddRequest& r) { r.xdp_mode = XdpMode::kNative; }, nullptr}},
      {"hook", {[](PortAddRequest& r) { r.hook = PortHook::kXdp; }, nullptr}},
      {"fast-rx", {[](PortAddRequest& r) { r.fast_rx = false; }, nullptr}},
      {"tag", {[](PortAddRequest& r) { r.tag = "cni:net1"; }, nullptr}},
      {"netns", {[](PortAddRequest& r) { r.type = PortType::kVeth, r.create->peer_netns_pid = 42; }, nullptr}},
      {"netns PATH",
       {[](PortAddRequest& r) { r.type = PortType::kVeth, r.create->peer_netns_path = "/run/netns/c1"; }, nullptr}},
      {"peer", {[](PortAddRequest& r) { r.type = PortType::kVeth, r.create->peer_ifname = "eth0"; }, nullptr}},
      {"peer-mac", {[](PortAddRequest& r) { r.type = PortType::kVeth, r.create->peer_mac = Mac{2, 0, 0, 0, 0, 1}; },
                    nullptr}},
      {"mtu", {[](PortAddRequest& r) { r.create->mtu = 9000; }, nullptr}},
      {"owner", {[](PortAddRequest& r) { r.create->owner_uid = 1000; }, nullptr}},
      {"group", {[](PortAddRequest& r) { r.create->group_gid = 1000; }, nullptr}},
      {"multi-queue", {[](PortAddRequest& r) { r.create->multi_queue = true; }, nullptr}},
      {"mac", {[](PortAddRequest& r) { r.create->mac = Mac{2, 0, 0, 0, 0, 2}; }, nullptr}},
      {"isolated", {[](PortAddRequest& r) { r.isolated = false; }, [](L&, I& i) { i = true; }}},
      {"allowed-mac", {[](PortAddRequest& r) { r.limits.allowed_mac = Mac{}; },
                       [](L& l, I&) { l.allowed_mac = Mac{2, 0, 0, 0, 0, 3}; }}},
      {"allowed-ip", {[](PortAddRequest& r) { r.limits.allowed_ips.emplace(); },
                      [](L& l, I&) { l.allowed_ips.emplace(); }}},
      {"ra-guard", {[](PortAddRequest& r) { r.limits.ra_guard = false; }, [](L& l, I&) { l.ra_guard = true; }}},
      {"dhcp-guard", {[](PortAddRequest& r) { r.limits.dhcp_guard = true; }, [](L& l, I&) { l.dhcp_guard = false; }}},
      {"vlan/native", {[](PortAddRequest& r) { r.limits.vlan = vlanOf(10, {}, {10}); },
                       [](L& l, I&) { l.vlan = VlanConfig{}; }}},  // "vlan none"
      {"trunk", {[](PortAddRequest& r) { r.limits.vlan = vlanOf(0, {1, 4094}, {}); },
                 [](L& l, I&) { l.vlan = vlanOf(0, {20}, {}); }}},
      {"untagged", {[](PortAddRequest& r) { r.limits.vlan = vlanOf(0, {}, {5}); },
                    [](L& l, I&) { l.vlan = vlanOf(0, {}, {5}); }}},
      {"storm-bcast", {[](PortAddRequest& r) { r.limits.storm_bcast = 0; }, [](L& l, I&) { l.storm_bcast = 0; }}},
      {"storm-mcast", {[](PortAddRequest& r) { r.limits.storm_mcast = 0; }, [](L& l, I&) { l.storm_mcast = 9; }}},
      {"storm-unknown", {[](PortAddRequest& r) { r.limits.storm_unknown = 0; },
                         [](L& l, I&) { l.storm_unknown = 0; }}},
      {"police-pps", {[](PortAddRequest& r) { r.limits.police_pps = 0; }, [](L& l, I&) { l.police_pps = 0; }}},
      {"police-rate", {[](PortAddRequest& r) { r.limits.police_bps = 0; }, [](L& l, I&) { l.police_bps = 1; }}},
      {"police-burst", {[](PortAddRequest& r) { r.limits.police_burst_ms = 1000; },
                        [](L& l, I&) { l.police_burst_ms = 1; }}},
  };
  return m;
}

// What the rule says, independently of the table's classes.
bool expectAllowed(std::string_view field, Caller c) {
  if (c == Caller::kRoot) return true;
  if (c == Caller::kOther) return false;  // nothing of another's port
  return kMembersMay.count(field) != 0;
}

constexpr Caller kCallers[] = {Caller::kRoot, Caller::kOwner, Caller::kOther};
const char* callerName(Caller c) { return c == Caller::kRoot ? "root" : c == Caller::kOwner ? "owner" : "other"; }

std::vector<std::string_view> names(const std::vector<const PortField*>& rows) {
  std::vector<std::string_view> n;
  for (const PortField* f : rows) n.push_back(f->name);
  return n;
}

TEST(PortPolicyTest, RowsAreTheExamples) {
  std::set<std::string_view> rows;
  for (const PortField& f : kPortFields) {
    EXPECT_TRUE(rows.insert(f.name).second) << "two rows named " << f.name;
    ASSERT_TRUE(examples().count(f.name)) << "row " << f.name << " has no example here: add one";
    EXPECT_EQ(f.in_set != nullptr, examples().at(f.name).set != nullptr) << f.name;
  }
  EXPECT_EQ(rows.size(), examples().size()) << "an example for a row the table does not have";
  for (std::string_view m : kMembersMay) EXPECT_TRUE(rows.count(m)) << m;
}

// Each example sets its row and no other, and every caller is allowed or
// refused it as the rule says: PORT_ADD (a member adding is the port's
// owner; kOther stands for a request about another's port) and PORT_SET.
TEST(PortPolicyTest, EveryFieldForEveryCaller) {
  EXPECT_TRUE(refusedFields(plainAdd(), Caller::kOwner).empty());
  EXPECT_TRUE(refusedFields(plainAdd(PortType::kVeth), Caller::kOwner).empty());
  for (const PortField& f : kPortFields) {
    const Example& ex = examples().at(f.name);
    PortAddRequest add = plainAdd();
    ex.add(add);
    for (const PortField& g : kPortFields)
      EXPECT_EQ(g.in_add(add), &g == &f) << "the example of " << f.name << " and row " << g.name;
    std::optional<PortSetRequest> set;
    if (ex.set) {
      set = PortSetRequest{"p1"};
      ex.set(set->limits, set->isolated);
      for (const PortField& g : kPortFields)
        EXPECT_EQ(g.in_set && g.in_set(*set), &g == &f) << "the PORT_SET example of " << f.name << ", row " << g.name;
    }
    for (Caller c : kCallers) {
      const bool allowed = expectAllowed(f.name, c);
      SCOPED_TRACE(std::string(f.name) + " by " + callerName(c));
      EXPECT_EQ(mayCallerSet(f.who, c), allowed);
      const auto refused = refusedFields(add, c);
      EXPECT_EQ(names(refused), allowed ? std::vector<std::string_view>{} : std::vector<std::string_view>{f.name});
      const Status st = checkPortFields(add, c);
      EXPECT_EQ(st.ok(), allowed);
      if (!st.ok()) {
        EXPECT_EQ(st.error().err, EPERM);
        EXPECT_NE(st.error().what.find(f.name), std::string::npos) << st.error().what;
      }
      if (set) {
        const Status s = checkPortFields(*set, c);
        EXPECT_EQ(s.ok(), allowed);
        if (!s.ok()) {
          EXPECT_NE(s.error().what.find(f.name), std::string::npos) << s.error().what;
        }
      }
    }
  }
}

// The request of the report: a member's tap trunking every VLAN with the
// policer and broadcast storm control off. Every root-only field is named,
// in the table's order.
TEST(PortPolicyTest, TheRefusalNamesEveryField) {
  PortAddRequest r = plainAdd();
  r.limits.vlan = vlanOf(0, {}, {});
  for (uint16_t v = 1; v <= kVidMax; v++) r.limits.vlan->tagged.set(v);
  r.limits.police_pps = 0;
  r.limits.storm_bcast = 0;
  r.create->mtu = 1500;  // its own: not named
  const Status st = checkPortFields(r, Caller::kOwner);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().err, EPERM);
  EXPECT_EQ(st.error().what.rfind("only root may set trunk, storm-bcast, police-pps on a port", 0), 0u)
      << st.error().what;
  EXPECT_EQ(st.error().what.find("mtu"), std::string::npos) << st.error().what;
  EXPECT_TRUE(checkPortFields(r, Caller::kRoot).ok());
  // Another member: the owner's fields are named apart.
  const Status other = checkPortFields(r, Caller::kOther);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().what.find("; only root and the port's owner may set mtu"), std::string::npos)
      << other.error().what;
  // VLAN keywords: a trunk with a native VLAN is two.
  PortSetRequest s{"p1"};
  s.limits.vlan = vlanOf(5, {10}, {5});
  EXPECT_EQ(names(refusedFields(s, Caller::kOwner)), (std::vector<std::string_view>{"vlan/native", "trunk"}));
  PortAddRequest a = plainAdd();
  a.type = PortType::kNetdev;
  a.create.reset();
  const Status attach = checkPortFields(a, Caller::kOwner);
  ASSERT_FALSE(attach.ok());
  EXPECT_NE(attach.error().what.find("takes an existing device; create a tap or veth instead"), std::string::npos)
      << attach.error().what;
}

TEST(PortPolicyTest, CallerIsSeenFromThePort) {
  EXPECT_EQ(callerOf(0, 1000u), Caller::kRoot);
  EXPECT_EQ(callerOf(0, std::nullopt), Caller::kRoot);
  EXPECT_EQ(callerOf(1000, 1000u), Caller::kOwner);
  EXPECT_EQ(callerOf(1000, 1001u), Caller::kOther);
  EXPECT_EQ(callerOf(1000, 0u), Caller::kOther);           // root's port
  EXPECT_EQ(callerOf(1000, std::nullopt), Caller::kOther);  // vdevd's command line
}

// Restore: a member's record keeps what root may have set on its port
// since (PORT_SET's fields), and is refused for what only its own add can
// have set; root's records are root's.
TEST(PortPolicyTest, RestoreChecksWhatOnlyTheAddSet) {
  PortRecord rec{.name = "vm1", .type = "tap", .managed = true, .owner_uid = 1000, .tag = "cni:net1"};
  rec.limits.police_pps = 0;
  rec.limits.vlan = vlanOf(0, {1, 2, 3}, {});
  rec.isolated = true;
  EXPECT_TRUE(checkRestoredPort(rec).ok());  // root's port set, or so the file says: trusted
  for (const auto& edit : std::vector<std::function<void(PortRecord&)>>{
           [](PortRecord& r) { r.hook = "tc"; }, [](PortRecord& r) { r.hook = "auto"; },
           [](PortRecord& r) { r.queues = 2; }, [](PortRecord& r) { r.xdp_mode = "native"; },
           [](PortRecord& r) { r.managed = false; }}) {
    PortRecord bad = rec;
    edit(bad);
    const Status st = checkRestoredPort(bad);
    ASSERT_FALSE(st.ok()) << serializeState(DaemonState{{bad}});
    EXPECT_EQ(st.error().err, EPERM);
    EXPECT_NE(st.error().what.find("only root may set"), std::string::npos) << st.error().what;
    bad.owner_uid = 0;
    EXPECT_TRUE(checkRestoredPort(bad).ok()) << "root's record";
  }
  PortRecord own = rec;
  own.fast_rx = false;
  EXPECT_TRUE(checkRestoredPort(own).ok()) << "fast-rx is the owner's";
}

}  // namespace
}  // namespace vdev::daemon
