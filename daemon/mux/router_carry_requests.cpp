// What a router carries across an upgrade in place besides its sessions (router_carry.h): its
// requests at the child, the child's requests to sessions, the lines that wait, and what it
// counted, as JSON and read back by type.
#include <algorithm>
#include <chrono>
#include <iterator>
#include <limits>

#include "common/json_fields.h"
#include "common/json_read.h"
#include "daemon/mux/router_carry.h"

namespace mcpd {

using nlohmann::json;
using json_read::FieldReader;

namespace {

// The longest name kept in a count or a hint (a tool's, a method's).
constexpr std::size_t kMaxName = 64 * 1024;

constexpr const char* kKinds[] = {"forward", "subscribe", "unsubscribe", "set_level", "internal",
                                  "listen"};

// A time on the monotonic clock, which an exec does not reset: the same instant in the new
// process.
json time_json(TimePoint t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
TimePoint time_of(std::int64_t ns) {
    return TimePoint(std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns)));
}

std::uint64_t count_of(FieldReader& in, std::string_view key) {
    return static_cast<std::uint64_t>(in.integer(key, 0));
}

json pending_json(const CarriedRequest& r) {
    const routing::Pending& p = r.pending;
    json waiters = json::array();
    for (const routing::Waiter& w : p.waiters) waiters.push_back({{"session", w.session}, {"raw_id", w.raw_id}});
    return {{"child_id", r.child_id},
            {"session", p.session},
            {"kind", kKinds[static_cast<std::size_t>(p.kind)]},
            {"original_id", p.original_id},
            {"own_token", p.own_token},
            {"uri", p.uri},
            {"task_id", p.task_id},
            {"reported_task", p.reported_task},
            {"task_result", p.task_result},
            {"own_tasks_only", p.own_tasks_only},
            {"subscribes", p.subscribes},
            {"level", p.level ? json(*p.level) : json()},
            {"waiters", std::move(waiters)},
            {"deadline_ns", p.deadline ? time_json(*p.deadline) : json()},
            {"discover", p.discover},
            {"sent_ns", time_json(p.sent)},
            {"bytes_in", p.bytes_in},
            {"lists_tools", p.lists_tools},
            {"first_page", p.first_page},
            {"catalog_list", p.catalog_list ? json(static_cast<int>(*p.catalog_list)) : json()},
            {"catalog_generation", p.catalog_generation},
            {"crashes", p.crashes},
            {"progressed", p.progressed},
            {"unsent", p.unsent},
            {"counted", r.counted ? json{{"tool", r.counted->first}, {"name", r.counted->second}} : json()},
            {"kept", r.kept ? json(*r.kept) : json()},
            {"log_names", r.log_names ? json{r.log_names->first, r.log_names->second} : json()}};
}

bool read_pending(const json& body, CarriedRequest& r, std::string& error) {
    if (!body.is_object()) {
        error = "a request is not an object";
        return false;
    }
    FieldReader in(body);
    routing::Pending& p = r.pending;
    r.child_id = count_of(in, "child_id");
    p.session = count_of(in, "session");
    const std::string kind = in.text("kind");
    p.original_id = in.text("original_id");
    p.own_token = in.text("own_token");
    p.uri = in.text("uri");
    p.task_id = in.text("task_id");
    p.reported_task = in.text("reported_task");
    p.task_result = in.flag("task_result");
    p.own_tasks_only = in.flag("own_tasks_only");
    p.subscribes = in.flag("subscribes");
    p.discover = in.flag("discover");
    p.sent = time_of(in.integer("sent_ns"));
    p.bytes_in = static_cast<std::size_t>(in.integer("bytes_in", 0));
    p.lists_tools = in.flag("lists_tools");
    p.first_page = in.flag("first_page");
    p.catalog_generation = count_of(in, "catalog_generation");
    p.crashes = static_cast<unsigned>(in.integer("crashes", 0, 1000));
    p.progressed = in.flag("progressed");
    p.unsent = in.flag("unsent");
    const auto found = std::find(std::begin(kKinds), std::end(kKinds), kind);
    if (in.ok() && found == std::end(kKinds)) in.fail("its kind is not one mcpd has");
    else p.kind = static_cast<routing::PendingKind>(found - std::begin(kKinds));
    if (const auto level = in.nullable_integer("level", 0, 7)) p.level = static_cast<int>(*level);
    if (const auto deadline = in.nullable_integer("deadline_ns", std::numeric_limits<std::int64_t>::min(),
                                                  std::numeric_limits<std::int64_t>::max()))
        p.deadline = time_of(*deadline);
    if (const auto list = in.nullable_integer("catalog_list", 0,
                                              static_cast<std::int64_t>(kListKinds.size()) - 1))
        p.catalog_list = static_cast<ListKind>(*list);
    if (const json* waiters = in.ok() ? in.array("waiters") : nullptr) {
        for (const json& w : *waiters) {
            if (!w.is_object()) {
                in.fail("a waiter is not an object");
                break;
            }
            FieldReader at(w);
            routing::Waiter waiter{count_of(at, "session"), at.text("raw_id")};
            if (!at.ok()) {
                in.fail("a waiter: " + at.error());
                break;
            }
            p.waiters.push_back(std::move(waiter));
        }
    }
    if (in.ok()) {
        const json& counted = body.contains("counted") ? body["counted"] : json();
        if (counted.is_object()) {
            FieldReader at(counted);
            const bool tool = at.flag("tool");
            std::string name = at.text("name");
            if (!at.ok() || name.size() > kMaxName) in.fail("its counters are not named");
            else r.counted.emplace(tool, std::move(name));
        } else if (!counted.is_null()) {
            in.fail("its \"counted\" is of the wrong type");
        }
    }
    if (in.ok()) {
        const json& kept = body.contains("kept") ? body["kept"] : json();
        if (kept.is_string()) r.kept = kept.get<std::string>();
        else if (!kept.is_null()) in.fail("its \"kept\" is of the wrong type");
    }
    if (in.ok()) {
        const json& names = body.contains("log_names") ? body["log_names"] : json();
        if (names.is_array() && names.size() == 2 && names[0].is_string() && names[1].is_string())
            r.log_names.emplace(names[0].get<std::string>(), names[1].get<std::string>());
        else if (!names.is_null()) in.fail("its \"log_names\" are not two texts");
    }
    if (in.ok() && r.child_id == 0) in.fail("its child id is 0");
    if (!in.ok()) {
        error = "request " + std::to_string(r.child_id) + ": " + in.error();
        return false;
    }
    return true;
}

json stats_json(const CarriedStats& s) {
    json tools = json::object(), methods = json::object(), hints = json::object();
    for (const auto& [name, counters] : s.tools) tools[name] = to_json(counters);
    for (const auto& [name, counters] : s.methods) methods[name] = to_json(counters);
    for (const auto& [name, h] : s.hints) {
        const auto hint = [](const std::optional<bool>& v) { return v ? json(*v) : json(); };
        hints[name] = {hint(h.read_only), hint(h.idempotent), hint(h.destructive)};
    }
    return {{"tools", std::move(tools)},     {"methods", std::move(methods)},
            {"sessions_total", s.sessions_total}, {"listed_tools", s.listed_tools},
            {"hints", std::move(hints)},     {"replay_counts", s.replay_counts}};
}

bool read_names(const json* names, std::map<std::string, CallCounters>& out, std::string& error) {
    if (names == nullptr) return false;
    for (const auto& [name, counters] : names->items()) {
        CallCounters c;
        if (name.size() > kMaxName || !read_counters(counters, c, error)) {
            if (error.empty()) error = "a name counted is too long";
            return false;
        }
        out[name] = c;
    }
    return true;
}

bool read_stats(const json& body, CarriedStats& s, std::string& error) {
    if (!body.is_object()) {
        error = "its stats are not an object";
        return false;
    }
    FieldReader in(body);
    s.sessions_total = count_of(in, "sessions_total");
    const json* tools = in.object("tools");
    const json* methods = in.object("methods");
    const json* hints = in.object("hints");
    const json* listed = in.array("listed_tools");
    const json* counts = in.array("replay_counts");
    if (!in.ok()) {
        error = "its stats: " + in.error();
        return false;
    }
    if (!read_names(tools, s.tools, error) || !read_names(methods, s.methods, error)) return false;
    for (const json& name : *listed) {
        if (!name.is_string() || name.get_ref<const std::string&>().size() > kMaxName) {
            error = "a listed tool is not a name";
            return false;
        }
        s.listed_tools.push_back(name.get<std::string>());
    }
    for (const auto& item : hints->items()) {
        const std::string& name = item.key();
        const json& h = item.value();
        const auto hint = [&h](std::size_t i, std::optional<bool>& v) {
            if (!h.is_array() || h.size() != 3 || !(h[i].is_null() || h[i].is_boolean())) return false;
            if (h[i].is_boolean()) v = h[i].get<bool>();
            return true;
        };
        ToolHints read;
        if (name.size() > kMaxName || !hint(0, read.read_only) || !hint(1, read.idempotent) ||
            !hint(2, read.destructive)) {
            error = "a tool's hints are not three flags";
            return false;
        }
        s.hints[name] = read;
    }
    for (const json& n : *counts) {
        const std::optional<std::int64_t> v = json_read::as_integer(n);
        if (!v || *v < 0) {
            error = "a replay count is not a count";
            return false;
        }
        s.replay_counts.push_back(static_cast<std::uint64_t>(*v));
    }
    if (s.replay_counts.size() != std::size(kReplayVerdicts)) {
        error = "its replay counts are not one per verdict";
        return false;
    }
    return true;
}

}  // namespace

