// mcpctl: the command-line client of mcpd. Everything but this file is in mcpctl_lib.
#include <iostream>
#include <string>
#include <vector>

#include "ctl/command.h"

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    return mcpctl::run(args, std::cout, std::cerr);
}
