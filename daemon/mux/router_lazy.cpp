// Router: a lazy server (docs/MULTIPLEXING.md, "Lazy servers"). While no process runs, its
// sessions are answered from the catalog: the handshake, the lists and setLevel, which need no
// process; anything else waits for the child like a line of any starting server (the one
// want_child starts it once). Each time the child is ready, mcpd reads its lists again; the
// lists that changed are announced to the sessions and the catalog is handed on to be saved.
// The child is idle once it has answered nothing for its idle time and nothing is open.
#include <algorithm>
#include <chrono>

#include "common/json_read.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/mcp_versions.h"
#include "daemon/mux/router.h"

namespace mcpd {

using nlohmann::json;

namespace {

std::int64_t wall_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

void RouterEnvironment::catalog_refreshed(const Catalog&) {}
void RouterEnvironment::child_idle() {}

void Router::set_lazy(bool lazy, Duration idle) {
    lazy_ = lazy;
    lazy_idle_ = idle;
    env_.deadlines_changed();
}

void Router::set_catalog(Catalog catalog, bool serve_private) {
    catalog_ = std::move(catalog);
    catalog_current_ = false;  // what a running child lists now is read when it starts
    serve_private_ = serve_private;
    // Its tools are listed to sessions from here: the stats count calls of them by name.
    stats_.tools_listed(listed_tool_names(catalog_->list(ListKind::tools).items), true);
    if (config_.replay == config::Replay::annotated)
        replay_.tools_listed(catalog_->list(ListKind::tools).items, true);
    if (!child_ready_) take_handshake_from_catalog();
}

void Router::take_handshake_from_catalog() {
    if (!catalog_) return;
    initialize_result_ = catalog_->handshake;
    child_version_ = catalog_->protocol_version;
    modern_ = catalog_->modern;
}

bool Router::answer_from_catalog(SessionState& s, std::string_view line, const wire::Envelope& e) {
    // Nothing runs and nothing waits: a cancellation has nothing to reach.
    if (e.is_notification() && e.method_is("notifications/cancelled") && queue_.empty())
        return true;
    if (modern_) return answer_modern_from_catalog(s, line, e);
    if (e.is_notification()) {
        if (!e.method_is("notifications/initialized")) return false;
        handle_session_notification(s, line, e);
        return true;
    }
    if (!e.is_request()) return false;
    const std::string_view raw_id = e.id.in(line);
    if (e.method_is("initialize") || !s.initialized) {
        // The handshake is mcpd's own either way; before it, every request is refused alike.
        handle_session_request(s, line, e);
        ++answered_from_cache_;
        return true;
    }
    if (outstanding(s, raw_id)) return false;  // refused as a duplicate by the usual path
    if (e.method_is("logging/setLevel")) {
        const int severity = log_severity(e.level);
        if (severity < 0) return false;  // refused by the usual path, which needs no child
        // Remembered: the child gets the most verbose level asked when it starts.
        s.log_level = severity;
        reply(s, raw_id, "{}");
        ++answered_from_cache_;
        return true;
    }
    return answer_list_from_catalog(s, line, e);
}

bool Router::answer_list_from_catalog(SessionState& s, std::string_view line,
                                      const wire::Envelope& e) {
    const std::optional<ListKind> kind = list_kind_of(e.method);
    if (!kind || !catalog_) return false;
    const CatalogList& list = catalog_->list(*kind);
    // A cursor mcpd never gave out (it answers with every item at once) is the child's to read.
    if (!list.known || (list.private_scope && !serve_private_) || asks_later_page(line))
        return false;
    json result = json::object();
    result[std::string(list_member(*kind))] = list.items;
    reply(s, e.id.in(line), result.dump(-1, ' ', false, json::error_handler_t::replace));
    ++answered_from_cache_;
    return true;
}

bool Router::answer_current_list(SessionState& s, std::string_view line, const wire::Envelope& e) {
    // A group over lazy members pages from their catalogs instead of asking each child each
    // time; so does any session. Only lists the child promises to announce changes of: any
    // other could change at the child unseen.
    if (!child_ready_ || modern_ || !e.is_request() || !s.initialized) return false;
    const std::optional<ListKind> kind = list_kind_of(e.method);
    if (!kind || outstanding(s, e.id.in(line))) return false;
    const ListKind announcing = *kind == ListKind::resource_templates ? ListKind::resources : *kind;
    const json* capabilities = json_read::object_at(initialize_result_, "capabilities");
    const json* capability =
        capabilities != nullptr ? json_read::object_at(*capabilities, list_capability(announcing))
                                : nullptr;
    if (capability == nullptr || json_read::bool_at(*capability, "listChanged") != true)
        return false;
    return answer_list_from_catalog(s, line, e);
}

bool Router::answer_modern_from_catalog(SessionState& s, std::string_view line,
                                        const wire::Envelope& e) {
    // 2026-07-28: no handshake; each request names its revision in its _meta. What a sleeping
    // modern server answers without a process is server/discover and the lists, for a
    // revision the server supports (the catalog's DiscoverResult says which).
    if (!e.is_request()) return false;
    const bool discover = e.method_is("server/discover");
    if (!discover && !list_kind_of(e.method)) return false;
    const std::string_view raw_id = e.id.in(line);
    if (outstanding(s, raw_id)) return false;  // refused as a duplicate by the usual path
    const json request = parse_forwarded(line);
    const json* params = json_read::object_at(request, "params");
    const json* meta = params != nullptr ? json_read::object_at(*params, "_meta") : nullptr;
    const std::string* requested =
        meta != nullptr ? json_read::string_at(*meta, kMetaProtocolVersion)
                        : nullptr;
    // Without its revision the request is invalid: the child's own error says so.
    if (requested == nullptr) return false;
    const json* supported = json_read::member(catalog_->handshake, "supportedVersions");
    const bool known = supported != nullptr && supported->is_array() &&
                       std::find(supported->begin(), supported->end(), json(*requested)) !=
                           supported->end();
    if (!known) {
        // What the server itself answers a revision it lacks (UnsupportedProtocolVersion).
        json error = {{"code", jsonrpc::kUnsupportedProtocolVersion},
                      {"message", "unsupported protocol version: " + *requested},
                      {"data",
                       {{"supported", supported != nullptr && supported->is_array()
                                          ? *supported
                                          : json::array()},
                        {"requested", *requested}}}};
        std::string text = "{\"jsonrpc\":\"2.0\",\"id\":";
        text += raw_id;
        text += ",\"error\":";
        text += error.dump(-1, ' ', false, json::error_handler_t::replace);
        text += '}';
        sessions_out_.send(s.id, text);
        ++answered_from_cache_;
        return true;
    }
    if (!discover) return answer_list_from_catalog(s, line, e);
    reply(s, raw_id, catalog_->handshake.dump(-1, ' ', false, json::error_handler_t::replace));
    ++answered_from_cache_;
    return true;
}

void Router::refresh_catalog() {
    ++refresh_generation_;
    catalog_current_ = false;
    refreshing_ = Catalog{};
    refreshing_.protocol_version = child_version_;
    refreshing_.modern = modern_;
    refreshing_.handshake = initialize_result_;
    refresh_pending_ = 0;
    refresh_failed_ = false;
    const json* capabilities = json_read::object_at(initialize_result_, "capabilities");
    for (const ListKind kind : kListKinds) {
        if (capabilities == nullptr || json_read::member(*capabilities, list_capability(kind)) == nullptr)
            continue;
        ++refresh_pending_;
        ask_catalog_page(kind, {});
    }
    if (refresh_pending_ == 0) finish_catalog_refresh();
}

void Router::ask_catalog_page(ListKind kind, const std::string& cursor) {
    const json params = cursor.empty() ? json::object() : json{{"cursor", cursor}};
    const std::uint64_t id = send_internal(list_method(kind), params, PendingKind::internal);
    Pending& page = requests_.at(id);
    page.catalog_list = kind;
    page.catalog_generation = refresh_generation_;
}

void Router::on_catalog_page(const Pending& page, std::string_view line, const wire::Envelope& e) {
    // A page of a refresh another one replaced (the lists changed again meanwhile).
    if (refresh_pending_ == 0 || page.catalog_generation != refresh_generation_) return;
    const ListKind kind = *page.catalog_list;
    const json answer = e.has_result ? parse_forwarded(line) : json();
    const json* result = json_read::object_at(answer, "result");
    const json* items = result != nullptr ? json_read::member(*result, list_member(kind)) : nullptr;
    CatalogList& list = refreshing_.list(kind);
    if (items == nullptr || !items->is_array()) {
        refresh_failed_ = true;
        env_.note("could not read the server's " + std::string(list_method(kind)) +
                  " to refresh its cache; the cache keeps what it had");
    } else {
        for (const json& item : *items) list.items.push_back(item);
        if (json_read::string_or(*result, "cacheScope", "") == "private") list.private_scope = true;
        const std::string next = json_read::string_or(*result, "nextCursor", "");
        if (result->contains("nextCursor") && !next.empty()) {
            if (list.items.size() > 100000) {
                refresh_failed_ = true;  // a server paging without end is not cached
            } else {
                ask_catalog_page(kind, next);
                return;
            }
        } else {
            list.known = true;
        }
    }
    if (--refresh_pending_ == 0) finish_catalog_refresh();
}

void Router::finish_catalog_refresh() {
    if (refresh_failed_) return;
    refreshing_.saved_at = wall_seconds();
    if (catalog_to_json(refreshing_).dump().size() > Catalog::kMaxBytes) {
        env_.note("the server's lists are larger than the cache holds: its sessions are "
                  "answered by its process only");
        return;
    }
    if (!refresh_quiet_ && catalog_ && catalog_->protocol_version == refreshing_.protocol_version) {
        // Sessions answered from the cache are told what changed since.
        const std::vector<std::string_view> announced = announced_lists();
        std::vector<std::string_view> told;
        for (const ListKind kind : changed_lists(*catalog_, refreshing_)) {
            const std::string_view name = list_capability(kind);
            if (std::find(announced.begin(), announced.end(), name) == announced.end() ||
                std::find(told.begin(), told.end(), name) != told.end())
                continue;
            told.push_back(name);
            broadcast(jsonrpc::list_changed(name));
        }
    }
    catalog_ = std::move(refreshing_);
    refreshing_ = Catalog{};
    catalog_current_ = child_ready_;
    stats_.tools_listed(listed_tool_names(catalog_->list(ListKind::tools).items), true);
    if (config_.replay == config::Replay::annotated)
        replay_.tools_listed(catalog_->list(ListKind::tools).items, true);
    env_.catalog_refreshed(*catalog_);
}

bool Router::open_work() const {
    if (!requests_.empty() || !child_requests_.empty() || !queue_.empty() ||
        !serial_queue_.empty())
        return true;
    for (const auto& [uri, who] : subscribers_) {
        if (!who.empty()) return true;
    }
    for (const auto& [id, s] : sessions_) {
        for (const std::string& task : s.tasks) {
            if (!s.ended_tasks.contains(task)) return true;
        }
    }
    return false;
}

std::optional<TimePoint> Router::idle_deadline() const {
    if (!lazy_ || !child_ready_ || open_work()) return std::nullopt;
    return last_answer_ + lazy_idle_;
}

}  // namespace mcpd
