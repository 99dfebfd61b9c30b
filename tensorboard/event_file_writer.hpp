#pragma once
// One TensorBoard event file: TFRecord framing around Event records, named as TensorBoard's own
// writer names them, so that `det tensorboard` (or any TensorBoard) reads a trial's metrics.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "tensorboard/event_records.hpp"

namespace det::tensorboard {

/// Appends events to a new file `events.out.tfevents.<unix secs>.<host>.<pid>.<n>` in a
/// directory: one file per writer, so a resumed run never appends to the file of the run
/// before it. TensorBoard tails the file while it grows and tolerates a partial last record.
/// Writes are buffered and handed to the system by the first write `flush_interval` after the
/// last flush, and by flush() (the worker's reporter flushes when it drains at checkpoints and at
/// the end); errors throw std::runtime_error naming the file. Not thread-safe.
class event_file_writer {
 public:
  static constexpr std::chrono::seconds flush_interval{1};

  /// Creates `directory` as needed and the file in it, whose first record is the file version.
  explicit event_file_writer(const std::string& directory);
  /// Writes to `fd`, a new file opened for writing at `path` by a caller that chose how (the
  /// master, beneath a directory users write to), and owns it from here on.
  event_file_writer(int fd, std::string path);
  ~event_file_writer();
  event_file_writer(const event_file_writer&) = delete;
  event_file_writer& operator=(const event_file_writer&) = delete;

  const std::string& path() const { return path_; }

  /// The run's hyperparameters, for TensorBoard's HParams dashboard.
  void write_session_start(const std::map<std::string, hparam_value>& hparams, double start_time_secs);

  /// One event at `step` with each metric as the scalar `<prefix>/<name>`.
  void write_scalars(std::string_view prefix, int64_t step, double wall_time,
                     const std::map<std::string, double>& metrics);

  /// Hands everything written so far to the system.
  void flush();

 private:
  void write_record(std::string_view data);
  void flush_if_due();
  void start();

  std::string path_;
  std::FILE* file_ = nullptr;
  std::set<std::string> tagged_;  // tags whose first event, with the plugin metadata, is written
  std::chrono::steady_clock::time_point last_flush_;
};

/// A new event file's name: `events.out.tfevents.<unix secs>.<host>.<pid>.<n>`.
std::string new_event_file_name();

/// Seconds since the Unix epoch, with microseconds: an Event's wall_time.
double wall_time_now();

}  // namespace det::tensorboard
