// Prometheus metrics for node_exporter's textfile collector.
#pragma once

#include <expected>
#include <string>

namespace gpufault::daemon {

struct State;

/// Renders the metrics of a running daemon in the Prometheus text exposition format (0.0.4):
/// records by kind and GPU, incidents by kind and signature, per-stream lines, lag, lost
/// records and bytes, store size and health. Errors are store errors.
std::expected<std::string, std::string> renderMetrics(State& s);

/// Writes renderMetrics() to the configured path atomically (a temporary file in the same
/// directory, fsync, rename), so the collector never reads half a file. The file is mode 0644
/// whatever the process umask (node_exporter reads it as its own user). Errors name the file
/// and errno's text (EROFS: with a hint to restart the service).
std::expected<void, std::string> writeMetrics(State& s);

/// A Prometheus label value with `\`, `"` and newlines escaped.
std::string promLabel(std::string_view v);

}  // namespace gpufault::daemon
