#include "tensorboard/event_records.hpp"

#include <cstring>

namespace det::tensorboard {

namespace {

// Protobuf's wire types.
enum class wire_type : uint8_t { varint = 0, fixed64 = 1, length_delimited = 2 };

// Appends fields to a message being encoded; nested messages are encoded first and added whole.
class message_writer {
 public:
  message_writer& varint(int field, uint64_t value) {
    key(field, wire_type::varint);
    put_varint(value);
    return *this;
  }
  message_writer& fixed64(int field, double value) {
    key(field, wire_type::fixed64);
    out_ += little_endian_bytes(value);
    return *this;
  }
  message_writer& bytes(int field, std::string_view value) {
    key(field, wire_type::length_delimited);
    put_varint(value.size());
    out_.append(value);
    return *this;
  }
  std::string take() { return std::move(out_); }

 private:
  void key(int field, wire_type type) { put_varint((static_cast<uint64_t>(field) << 3) | static_cast<uint8_t>(type)); }
  void put_varint(uint64_t value) {
    while (value >= 0x80) {
      out_.push_back(static_cast<char>((value & 0x7F) | 0x80));
      value >>= 7;
    }
    out_.push_back(static_cast<char>(value));
  }
  std::string out_;
};

// Field numbers, from TensorBoard's .proto files.
namespace event {
constexpr int wall_time = 1, step = 2, file_version = 3, summary = 5;
}
namespace summary {
constexpr int value = 1;
}
namespace summary_value {
constexpr int tag = 1, tensor = 8, metadata = 9;
}
namespace summary_metadata {
constexpr int plugin_data = 1, data_class = 4;
constexpr uint64_t data_class_scalar = 1;
}
namespace plugin_data {
constexpr int plugin_name = 1, content = 2;
}
namespace tensor {
constexpr int dtype = 1, tensor_shape = 2, float_val = 5;
constexpr uint64_t dt_float = 1;
}
namespace tensor_shape {
constexpr int dim = 2;
}
namespace hparams_plugin_data {
constexpr int session_start_info = 3;
}
namespace session_start_info {
constexpr int hparams = 1, start_time_secs = 5;
}
namespace map_entry {
constexpr int key = 1, value = 2;
}
namespace struct_value {  // google.protobuf.Value
constexpr int number_value = 2, string_value = 3, bool_value = 4;
}

std::string plugin_metadata(std::string_view plugin, std::string_view content, uint64_t data_class) {
  message_writer data_writer;
  data_writer.bytes(plugin_data::plugin_name, plugin);
  if (!content.empty()) data_writer.bytes(plugin_data::content, content);  // proto3 leaves defaults out
  auto data = data_writer.take();
  message_writer m;
  m.bytes(summary_metadata::plugin_data, data);
  if (data_class != 0) m.varint(summary_metadata::data_class, data_class);
  return m.take();
}

std::string scalar_tensor(float value) {
  return message_writer{}
      .varint(tensor::dtype, tensor::dt_float)
      .bytes(tensor::tensor_shape, "")  // rank 0
      .bytes(tensor::float_val, little_endian_bytes(value))  // packed repeated float: its 4 bytes
      .take();
}

// The hparams plugin's placeholder value: a DT_FLOAT tensor of shape [0].
std::string null_tensor() {
  auto shape = message_writer{}.bytes(tensor_shape::dim, "").take();
  return message_writer{}.varint(tensor::dtype, tensor::dt_float).bytes(tensor::tensor_shape, shape).take();
}

std::string struct_value_of(const hparam_value& v) {
  message_writer m;
  if (const auto* number = std::get_if<double>(&v)) m.fixed64(struct_value::number_value, *number);
  else if (const auto* text = std::get_if<std::string>(&v)) m.bytes(struct_value::string_value, *text);
  else m.varint(struct_value::bool_value, std::get<bool>(v) ? 1 : 0);
  return m.take();
}

std::string event_with_summary(double wall_time, int64_t step, const std::string& summary_bytes) {
  message_writer e;
  e.fixed64(event::wall_time, wall_time);
  if (step != 0) e.varint(event::step, static_cast<uint64_t>(step));
  return e.bytes(event::summary, summary_bytes).take();
}

}  // namespace

std::string file_version_event(double wall_time) {
  return message_writer{}.fixed64(event::wall_time, wall_time).bytes(event::file_version, "brain.Event:2").take();
}

std::string scalars_event(double wall_time, int64_t step, const std::vector<scalar_value>& scalars) {
  static const std::string scalars_metadata =
      plugin_metadata("scalars", "", summary_metadata::data_class_scalar);  // ScalarPluginData{version 0} is empty
  message_writer summary_bytes;
  for (const auto& s : scalars) {
    message_writer v;
    v.bytes(summary_value::tag, s.tag);
    if (s.metadata == tag_metadata::attach) v.bytes(summary_value::metadata, scalars_metadata);
    v.bytes(summary_value::tensor, scalar_tensor(s.value));
    summary_bytes.bytes(summary::value, v.take());
  }
  return event_with_summary(wall_time, step, summary_bytes.take());
}

std::string session_start_event(double wall_time, const std::map<std::string, hparam_value>& hparams,
                                double start_time_secs) {
  message_writer info;
  for (const auto& [name, value] : hparams)
    info.bytes(session_start_info::hparams,
               message_writer{}.bytes(map_entry::key, name).bytes(map_entry::value, struct_value_of(value)).take());
  info.fixed64(session_start_info::start_time_secs, start_time_secs);
  // HParamsPluginData{version 0 (the default, so absent), session_start_info}
  auto content = message_writer{}.bytes(hparams_plugin_data::session_start_info, info.take()).take();
  auto value = message_writer{}
                   .bytes(summary_value::tag, "_hparams_/session_start_info")
                   .bytes(summary_value::metadata, plugin_metadata("hparams", content, 0))
                   .bytes(summary_value::tensor, null_tensor())
                   .take();
  return event_with_summary(wall_time, 0, message_writer{}.bytes(summary::value, value).take());
}

}  // namespace det::tensorboard
