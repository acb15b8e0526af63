// The Prometheus metrics of vdevd: what `vdevctl stats --prometheus` prints
// and what vdevd serves at GET /metrics (--metrics-listen), from one writer,
// so both have the same names, labels, HELP and TYPE lines. Built from the
// replies to STATS_GET (every port) and INFO_GET; the counters' own metrics
// come from the counter table (stats/format.h). Pure string building,
// thread safe.
#pragma once

#include <string>

#include "proto/codec.h"

namespace vdev::proto {

// The text exposition format 0.0.4 of `stats` and, if given, `info`
// (vdev_build_info, vdev_uptime_seconds, vdev_ports_room, and with its
// UID_CAPS the caps and each non-root uid's use: vdev_uid_*).
std::string prometheusText(const StatsReply& stats, const InfoMsg* info);

// The Content-Type of that text when served over HTTP.
inline constexpr const char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace vdev::proto
