// Who may set each field of a port: one row per field of PORT_ADD and
// PORT_SET, and the one check that PORT_ADD, PORT_SET and the restore of
// the state file go through.
//
// Two classes. Root only: what bounds what a port's guest may send and
// reach (VLANs, isolation, anti-spoofing, the guards, storm control, the
// policer) and what it takes of the host (an existing device, queues, the
// hook and XDP mode). The port's owner too: what describes its own device
// (MAC, MTU, its peer's name and namespace, the tap's owner and group, fast
// rx, a tag). A --group member is the owner of the port it adds and of no
// other; a member's port gets vdevd's defaults (--storm-*, --police-*, no
// VLAN, not isolated, the default hook) for every root-only field.
//
// No field is anyone's: a port belongs to root or to the member that added
// it, and another member may set nothing of it.
//
// The owner's rows say which fields a member may give; which values are
// its own (a tap owned by the caller, a group of the caller's, a namespace
// the caller administers) is DaemonControl::portAdd's check, which needs
// the caller's credentials and the namespace itself.
//
// Restore: the state file is root's (a 0700 directory of vdevd's) and
// written only after a request passed this check, so restore trusts the
// fields PORT_SET can change -- root may have set them on a member's port,
// and the record does not say who did. The fields only PORT_ADD sets were
// set by the port's adder, whose uid the record keeps: those of a member's
// record are checked again as that member's (checkRestoredPort), so a
// record written by a vdevd without this table, or by hand, cannot give a
// member's port what only root may set.
//
// Thread safety: pure functions and a constant table.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/result.h"
#include "daemon/state_file.h"
#include "proto/codec.h"
#include "spec/port_policy.h"