json to_json(const CallCounters& c) {
    return {{"requests", c.requests},     {"replies", c.replies},     {"errors", c.errors},
            {"tool_errors", c.tool_errors}, {"cancelled", c.cancelled}, {"timeouts", c.timeouts},
            {"child_died", c.child_died}, {"replayed", c.replayed},   {"in_flight", c.in_flight},
            {"bytes_in", c.bytes_in},     {"bytes_out", c.bytes_out},
            {"latency_buckets", c.latency.buckets()}, {"latency_sum_us", c.latency.sum_us()}};
}

bool read_counters(const json& body, CallCounters& c, std::string& error) {
    if (!body.is_object()) {
        error = "counters are not an object";
        return false;
    }
    FieldReader in(body);
    c.requests = count_of(in, "requests");
    c.replies = count_of(in, "replies");
    c.errors = count_of(in, "errors");
    c.tool_errors = count_of(in, "tool_errors");
    c.cancelled = count_of(in, "cancelled");
    c.timeouts = count_of(in, "timeouts");
    c.child_died = count_of(in, "child_died");
    c.replayed = count_of(in, "replayed");
    c.in_flight = count_of(in, "in_flight");
    c.bytes_in = count_of(in, "bytes_in");
    c.bytes_out = count_of(in, "bytes_out");
    const std::uint64_t sum = count_of(in, "latency_sum_us");
    std::vector<std::uint64_t> buckets;
    if (const json* array = in.array("latency_buckets")) {
        for (const json& item : *array) {
            const std::optional<std::int64_t> n = json_read::as_integer(item);
            if (!n || *n < 0) {
                in.fail("a latency bucket is not a count");
                break;
            }
            buckets.push_back(static_cast<std::uint64_t>(*n));
        }
    }
    if (in.ok() && !c.latency.restore(buckets, sum))
        in.fail("its latency buckets are not as many as mcpd's");
    if (!in.ok()) error = "counters: " + in.error();
    return in.ok();
}

