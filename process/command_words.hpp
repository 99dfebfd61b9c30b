#pragma once
// A command line given as one string, as the words to exec without a shell in front: the program
// then gets signals and reports its exit status itself, with no shell in between.

#include <string>
#include <vector>

namespace det::process {

/// The words of a command line, or why it cannot run without a shell.
struct command_words {
  std::vector<std::string> words;
  /// Empty when `words` holds the command; otherwise a sentence naming the line and the reason.
  std::string refusal;
  /// The refusal is for shell syntax: `/bin/sh -c LINE`, in the command's own environment, runs it.
  bool needs_shell = false;
};

/// Splits `line` as sh splits a simple command, by wordexp(3): quotes, backslashes and ~.
/// Refuses, as needing a shell, what wordexp cannot do as sh would for the command:
/// - command substitution, which WRDE_NOCMD stops so that splitting never runs a command;
/// - operators (| & ; < > ( ) { } and line breaks);
/// - variables and glob patterns, which must expand in the command's environment and working
///   directory rather than this process's;
/// - comments and leading variable assignments, which wordexp takes for words.
/// These checks err towards the shell (a quoted * is refused too), which runs any such line
/// right. An unclosed quote is refused as malformed.
command_words split_command_line(const std::string& line);

}  // namespace det::process
