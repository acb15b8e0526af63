// vdevd's command line: what the options set (DaemonOptions), the table
// base/cli.h parses them with, the text --help prints, and what follows from
// them once every option is read (defaults that depend on other options).
//
// Control plane only, not thread safe (base/cli.h: getopt_long's globals).
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/cli.h"
#include "daemon/metrics_server.h"
#include "daemon/state_file.h"
#include "datapath/datapath.h"
#include "proto/server.h"
#include "uid_quota.h"

namespace vdev::daemon {

struct DaemonOptions {
  datapath::DatapathConfig cfg;
  std::vector<std::string> ports;                                 // --port, in order
  std::vector<std::string> no_fast_rx;                            // --no-fast-rx: names among `ports`
  std::vector<std::pair<std::string, datapath::PortHook>> hooks;  // --hook IFNAME=xdp|tc|auto
  std::string json_path;                                          // --stats-json
  bool verbose = false;
  std::string metrics_text;  // --metrics-listen as given, for messages
  std::optional<ListenAddress> metrics_addr;
  std::vector<AllowedNet> metrics_allow;  // --metrics-allow
  std::string socket_path = proto::kDefaultSocketPath;  // "" with --no-socket
  std::string state_path = "/var/lib/vdev/vdevd.state";  // "" with --no-state
  std::string group_name;
  UidCaps caps;
  // Options whose default is another option's value, set once all are read.
  bool tx_budget_given = false;  // else the TX ring size
  bool fdb_cap_given = false;    // else a quarter of --fdb-size
};

// What `vdevd --help` prints.
extern const char kVdevdHelp[];

// The option table (base/cli.h), its handlers filling `o`, which must
// outlive the parser built from it. -h/--help and -V/--version are the
// parser's own.
std::vector<cli::Option> vdevdOptionTable(DaemonOptions& o);

// Parses argv[1..argc): the table, then the checks that need more than one
// option, then what follows from them (finish()). With Outcome::exit set the
// caller is to exit with it (help or version printed to `out`, a usage
// error to `err`); otherwise `o` is complete. A warning about the options
// (more ports than --frames holds) goes to `err`.
cli::Parser::Outcome parseVdevdOptions(int argc, char** argv, DaemonOptions& o, FILE* out = stdout,
                                       FILE* err = stderr);

}  // namespace vdev::daemon
