// Invariants that cannot break unless mcpd itself is wrong (or the machine is out of memory
// for a libevent allocation): stop loudly, with what broke and where, instead of running on
// in a state nobody designed for.
#pragma once

#include <string_view>

namespace mcpd {

[[noreturn]] void check_failed(const char* condition, std::string_view message, const char* file,
                               int line);

}  // namespace mcpd

#define MCPD_CHECK(condition, message)                                           \
    do {                                                                         \
        if (!(condition)) ::mcpd::check_failed(#condition, (message), __FILE__, __LINE__); \
    } while (false)
