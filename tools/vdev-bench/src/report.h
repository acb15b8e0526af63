// report.h - medians over runs, the text table and the JSON document.
#pragma once

#include <string>
#include <vector>

#include "json_writer.h"
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
// The fields every JSON document of vdev-bench starts with ("tool", "command":
// argv, "host": kernel and CPUs) and ends with ("cleanup": ok and the
// leftovers, "error": null or the fatal error), inside its top-level object.
void jsonHead(JsonWriter& j, const std::vector<std::string>& argv);
void jsonTail(JsonWriter& j, const std::vector<std::string>& leftovers, const std::string& fatal);

}  // namespace vdev::bench
