// Reading a small text file whole, with the errno of a failure kept for the message.
#pragma once

#include <cstddef>
#include <string>

namespace mcpd::config {

// The largest file read_text_file() takes: registries and env files are a few KiB.
inline constexpr std::size_t kMaxTextFileBytes = std::size_t{16} << 20;

// Read the regular file at `path` into `out`. Returns 0, or the errno that made it fail
// (ENOENT, EACCES, EISDIR, EINVAL for a FIFO, socket or device, which could block the daemon
// or never end, EFBIG over kMaxTextFileBytes), leaving `out` empty.
int read_text_file(const std::string& path, std::string& out);

// The reason for a read_text_file() error, as a sentence fragment.
std::string text_file_error(int error);

}  // namespace mcpd::config
