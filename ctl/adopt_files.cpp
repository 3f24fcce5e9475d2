#include "ctl/adopt_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/scope_guard.h"
#include "common/unique_fd.h"

namespace mcpctl {

namespace {

namespace fs = std::filesystem;

std::string errno_text() {
    return std::strerror(errno);
}

// Write all of `text` to `fd`.
bool write_all(int fd, std::string_view text) {
    while (!text.empty()) {
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        text.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

}  // namespace

std::string write_target(const std::string& path) {
    std::error_code ec;
    if (!fs::is_symlink(path, ec)) return path;
    const fs::path target = fs::canonical(path, ec);
    return ec ? path : target.string();
}

mcpd::Result<mcpd::Done> replace_file(const std::string& path, std::string_view text) {
    mode_t mode = 0600;
    if (struct stat st{}; ::stat(path.c_str(), &st) == 0) mode = st.st_mode & 07777;
    std::string temp = path + ".mcpd-new-XXXXXX";
    const mcpd::UniqueFd fd(::mkstemp(temp.data()));
    if (!fd) return mcpd::permanent_failure("cannot create " + temp + ": " + errno_text());
    bool renamed = false;
    const mcpd::OnScopeEnd remove_temp([&] {
        if (!renamed) ::unlink(temp.c_str());
    });
    if (::fchmod(fd.get(), mode) != 0 || !write_all(fd.get(), text) || ::fsync(fd.get()) != 0)
        return mcpd::permanent_failure("cannot write " + temp + ": " + errno_text());
    if (::rename(temp.c_str(), path.c_str()) != 0)
        return mcpd::permanent_failure("cannot rename " + temp + " to " + path + ": " +
                                       errno_text());
    renamed = true;
    return mcpd::Done{};
}

mcpd::Result<bool> write_backup(const std::string& backup, std::string_view text) {
    const mcpd::UniqueFd fd(::open(backup.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd && errno == EEXIST) return false;
    if (!fd) return mcpd::permanent_failure("cannot create " + backup + ": " + errno_text());
    if (!write_all(fd.get(), text) || ::fsync(fd.get()) != 0) {
        const std::string why = errno_text();
        ::unlink(backup.c_str());
        return mcpd::permanent_failure("cannot write " + backup + ": " + why);
    }
    return true;
}

}  // namespace mcpctl