namespace vdev::daemon {

// Root only, or the port's owner too; the policy's rows say theirs
// (spec/port_policy.h).
using spec::FieldClass;

// Who asks, seen from the port: root, the member that added it (or adds
// it now), or another member.
enum class Caller : uint8_t { kRoot, kOwner, kOther };

// `owner`: the uid that added the port; nullopt for a port of vdevd's
// command line (root's).
Caller callerOf(uid_t uid, std::optional<uid_t> owner);
bool mayCallerSet(FieldClass field, Caller caller);

struct PortField {
  std::string_view name;  // vdevctl's keyword: what a refusal names
  FieldClass who;
  bool (*in_add)(const proto::PortAddRequest&);  // whether a PORT_ADD sets it
  bool (*in_set)(const proto::PortSetRequest&);  // whether a PORT_SET sets it; nullptr: it cannot
  std::string_view note = {};                    // added to a refusal that names it
};

namespace detail {
// The policy table's row I (spec/port_policy.h), given in a request.
template <size_t I>
constexpr bool addPolicy(const proto::PortAddRequest& r) {
  return (r.limits.*std::get<I>(spec::kPolicyFields).option).has_value();
}
template <size_t I>
constexpr bool setPolicy(const proto::PortSetRequest& r) {
  return (r.limits.*std::get<I>(spec::kPolicyFields).option).has_value();
}
template <auto M>
constexpr bool addCreate(const proto::PortAddRequest& r) {
  return r.create && ((*r.create).*M).has_value();
}
// VLANs: one attribute set (VlanConfig), three keywords. "vlan" and
// "native" both name the PVID; "vlan none" (an unconfigured config) takes
// the port's VLANs away, which is setting them too.
constexpr bool vlanPvid(const std::optional<VlanConfig>& v) { return v && (v->pvid || !v->configured()); }
constexpr bool vlanTrunk(const std::optional<VlanConfig>& v) { return v && v->tagged.any(); }
inline bool vlanUntagged(const std::optional<VlanConfig>& v) {
  if (!v) return false;
  VidSet u = v->untagged;
  if (v->pvid) u.reset(v->pvid);
  return u.any();
}

// Rows of the same kind: an attribute of CreateOptions (PORT_ADD, the
// owner's), a VLAN keyword.
template <auto M>
constexpr PortField createRow(std::string_view name) {
  return PortField{name, FieldClass::kOwner, addCreate<M>, nullptr};
}
template <bool (*F)(const std::optional<VlanConfig>&)>
constexpr PortField vlanRow(std::string_view name) {
  return PortField{name, FieldClass::kRoot, [](const proto::PortAddRequest& r) { return F(r.limits.vlan); },
                   [](const proto::PortSetRequest& r) { return F(r.limits.vlan); }};
}

// The policy's rows, from its table: what bounds the guest's identity
// (anti-spoofing, guards, VLANs) first, then its rates -- the order
// refusals name them in. The VLAN field is one attribute set and three
// keywords: three rows.
inline constexpr size_t kPolicyRows = spec::kPolicyFieldCount - 1 + 3;
template <size_t... I>
constexpr std::array<PortField, kPolicyRows> policyRows(std::index_sequence<I...>) {
  std::array<PortField, kPolicyRows> out{};
  size_t n = 0;
  auto one = [&]<size_t J>(spec::FieldGroup group) {
    const auto& row = std::get<J>(spec::kPolicyFields);
    if (row.group != group) return;
    if constexpr (std::is_same_v<typename std::decay_t<decltype(row)>::Type, VlanConfig>) {
      out[n++] = vlanRow<vlanPvid>("vlan/native");
      out[n++] = vlanRow<vlanTrunk>("trunk");
      out[n++] = vlanRow<vlanUntagged>("untagged");
    } else {
      out[n++] = PortField{row.cli, row.who, addPolicy<J>, setPolicy<J>};
    }
  };
  for (spec::FieldGroup g : {spec::FieldGroup::kIdentity, spec::FieldGroup::kRate}) (one.template operator()<I>(g), ...);
  return out;
}

template <size_t N, size_t M>
constexpr std::array<PortField, N + M> concat(const std::array<PortField, N>& a, const std::array<PortField, M>& b) {
  std::array<PortField, N + M> out{};
  for (size_t i = 0; i < N; i++) out[i] = a[i];
  for (size_t i = 0; i < M; i++) out[N + i] = b[i];
  return out;
}
}  // namespace detail

// Every field of PortAddRequest and PortSetRequest but the port's name (the
// key: any name not in use) has a row; port_policy.cpp holds a structured
// binding of each request, and spec/port_policy.h one of the policy, that
// breaks when a member is added, so a new field cannot be left out. A row
// per keyword where one attribute carries several (VLANs, a netns name and
// pid are one: "netns"). The policy's rows, their keywords and who may set
// them come from its table.
inline constexpr std::array kPortFields = detail::concat(
    std::array{
    // PORT_ADD only.
    PortField{"attach", FieldClass::kRoot, [](const proto::PortAddRequest& r) { return !r.create.has_value(); },
              nullptr, "attach: a port without 'create' takes an existing device; create a tap or veth instead"},
    PortField{"queues", FieldClass::kRoot, [](const proto::PortAddRequest& r) { return r.queues.has_value(); },
              nullptr},
    PortField{"xdp-mode", FieldClass::kRoot,
              [](const proto::PortAddRequest& r) { return r.xdp_mode != proto::XdpMode::kAuto; }, nullptr},
    PortField{"hook", FieldClass::kRoot, [](const proto::PortAddRequest& r) { return r.hook.has_value(); },
              nullptr},
    PortField{"fast-rx", FieldClass::kOwner, [](const proto::PortAddRequest& r) { return r.fast_rx.has_value(); },
              nullptr},
    PortField{"tag", FieldClass::kOwner, [](const proto::PortAddRequest& r) { return r.tag.has_value(); }, nullptr},
    PortField{"netns", FieldClass::kOwner,
              [](const proto::PortAddRequest& r) {
                return r.create && (r.create->peer_netns_name || r.create->peer_netns_pid);
              },
              nullptr},
    // A path is root's: vdevd opens it as root, so a member's path would be
    // an oracle for any file (a missing one ENOENT, another "not a namespace
    // file"), and its walk, on the control thread, could hang in a FUSE or
    // autofs mount. A name is under /run/netns (tmpfs, no '/' in it) and a
    // pid under /proc; the note is the same for every path.
    PortField{"netns PATH", FieldClass::kRoot,
              [](const proto::PortAddRequest& r) { return r.create && r.create->peer_netns_path.has_value(); },
              nullptr, "members may give a namespace by name under /run/netns or by a pid of their own"},
    detail::createRow<&proto::CreateOptions::peer_ifname>("peer"),
    detail::createRow<&proto::CreateOptions::peer_mac>("peer-mac"),
    detail::createRow<&proto::CreateOptions::mtu>("mtu"),
    detail::createRow<&proto::CreateOptions::owner_uid>("owner"),
    detail::createRow<&proto::CreateOptions::group_gid>("group"),
    detail::createRow<&proto::CreateOptions::multi_queue>("multi-queue"),
    detail::createRow<&proto::CreateOptions::mac>("mac"),
    // PORT_ADD and PORT_SET.
    PortField{"isolated", FieldClass::kRoot, [](const proto::PortAddRequest& r) { return r.isolated.has_value(); },
              [](const proto::PortSetRequest& r) { return r.isolated.has_value(); }},
    },
    // PORT_ADD and PORT_SET: the policy (spec/port_policy.h).
    detail::policyRows(std::make_index_sequence<spec::kPolicyFieldCount>{}));

// The one check. The rows of the fields the request sets that `caller` may
// not set, in table order (empty: allowed). `add_only`: only the rows that
// PORT_SET cannot change (the restore of a member's record).
std::vector<const PortField*> refusedFields(const proto::PortAddRequest& r, Caller caller, bool add_only = false);
std::vector<const PortField*> refusedFields(const proto::PortSetRequest& r, Caller caller);
// The refusal of those rows: "only root may set trunk, police-pps on a
// port (...)"; "" for none.
std::string refusalText(std::span<const PortField* const> refused, Caller caller);
// Both: EPERM with refusalText, or ok.
Status checkPortFields(const proto::PortAddRequest& r, Caller caller);
Status checkPortFields(const proto::PortSetRequest& r, Caller caller);

// Restore's check: a record of a member's port (owner_uid not 0) whose
// PORT_ADD-only fields only root may set. EPERM naming them, or ok.
Status checkRestoredPort(const PortRecord& rec);

}  // namespace vdev::daemon
