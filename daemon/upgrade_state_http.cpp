// The parts of an upgrade's state that version 3 added (upgrade_state.h): the HTTP front door's
// (daemon/http/http_carry.h: its connections with their descriptors and bytes, and each HTTP
// session's transport) and what the pool keeps of each entry; written, and read back by type. Bytes of the wire (requests, answers, events, held lines) are
// base64url, since they need not be UTF-8.
#include <algorithm>
#include <limits>
#include <set>

#include "common/base64url.h"
#include "common/json_fields.h"
#include "common/json_read.h"
#include "daemon/upgrade_state.h"
#include "daemon/upgrade_state_parts.h"

namespace mcpd {

using nlohmann::json;
using json_read::FieldReader;
using namespace upgrade_parts;

namespace {

// As many exchanges, ids or events as a session could hold: far above any real one.
constexpr std::size_t kMaxEntries = 1 << 20;

json bytes_list(const std::vector<std::string>& items) {
    json out = json::array();
    for (const std::string& item : items) out.push_back(base64url_encode(item));
    return out;
}

std::optional<std::string> decoded(const std::string& text) { return base64url_decode(text); }

// An array of base64url texts; a problem noted in `in`.
std::vector<std::string> read_bytes_list(const json* list, FieldReader& in, const char* what) {
    std::vector<std::string> out;
    if (list == nullptr) return out;
    if (list->size() > kMaxEntries) {
        in.fail(std::string("its ") + what + " are too many");
        return out;
    }
    for (const json& item : *list) {
        const std::optional<std::string> bytes = item.is_string() ? decoded(item.get<std::string>()) : std::nullopt;
        if (!bytes) {
            in.fail(std::string("its ") + what + " are not base64url texts");
            return {};
        }
        out.push_back(*bytes);
    }
    return out;
}

json id_map(const std::map<std::string, std::uint64_t>& ids) {
    json out = json::array();
    for (const auto& [id, number] : ids) out.push_back({{"id", base64url_encode(id)}, {"exchange", number}});
    return out;
}

std::map<std::string, std::uint64_t> read_id_map(const json* list, FieldReader& in, const char* what) {
    std::map<std::string, std::uint64_t> out;
    if (list == nullptr) return out;
    for (const json& item : *list) {
        if (!item.is_object()) {
            in.fail(std::string("its ") + what + " is not a list of ids with exchanges");
            return {};
        }
        FieldReader at(item);
        const std::optional<std::string> id = decoded(at.text("id"));
        const auto number = static_cast<std::uint64_t>(at.integer("exchange", 1));
        if (!at.ok() || !id || id->empty() || !out.emplace(*id, number).second) {
            in.fail(std::string("its ") + what + " is not a list of ids with exchanges");
            return {};
        }
    }
    return out;
}

}  // namespace

json to_json(const CarriedHttpSession& s) {
    json exchanges = json::array();
    for (const CarriedHttpExchange& e : s.exchanges)
        exchanges.push_back({{"number", e.number},
                             {"connection", e.connection},
                             {"sse", e.sse},
                             {"batch", e.batch},
                             {"initialize", e.initialize},
                             {"waiting", bytes_list(e.waiting)},
                             {"answers", bytes_list(e.answers)},
                             {"session_header", e.session_header}});
    json events = json::array();
    for (const CarriedSseEvent& e : s.replay.events)
        events.push_back({{"id", e.id}, {"stream", e.stream}, {"text", base64url_encode(e.text)}});
    return {{"token", s.token},
            {"session_id", s.session_id},
            {"protocol", s.protocol},
            {"one_shot", s.one_shot},
            {"idle_ms", s.idle_ms},
            {"next_exchange", s.next_exchange},
            {"exchanges", std::move(exchanges)},
            {"by_request", id_map(s.by_request)},
            {"by_progress", id_map(s.by_progress)},
            {"listener", s.listener ? json(*s.listener) : json()},
            {"replay", {{"last_id", s.replay.last_id}, {"dropped_through", s.replay.dropped_through}, {"events", std::move(events)}}},
            {"delivered", s.delivered},
            {"held", bytes_list(s.held)},
            {"swallow", bytes_list(s.swallow)}};
}

Result<CarriedHttpSession> read_carried_http_session(const json& body) {
    if (!body.is_object()) return permanent_failure("its HTTP part is not an object");
    CarriedHttpSession s;
    FieldReader in(body);
    s.token = in.text("token");
    s.session_id = in.text("session_id");
    s.protocol = in.text("protocol");
    s.one_shot = in.flag("one_shot");
    s.idle_ms = in.integer("idle_ms", 0);
    s.next_exchange = static_cast<std::uint64_t>(in.integer("next_exchange", 1));
    s.delivered = static_cast<std::uint64_t>(in.integer("delivered", 0));
    const json* exchanges = in.array("exchanges");
    const json* by_request = in.array("by_request");
    const json* by_progress = in.array("by_progress");
    const json* replay = in.object("replay");
    s.held = read_bytes_list(in.ok() ? in.array("held") : nullptr, in, "held lines");
    s.swallow = read_bytes_list(in.ok() ? in.array("swallow") : nullptr, in, "swallowed ids");
    if (in.ok()) {
        const std::optional<std::int64_t> listener =
            in.nullable_integer("listener", 1, std::numeric_limits<std::int64_t>::max());
        if (listener) s.listener = static_cast<std::uint64_t>(*listener);
    }
    if (in.ok() && (s.token.empty() || s.token.size() > 8192))
        in.fail("it has no token, or one no signer makes");
    if (in.ok() && exchanges->size() > kMaxEntries) in.fail("its exchanges are too many");
    for (std::size_t i = 0; in.ok() && i < exchanges->size(); ++i) {
        const json& item = (*exchanges)[i];
        if (!item.is_object()) {
            in.fail("an exchange is not an object");
            break;
        }
        FieldReader at(item);
        CarriedHttpExchange e;
        e.number = static_cast<std::uint64_t>(at.integer("number", 1));
        e.connection = static_cast<std::uint64_t>(at.integer("connection", 0));
        e.sse = at.flag("sse");
        e.batch = at.flag("batch");
        e.initialize = at.flag("initialize");
        e.session_header = at.text("session_header");
        e.waiting = read_bytes_list(at.ok() ? at.array("waiting") : nullptr, at, "waiting ids");
        e.answers = read_bytes_list(at.ok() ? at.array("answers") : nullptr, at, "answers");
        if (at.ok() && (e.number >= s.next_exchange ||
                        std::any_of(s.exchanges.begin(), s.exchanges.end(),
                                    [&](const CarriedHttpExchange& o) { return o.number == e.number; })))
            at.fail("its number is given twice or not given yet");
        if (!at.ok()) {
            in.fail("an exchange: " + at.error());
            break;
        }
        s.exchanges.push_back(std::move(e));
    }
    if (in.ok()) s.by_request = read_id_map(by_request, in, "\"by_request\"");
    if (in.ok()) s.by_progress = read_id_map(by_progress, in, "\"by_progress\"");
    const auto known = [&](std::uint64_t number) {
        return std::any_of(s.exchanges.begin(), s.exchanges.end(),
                           [&](const CarriedHttpExchange& e) { return e.number == number; });
    };
    for (const auto& ids : {&s.by_request, &s.by_progress})
        for (const auto& [id, number] : *ids)
            if (in.ok() && !known(number)) in.fail("an id of it names an exchange it does not have");
    if (in.ok()) {
        FieldReader at(*replay);
        s.replay.last_id = static_cast<std::uint64_t>(at.integer("last_id", 0));
        s.replay.dropped_through = static_cast<std::uint64_t>(at.integer("dropped_through", 0));
        const json* events = at.array("events");
        std::uint64_t before = s.replay.dropped_through;
        for (std::size_t i = 0; at.ok() && i < events->size(); ++i) {
            const json& item = (*events)[i];
            if (!item.is_object()) {
                at.fail("an event is not an object");
                break;
            }
            FieldReader ev(item);
            CarriedSseEvent e;
            e.id = static_cast<std::uint64_t>(ev.integer("id", 1));
            e.stream = ev.text("stream");
            const std::optional<std::string> text = decoded(ev.text("text"));
            if (!ev.ok() || !text || e.id <= before || e.id > s.replay.last_id) {
                at.fail("its events are not numbered in order after what was dropped");
                break;
            }
            e.text = *text;
            before = e.id;
            s.replay.events.push_back(std::move(e));
        }
        if (at.ok() && (s.replay.dropped_through > s.replay.last_id || s.delivered > s.replay.last_id))
            at.fail("it names events after its last");
        if (!at.ok()) in.fail("its replay buffer: " + at.error());
    }
    if (!in.ok()) return permanent_failure(in.error());
    return s;
}

json to_json(const CarriedHttpFront& front) {
    json connections = json::array();
    for (const CarriedHttpConnection& c : front.connections)
        connections.push_back({{"id", c.id},
                               {"fd", c.fd},
                               {"listener", c.listener},
                               {"received", base64url_encode(c.received)},
                               {"unwritten", base64url_encode(c.unwritten)},
                               {"answering", c.answering},
                               {"streaming", c.streaming},
                               {"keep_alive", c.keep_alive},
                               {"close_after_write", c.close_after_write}});
    json deleted = json::array();
    for (const std::string& id : front.deleted) deleted.push_back(id);
    return {{"connections", std::move(connections)},
            {"next_client", front.next_client},
            {"serial", front.serial},
            {"deleted", std::move(deleted)}};
}

namespace upgrade_parts {

json pool_json(const std::vector<CarriedPoolEntry>& pool) {
    json out = json::array();
    for (const CarriedPoolEntry& e : pool)
        out.push_back({{"name", e.name}, {"added_ms", e.added_ms}, {"gone", e.gone ? to_json(*e.gone) : json()}});
    return out;
}

Result<Done> read_pool(const json& body, UpgradeState& out) {
    const json* pool = json_read::member(body, "pool");
    if (pool == nullptr || pool->is_null()) return Done{};  // a state before it was carried
    if (!pool->is_array() || pool->size() > kMaxEntries) return permanent_failure("its \"pool\" is not an array");
    std::set<std::string> names;
    for (const json& entry : *pool) {
        if (!entry.is_object()) return permanent_failure("an entry of its pool is not an object");
        FieldReader in(entry);
        CarriedPoolEntry e;
        e.name = in.text("name");
        e.added_ms = in.integer("added_ms", 0);
        if (in.ok() && (e.name.empty() || e.name.size() > 4096 || !names.insert(e.name).second))
            in.fail("it names no entry, or one named twice");
        if (const json* gone = in.ok() ? json_read::member(entry, "gone") : nullptr; gone != nullptr && !gone->is_null()) {
            Result<CarriedStats> stats = read_carried_stats(*gone);
            if (!stats) in.fail(stats.error());
            else e.gone = std::move(stats).value();
        }
        if (!in.ok()) return permanent_failure("an entry of its pool: " + in.error());
        out.pool.push_back(std::move(e));
    }
    return Done{};
}

Result<Done> read_http(const json& body, UpgradeState& out, std::vector<int>& taken) {
    const json* http = json_read::member(body, "http");
    if (http == nullptr || http->is_null()) {
        // A state without the front door's part carries no HTTP session.
        const bool any = std::any_of(out.sessions.begin(), out.sessions.end(),
                                     [](const CarriedSession& s) { return s.http.has_value(); });
        if (any) return permanent_failure("it carries HTTP sessions without the HTTP front door's part");
        return Done{};
    }
    if (!http->is_object()) return permanent_failure("its \"http\" is not an object");
    CarriedHttpFront front;
    FieldReader in(*http);
    front.next_client = static_cast<std::uint64_t>(in.integer("next_client", 1));
    front.serial = static_cast<std::uint64_t>(in.integer("serial", 0));
    const json* connections = in.array("connections");
    const json* deleted = in.array("deleted");
    for (std::size_t i = 0; in.ok() && i < deleted->size(); ++i) {
        const json& id = (*deleted)[i];
        if (!id.is_string() || id.get<std::string>().size() > 8192) in.fail("a deleted session id is not one");
        else front.deleted.push_back(id.get<std::string>());
    }
    std::set<std::uint64_t> ids;
    for (std::size_t i = 0; in.ok() && i < connections->size(); ++i) {
        const json& item = (*connections)[i];
        if (!item.is_object()) {
            in.fail("a connection is not an object");
            break;
        }
        FieldReader at(item);
        CarriedHttpConnection c;
        c.id = static_cast<std::uint64_t>(at.integer("id", 1));
        c.fd = static_cast<int>(at.integer("fd", kIntMin, kIntMax));
        c.listener = at.text("listener");
        const std::optional<std::string> received = decoded(at.text("received"));
        const std::optional<std::string> unwritten = decoded(at.text("unwritten"));
        c.answering = at.flag("answering");
        c.streaming = at.flag("streaming");
        c.keep_alive = at.flag("keep_alive");
        c.close_after_write = at.flag("close_after_write");
        if (at.ok() && (!received || !unwritten)) at.fail("its bytes are not base64url");
        if (at.ok() && (c.id >= front.next_client || !ids.insert(c.id).second))
            at.fail("its number is given twice or not given yet");
        if (at.ok() && (!kept_descriptor(c.fd) || !fresh_descriptor(c.fd, taken)))
            at.fail("its descriptor is not one of its own");
        if (at.ok() && std::none_of(out.http_listeners.begin(), out.http_listeners.end(),
                                    [&](const auto& l) { return l.first == c.listener; }))
            at.fail("it was accepted on no listener the state has");
        if (at.ok() && c.streaming && !c.answering) at.fail("it streams an answer to no request");
        if (!at.ok()) {
            in.fail("an HTTP connection: " + at.error());
            break;
        }
        c.received = *received;
        c.unwritten = *unwritten;
        front.connections.push_back(std::move(c));
    }
    if (!in.ok()) return permanent_failure("its HTTP part: " + in.error());
    // Every connection a session names is one of these (0: none).
    for (const CarriedSession& session : out.sessions) {
        if (!session.http) continue;
        std::vector<std::uint64_t> named;
        for (const CarriedHttpExchange& e : session.http->exchanges)
            if (e.connection != 0) named.push_back(e.connection);
        if (session.http->listener) named.push_back(*session.http->listener);
        for (const std::uint64_t id : named)
            if (!ids.contains(id))
                return permanent_failure("HTTP session " + std::to_string(session.id) +
                                         " names a connection the state does not have");
    }
    out.http = std::move(front);
    return Done{};
}

}  // namespace upgrade_parts

}  // namespace mcpd
