#include "daemon/http/http_tokens.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "common/base64url.h"
#include "common/hmac.h"
#include "common/private_directories.h"
#include "common/unique_fd.h"
#include "daemon/control/socket_directory.h"

namespace mcpd {

namespace {

constexpr std::size_t kTokenBytes = 32;
constexpr std::size_t kMaxTokensFileBytes = 1024 * 1024;

Result<std::string> random_token() {
    std::string bytes(kTokenBytes, '\0');
    std::size_t got = 0;
    while (got < bytes.size()) {
        const ssize_t n = ::getrandom(bytes.data() + got, bytes.size() - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return system_failure("cannot read random bytes for a token", errno);
        }
        got += static_cast<std::size_t>(n);
    }
    return base64url_encode(bytes);
}

}  // namespace

std::string default_http_state_directory() {
    const std::string state = own_state_directory();
    return state.empty() ? std::string() : state + "/http";
}

Result<Done> prepare_http_state_directory(const std::string& directory) {
    if (directory.empty() || directory.front() != '/')
        return permanent_failure(
            "mcpd has no state directory for HTTP (set XDG_STATE_HOME or HOME, or run it under "
            "systemd with StateDirectory=)");
    // Made as mcpd's socket directory is (parents 0700), and checked the same way.
    std::string error;
    if (!prepare_socket_directory(directory, SocketAccess{0600, std::nullopt}, true, error))
        return permanent_failure("the HTTP state directory " + directory + " cannot be used: " + error);
    return Done{};
}

Result<Done> HttpTokens::load() {
    tokens_.clear();
    const UniqueFd fd(::open(file_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
        if (errno == ENOENT) return Done{};
        return system_failure("cannot open " + file_, errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return system_failure("cannot stat " + file_, errno);
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
        return permanent_failure(file_ + " must be a regular file of mcpd's user with mode 0600; "
                                 "remove it and ask for tokens again (mcpctl http-token)");
    if (static_cast<std::size_t>(st.st_size) > kMaxTokensFileBytes)
        return permanent_failure(file_ + " is too large to be a token file");
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    while (got < text.size()) {
        const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    text.resize(got);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty()) continue;
        std::istringstream fields(line);
        long long uid = -1;
        std::string token;
        if (!(fields >> uid >> token) || uid < 0 || token.size() < 16)
            return permanent_failure(file_ + " has a line that is not \"UID TOKEN\"");
        tokens_[static_cast<uid_t>(uid)] = token;
    }
    return Done{};
}

std::optional<uid_t> HttpTokens::user_of(std::string_view token) const {
    std::optional<uid_t> found;
    // Every token is compared, so the time taken says nothing about which one came close.
    for (const auto& [uid, known] : tokens_) {
        if (equal_in_constant_time(known, token)) found = uid;
    }
    return found;
}

Result<std::string> HttpTokens::token_for(uid_t uid, bool rotate) {
    const auto it = tokens_.find(uid);
    if (it != tokens_.end() && !rotate) return it->second;
    Result<std::string> token = random_token();
    if (!token) return token.failure();
    const std::optional<std::string> before =
        it != tokens_.end() ? std::optional<std::string>(it->second) : std::nullopt;
    tokens_[uid] = token.value();
    if (Result<Done> saved = save(); !saved) {
        if (before) {
            tokens_[uid] = *before;
        } else {
            tokens_.erase(uid);
        }
        return saved.failure();
    }
    return token;
}

Result<Done> HttpTokens::save() const {
    std::string text;
    for (const auto& [uid, token] : tokens_) text += std::to_string(uid) + " " + token + "\n";
    const std::string temporary = file_ + ".new";
    ::unlink(temporary.c_str());
    const UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return system_failure("cannot create " + temporary, errno);
    std::size_t written = 0;
    while (written < text.size()) {
        const ssize_t n = ::write(fd.get(), text.data() + written, text.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return system_failure("cannot write " + temporary, errno);
        written += static_cast<std::size_t>(n);
    }
    if (::fsync(fd.get()) != 0) return system_failure("cannot sync " + temporary, errno);
    if (::rename(temporary.c_str(), file_.c_str()) != 0)
        return system_failure("cannot replace " + file_, errno);
    return Done{};
}

}  // namespace mcpd
