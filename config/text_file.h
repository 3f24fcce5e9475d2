// Reading a small text file whole, with the errno of a failure kept for the message.
#pragma once

#include <string>

namespace mcpd::config {

// Read the file at `path` into `out`. Returns 0, or the errno that made it fail
// (ENOENT, EACCES, EISDIR, ...), leaving `out` empty.
int read_text_file(const std::string& path, std::string& out);

}  // namespace mcpd::config
