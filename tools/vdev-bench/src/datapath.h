// datapath.h - the forwarding paths vdev-bench compares over the same ports.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bpf_objs.h"
#include "options.h"
#include "result.h"
#include "topology.h"

namespace vdev::bench {

class Datapath {
 public:
  virtual ~Datapath() = default;
  virtual std::string name() const = 0;
  // Sets the path up between topology.portA() and portB(); forwarding when
  // it returns ok.
  virtual Status start() = 0;
  // Undoes start(); safe to call twice. Returns the first problem (a vdevd
  // that exited non-zero, leaked frames...) for the report.
  virtual Status stop() = 0;
  // CPU seconds of the datapath's own process, when it has one.
  virtual std::optional<double> processCpuSeconds() const { return std::nullopt; }
  // The datapath's process id while started, 0 when it has none.
  virtual pid_t pid() const { return 0; }
  // The datapath's own statistics as a JSON value (vdevd --stats-json), or "".
  virtual std::string statsJson() const { return ""; }
  // While running: asks for fresh statistics (vdevd: SIGUSR1, then waits for
  // the file to be rewritten) and returns them as JSON, or "".
  virtual std::string liveStatsJson() { return ""; }
  // It transmits xdp_frames into the egress port (ndo_xdp_xmit) rather than
  // skbs: a veth receiving them must have NAPI.
  virtual bool transmitsXdpFrames() const { return false; }
  // How it is set up, in a few words, for the report.
  virtual std::string describe() const { return name(); }
};

// Kind names: "vdevd" (xconnect), "vdevd-switch", "vdevd-spin" (never
// sleeps; switch mode in the switch scenario), "bridge", "xdp-redirect",
// "dpdk-af-xdp" (dpdk-testpmd with DPDK's AF_XDP PMD), "ovs-af-xdp" (Open
// vSwitch's userspace datapath with afxdp ports), each where installed.
inline constexpr const char* kDpdkAfXdp = "dpdk-af-xdp";
inline constexpr const char* kOvsAfXdp = "ovs-af-xdp";
inline constexpr const char* kOvsSchema = "/usr/share/openvswitch/vswitch.ovsschema";
bool isKnownDatapath(const std::string& kind);
bool isVdevd(const std::string& kind);
// Why kind cannot run in scenario sc, or "" when it can.
std::string datapathFitsScenario(const std::string& kind, Scenario sc);
Result<std::unique_ptr<Datapath>> makeDatapath(const std::string& kind, Topology& topo, const Options& o,
                                               const std::string& vdevdPath, const std::string& workDir);

// How a vdevd datapath runs: what makeDatapath() derives from a vdevd kind
// and the topology, or what another mode (--real) sets up itself.
struct VdevdSpec {
  std::string kind;                 // the datapath's name
  const Netns* ns = nullptr;        // vdevd runs inside (ip netns exec); outlives the datapath
  std::vector<std::string> args;    // after vdevd's path, except --stats-json (the datapath's own)
  int cpu = -1;                     // pinned to this CPU, -1 anywhere
  int prio = 0;                     // SCHED_FIFO priority, 0 normal
  bool transmitsXdpFrames = false;  // Datapath::transmitsXdpFrames()
  std::string describe;             // Datapath::describe()
  // How long start() waits for "vdevd: ready", and stop() for vdevd to
  // exit after SIGTERM: attaching and detaching hundreds of ports takes
  // seconds.
  std::chrono::seconds readyTimeout{30};
  std::chrono::seconds exitTimeout{15};
};
// vdevd (at vdevdPath) as spec says; its statistics file is statsPath, what
// it prints goes to logPath.
std::unique_ptr<Datapath> makeVdevd(VdevdSpec spec, const std::string& vdevdPath, const std::string& statsPath,
                                    const std::string& logPath);

// Why kind cannot run on this host (dpdk-af-xdp, ovs-af-xdp: a tool that is
// not installed), or "".
std::string datapathMissing(const std::string& kind);

// Where vdevd is: --vdevd, else ../../daemon/vdevd relative to this binary
// (the build tree), else PATH. Empty when not found.
std::string findVdevd(const std::string& given);

}  // namespace vdev::bench
