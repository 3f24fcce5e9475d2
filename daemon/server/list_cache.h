// A lazy server's catalog (mux/catalog.h) on disk, so that its sessions are answered without a
// process across mcpd's restarts too. One file per cache key, `KEY.json`, mode 0600, in a
// directory only mcpd's user may enter (0700, checked as the socket's directory is: owner,
// mode, no symbolic link). A file is written whole to a temporary name and renamed; one that is
// truncated, corrupt, of another format, of another key or too large is not used, and load()
// says why so that it is logged.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "config/registry.h"
#include "daemon/mux/catalog.h"

namespace mcpd {

// The key of an instance's cache entry: the SHA-256 of its entry's name and of everything that
// makes its child what it is (its command, arguments, environment and env_file, working directory, roots, era, the
// identity it runs as) and of `user` where children are keyed by user. `config` is the
// instance's own (a project's child's has its project filled in).
std::string cache_key(const config::ServerConfig& config, std::optional<uid_t> user);

// Where the cache lives: $STATE_DIRECTORY/cache under systemd's StateDirectory= (the system
// and the user units), else $XDG_STATE_HOME/mcpd/cache, else ~/.local/state/mcpd/cache. Empty
// when none of these is known.
std::string default_cache_directory();

class ListCache {
public:
    // The file format's name and version: a file of any other is not read.
    static constexpr const char* kFormat = "mcpd-list-cache";
    static constexpr int kVersion = 1;

    explicit ListCache(std::string directory) : directory_(std::move(directory)) {}
    const std::string& directory() const { return directory_; }

    // Create the directory (and its missing parents, 0700) and check it.
    Result<Done> prepare() const;
    // The entry of `key`: none when there is no file; a failure saying why one is not usable.
    Result<std::optional<Catalog>> load(const std::string& key) const;
    // Write the entry of `key`, for server `server` (what cache clear NAME finds it by).
    Result<Done> save(const std::string& key, const std::string& server,
                      const Catalog& catalog) const;
    // Remove the entry of `key`, if there is one.
    void drop(const std::string& key) const;
    // Remove the entries written for `server` (all of them when empty); how many went.
    std::size_t drop_server(const std::string& server) const;

private:
    std::string directory_;
    std::string path_of(const std::string& key) const;
};

}  // namespace mcpd
