#include "tools/cli_format.hpp"

#include <iterator>

#include <iostream>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <ostream>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

namespace det::tools {

table::table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void table::add_row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

void table::print(std::ostream& out) const {
  std::vector<size_t> width(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    width[c] = headers_[c].size();
    for (const auto& row : rows_)
      width[c] = std::max(width[c], row[c].size());
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c > 0)
        line += " | ";
      line += cells[c];
      if (c + 1 < cells.size())
        line.append(width[c] - cells[c].size(), ' ');
    }
    out << line << '\n';
  };
  print_row(headers_);
  std::string rule;
  for (size_t c = 0; c < width.size(); ++c) {
    if (c > 0)
      rule += "-+-";
    rule.append(width[c], '-');
  }
  out << rule << '\n';
  for (const auto& row : rows_)
    print_row(row);
}

namespace {
std::string without_prefix(const std::string& name, const std::string& prefix) {
  return name.compare(0, prefix.size(), prefix) == 0 ? name.substr(prefix.size()) : name;
}
} // namespace

std::string state_name(pb::State state) {
  return without_prefix(pb::State_Name(state), "STATE_");
}

std::string state_name(pb::CheckpointState state) {
  return without_prefix(pb::CheckpointState_Name(state), "CHECKPOINT_STATE_");
}


std::string format_time(const google::protobuf::Timestamp& time) {
  if (time.seconds() == 0 && time.nanos() == 0)
    return "";
  std::time_t secs = static_cast<std::time_t>(time.seconds());
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string format_number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

std::string format_metrics(const google::protobuf::Map<std::string, double>& metrics) {
  std::map<std::string, double> sorted(metrics.begin(), metrics.end());
  std::string out;
  for (const auto& [name, value] : sorted) {
    if (!out.empty())
      out += ", ";
    out += name + "=" + format_number(value);
  }
  return out;
}

std::string format_validation(const google::protobuf::Map<std::string, double>& metrics) {
  google::protobuf::Map<std::string, double> measured = metrics;
  measured.erase("batches");  // where it was taken, said once in front
  measured.erase("epochs");
  auto at = metrics.find("batches");
  return (at == metrics.end() ? std::string() : "validated at batch " + format_number(at->second) + ": ") +
         format_metrics(measured);
}

std::string format_hparams(const std::string& hparams_json) {
  google::protobuf::Struct hparams;
  if (!google::protobuf::util::JsonStringToMessage(hparams_json, &hparams).ok())
    return hparams_json;
  std::map<std::string, google::protobuf::Value> sorted(hparams.fields().begin(),
                                                        hparams.fields().end());
  std::string out;
  for (const auto& [name, value] : sorted) {
    if (!out.empty())
      out += ", ";
    out += name + "=";
    switch (value.kind_case()) {
      case google::protobuf::Value::kNumberValue:
        out += format_number(value.number_value());
        break;
      case google::protobuf::Value::kStringValue:
        out += value.string_value();
        break;
      case google::protobuf::Value::kBoolValue:
        out += value.bool_value() ? "true" : "false";
        break;
      default: {
        std::string json;
        google::protobuf::util::MessageToJsonString(value, &json);
        out += json;
      }
    }
  }
  return out;
}

std::string format_batches(const pb::Trial& trial) {
  std::string out = std::to_string(trial.total_batches());
  if (trial.target_batches() > 0)
    out += "/" + std::to_string(trial.target_batches());
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in)
    throw std::runtime_error("cannot read " + path + ".");
  return text.str();
}

std::string read_file_or_stdin(const std::string& path) {
  if (path == "-")
    return std::string(std::istreambuf_iterator<char>(std::cin), {});
  return read_file(path);
}

std::string yes_no(bool b) {
  return b ? "yes" : "no";
}

std::string comma_joined(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

std::string experiment_path(std::int64_t id) {
  return "/api/v1/experiments/" + std::to_string(id);
}

} // namespace det::tools
