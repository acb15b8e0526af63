// vdevd: the vdev datapath daemon (foreground). Its options:
// daemon_options.h; what it does with them: daemon.h.
#include "daemon.h"
#include "daemon_options.h"

int main(int argc, char** argv) {
  vdev::daemon::DaemonOptions options;
  if (auto r = vdev::daemon::parseVdevdOptions(argc, argv, options); r.exit) return *r.exit;
  vdev::daemon::Daemon daemon(std::move(options));
  if (const int status = daemon.start(); status != 0) return status;
  daemon.run();
  return daemon.stop();
}
