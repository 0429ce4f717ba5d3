// nvidia_smi: an optional inventory of the local GPUs from `nvidia-smi --query-gpu=name,
// memory.total,driver_version,power.limit --format=csv,noheader,nounits`, recorded with a job
// so reports can say what hardware measured it (docs/metrics.md §8.2; §11 names the GPU profiles).
//
// query_gpus() runs the tool with a bounded wait; a missing tool (no NVIDIA driver on this host,
// the normal case for remote targets) is "skipped" with a note, never an error. Parsing is a
// separate pure function so it can be tested on sample text. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmcap::agent {

struct GpuInfo {
  int index = 0;                           // row order of nvidia-smi
  std::string name;                        // e.g. "NVIDIA H100 80GB HBM3"
  std::optional<double> memory_total_mib;  // nullopt when reported as [N/A]
  std::string driver_version;
  std::optional<double> power_limit_w;  // nullopt when [N/A] / [Not Supported]
};

struct GpuInventory {
  bool available = false;  // nvidia-smi ran and its output was read
  std::vector<GpuInfo> gpus;
  std::string note;  // why it was skipped, or parse problems (line numbers)
};

// Parses the CSV output (noheader, nounits): one GPU per line, four comma-separated fields.
// Lines with the wrong field count are skipped and named in the note.
GpuInventory parse_nvidia_smi_csv(std::string_view text);

// Runs nvidia-smi (found on PATH, or at `executable` when given) and parses its output.
// Never throws; a missing tool or a non-zero exit yields available=false with a note.
GpuInventory query_gpus(const std::string& executable = "nvidia-smi", int timeout_s = 10);

}  // namespace llmcap::agent
