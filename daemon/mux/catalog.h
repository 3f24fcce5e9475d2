// What mcpd knows of one child without asking it: the answer to its handshake and its four
// lists, complete over all their pages. It is the in-memory form of a lazy server's cache
// (server/list_cache): sessions of a sleeping server are answered from it, and once the child
// runs again the lists it gives are compared with it (changed_lists) so that sessions are told
// what changed. Plain data, bounded (kMaxBytes), written out and read back as JSON.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace mcpd {

enum class ListKind { tools, prompts, resources, resource_templates };
inline constexpr std::array<ListKind, 4> kListKinds = {ListKind::tools, ListKind::prompts,
                                                       ListKind::resources,
                                                       ListKind::resource_templates};

// "tools/list", ...; the member of a list result that holds its items ("tools", ...,
// "resourceTemplates"); the notification that says it changed (templates share the
// resources one).
std::string_view list_method(ListKind kind);
std::string_view list_member(ListKind kind);
std::string_view list_changed_method(ListKind kind);
// The server capability that offers a list ("tools", "prompts", "resources").
std::string_view list_capability(ListKind kind);
// The kind a list method asks for; none for another method.
std::optional<ListKind> list_kind_of(std::string_view method);

struct CatalogList {
    nlohmann::json items = nlohmann::json::array();  // every page's items, in order
    bool known = false;  // all its pages were seen (or the child has no such capability)
    // 2026 caching: the child marked it "private" (cacheScope): it may be served only to
    // sessions of the user its child serves, never across users.
    bool private_scope = false;
};

struct Catalog {
    // The most a catalog may hold, as JSON text: a child whose lists are larger is not
    // cached (it is asked each time, as without lazy).
    static constexpr std::size_t kMaxBytes = 16 * 1024 * 1024;

    std::string protocol_version;  // what the child's handshake settled on
    bool modern = false;           // its handshake was server/discover (2026)
    nlohmann::json handshake = nlohmann::json::object();  // InitializeResult or DiscoverResult
    std::array<CatalogList, 4> lists;
    std::int64_t saved_at = 0;  // seconds since the epoch, when it was last refreshed

    CatalogList& list(ListKind kind) { return lists[static_cast<std::size_t>(kind)]; }
    const CatalogList& list(ListKind kind) const { return lists[static_cast<std::size_t>(kind)]; }
    // Whether every list the child's capabilities offer is known.
    bool complete() const;
};

// The lists whose items differ between `before` and `after` (a list unknown on either side
// counts as changed once it becomes known): what attached sessions are sent list_changed for.
std::vector<ListKind> changed_lists(const Catalog& before, const Catalog& after);

// The catalog as JSON, and read back: every field checked by type; anything missing, of
// another type or over kMaxBytes is refused with a sentence, never half-trusted.
nlohmann::json catalog_to_json(const Catalog& catalog);
Result<Catalog> catalog_from_json(const nlohmann::json& value);

}  // namespace mcpd
