#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "auth/untrusted_names.hpp"
#include "runtime/open_beneath.hpp"

using det::auth::is_plain_relative_path;
using det::runtime::open_beneath;
namespace fs = std::filesystem;

namespace {

struct scratch {
  fs::path root = fs::temp_directory_path() / ("det-beneath-" + std::to_string(::getpid()));
  scratch() {
    fs::remove_all(root);
    fs::create_directories(root / "storage" / "ckpt" / "sub");
    std::ofstream(root / "storage" / "ckpt" / "sub" / "model.pt") << "weights";
    std::ofstream(root / "secret") << "agent token";
  }
  ~scratch() { fs::remove_all(root); }
  std::string storage() const { return (root / "storage").string(); }
};

}  // namespace

TEST_CASE("a checkpoint's file opens beneath the storage root") {
  scratch s;
  auto fd = open_beneath(s.storage(), "ckpt/sub/model.pt");
  REQUIRE(fd);
  char text[16] = {};
  CHECK(::read(fd.get(), text, sizeof text) == 7);
  CHECK(std::string(text) == "weights");
}

TEST_CASE("a symlink anywhere on the way, or a name that climbs out, is refused") {
  scratch s;
  fs::create_symlink(s.root / "secret", s.root / "storage" / "ckpt" / "token");       // the file a link
  fs::create_directory_symlink(s.root, s.root / "storage" / "evil");                   // a directory a link
  CHECK(!open_beneath(s.storage(), "ckpt/token"));
  CHECK(!open_beneath(s.storage(), "evil/secret"));
  CHECK(!open_beneath(s.storage(), "../secret"));
  CHECK(errno == EINVAL);
  CHECK(!open_beneath(s.storage(), "ckpt/sub"));  // a directory is not a file to send
  // A FIFO with no writer would block a blocking open forever: refused at once instead.
  REQUIRE(::mkfifo((s.root / "storage" / "ckpt" / "pipe").c_str(), 0600) == 0);
  CHECK(!open_beneath(s.storage(), "ckpt/pipe"));
}

TEST_CASE("uuids and plain relative paths") {
  CHECK(det::auth::is_uuid("0b7c2a34-8d0e-4f4e-9a0b-6c1d2e3f4a5b"));
  CHECK(!det::auth::is_uuid("../../master-data"));
  CHECK(!det::auth::is_uuid("0b7c2a34-8d0e-4f4e-9a0b-6c1d2e3f4a5"));
  CHECK(is_plain_relative_path("model.pt"));
  CHECK(is_plain_relative_path("code/model_def.py"));
  CHECK(!is_plain_relative_path(""));
  CHECK(!is_plain_relative_path("/etc/passwd"));
  CHECK(!is_plain_relative_path("a/../b"));
  CHECK(!is_plain_relative_path("a//b"));
  CHECK(!is_plain_relative_path("./a"));
  CHECK(!is_plain_relative_path("a/"));
  CHECK(!is_plain_relative_path(std::string("a\0b", 3)));
}
