#include "daemon/sd_notify.h"

#include <systemd/sd-daemon.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace vdev::daemon::sd {

namespace {

// One datagram. sd_notify() returns > 0 if sent, 0 if NOTIFY_SOCKET is
// unset, -errno on failure; libsystemd errors are converted here only.
Status send(const std::string& state, const char* what) {
  int r = sd_notify(/*unset_environment=*/0, state.c_str());
  if (r < 0) return makeError(r, std::string("sd_notify ") + what);
  return {};
}

std::string oneLine(std::string_view text) {
  std::string s(text);
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

bool notifySocketSet() {
  const char* e = std::getenv("NOTIFY_SOCKET");
  return e && *e;
}

Status notifyReady(std::string_view status) {
  std::string state = "READY=1";
  if (!status.empty()) state += "\nSTATUS=" + oneLine(status);
  return send(state, "READY=1");
}

Status notifyStatus(std::string_view text) { return send("STATUS=" + oneLine(text), "STATUS"); }

Status notifyStopping() { return send("STOPPING=1", "STOPPING=1"); }

Status notifyWatchdog() { return send("WATCHDOG=1", "WATCHDOG=1"); }

std::chrono::microseconds watchdogInterval() {
  uint64_t usec = 0;
  // > 0: enabled for this pid (WATCHDOG_PID unset or ours); 0: off; < 0:
  // malformed variables, treated as off.
  if (sd_watchdog_enabled(/*unset_environment=*/0, &usec) <= 0) return std::chrono::microseconds(0);
  return std::chrono::microseconds(usec);
}

}  // namespace vdev::daemon::sd
