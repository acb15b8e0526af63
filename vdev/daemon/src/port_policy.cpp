#include "port_policy.h"

#include <cerrno>

namespace vdev::daemon {

namespace {

// Every member of the two requests, by name. A member added to either
// breaks this binding (a count mismatch is a compile error): give it a row
// in kPortFields, then add its name here.
[[maybe_unused]] void everyFieldHasARow(const proto::PortAddRequest& a, const proto::PortSetRequest& s,
                                        const proto::CreateOptions& c) {
  // name: the key; type and create: "attach" (type with create is the
  // device's kind, the owner's); the rest: a row each.
  [[maybe_unused]] const auto& [name, type, queues, xdp_mode, create, fast_rx, tag, hook, isolated, limits] = a;
  [[maybe_unused]] const auto& [set_name, set_isolated, set_limits] = s;
  // netns name and pid: "netns"; netns path: "netns PATH" (root's).
  [[maybe_unused]] const auto& [netns_name, netns_path, netns_pid, peer_ifname, peer_mac, mtu, owner_uid, group_gid, multi_queue,
               mac] = c;
  // limits: the policy's rows come from its table, which checks that it
  // has every field (spec/port_policy.h).
}

// One check for both requests: `sets` says whether the request sets a row.
template <class Sets>
std::vector<const PortField*> refused(Caller caller, Sets sets) {
  std::vector<const PortField*> out;
  for (const PortField& f : kPortFields)
    if (sets(f) && !mayCallerSet(f.who, caller)) out.push_back(&f);
  return out;
}

std::string join(std::span<const PortField* const> rows, FieldClass who) {
  std::string s;
  for (const PortField* f : rows) {
    if (f->who != who) continue;
    if (!s.empty()) s += ", ";
    s += f->name;
  }
  return s;
}

Status asStatus(std::span<const PortField* const> refused, Caller caller) {
  if (refused.empty()) return {};
  return Error{EPERM, refusalText(refused, caller)};
}

}  // namespace

Caller callerOf(uid_t uid, std::optional<uid_t> owner) {
  if (uid == 0) return Caller::kRoot;
  return owner && *owner == uid ? Caller::kOwner : Caller::kOther;
}

bool mayCallerSet(FieldClass field, Caller caller) {
  switch (caller) {
    case Caller::kRoot: return true;
    case Caller::kOwner: return field == FieldClass::kOwner;
    case Caller::kOther: return false;
  }
  return false;
}

std::vector<const PortField*> refusedFields(const proto::PortAddRequest& r, Caller caller, bool add_only) {
  return refused(caller, [&](const PortField& f) { return (!add_only || !f.in_set) && f.in_add(r); });
}

std::vector<const PortField*> refusedFields(const proto::PortSetRequest& r, Caller caller) {
  return refused(caller, [&](const PortField& f) { return f.in_set && f.in_set(r); });
}

std::string refusalText(std::span<const PortField* const> refused, Caller caller) {
  std::string s;
  if (const std::string root = join(refused, FieldClass::kRoot); !root.empty()) {
    s = "only root may set " + root + " on a port";
    // A member's port has vdevd's defaults for them: saying so tells the
    // member what to do (leave them out) and that nothing is missing.
    if (caller == Caller::kOwner) s += " (leave them out: a member's port has vdevd's defaults)";
  }
  if (const std::string own = join(refused, FieldClass::kOwner); !own.empty())
    s += (s.empty() ? "" : "; ") + std::string("only root and the port's owner may set ") + own;
  for (const PortField* f : refused)
    if (!f->note.empty()) s += "; " + std::string(f->note);
  return s;
}

Status checkPortFields(const proto::PortAddRequest& r, Caller caller) {
  return asStatus(refusedFields(r, caller), caller);
}

Status checkPortFields(const proto::PortSetRequest& r, Caller caller) {
  return asStatus(refusedFields(r, caller), caller);
}

Status checkRestoredPort(const PortRecord& rec) {
  if (rec.owner_uid == 0) return {};
  // The PORT_ADD the record stands for, as far as the record keeps it.
  proto::PortAddRequest r;
  r.name = rec.name;
  r.type = proto::parsePortType(rec.type).value_or(proto::PortType::kNetdev);
  if (rec.managed) r.create.emplace();
  if (rec.queues) r.queues = rec.queues;
  r.xdp_mode = xdpModeByName(rec.xdp_mode).value_or(proto::XdpMode::kAuto);
  if (!rec.fast_rx) r.fast_rx = false;
  if (!rec.tag.empty()) r.tag = rec.tag;
  // The check reads only whether the adder chose a hook ("auto" too: a
  // value requests may not carry, which no request here is sent as).
  if (!rec.hook.empty()) r.hook = portHookByName(rec.hook).value_or(proto::PortHook::kAuto);
  if (rec.isolated) r.isolated = true;
  r.limits = rec.limits;
  const auto refused = refusedFields(r, Caller::kOwner, /*add_only=*/true);
  if (refused.empty()) return {};
  return Error{EPERM, "its record, of uid " + std::to_string(rec.owner_uid) + "'s port, sets " +
                          join(refused, FieldClass::kRoot) +
                          ", which only root may set (a vdevd before member rights were checked per field "
                          "accepted them); its owner may add it again"};
}

}  // namespace vdev::daemon
