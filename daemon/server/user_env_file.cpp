#include "daemon/server/user_env_file.h"

#include <unistd.h>

#include "config/env_file.h"
#include "config/text_file.h"
#include "daemon/control/filesystem_identity.h"

namespace mcpd {

bool is_user_env_file(const std::string& env_file) {
    return env_file.starts_with("~/");
}

Result<std::map<std::string, std::string>> read_user_env_file(
    const std::string& env_file, const std::optional<config::ChildIdentity>& identity,
    const std::string& own_home) {
    const std::string home = identity ? identity->home : own_home;
    if (home.empty() || home.front() != '/') {
        return permanent_failure("env_file " + env_file +
                                 " names a file in the home directory, "
                                 "and the user the server runs as has none");
    }
    const std::string path = (home == "/" ? std::string() : home) + env_file.substr(1);
    std::string contents;
    int error = 0;
    if (identity && ::geteuid() == 0) {
        // Opened as that user: a file it may not read is not read for it.
        const FilesystemIdentity as_user(identity->uid, identity->gid, identity->groups);
        if (!as_user.taken()) {
            return permanent_failure("cannot read env_file " + path + " as uid " +
                                     std::to_string(identity->uid) +
                                     ": mcpd could not take that user's identity");
        }
        error = config::read_text_file(path, contents);
    } else {
        error = config::read_text_file(path, contents);
    }
    if (error != 0) {
        return permanent_failure("cannot read env_file " + path + ": " +
                                 config::text_file_error(error));
    }
    config::EnvFileResult parsed = config::parse_env_file(contents);
    if (!parsed.errors.empty()) {
        const config::EnvFileError& first = parsed.errors.front();
        return permanent_failure("malformed line " + std::to_string(first.line) + " in env_file " +
                                 path + ": " + first.message);
    }
    return std::move(parsed.vars);
}

}  // namespace mcpd
