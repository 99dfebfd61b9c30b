#pragma once

namespace det::tools {

/// `det repl ...`: argv[0] is "det repl", argv[1..] the words that followed `repl`.
int run_repl(int argc, char** argv);

} // namespace det::tools
