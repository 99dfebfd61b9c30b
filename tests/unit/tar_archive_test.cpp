// Model definitions travel as tar archives (runtime/tar_archive.hpp).
#include "runtime/tar_archive.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

struct scratch {
  fs::path path;
  scratch() {
    char name[] = "/tmp/det-tar-XXXXXX";
    path = ::mkdtemp(name);
  }
  ~scratch() { fs::remove_all(path); }
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

} // namespace

TEST_CASE("a model directory survives packing and unpacking, long paths and links included") {
  scratch from, to;
  auto deep = from.path / std::string(60, 'a') / std::string(60, 'b');  // a directory name over 100 bytes
  fs::create_directories(deep);
  std::ofstream(from.path / "train.py") << "print('hi')\n";
  std::ofstream(deep / "weights.bin", std::ios::binary) << std::string(70000, '\x7f');
  fs::create_directory_symlink(from.path, from.path / "loop");  // not followed: no endless archive
  std::ofstream(from.path / "z_last.txt") << "after the long directory\n";
  fs::permissions(from.path / "train.py", fs::perms::owner_all);

  auto archive = det::runtime::pack_directory(from.path.string(), 1 << 20);
  det::runtime::unpack_archive(archive, (to.path / "out").string());
  CHECK(read(to.path / "out" / "train.py") == "print('hi')\n");
  CHECK(read(to.path / "out" / std::string(60, 'a') / std::string(60, 'b') / "weights.bin").size() == 70000);
  CHECK(read(to.path / "out" / "z_last.txt") == "after the long directory\n");
  CHECK((fs::status(to.path / "out" / "train.py").permissions() & fs::perms::owner_exec) != fs::perms::none);
  CHECK_FALSE(fs::exists(to.path / "out" / "loop"));
}

TEST_CASE("a directory over the limit is refused, and so is an archive that escapes its directory") {
  scratch from, to;
  std::ofstream(from.path / "big.bin", std::ios::binary) << std::string(5000, 'x');
  CHECK_THROWS_WITH(det::runtime::pack_directory(from.path.string(), 4096), doctest::Contains("is over"));

  fs::create_directories(from.path / "inner");
  std::ofstream(from.path / "inner" / "evil.txt") << "x";
  auto archive = det::runtime::pack_directory((from.path / "inner").string(), 1 << 20);
  auto at = archive.find("evil.txt");
  REQUIRE(at != std::string::npos);
  archive.replace(0, 11, "../evil.txt");  // the name field, with a checksum that no longer matters
  CHECK_THROWS_WITH(det::runtime::unpack_archive(archive, (to.path / "out").string()),
                    doctest::Contains("outside its directory"));
  CHECK_FALSE(fs::exists(to.path / "evil.txt"));
}