void write_requests(const CarriedRouter& r, json& out) {
    json requests = json::array();
    for (const CarriedRequest& request : r.requests) requests.push_back(pending_json(request));
    json child_requests = json::array();
    for (const auto& [id, c] : r.child_requests)
        child_requests.push_back({{"id", id},
                                  {"session", c.session},
                                  {"child_id", c.child_id},
                                  {"method", c.method},
                                  {"progress_token", c.progress_token},
                                  {"deadline_ns", time_json(c.deadline)}});
    json queue = json::array();
    for (const routing::Queued& q : r.queue)
        queue.push_back({{"session", q.session},
                         {"line", q.line},
                         {"deadline_ns", time_json(q.deadline)},
                         {"crashes", q.crashes}});
    json serial = json::array();
    for (const routing::Waiting& w : r.serial_queue)
        serial.push_back(
            {{"session", w.session}, {"raw_id", w.raw_id}, {"line", w.line}, {"crashes", w.crashes}});
    out["requests"] = std::move(requests);
    out["child_requests"] = std::move(child_requests);
    out["queue"] = std::move(queue);
    out["serial_queue"] = std::move(serial);
    out["level_request"] = r.level_request;
    out["stats"] = r.stats ? stats_json(*r.stats) : json();
}

bool read_requests(const json& body, CarriedRouter& r, std::string& error) {
    // A router of a state written before requests were carried has none of these.
    if (!body.contains("requests")) return true;
    FieldReader in(body);
    const json* requests = in.array("requests");
    const json* child_requests = in.array("child_requests");
    const json* queue = in.array("queue");
    const json* serial = in.array("serial_queue");
    r.level_request = count_of(in, "level_request");
    if (!in.ok()) {
        error = in.error();
        return false;
    }
    for (const json& entry : *requests) {
        CarriedRequest request;
        if (!read_pending(entry, request, error)) return false;
        r.requests.push_back(std::move(request));
    }
    for (const json& entry : *child_requests) {
        if (!entry.is_object()) {
            error = "a request of the child's is not an object";
            return false;
        }
        FieldReader at(entry);
        routing::ChildRequest c;
        const std::string id = at.text("id");
        c.session = count_of(at, "session");
        c.child_id = at.text("child_id");
        c.method = at.text("method");
        c.progress_token = at.text("progress_token");
        c.deadline = time_of(at.integer("deadline_ns"));
        if (!at.ok()) {
            error = "a request of the child's: " + at.error();
            return false;
        }
        r.child_requests.emplace_back(id, std::move(c));
    }
    for (const json& entry : *queue) {
        if (!entry.is_object()) {
            error = "a queued line is not an object";
            return false;
        }
        FieldReader at(entry);
        routing::Queued q;
        q.session = count_of(at, "session");
        q.line = at.text("line");
        q.deadline = time_of(at.integer("deadline_ns"));
        q.crashes = static_cast<unsigned>(at.integer("crashes", 0, 1000));
        if (!at.ok()) {
            error = "a queued line: " + at.error();
            return false;
        }
        r.queue.push_back(std::move(q));
    }
    for (const json& entry : *serial) {
        if (!entry.is_object()) {
            error = "a line waiting its turn is not an object";
            return false;
        }
        FieldReader at(entry);
        routing::Waiting w;
        w.session = count_of(at, "session");
        w.raw_id = at.text("raw_id");
        w.line = at.text("line");
        w.crashes = static_cast<unsigned>(at.integer("crashes", 0, 1000));
        if (!at.ok()) {
            error = "a line waiting its turn: " + at.error();
            return false;
        }
        r.serial_queue.push_back(std::move(w));
    }
    const json& stats = body.contains("stats") ? body["stats"] : json();
    if (!stats.is_null()) {
        CarriedStats s;
        if (!read_stats(stats, s, error)) return false;
        r.stats = std::move(s);
    }
    return true;
}

json to_json(const CarriedStats& stats) { return stats_json(stats); }

Result<CarriedStats> read_carried_stats(const json& body) {
    CarriedStats s;
    std::string error;
    if (!read_stats(body, s, error)) return permanent_failure(error);
    return s;
}

}  // namespace mcpd
