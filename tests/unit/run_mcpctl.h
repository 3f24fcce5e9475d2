// mcpctl's whole program run in-process, its output captured: shared by the ctl unit tests.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "ctl/command.h"

struct Ran {
    int exit_code;
    std::string out;
    std::string err;
};

inline Ran run(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    const int code = mcpctl::run(args, out, err);
    return {code, out.str(), err.str()};
}
