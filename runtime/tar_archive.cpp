#include "runtime/tar_archive.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace det::runtime {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t block = 512;

void put_octal(char* field, std::size_t width, uint64_t value) {
  std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1), static_cast<unsigned long long>(value));
}

uint64_t get_octal(const char* field, std::size_t width) {
  uint64_t value = 0;
  for (std::size_t i = 0; i < width && field[i] != 0 && field[i] != ' '; ++i) {
    if (field[i] < '0' || field[i] > '7') throw std::runtime_error("the model definition archive is corrupt");
    value = value * 8 + static_cast<uint64_t>(field[i] - '0');
  }
  return value;
}

std::string header(const std::string& name, char type, uint64_t size, unsigned mode) {
  std::string h(block, '\0');
  std::string prefix, base = name;
  if (name.size() > 100) {
    // Split at a slash before the last character, so that a directory's name ("dir/") keeps a base.
    auto cut = name.rfind('/', std::min<std::size_t>(155, name.size() - 2));
    if (cut == std::string::npos || cut == 0 || name.size() - cut - 1 > 100)
      throw std::runtime_error("the path " + name + " is too long for the model definition archive");
    prefix = name.substr(0, cut);
    base = name.substr(cut + 1);
  }
  std::memcpy(&h[0], base.data(), base.size());
  put_octal(&h[100], 8, mode);
  put_octal(&h[108], 8, 0);
  put_octal(&h[116], 8, 0);
  put_octal(&h[124], 12, size);
  put_octal(&h[136], 12, 0);
  h[156] = type;
  std::memcpy(&h[257], "ustar", 6);
  std::memcpy(&h[263], "00", 2);
  std::memcpy(&h[345], prefix.data(), prefix.size());
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(&h[148], 8, "%06o", sum);
  return h;
}

void pad(std::string& out) {
  out.append((block - out.size() % block) % block, '\0');
}

} // namespace

std::string pack_directory(const std::string& dir, std::size_t max_bytes) {
  if (!fs::is_directory(dir)) throw std::runtime_error(dir + " is not a directory");
  // Links to files are packed as the files; links to directories are not followed, so that a
  // link cannot pack a directory twice, or forever.
  std::vector<fs::path> entries;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (!(e.is_symlink() && e.is_directory())) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  std::string out;
  auto check = [&] {
    if (out.size() > max_bytes)
      throw std::runtime_error("the model definition in " + dir + " is over " + std::to_string(max_bytes >> 20) +
                               " MiB; det takes at most that much: leave data sets and outputs out of it");
  };
  for (const auto& path : entries) {
    auto name = path.lexically_relative(dir).generic_string();
    auto perms = static_cast<unsigned>(fs::status(path).permissions()) & 0777u;
    if (fs::is_directory(path)) {
      out += header(name + "/", '5', 0, perms);
    } else if (fs::is_regular_file(path)) {
      auto size = fs::file_size(path);
      out += header(name, '0', size, perms);
      if (out.size() + size > max_bytes) {
        out.resize(max_bytes + 1);
        check();
      }
      std::ifstream in(path, std::ios::binary);
      auto at = out.size();
      out.resize(at + size);
      if (!in || !in.read(out.data() + at, static_cast<std::streamsize>(size)))
        throw std::runtime_error("cannot read " + path.string() + " whole for the model definition archive");
      pad(out);
    }
    check();
  }
  out.append(2 * block, '\0');
  return out;
}

void unpack_archive(const std::string& archive, const std::string& into) {
  fs::create_directories(into);
  const fs::path root = fs::weakly_canonical(into);
  std::size_t at = 0;
  while (at + block <= archive.size()) {
    const char* h = archive.data() + at;
    if (std::all_of(h, h + block, [](char c) { return c == '\0'; })) break;  // the end blocks
    std::string base(h, strnlen(h, 100)), prefix(h + 345, strnlen(h + 345, 155));
    std::string name = prefix.empty() ? base : prefix + "/" + base;
    auto size = get_octal(h + 124, 12);
    auto mode = static_cast<fs::perms>(get_octal(h + 100, 8) & 0777u);
    at += block;
    if (at + size > archive.size()) throw std::runtime_error("the model definition archive is truncated");
    auto target = fs::weakly_canonical(root / name);
    auto relative = target.lexically_relative(root).generic_string();
    if (name.empty() || name[0] == '/' || relative.rfind("..", 0) == 0)
      throw std::runtime_error("the model definition archive names " + name + ", outside its directory");
    if (h[156] == '5') {
      fs::create_directories(target);
    } else if (h[156] == '0' || h[156] == '\0') {
      fs::create_directories(target.parent_path());
      std::ofstream file(target, std::ios::binary);
      if (!file.write(archive.data() + at, static_cast<std::streamsize>(size)))
        throw std::runtime_error("cannot write " + target.string() + " from the model definition archive");
      file.close();
      fs::permissions(target, mode);
    }
    at += (size + block - 1) / block * block;
  }
}

} // namespace det::runtime
