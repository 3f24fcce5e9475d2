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

// Give the open file `fd` the owner `owner` unless it has it: root can, others only keep
// their own files' owners.
bool give_owner(int fd, const FileOwner& owner) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return false;
    if (st.st_uid == owner.uid && st.st_gid == owner.gid) return true;
    return ::fchown(fd, owner.uid, owner.gid) == 0;
}

}  // namespace

std::string write_target(const std::string& path) {
    std::error_code ec;
    if (!fs::is_symlink(path, ec)) return path;
    const fs::path target = fs::canonical(path, ec);
    return ec ? path : target.string();
}

std::optional<FileOwner> file_owner(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return FileOwner{st.st_uid, st.st_gid, static_cast<mode_t>(st.st_mode & 07777)};
}

mcpd::Result<mcpd::Done> replace_file(const std::string& path, std::string_view text,
                                      mode_t fresh) {
    const std::optional<FileOwner> old = file_owner(path);
    std::string temp = path + ".mcpd-new-XXXXXX";
    const mcpd::UniqueFd fd(::mkstemp(temp.data()));
    if (!fd) return mcpd::permanent_failure("cannot create " + temp + ": " + errno_text());
    bool renamed = false;
    const mcpd::OnScopeEnd remove_temp([&] {
        if (!renamed) ::unlink(temp.c_str());
    });
    if (old && !give_owner(fd.get(), *old))
        return mcpd::permanent_failure(
            "cannot give the new " + path + " its owner (uid " + std::to_string(old->uid) +
            ", gid " + std::to_string(old->gid) + "): " + errno_text() + "; run this as that user");
    // The mode after the owner: fchown clears the set-id bits.
    if (::fchmod(fd.get(), old ? old->mode : fresh) != 0 || !write_all(fd.get(), text) ||
        ::fsync(fd.get()) != 0)
        return mcpd::permanent_failure("cannot write " + temp + ": " + errno_text());
    if (::rename(temp.c_str(), path.c_str()) != 0)
        return mcpd::permanent_failure("cannot rename " + temp + " to " + path + ": " +
                                       errno_text());
    renamed = true;
    return mcpd::Done{};
}

mcpd::Result<bool> create_file(const std::string& path, std::string_view text, mode_t mode,
                               const std::optional<FileOwner>& owner) {
    const mcpd::UniqueFd fd(
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0600));
    if (!fd && errno == EEXIST) return false;
    if (!fd) return mcpd::permanent_failure("cannot create " + path + ": " + errno_text());
    bool kept = false;
    const mcpd::OnScopeEnd remove_partial([&] {
        if (!kept) ::unlink(path.c_str());
    });
    if (owner && !give_owner(fd.get(), *owner))
        return mcpd::permanent_failure("cannot give " + path + " the owner uid " +
                                       std::to_string(owner->uid) + ": " + errno_text());
    if (::fchmod(fd.get(), mode) != 0 || !write_all(fd.get(), text) || ::fsync(fd.get()) != 0)
        return mcpd::permanent_failure("cannot write " + path + ": " + errno_text());
    kept = true;
    return true;
}

mcpd::Result<mcpd::Done> make_private_dirs(const std::string& dir) {
    std::error_code ec;
    if (dir.empty() || fs::is_directory(dir, ec)) return mcpd::Done{};
    const fs::path parent = fs::path(dir).parent_path();
    if (parent != fs::path(dir))
        if (auto made = make_private_dirs(parent.string()); !made) return made;
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        return mcpd::permanent_failure("cannot create " + dir + ": " + errno_text());
    return mcpd::Done{};
}

}  // namespace mcpctl
