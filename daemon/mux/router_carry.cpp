// Router: its state and its sessions' carried across an upgrade in place (router_carry.h,
// docs/UPGRADE.md). The records go out as JSON and come back read by type; the new process's
// router takes them without a word to the child or the sessions, which notice nothing.
#include "daemon/mux/router_carry.h"

#include <algorithm>
#include <limits>

#include "common/json_fields.h"
#include "common/json_read.h"
#include "daemon/mux/router.h"

namespace mcpd {

using nlohmann::json;
using json_read::FieldReader;

namespace {

// The longest text a carried record holds in one field (a task id, a token, a version): what
// mcpd itself bounds such names by, with room to spare.
constexpr std::size_t kMaxCarriedText = 64 * 1024;

json optional_level(const std::optional<int>& level) { return level ? json(*level) : json(); }

// A level or none: null, or an RFC 5424 severity index (0 to 7).
std::optional<int> level_of(FieldReader& in, std::string_view key) {
    const std::optional<std::int64_t> level = in.nullable_integer(key, 0, 7);
    return level ? std::optional<int>(static_cast<int>(*level)) : std::nullopt;
}

// An array of strings, each bounded; a problem noted in `in`.
std::vector<std::string> read_texts(FieldReader& in, std::string_view key) {
    std::vector<std::string> out;
    const json* array = in.array(key);
    if (array == nullptr) return out;
    for (const json& item : *array) {
        if (!item.is_string() || item.get_ref<const std::string&>().size() > kMaxCarriedText) {
            in.fail("an item of its \"" + std::string(key) + "\" is not a text");
            return {};
        }
        out.push_back(item.get<std::string>());
    }
    return out;
}

std::uint64_t unsigned_of(FieldReader& in, std::string_view key) {
    return static_cast<std::uint64_t>(in.integer(key, 0));
}

// A session's request ids: raw id → the child id and the bytes they count for.
json ids_json(const RequestIds& ids) {
    json out = json::object();
    for (const auto& [raw, entry] : ids) out[std::string(raw.view())] = {entry.child_id, entry.bytes};
    return out;
}

// A session's request ids written by ids_json, when present (a state written before requests
// were carried has none); a problem noted in `in`.
void read_ids(const json& body, std::string_view key, RequestIds& ids, FieldReader& in) {
    const json* map = json_read::member(body, key);
    if (map == nullptr) return;
    if (!map->is_object()) {
        in.fail("its \"" + std::string(key) + "\" is not an object");
        return;
    }
    for (const auto& [raw, entry] : map->items()) {
        std::int64_t child = -1, bytes = -1;
        if (entry.is_array() && entry.size() == 2) {
            child = json_read::as_integer(entry[0]).value_or(-1);
            bytes = json_read::as_integer(entry[1]).value_or(-1);
        }
        if (child < 0 || bytes < 0) {
            in.fail("an id of its \"" + std::string(key) + "\" is not a child id with its bytes");
            return;
        }
        ids.restore(raw, static_cast<std::uint64_t>(child), static_cast<std::size_t>(bytes));
    }
}

}  // namespace

json to_json(const CarriedRouter& r) {
    json progress = json::object();
    for (const auto& [own, route] : r.progress)
        progress[own] = {{"session", route.session},
                         {"token", route.original_token},
                         {"child_id", route.child_id}};
    json out = {{"next_child_request", r.next_child_request},
            {"child_level", optional_level(r.child_level)},
            {"unset_view", optional_level(r.unset_view)},
            {"served_version", r.served_version},
            {"task_owners", r.task_owners},
            {"task_tokens", r.task_tokens},
            {"tombstones", r.tombstones},
            {"next_progress_token", r.next_progress_token},
            {"progress", std::move(progress)},
            {"roots_differ_noted", r.roots_differ_noted},
            {"answered_from_cache", r.answered_from_cache}};
    write_requests(r, out);
    return out;
}

Result<CarriedRouter> read_carried_router(const json& body) {
    if (!body.is_object()) return permanent_failure("a router's state is not an object");
    CarriedRouter r;
    FieldReader in(body);
    r.next_child_request = unsigned_of(in, "next_child_request");
    r.served_version = in.text("served_version");
    r.next_progress_token = unsigned_of(in, "next_progress_token");
    r.roots_differ_noted = in.flag("roots_differ_noted");
    // Written since version 3; none before.
    if (json_read::member(body, "answered_from_cache") != nullptr)
        r.answered_from_cache = unsigned_of(in, "answered_from_cache");
    r.child_level = level_of(in, "child_level");
    r.unset_view = level_of(in, "unset_view");
    if (const json* owners = in.ok() ? in.object("task_owners") : nullptr) {
        for (const auto& [task, owner] : owners->items()) {
            const std::optional<std::int64_t> id = json_read::as_integer(owner);
            if (!id || *id <= 0 || task.size() > kMaxCarriedText) {
                in.fail("a task's owner is not a session");
                break;
            }
            r.task_owners[task] = static_cast<SessionId>(*id);
        }
    }
    if (const json* tokens = in.ok() ? in.object("task_tokens") : nullptr) {
        for (const auto& [task, token] : tokens->items()) {
            if (!token.is_string() || task.size() > kMaxCarriedText ||
                token.get_ref<const std::string&>().size() > kMaxCarriedText) {
                in.fail("a task's progress token is not a text");
                break;
            }
            r.task_tokens[task] = token.get<std::string>();
        }
    }
    if (const json* tombstones = in.ok() ? in.array("tombstones") : nullptr) {
        for (const json& id : *tombstones) {
            const std::optional<std::int64_t> n = json_read::as_integer(id);
            if (!n || *n < 0) {
                in.fail("a tombstone is not a request id");
                break;
            }
            r.tombstones.push_back(static_cast<std::uint64_t>(*n));
        }
        if (r.tombstones.size() > InFlight::kMaxTombstones) in.fail("it has too many tombstones");
    }
    if (const json* progress = in.ok() ? in.object("progress") : nullptr) {
        for (const auto& [own, route] : progress->items()) {
            if (!route.is_object() || own.size() > kMaxCarriedText) {
                in.fail("a progress route is not an object");
                break;
            }
            FieldReader at(route);
            routing::ProgressRoute read;
            read.session = unsigned_of(at, "session");
            read.original_token = at.text("token");
            read.child_id = unsigned_of(at, "child_id");
            if (!at.ok() || read.original_token.size() > kMaxCarriedText) {
                in.fail("a progress route: " + (at.ok() ? "its token is too long" : at.error()));
                break;
            }
            r.progress[own] = std::move(read);
        }
    }
    if (in.ok() && r.served_version.size() > kMaxCarriedText) in.fail("its version is too long");
    if (std::string error; in.ok() && !read_requests(body, r, error)) in.fail(error);
    if (!in.ok()) return permanent_failure("a router's state: " + in.error());
    return r;
}

json to_json(const routing::SessionState& s) {
    return {{"id", s.id},
            {"attached_ns", std::chrono::duration_cast<std::chrono::nanoseconds>(
                                s.attached_at.time_since_epoch())
                                .count()},
            {"initialized", s.initialized},
            {"ready", s.ready},
            {"protocol", s.protocol},
            {"capabilities", s.capabilities},
            {"client_name", s.client_name},
            {"client_version", s.client_version},
            {"log_level", optional_level(s.log_level)},
            {"subscriptions", s.subscriptions},
            {"tasks", s.tasks},
            {"ended_tasks", s.ended_order},
            {"url_elicitations", s.url_elicitations},
            {"project_settled", s.project_settled},
            {"counters", to_json(s.counters)},
            {"in_flight", ids_json(s.in_flight)},
            {"waiting", ids_json(s.waiting)},
            {"serial_bytes", s.serial_bytes},
            {"waiting_bytes", s.waiting_bytes}};
}

Result<routing::SessionState> read_carried_session(const json& body) {
    if (!body.is_object()) return permanent_failure("a session's state is not an object");
    routing::SessionState s;
    FieldReader in(body);
    s.id = unsigned_of(in, "id");
    s.attached_at = TimePoint(std::chrono::duration_cast<Clock::duration>(
        std::chrono::nanoseconds(in.integer("attached_ns"))));
    s.initialized = in.flag("initialized");
    s.ready = in.flag("ready");
    s.protocol = in.text("protocol");
    s.client_name = in.text("client_name");
    s.client_version = in.text("client_version");
    s.project_settled = in.flag("project_settled");
    if (const json* caps = in.object("capabilities")) s.capabilities = *caps;
    s.log_level = level_of(in, "log_level");
    for (std::string& uri : read_texts(in, "subscriptions")) s.subscriptions.insert(std::move(uri));
    for (std::string& task : read_texts(in, "tasks")) s.tasks.insert(std::move(task));
    for (std::string& task : read_texts(in, "ended_tasks")) {
        s.ended_tasks.insert(task);
        s.ended_order.push_back(std::move(task));
    }
    for (std::string& id : read_texts(in, "url_elicitations"))
        s.url_elicitations.insert(std::move(id));
    if (const json* counters = in.ok() ? in.object("counters") : nullptr) {
        if (std::string error; !read_counters(*counters, s.counters, error)) in.fail(error);
    }
    s.serial_bytes = static_cast<std::size_t>(in.integer("serial_bytes", 0));
    s.waiting_bytes = static_cast<std::size_t>(in.integer("waiting_bytes", 0));
    if (in.ok()) read_ids(body, "in_flight", s.in_flight, in);
    if (in.ok()) read_ids(body, "waiting", s.waiting, in);
    if (in.ok() && s.id == 0) in.fail("its id is not a session's");
    if (in.ok() && (s.protocol.size() > kMaxCarriedText || s.client_name.size() > kMaxCarriedText ||
                    s.client_version.size() > kMaxCarriedText))
        in.fail("a name in it is too long");
    if (in.ok() && s.ended_order.size() > Router::kMaxEndedTasks)
        in.fail("it has too many ended tasks");
    if (!in.ok()) return permanent_failure("a session's state: " + in.error());
    return s;
}

std::string Router::why_not_carried() const {
    if (departed_ > 0 || !roots_deadlines_.empty())
        return "a session is moving to its project's process";
    if (refresh_pending_ > 0) return "its lists are being read for the cache";
    for (const auto& [id, s] : sessions_) {
        if (!s.held.empty() || s.awaiting_project || !s.roots_request.empty())
            return "session " + std::to_string(id) + " waits for its project";
        if (s.legacy_elsewhere) return "session " + std::to_string(id) + " is a legacy client's";
    }
    return {};
}

CarriedRouter Router::carried() const {
    CarriedRouter r;
    r.next_child_request = next_child_request_;
    r.child_level = child_level_;
    r.unset_view = unset_view_;
    r.served_version = served_version_;
    r.task_owners.insert(task_owners_.begin(), task_owners_.end());
    r.task_tokens.insert(task_tokens_.begin(), task_tokens_.end());
    r.tombstones.assign(requests_.tombstones().begin(), requests_.tombstones().end());
    r.next_progress_token = requests_.next_token();
    r.progress.insert(requests_.progress_routes().begin(), requests_.progress_routes().end());
    r.roots_differ_noted = roots_differ_noted_;
    r.answered_from_cache = answered_from_cache_;
    for (const auto& [child_id, p] : requests_) {
        CarriedRequest request;
        request.child_id = child_id;
        request.pending = p;
        request.pending.counted = nullptr;
        request.pending.kept = {};
        if (p.counted != nullptr) request.counted = stats_.name_of(p.counted);
        if (p.kept.kept()) request.kept = std::string(p.kept.text());
        if (const auto* names = requests_.names_of(child_id)) request.log_names = *names;
        r.requests.push_back(std::move(request));
    }
    // In the order they were sent, so that the new process's table reads the same.
    std::sort(r.requests.begin(), r.requests.end(),
              [](const CarriedRequest& a, const CarriedRequest& b) { return a.child_id < b.child_id; });
    r.child_requests.assign(child_requests_.begin(), child_requests_.end());
    std::sort(r.child_requests.begin(), r.child_requests.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    r.queue.assign(queue_.begin(), queue_.end());
    r.serial_queue.assign(serial_queue_.begin(), serial_queue_.end());
    r.level_request = level_request_;
    CarriedStats stats;
    for (const auto& [name, counters] : stats_.tools()) stats.tools[name] = counters;
    for (const auto& [name, counters] : stats_.methods()) stats.methods[name] = counters;
    stats.sessions_total = stats_.sessions_total();
    stats.listed_tools.assign(stats_.listed_tools().names().begin(),
                              stats_.listed_tools().names().end());
    stats.hints.insert(replay_.all_hints().begin(), replay_.all_hints().end());
    for (const ReplayVerdict verdict : kReplayVerdicts)
        stats.replay_counts.push_back(replay_.count_of(verdict));
    r.stats = std::move(stats);
    return r;
}

std::optional<routing::SessionState> Router::carried_session(SessionId session) const {
    const auto it = sessions_.find(session);
    if (it == sessions_.end()) return std::nullopt;
    return it->second;
}

void Router::restore_carried(const CarriedRouter& r) {
    next_child_request_ = std::max(next_child_request_, r.next_child_request);
    child_level_ = r.child_level;
    unset_view_ = r.unset_view;
    if (!r.served_version.empty()) served_version_ = r.served_version;
    task_owners_.insert(r.task_owners.begin(), r.task_owners.end());
    task_tokens_.insert(r.task_tokens.begin(), r.task_tokens.end());
    requests_.restore(r.tombstones, r.progress, r.next_progress_token);
    roots_differ_noted_ = r.roots_differ_noted;
    answered_from_cache_ = r.answered_from_cache;
    if (r.stats) {
        for (const auto& [name, counters] : r.stats->tools) stats_.restore_name(true, name, counters);
        for (const auto& [name, counters] : r.stats->methods)
            stats_.restore_name(false, name, counters);
        stats_.restore_sessions_total(r.stats->sessions_total);
        stats_.tools_listed(r.stats->listed_tools, true);
        replay_.restore(r.stats->hints, r.stats->replay_counts);
    }
    for (const CarriedRequest& request : r.requests) {
        routing::Pending p = request.pending;
        if (request.counted) p.counted = stats_.find_name(request.counted->first, request.counted->second);
        if (request.kept) p.kept = replay_.keep(*request.kept);
        requests_.add(request.child_id, std::move(p));
        if (request.log_names)
            requests_.log_names(request.child_id, request.log_names->first, request.log_names->second);
    }
    for (const auto& [id, c] : r.child_requests) child_requests_[id] = c;
    queue_.insert(queue_.end(), r.queue.begin(), r.queue.end());
    serial_queue_.insert(serial_queue_.end(), r.serial_queue.begin(), r.serial_queue.end());
    level_request_ = r.level_request;
    // Its requests' deadlines and the lines waiting are timed from here on.
    env_.deadlines_changed();
}

void Router::carried_in() {
    // Lines that waited for a child that is ready now go to it (their sessions are all here).
    if (child_ready_ && !queue_.empty()) flush_queue();
}

void Router::adopt_carried(routing::SessionState state) {
    const SessionId id = state.id;
    // The child holds its subscriptions already: they are noted, not sent again.
    for (const std::string& uri : state.subscriptions) subscribers_[uri].insert(id);
    sessions_[id] = std::move(state);
    // Counted in sessions_total already, which the router's state carried.
}

}  // namespace mcpd
