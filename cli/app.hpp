#pragma once
// The rdmaconf command line: every command, whatever families are
// registered (conformance/families.def). main() calls it; so do tests that
// build the command with families of their own.
namespace rdmaconf::cli {

// The command's exit status: 0 no case FAILed, 1 some case FAILed, 2 usage
// error or unreadable input.
int run_main(int argc, char** argv);

}  // namespace rdmaconf::cli
