#include "common/check.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace mcpd {

void check_failed(const char* condition, std::string_view message, const char* file, int line) {
    // Straight to stderr: the log pump may be what broke.
    std::string text = "mcpd: internal error at ";
    text += file;
    text += ':';
    text += std::to_string(line);
    text += ": ";
    text += message;
    text += " (";
    text += condition;
    text += ")\n";
    [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, text.data(), text.size());
    std::abort();
}

}  // namespace mcpd
