// ControlCommands: clear_cache (`mcpctl cache clear [NAME...]`). Lazy servers' cached lists
// are dropped from disk and from memory: a sleeping server is cold until its process runs
// again and its sessions are answered by that process. Only root and mcpd's own user may do
// it: the cache serves every user's sessions, and emptying it starts processes for them.
#include <sys/stat.h>

#include "common/log.h"
#include "daemon/control_commands.h"
#include "daemon/daemon.h"

namespace mcpd {

using nlohmann::json;

void ControlCommands::clear_cache(ControlConnection& c, const json& request) {
    const Result<control::ClearCacheRequest> parsed = control::parse_clear_cache(request);
    if (!parsed) {
        c.reply_error(control::code::bad_request, parsed.error());
        return;
    }
    if (!privileged(c)) return;
    // Every name is checked before anything is dropped.
    std::vector<ManagedServer*> named;
    if (!parsed->servers.empty()) {
        const Result<std::vector<ManagedServer*>> found = resolve(c, parsed->servers);
        if (!found) {
            c.reply_error(control::code::not_found, found.error());
            return;
        }
        named = found.value();
    }
    // With no lazy server in the registry the cache is not open, but may hold old entries.
    std::optional<ListCache> unopened;
    const ListCache* cache = daemon_.list_cache();
    if (cache == nullptr) {
        // Only a directory that is there is read, with the checks of an opened cache.
        const std::string directory = default_cache_directory();
        struct stat st{};
        if (!directory.empty() && ::lstat(directory.c_str(), &st) == 0) {
            ListCache& found = unopened.emplace(directory);
            if (found.prepare()) cache = &found;
        }
    }
    std::size_t total = 0;
    std::vector<control::ClearedCache> per_server;
    if (named.empty()) {
        if (cache != nullptr) total = cache->drop_server({});
        daemon_.pool().for_each_instance([](ManagedServer& s) { s.forget_catalog(); });
    } else {
        for (ManagedServer* server : named) {
            const std::size_t dropped = cache != nullptr ? cache->drop_server(server->name()) : 0;
            total += dropped;
            per_server.push_back({server->name(), dropped});
            daemon_.pool().for_each_instance([server](ManagedServer& s) {
                if (s.name() == server->name()) s.forget_catalog();
            });
        }
    }
    log::info("cache clear: dropped " + std::to_string(total) + " cached list entries");
    c.reply_ok(control::clear_cache_result(total, per_server));
}

}  // namespace mcpd
