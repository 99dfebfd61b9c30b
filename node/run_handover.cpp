#include "node/run_handover.hpp"

#include <sstream>
#include <stdexcept>

namespace det::runtime {

std::string to_string(warm_preload preload) {
  switch (preload) {
    case warm_preload::libtorch: return "libtorch";
    case warm_preload::nothing: break;
  }
  return "nothing";
}

std::optional<warm_preload> warm_preload_from(std::string_view word) {
  for (auto preload : {warm_preload::libtorch, warm_preload::nothing})
    if (word == to_string(preload)) return preload;
  return std::nullopt;
}

namespace {

std::string escaped(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string unescaped(const std::string& value) {
  std::string out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '\\' && i + 1 < value.size()) {
      out += value[i + 1] == 'n' ? '\n' : value[i + 1];
      ++i;
    } else {
      out += value[i];
    }
  }
  return out;
}

}  // namespace

std::string encode_handover(const run_handover& run) {
  std::string text;
  for (const auto& a : run.args) text += "arg " + escaped(a) + "\n";
  for (const auto& [name, value] : run.env) text += "env " + name + "=" + escaped(value) + "\n";
  if (run.run_as) text += "user " + std::to_string(run.run_as->uid) + " " + std::to_string(run.run_as->gid) + "\n";
  return text + "run\n";
}

std::optional<run_handover> read_handover(std::istream& in) {
  run_handover run;
  std::string line;
  while (std::getline(in, line)) {
    if (line == "run") return run;
    if (line.rfind("arg ", 0) == 0) {
      run.args.push_back(unescaped(line.substr(4)));
    } else if (line.rfind("env ", 0) == 0) {
      auto eq = line.find('=', 4);
      if (eq == std::string::npos || eq == 4) throw std::runtime_error("the hand-over line \"" + line + "\" names no variable");
      run.env[line.substr(4, eq - 4)] = unescaped(line.substr(eq + 1));
    } else if (line.rfind("user ", 0) == 0) {
      std::istringstream ids{line.substr(5)};
      unsigned long uid = 0, gid = 0;
      if (!(ids >> uid >> gid) || !ids.eof() || uid == 0 || gid == 0 || uid > 4294967294UL || gid > 4294967294UL)
        throw std::runtime_error("the hand-over line \"" + line + "\" names no user other than root");
      run.run_as = process::unix_identity{static_cast<uid_t>(uid), static_cast<gid_t>(gid)};
    } else {
      throw std::runtime_error("the hand-over line \"" + line + "\" is none of arg, env, user and run");
    }
  }
  return std::nullopt;
}

} // namespace det::runtime
