#pragma once
// How the det CLI renders what the master returns: tables, states, times,
// metrics and hyperparameters.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "messages/common.pb.h"
#include "messages/states.hpp"

namespace det::tools {

/// Rows of cells printed under a header with each column as wide as its widest
/// cell, the shape of Determined's tabulate tables.
class table {
public:
  explicit table(std::vector<std::string> headers);

  void add_row(std::vector<std::string> cells);
  void print(std::ostream& out) const;

private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

/// "COMPLETED" for STATE_COMPLETED: the prefix is noise in a table.
std::string state_name(pb::State state);
std::string state_name(pb::CheckpointState state);

/// The whole file at `path`; throws std::runtime_error naming it if it cannot be read.
std::string read_file(const std::string& path);
/// As read_file(), but "-" reads standard input (notes piped in).
std::string read_file_or_stdin(const std::string& path);

/// "yes" or "no".
std::string yes_no(bool b);

/// The items separated by commas (labels in a table cell).
std::string comma_joined(const google::protobuf::RepeatedPtrField<std::string>& items);

/// The REST path of an experiment: /api/v1/experiments/ID.
std::string experiment_path(std::int64_t id);

/// UTC "YYYY-MM-DD HH:MM:SS", or "" for an unset timestamp.
std::string format_time(const google::protobuf::Timestamp& time);

/// A metric value with 6 significant digits ("0.412345", "1200").
std::string format_number(double value);

/// "name=value, ..." sorted by name.
std::string format_metrics(const google::protobuf::Map<std::string, double>& metrics);

/// A trial's latest validation: "validated at batch 58: validation_loss=0.45, ..." (the batch it
/// was taken at, which a trial stopped early may have trained past).
std::string format_validation(const google::protobuf::Map<std::string, double>& metrics);

/// A trial's hyperparameters JSON object as "name=value, ..." sorted by name;
/// nested values stay JSON, and text that is no JSON object is shown as is.
std::string format_hparams(const std::string& hparams_json);

/// "300/1000" batches, or "300" while the target is unknown.
std::string format_batches(const pb::Trial& trial);

} // namespace det::tools
