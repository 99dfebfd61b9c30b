#include "config/config_file.hpp"

#include "config/config_error.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace det::config::detail {

std::string read_config_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw config_error(path + ": cannot open the config file: " + std::strerror(errno));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw config_error(path + ": cannot read the config file: " + std::strerror(errno));
  return text.str();
}

} // namespace det::config::detail
