// Model definitions travel as tar archives (node/tar_archive.hpp).
#include "node/tar_archive.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>
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

// An entry of an archive made by another tool than pack_directory: a file with `content`, or a
// symbolic link to `link_target`.
struct foreign_entry {
  std::string name;
  std::string content;
  std::string link_target;
};

la_ssize_t append(archive*, void* out, const void* buffer, size_t length) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buffer), length);
  return static_cast<la_ssize_t>(length);
}

// A tar archive written with libarchive, gzip-compressed with `gzip`, holding names that
// pack_directory never writes.
std::string foreign_archive(const std::vector<foreign_entry>& entries, bool gzip) {
  std::string bytes;
  std::unique_ptr<archive, int (*)(archive*)> out{archive_write_new(), archive_write_free};
  archive_write_set_format_pax_restricted(out.get());
  if (gzip) archive_write_add_filter_gzip(out.get());
  REQUIRE(archive_write_open(out.get(), &bytes, nullptr, append, nullptr) == ARCHIVE_OK);
  for (const auto& e : entries) {
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> entry{archive_entry_new(), archive_entry_free};
    archive_entry_set_pathname(entry.get(), e.name.c_str());
    archive_entry_set_perm(entry.get(), 0644);
    if (e.link_target.empty()) {
      archive_entry_set_filetype(entry.get(), AE_IFREG);
      archive_entry_set_size(entry.get(), static_cast<la_int64_t>(e.content.size()));
    } else {
      archive_entry_set_filetype(entry.get(), AE_IFLNK);
      archive_entry_set_symlink(entry.get(), e.link_target.c_str());
    }
    REQUIRE(archive_write_header(out.get(), entry.get()) == ARCHIVE_OK);
    archive_write_data(out.get(), e.content.data(), e.content.size());
  }
  REQUIRE(archive_write_close(out.get()) == ARCHIVE_OK);
  return bytes;
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

TEST_CASE("a path longer than ustar's 255 bytes survives packing and unpacking") {
  scratch from, to;
  const auto relative = fs::path(std::string(200, 'd')) / std::string(200, 'f');  // 401 bytes
  fs::create_directories(from.path / relative.parent_path());
  std::ofstream(from.path / relative) << "deep\n";

  det::runtime::unpack_archive(det::runtime::pack_directory(from.path.string(), 1 << 20), to.path.string());
  CHECK(read(to.path / relative) == "deep\n");
}

TEST_CASE("a gzip-compressed tar archive made by another tool unpacks") {
  scratch to;
  auto archive = foreign_archive({{"./", "", ""}, {"./src/train.py", "print('gz')\n", ""}}, true);
  REQUIRE(archive.substr(0, 2) == "\x1f\x8b");  // gzip's magic number

  det::runtime::unpack_archive(archive, (to.path / "out").string());
  CHECK(read(to.path / "out" / "src" / "train.py") == "print('gz')\n");
}

TEST_CASE("a directory over the limit is refused") {
  scratch from;
  std::ofstream(from.path / "big.bin", std::ios::binary) << std::string(5000, 'x');
  CHECK_THROWS_WITH(det::runtime::pack_directory(from.path.string(), 4096), doctest::Contains("is over"));
}

TEST_CASE("an archive whose entries escape its directory is refused and writes nothing outside it") {
  scratch to;
  const auto into = (to.path / "out").string();
  SUBCASE("through ..") {
    auto archive = foreign_archive({{"inside.txt", "fine\n", ""}, {"../escape", "x", ""}}, false);
    CHECK_THROWS_WITH(det::runtime::unpack_archive(archive, into),
                      doctest::Contains("names ../escape, which cannot be unpacked into"));
    CHECK(read(to.path / "out" / "inside.txt") == "fine\n");
  }
  SUBCASE("through an absolute path") {
    auto archive = foreign_archive({{(to.path / "escape").string(), "x", ""}}, false);
    CHECK_THROWS_WITH(det::runtime::unpack_archive(archive, into), doctest::Contains("its path is absolute"));
  }
  SUBCASE("through a symbolic link") {
    auto archive = foreign_archive({{"link", "", to.path.string()}, {"link/escape", "x", ""}}, true);
    CHECK_THROWS_WITH(det::runtime::unpack_archive(archive, into),
                      doctest::Contains("names link/escape, which cannot be unpacked into"));
  }
  CHECK_FALSE(fs::exists(to.path / "escape"));
}
