#include "process/command_words.hpp"

#include <wordexp.h>

#include <algorithm>
#include <cctype>
#include <new>

namespace det::process {

namespace {

// NAME=... with NAME a shell identifier: sh takes such leading words as the command's environment.
bool is_assignment(const std::string& word) {
  const auto eq = word.find('=');
  if (eq == 0 || eq == std::string::npos) return false;
  if (std::isdigit(static_cast<unsigned char>(word[0]))) return false;
  return std::all_of(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(eq),
                     [](char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)); });
}

}  // namespace

command_words split_command_line(const std::string& line) {
  command_words result;
  auto refuse = [&](const std::string& why, bool needs_shell) {
    result.words.clear();
    result.refusal = "the command line `" + line + "` " + why;
    result.needs_shell = needs_shell;
    return result;
  };
  // What needs a shell is found in the text first: wordexp would expand variables and globs in
  // this process's environment and directory, not the command's, and touch the filesystem to do it.
  if (line.find("$(") != std::string::npos || line.find('`') != std::string::npos)
    return refuse("uses command substitution, which det does not run while splitting it into words", true);
  if (line.find('$') != std::string::npos)
    return refuse("uses variables, which expand in the command's own environment", true);
  if (line.find_first_of("*?[") != std::string::npos)
    return refuse("uses glob patterns, which match in the command's own working directory", true);
  wordexp_t expansion{};
  switch (::wordexp(line.c_str(), &expansion, WRDE_NOCMD)) {  // NOCMD: never run anything, whatever slipped by
  case 0:
    break;
  case WRDE_BADCHAR:
    return refuse("uses shell operators (one of | & ; < > ( ) { } or a line break)", true);
  case WRDE_SYNTAX:
    return refuse("has a quote or a parenthesis that is not closed", false);
  case WRDE_NOSPACE:
    ::wordfree(&expansion);  // it may hold part of the words
    throw std::bad_alloc();
  default:
    return refuse("cannot be split into words", false);
  }
  for (std::size_t i = 0; i < expansion.we_wordc; ++i) result.words.emplace_back(expansion.we_wordv[i]);
  ::wordfree(&expansion);
  if (!result.words.empty() && is_assignment(result.words.front()))
    return refuse("starts with a variable assignment", true);
  const auto starts_comment = [](const std::string& word) { return !word.empty() && word.front() == '#'; };
  if (std::any_of(result.words.begin(), result.words.end(), starts_comment)) return refuse("has a comment", true);
  return result;
}

}  // namespace det::process
