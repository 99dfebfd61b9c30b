// Command lines split into words without a shell, or handed to one (process/command_words.hpp).
#include "process/command_words.hpp"

#include <doctest/doctest.h>

using det::process::split_command_line;
using words = std::vector<std::string>;

TEST_CASE("a command line of plain words is split as sh splits it") {
  CHECK(split_command_line("python3 train.py --lr=0.1").words == words{"python3", "train.py", "--lr=0.1"});
  CHECK(split_command_line("  python3\ttrain.py  ").words == words{"python3", "train.py"});
  CHECK(split_command_line(R"(python3 'a b' "c d" e\ f)").words == words{"python3", "a b", "c d", "e f"});
  CHECK(split_command_line(R"(echo '$(not run)')").needs_shell);  // a $ anywhere goes to the shell
  CHECK(split_command_line("").words.empty());
  CHECK(split_command_line("").refusal.empty());
}

TEST_CASE("command substitution is refused with a sentence, and left to a shell") {
  for (const std::string line : {"python3 train.py --seed $(cat seed)", "python3 train.py --seed `cat seed`"}) {
    CAPTURE(line);
    auto split = split_command_line(line);
    CHECK(split.words.empty());
    CHECK(split.refusal == "the command line `" + line +
                               "` uses command substitution, which det does not run while splitting it into words");
    CHECK(split.needs_shell);
  }
}

TEST_CASE("shell syntax that wordexp does not read as sh does is left to a shell") {
  for (const std::string line : {"cd src && python3 train.py", "python3 train.py | tee log", "python3 a.py > out",
                                 "python3 a.py; python3 b.py", "python3 train.py --dir $HOME",
                                 "python3 train.py data/*.csv", "LR=0.1 python3 train.py",
                                 "python3 train.py # the default run"}) {
    CAPTURE(line);
    auto split = split_command_line(line);
    CHECK(split.needs_shell);
    CHECK(split.words.empty());
    CHECK_FALSE(split.refusal.empty());
  }
}

TEST_CASE("a quote that is not closed is refused, not left to a shell") {
  auto split = split_command_line("python3 'train.py");
  CHECK_FALSE(split.needs_shell);
  CHECK(split.refusal == "the command line `python3 'train.py` has a quote or a parenthesis that is not closed");
}
