#pragma once
// TensorBoard's Event records, encoded in protobuf's wire format by hand: the few fields of
// tensorboard/compat/proto/{event,summary,tensor}.proto and plugins/hparams that det writes.
// A protobuf runtime would add nothing but a generated copy of TensorBoard's schema.

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace det::tensorboard {

/// `value`'s bytes as protobuf's fixed fields and TFRecord's framing store them: little-endian,
/// which is how x86-64 and arm64 machines hold them too.
template <class T>
std::string little_endian_bytes(T value) {
  std::string raw(sizeof(T), '\0');
  std::memcpy(raw.data(), &value, sizeof(T));
  return raw;
}

/// A hyperparameter's value as the HParams dashboard takes it (google.protobuf.Value's number,
/// string and bool cases).
using hparam_value = std::variant<double, std::string, bool>;

/// Whether a scalar carries the "scalars" plugin metadata: TensorBoard reads a tag's metadata
/// from its first event in a file, so the writer attaches it there and omits it afterwards.
enum class tag_metadata { attach, omit };

struct scalar_value {
  std::string tag;
  float value;  ///< TensorBoard's loader takes rank-0 DT_FLOAT tensors only
  tag_metadata metadata;
};

/// The first record of every event file: Event{wall_time, file_version = "brain.Event:2"}.
std::string file_version_event(double wall_time);

/// One Event at `step` whose summary holds each scalar as a rank-0 DT_FLOAT tensor.
std::string scalars_event(double wall_time, int64_t step, const std::vector<scalar_value>& scalars);

/// The HParams plugin's `_hparams_/session_start_info` at step 0: the run is one session with
/// these hyperparameters, so the dashboard lists it with its latest scalars as metrics.
std::string session_start_event(double wall_time, const std::map<std::string, hparam_value>& hparams,
                                double start_time_secs);

}  // namespace det::tensorboard
