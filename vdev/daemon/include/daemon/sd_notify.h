// The systemd notification protocol (sd_notify(3)) for vdevd, a thin wrapper
// over libsystemd.
//
// vdevd runs as a Type=notify service (contrib/systemd/vdevd.service,
// docs/systemd.md): READY=1 once every configured port is attached, STATUS=
// lines a human reads in `systemctl status`, WATCHDOG=1 keep-alives from the
// control thread, STOPPING=1 when shutdown begins.
//
// Every call is a no-op that returns ok when NOTIFY_SOCKET is unset (vdevd
// started from a shell or a test), so callers need no "under systemd?" test.
// A failure to send (the socket vanished) is returned, never fatal by itself:
// the caller logs it and carries on. NOTIFY_SOCKET stays in the environment.
//
// Thread safety: any thread may call these (each opens its own datagram
// socket); they read the environment, so not concurrently with setenv().
#pragma once

#include <chrono>
#include <string_view>

#include "base/result.h"

namespace vdev::daemon::sd {

// True if NOTIFY_SOCKET is set (the notifications go somewhere).
bool notifySocketSet();

// "READY=1", plus "STATUS=<status>" in the same datagram if status is not
// empty. Send once, when the service does what it is for.
Status notifyReady(std::string_view status = {});

// "STATUS=<text>": one line (newlines become spaces, since each line of a
// notification is a separate KEY=VALUE assignment).
Status notifyStatus(std::string_view text);

// "STOPPING=1": shutdown has begun (systemd stops expecting WATCHDOG=1 and
// shows "deactivating").
Status notifyStopping();

// "WATCHDOG=1": the keep-alive. Send at least every watchdogInterval() / 2.
Status notifyWatchdog();

// The service's watchdog interval (WatchdogSec=, from WATCHDOG_USEC), or 0
// if the watchdog is off, or WATCHDOG_PID names another process (the
// variables were inherited, not meant for this one).
std::chrono::microseconds watchdogInterval();

}  // namespace vdev::daemon::sd
