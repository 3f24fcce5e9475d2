// GroupRouter: what passes through a group session, carried across an upgrade in place
// (docs/UPGRADE.md): the requests it sent its members and whose answers it waits for, the
// client ids they answer, the requests answered once every member has (a fan-out), the
// members' requests to the client, and the client's listen streams of the stateless era.
// Each member session's own requests are carried by its server's router.
#include <algorithm>
#include <limits>
#include <map>

#include "common/base64url.h"
#include "common/json_fields.h"
#include "common/json_read.h"
#include "daemon/mux/group_router.h"

namespace mcpd {

using nlohmann::json;

namespace {

constexpr const char* kSentKinds[] = {"forward", "initialize", "set_level", "list",
                                      "read_probe", "discover", "listen", "internal"};
// As many entries as a group could hold at once: far above any real one.
constexpr std::size_t kMaxCarried = 1 << 20;

// What a reader reads in place of an entry that is not an object (it outlives the reader).
const json& empty_object() {
    static const json empty = json::object();
    return empty;
}

std::optional<std::string> bytes_of(json_read::FieldReader& in, std::string_view key) {
    return base64url_decode(in.text(key));
}

}  // namespace

json GroupRouter::carried_requests() const {
    // In the order of their ids, so that the same state is always written the same way.
    const std::map<std::uint64_t, const Sent*> sent_by_id = [this] {
        std::map<std::uint64_t, const Sent*> out;
        for (const auto& [id, s] : sent_) out.emplace(id, &s);
        return out;
    }();
    json sent = json::array();
    for (const auto& [id, entry] : sent_by_id) {
        const Sent& s = *entry;
        sent.push_back({{"id", id},
                        {"kind", kSentKinds[static_cast<int>(s.kind)]},
                        {"member", s.member},
                        {"raw_id", base64url_encode(s.raw_id)},
                        {"list", s.list},
                        {"fanout", s.fanout},
                        {"line", base64url_encode(s.line)}});
    }
    json waiting = json::array();
    // In the order of the client's ids, whatever the table's: the same state reads the same.
    const std::map<std::string_view, std::uint64_t> in_order(waiting_.begin(), waiting_.end());
    for (const auto& [raw_id, id] : in_order)
        waiting.push_back({{"raw_id", base64url_encode(raw_id)}, {"id", id}});
    json fanouts = json::array();
    for (const auto& [key, f] : fanouts_) {
        json results = json::array();
        for (const auto& [member, value] : f.results) results.push_back({{"member", member}, {"value", value}});
        fanouts.push_back({{"key", key},
                           {"raw_id", base64url_encode(f.raw_id)},
                           {"remaining", f.remaining},
                           {"results", std::move(results)}});
    }
    const std::map<std::uint64_t, const ServerRequest*> requests_by_id = [this] {
        std::map<std::uint64_t, const ServerRequest*> out;
        for (const auto& [id, r] : server_requests_) out.emplace(id, &r);
        return out;
    }();
    json requests = json::array();
    for (const auto& [id, entry] : requests_by_id) {
        const ServerRequest& r = *entry;
        requests.push_back({{"id", id},
                            {"member", r.member},
                            {"raw_id", base64url_encode(r.raw_id)},
                            {"progress_token", base64url_encode(r.progress_token)}});
    }
    json streams = json::array();
    for (const Stream& s : streams_) {
        json listens = json::array();
        for (const auto& [member, id] : s.member_listens) listens.push_back({{"member", member}, {"id", id}});
        streams.push_back({{"raw_id", base64url_encode(s.raw_id)},
                           {"tools", s.tools},
                           {"prompts", s.prompts},
                           {"resources", s.resources},
                           {"uris", s.uris},
                           {"member_listens", std::move(listens)}});
    }
    return {{"sent", std::move(sent)},
            {"waiting", std::move(waiting)},
            {"fanouts", std::move(fanouts)},
            {"server_requests", std::move(requests)},
            {"streams", std::move(streams)}};
}

Result<Done> GroupRouter::restore_requests(const json& body) {
    if (!body.is_object()) return permanent_failure("its requests are not an object");
    json_read::FieldReader in(body);
    const json* sent = in.array("sent");
    const json* waiting = in.array("waiting");
    const json* fanouts = in.array("fanouts");
    const json* requests = in.array("server_requests");
    const json* streams = in.array("streams");
    if (in.ok() && (sent->size() + waiting->size() + fanouts->size() + requests->size() + streams->size() > kMaxCarried))
        in.fail("it holds more than a group could");
    const auto member_of = [&](json_read::FieldReader& at) {
        return static_cast<std::size_t>(at.integer("member", 0, static_cast<std::int64_t>(members_.size()) - 1));
    };
    SentRequests read_sent;
    for (std::size_t i = 0; in.ok() && i < sent->size(); ++i) {
        const json& item = (*sent)[i];
        if (!item.is_object()) {
            in.fail("a request it sent is not an object");
            break;
        }
        json_read::FieldReader at(item);
        const auto id = static_cast<std::uint64_t>(at.integer("id", 1));
        const std::string kind = at.text("kind");
        Sent s;
        s.member = member_of(at);
        const std::optional<std::string> raw_id = bytes_of(at, "raw_id");
        s.list = at.text("list");
        s.fanout = at.text("fanout");
        const std::optional<std::string> line = bytes_of(at, "line");
        int k = -1;
        for (std::size_t n = 0; n < std::size(kSentKinds); ++n)
            if (kind == kSentKinds[n]) k = static_cast<int>(n);
        if (at.ok() && (k < 0 || !raw_id || !line)) at.fail("its kind or bytes are not ones mcpd writes");
        if (at.ok() && (id >= next_id_ || read_sent.contains(id))) at.fail("its id is given twice or not given yet");
        if (!at.ok()) {
            in.fail("a request it sent: " + at.error());
            break;
        }
        s.kind = static_cast<Kind>(k);
        s.raw_id = *raw_id;
        s.line = *line;
        read_sent.emplace(id, std::move(s));
    }
    std::map<std::string, Fanout> read_fanouts;
    for (std::size_t i = 0; in.ok() && i < fanouts->size(); ++i) {
        const json& item = (*fanouts)[i];
        if (!item.is_object()) {
            in.fail("a fan-out is not an object");
            break;
        }
        json_read::FieldReader at(item);
        const std::string key = at.text("key");
        Fanout f;
        const std::optional<std::string> raw_id = bytes_of(at, "raw_id");
        f.remaining = static_cast<std::size_t>(at.integer("remaining", 0, static_cast<std::int64_t>(members_.size())));
        const json* results = at.array("results");
        for (std::size_t r = 0; at.ok() && r < results->size(); ++r) {
            const json& result = (*results)[r];
            if (!result.is_object() || !result.contains("value")) {
                at.fail("a result is not a member's");
                break;
            }
            json_read::FieldReader of(result);
            const std::size_t member = member_of(of);
            if (!of.ok() || !f.results.emplace(member, result["value"]).second) at.fail("a result is not a member's");
        }
        if (at.ok() && (!raw_id || key.empty() || read_fanouts.contains(key))) at.fail("its key or id is not one");
        if (!at.ok()) {
            in.fail("a fan-out: " + at.error());
            break;
        }
        f.raw_id = *raw_id;
        read_fanouts.emplace(key, std::move(f));
    }
    for (const auto& [id, s] : read_sent)
        if (in.ok() && !s.fanout.empty() && !read_fanouts.contains(s.fanout))
            in.fail("a request it sent belongs to a fan-out it does not have");
    // A client request waits for one request it sent, or (0) for a fan-out's answers.
    WaitingIds read_waiting;
    for (std::size_t i = 0; in.ok() && i < waiting->size(); ++i) {
        const json& item = (*waiting)[i];
        json_read::FieldReader at(item.is_object() ? item : empty_object());
        const std::optional<std::string> raw_id = bytes_of(at, "raw_id");
        const auto id = static_cast<std::uint64_t>(at.integer("id", 0));
        const bool fanout = id == 0 && raw_id &&
                            std::any_of(read_fanouts.begin(), read_fanouts.end(),
                                        [&](const auto& f) { return f.second.raw_id == *raw_id; });
        if (!item.is_object() || !at.ok() || !raw_id || raw_id->empty() || (!fanout && !read_sent.contains(id)) ||
            !read_waiting.emplace(*raw_id, id).second)
            in.fail("a client request it waits for names no request it sent");
    }
    std::unordered_map<std::uint64_t, ServerRequest> read_requests;
    for (std::size_t i = 0; in.ok() && i < requests->size(); ++i) {
        const json& item = (*requests)[i];
        if (!item.is_object()) {
            in.fail("a member's request is not an object");
            break;
        }
        json_read::FieldReader at(item);
        const auto id = static_cast<std::uint64_t>(at.integer("id", 1));
        ServerRequest r;
        r.member = member_of(at);
        const std::optional<std::string> raw_id = bytes_of(at, "raw_id");
        const std::optional<std::string> token = bytes_of(at, "progress_token");
        if (!at.ok() || !raw_id || !token || id >= next_server_request_ || read_requests.contains(id)) {
            in.fail("a member's request is not one it gave an id");
            break;
        }
        r.raw_id = *raw_id;
        r.progress_token = *token;
        read_requests.emplace(id, std::move(r));
    }
    std::vector<Stream> read_streams;
    for (std::size_t i = 0; in.ok() && i < streams->size(); ++i) {
        const json& item = (*streams)[i];
        if (!item.is_object()) {
            in.fail("a listen stream is not an object");
            break;
        }
        json_read::FieldReader at(item);
        Stream s;
        const std::optional<std::string> raw_id = bytes_of(at, "raw_id");
        s.tools = at.flag("tools");
        s.prompts = at.flag("prompts");
        s.resources = at.flag("resources");
        const json* uris = at.array("uris");
        const json* listens = at.array("member_listens");
        for (std::size_t u = 0; at.ok() && u < uris->size(); ++u) {
            if (!(*uris)[u].is_string()) at.fail("a URI is not a text");
            else s.uris.push_back((*uris)[u].get<std::string>());
        }
        for (std::size_t l = 0; at.ok() && l < listens->size(); ++l) {
            const json& listen = (*listens)[l];
            json_read::FieldReader of(listen.is_object() ? listen : empty_object());
            const std::size_t member = member_of(of);
            const auto id = static_cast<std::uint64_t>(of.integer("id", 1));
            if (!listen.is_object() || !of.ok() || !s.member_listens.emplace(member, id).second)
                at.fail("a member's listen is not one");
        }
        if (at.ok() && (!raw_id || raw_id->empty())) at.fail("its id is not one");
        if (!at.ok()) {
            in.fail("a listen stream: " + at.error());
            break;
        }
        s.raw_id = *raw_id;
        read_streams.push_back(std::move(s));
    }
    if (!in.ok()) return permanent_failure(in.error());
    sent_ = std::move(read_sent);
    waiting_ = std::move(read_waiting);
    fanouts_ = std::move(read_fanouts);
    server_requests_ = std::move(read_requests);
    streams_ = std::move(read_streams);
    return Done{};
}

}  // namespace mcpd
