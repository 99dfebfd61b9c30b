#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "auth/untrusted_names.hpp"
#include "node/open_beneath.hpp"

using det::auth::is_plain_relative_path;
using det::runtime::create_beneath;
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

TEST_CASE("an event file is created beneath the storage root, making the directories it lacks") {
  scratch s;
  auto fd = create_beneath(s.storage(), "tensorboard/experiment/1/trial/2", "events.out.tfevents.1");
  REQUIRE(fd);
  CHECK(::write(fd.get(), "e", 1) == 1);
  CHECK(fs::file_size(s.root / "storage" / "tensorboard" / "experiment" / "1" / "trial" / "2" / "events.out.tfevents.1") == 1);
  CHECK(!create_beneath(s.storage(), "tensorboard/experiment/1/trial/2", "events.out.tfevents.1"));  // never over a file
  CHECK(errno == EEXIST);
}

TEST_CASE("an event file is not created through a symlink a trial planted") {
  scratch s;
  // A trial made the tensorboard directory, or one below it, a link into the master's data.
  fs::create_directory_symlink(s.root, s.root / "storage" / "tensorboard");
  CHECK(!create_beneath(s.storage(), "tensorboard/experiment/1", "events.out.tfevents.1"));
  CHECK((errno == ELOOP || errno == ENOTDIR));  // O_DIRECTORY | O_NOFOLLOW on a link: ENOTDIR
  fs::remove(s.root / "storage" / "tensorboard");
  fs::create_directories(s.root / "storage" / "tensorboard" / "experiment");
  fs::create_directory_symlink(s.root, s.root / "storage" / "tensorboard" / "experiment" / "1");
  CHECK(!create_beneath(s.storage(), "tensorboard/experiment/1", "events.out.tfevents.1"));
  // Nor over a link in the file's place.
  fs::create_directories(s.root / "storage" / "tensorboard" / "experiment" / "2");
  fs::create_symlink(s.root / "planted", s.root / "storage" / "tensorboard" / "experiment" / "2" / "events.out.tfevents.1");
  CHECK(!create_beneath(s.storage(), "tensorboard/experiment/2", "events.out.tfevents.1"));
  CHECK(!fs::exists(s.root / "planted"));
  CHECK(!fs::exists(s.root / "experiment"));
  CHECK(!create_beneath(s.storage(), "../outside", "events.out.tfevents.1"));
  CHECK(!create_beneath(s.storage(), "tensorboard", "../escape"));
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
