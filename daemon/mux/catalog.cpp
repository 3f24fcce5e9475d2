#include "daemon/mux/catalog.h"

#include "common/json_read.h"

namespace mcpd {

using nlohmann::json;

namespace {

// Everything a list is known by, in the order of kListKinds.
struct ListNames {
    std::string_view method;      // the request that lists it
    std::string_view member;      // the member of its result that holds the items
    std::string_view changed;     // the notification that says it changed
    std::string_view capability;  // the server capability that offers it
    std::string_view stored;      // its key in a catalog's JSON
};

constexpr std::array<ListNames, 4> kListNames = {{
    {"tools/list", "tools", "notifications/tools/list_changed", "tools", "tools"},
    {"prompts/list", "prompts", "notifications/prompts/list_changed", "prompts", "prompts"},
    {"resources/list", "resources", "notifications/resources/list_changed", "resources",
     "resources"},
    {"resources/templates/list", "resourceTemplates", "notifications/resources/list_changed",
     "resources", "resource_templates"},
}};

const ListNames& names_of(ListKind kind) {
    return kListNames[static_cast<std::size_t>(kind)];
}

}  // namespace

std::string_view list_method(ListKind kind) {
    return names_of(kind).method;
}

std::string_view list_member(ListKind kind) {
    return names_of(kind).member;
}

std::string_view list_changed_method(ListKind kind) {
    return names_of(kind).changed;
}

std::string_view list_capability(ListKind kind) {
    return names_of(kind).capability;
}

std::optional<ListKind> list_kind_of(std::string_view method) {
    for (const ListKind kind : kListKinds) {
        if (list_method(kind) == method) return kind;
    }
    return std::nullopt;
}

bool Catalog::complete() const {
    const json* capabilities = json_read::object_at(handshake, "capabilities");
    for (const ListKind kind : kListKinds) {
        if (list(kind).known) continue;
        const bool offered =
            capabilities != nullptr &&
            json_read::member(*capabilities, list_capability(kind)) != nullptr;
        if (offered) return false;
    }
    return true;
}

std::vector<ListKind> changed_lists(const Catalog& before, const Catalog& after) {
    std::vector<ListKind> changed;
    for (const ListKind kind : kListKinds) {
        const CatalogList& was = before.list(kind);
        const CatalogList& is = after.list(kind);
        if (!is.known) continue;  // nothing new is known of it
        if (!was.known || was.items != is.items) changed.push_back(kind);
    }
    return changed;
}

json catalog_to_json(const Catalog& catalog) {
    json lists = json::object();
    for (const ListKind kind : kListKinds) {
        const CatalogList& list = catalog.list(kind);
        if (!list.known) continue;
        lists[std::string(names_of(kind).stored)] = {{"items", list.items},
                                                 {"private", list.private_scope}};
    }
    return {{"protocol_version", catalog.protocol_version},
            {"modern", catalog.modern},
            {"handshake", catalog.handshake},
            {"lists", std::move(lists)},
            {"saved_at", catalog.saved_at}};
}

Result<Catalog> catalog_from_json(const json& value) {
    if (!value.is_object()) return permanent_failure("the cache entry is not a JSON object");
    Catalog catalog;
    const json* version = json_read::member(value, "protocol_version");
    const json* modern = json_read::member(value, "modern");
    const json* handshake = json_read::member(value, "handshake");
    const json* lists = json_read::member(value, "lists");
    const json* saved = json_read::member(value, "saved_at");
    if (version == nullptr || !version->is_string() || version->get_ref<const std::string&>().empty())
        return permanent_failure("the cache entry has no protocol_version string");
    if (modern == nullptr || !modern->is_boolean())
        return permanent_failure("the cache entry has no modern flag");
    if (handshake == nullptr || !handshake->is_object())
        return permanent_failure("the cache entry has no handshake object");
    if (lists == nullptr || !lists->is_object())
        return permanent_failure("the cache entry has no lists object");
    if (saved == nullptr || !saved->is_number_integer())
        return permanent_failure("the cache entry has no saved_at time");
    catalog.protocol_version = version->get<std::string>();
    catalog.modern = modern->get<bool>();
    catalog.handshake = *handshake;
    catalog.saved_at = saved->get<std::int64_t>();
    for (const auto& [name, entry] : lists->items()) {
        std::optional<ListKind> kind;
        for (const ListKind candidate : kListKinds) {
            if (names_of(candidate).stored == name) kind = candidate;
        }
        if (!kind) return permanent_failure("the cache entry has a list named '" + name + "'");
        const json* items = json_read::member(entry, "items");
        const json* scope = json_read::member(entry, "private");
        if (items == nullptr || !items->is_array() || scope == nullptr || !scope->is_boolean())
            return permanent_failure("the cache entry's " + name + " list is malformed");
        for (const json& item : *items) {
            if (!item.is_object())
                return permanent_failure("the cache entry's " + name +
                                         " list holds an item that is not an object");
        }
        CatalogList& list = catalog.list(*kind);
        list.items = *items;
        list.private_scope = scope->get<bool>();
        list.known = true;
    }
    return catalog;
}

}  // namespace mcpd
