// ManagedServer: a lazy server's cache (docs/MULTIPLEXING.md, "Lazy servers"). The router
// answers from the catalog; here it is read from the ListCache when the instance is made or
// changed, written back when the router has read the child's lists again, and the child is
// stopped when the router finds it idle.
#include "common/duration.h"
#include "common/log.h"
#include "daemon/managed_server.h"

namespace mcpd {

std::string ManagedServer::cache_key_now() const {
    return cache_key(config_, cache_user_);
}

void ManagedServer::refresh_lazy() {
    const bool lazy = config_.lazy.value_or(false);
    router_.set_lazy(lazy, config::lazy_idle_timeout(config_));
    // What it knew was of what it ran before: known again once loaded, or once it runs.
    router_.drop_catalog();
    const ListCache* cache = host_.list_cache();
    if (!lazy || cache == nullptr) return;
    Result<std::optional<Catalog>> loaded = cache->load(cache_key_now());
    if (!loaded) {
        log::warning(config_.name, loaded.error() + "; the server starts once to fill it again");
        return;
    }
    if (!loaded.value()) return;  // cold: the first session starts it
    // A child of one user may be served the lists its server marked private.
    const bool one_user = config_.sharing == config::Sharing::project ||
                          config_.sharing == config::Sharing::user;
    router_.set_catalog(std::move(*loaded.value()), one_user);
}

void ManagedServer::catalog_refreshed(const Catalog& catalog) {
    const ListCache* cache = host_.list_cache();
    if (cache == nullptr) return;
    if (Result<Done> saved = cache->save(cache_key_now(), config_.name, catalog); !saved)
        log::warning(config_.name, "cannot save its lists for lazy starts: " + saved.error());
}

void ManagedServer::child_idle() {
    if (!supervisor_.wanted_up()) return;
    std::string why = "answered nothing for ";
    why += format_duration(config::lazy_idle_timeout(config_));
    why += " and has nothing open: stopping (lazy; its sessions are answered from its cache)";
    note(why);
    supervisor_.request_stop(StopReason::idle);
}

}  // namespace mcpd
