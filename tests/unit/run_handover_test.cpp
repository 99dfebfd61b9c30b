#include <doctest/doctest.h>

#include <sstream>
#include <stdexcept>

#include "node/run_handover.hpp"

using det::runtime::encode_handover;
using det::runtime::read_handover;
using det::runtime::run_handover;

TEST_CASE("a run handed to a warm worker arrives as it was sent, newlines and backslashes included") {
  run_handover sent{{"--allocation=3.7.1", "--trial=7", "--rank=1", "--world-size=2"},
                    {{"DET_ALLOCATION_TOKEN", "abc"}, {"MULTI", "one\ntwo\\n three\\"}, {"EMPTY", ""}}};
  std::istringstream in{encode_handover(sent) + "arg after the end is not read\n"};
  auto got = read_handover(in);
  REQUIRE(got);
  CHECK(got->args == sent.args);
  CHECK(got->env == sent.env);
}

TEST_CASE("a hand-over cut off before its end is no run, and a strange line is named") {
  std::istringstream cut{"arg --trial=7\nenv A=b\n"};
  CHECK_FALSE(read_handover(cut));
  std::istringstream strange{"arg --trial=7\nexec rm -rf /\nrun\n"};
  CHECK_THROWS_WITH_AS(read_handover(strange), doctest::Contains("\"exec rm -rf /\" is none of arg, env, user and run"),
                       std::runtime_error);
  std::istringstream unnamed{"env =x\nrun\n"};
  CHECK_THROWS_WITH_AS(read_handover(unnamed), doctest::Contains("names no variable"), std::runtime_error);
}

TEST_CASE("what a warm worker preloads reads back from its --preload word, and no other word does") {
  using det::runtime::warm_preload;
  for (auto preload : {warm_preload::libtorch, warm_preload::nothing})
    CHECK(det::runtime::warm_preload_from(det::runtime::to_string(preload)) == preload);
  CHECK_FALSE(det::runtime::warm_preload_from("torch"));
  CHECK_FALSE(det::runtime::warm_preload_from(""));
}

TEST_CASE("a run's Unix user arrives with it, and a hand-over naming root or no ids is refused") {
  run_handover sent{{"--trial=7"}, {}, det::process::unix_identity{200003, 200003}};
  std::istringstream in{encode_handover(sent)};
  auto got = read_handover(in);
  REQUIRE(got);
  REQUIRE(got->run_as);
  CHECK(got->run_as->uid == 200003);
  CHECK(got->run_as->gid == 200003);
  std::istringstream none{encode_handover({{"--trial=7"}, {}, std::nullopt})};
  CHECK_FALSE(read_handover(none)->run_as);
  for (const char* line : {"user 0 0\nrun\n", "user 5\nrun\n", "user 5 x\nrun\n", "user 5 5 5\nrun\n"}) {
    std::istringstream bad{line};
    CHECK_THROWS_WITH_AS(read_handover(bad), doctest::Contains("names no user other than root"), std::runtime_error);
  }
}
