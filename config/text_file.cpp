#include "config/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "common/unique_fd.h"

namespace mcpd::config {

int read_text_file(const std::string& path, std::string& out) {
    out.clear();
    int fd;
    do {
        // Non-blocking, so that opening a FIFO with no writer returns at once.
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return errno;
    const UniqueFd file(fd);
    struct stat st {};
    if (::fstat(file.get(), &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    if (!S_ISREG(st.st_mode)) return EINVAL;
    if (static_cast<std::size_t>(st.st_size) > kMaxTextFileBytes) return EFBIG;
    char buffer[8192];
    for (;;) {
        const ssize_t n = ::read(file.get(), buffer, sizeof buffer);
        if (n == 0) return 0;
        if (n < 0) {
            if (errno == EINTR) continue;
            const int error = errno;
            out.clear();
            return error;
        }
        out.append(buffer, static_cast<std::size_t>(n));
        if (out.size() > kMaxTextFileBytes) {
            out.clear();
            return EFBIG;
        }
    }
}

std::string text_file_error(int error) {
    if (error == EINVAL) return "not a regular file (a FIFO, socket or device cannot be read at once)";
    if (error == EFBIG) return "larger than " + std::to_string(kMaxTextFileBytes >> 20) + " MiB";
    return std::generic_category().message(error);
}

}  // namespace mcpd::config
