#include "common/check.h"

#include <errno.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace mcpd {

void check_failed(const char* condition, std::string_view message, const char* file, int line) {
    // Straight to stderr: the log pump may be what broke.
    // mcpd and mcpctl both check invariants: name the one that stopped.
    std::string text = program_invocation_short_name;
    text += ": internal error at ";
    text += file;
    text += ':';
    text += std::to_string(line);
    text += ": ";
    text += message;
    text += " (";
    text += condition;
    text += "); this is a bug, please report it with the lines logged before it\n";
    [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, text.data(), text.size());
    std::abort();
}

}  // namespace mcpd
