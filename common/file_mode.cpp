#include "common/file_mode.h"

#include <cstdio>

namespace mcpd {

std::string mode_octal(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

}  // namespace mcpd
