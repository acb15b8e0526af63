// report.h - medians over runs, the text table and the JSON document.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "options.h"
#include "runner.h"

namespace vdev::bench {

struct DatapathResult {
  std::string datapath;
  std::string describe;                 // how it was set up
  std::vector<RunResult> runs;          // throughput
  std::vector<LatencyRun> latencyRuns;  // --latency
  std::vector<RateSearch> rateRuns;     // --find-rate
  std::vector<std::string> errors;      // runs that failed, why
};

struct Skipped {
  std::string datapath;
  std::string reason;
};

struct Report {
  const Options* opt = nullptr;
  std::string prefix;
  std::string vdevdPath;
  std::string bridgeNfCallIptables;  // in the DUT namespace: "0", "1", "absent"
  std::string generator;             // how the load was offered
  std::vector<std::string> latencyPairs;  // "container-container: container1 -> container2"
  std::vector<DatapathResult> results;
  std::vector<Skipped> skipped;
  std::vector<std::string> leftovers;
  std::string fatal;  // setup failure / interruption, or ""
};

// The median of v (the mean of the middle two when even); NAN when empty.
double median(std::vector<double> v);

void printTable(const Report& r, FILE* out);
std::string toJson(const Report& r);
// vdev-bench's JSON documents: nlohmann's, members in the order written.
using Json = nlohmann::ordered_json;
// A figure with `decimals` digits after the point, as precise as the text
// prints it; NaN and infinities (no samples) are null.
Json fixed(double v, int decimals);
// The fields every JSON document of vdev-bench starts with ("tool", "command":
// argv, "host": kernel and CPUs) and ends with ("cleanup": ok and the
// leftovers, "error": null or the fatal error), in its top-level object.
void jsonHead(Json& j, const std::vector<std::string>& argv);
void jsonTail(Json& j, const std::vector<std::string>& leftovers, const std::string& fatal);
// The document as vdev-bench prints it: indented, a newline at the end.
std::string dumpJson(const Json& j);

}  // namespace vdev::bench
