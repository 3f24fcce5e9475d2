// GroupRouter: a group session's state carried across an upgrade in place (docs/UPGRADE.md):
// its members' handshakes and what they listed, the era and handshake it answered its client
// with, the cursors it gave, what it learnt of the resources (the requests through it:
// group_router_carry_requests.cpp). A handshake under way is waited out before the state is
// written.
#include <limits>

#include "common/json_fields.h"
#include "common/json_read.h"
#include "daemon/mux/group_router.h"

namespace mcpd {

using nlohmann::json;

namespace {

constexpr const char* kMemberStates[] = {"starting", "active", "down", "left_out"};
constexpr const char* kEras[] = {"none", "legacy", "modern"};

template <std::size_t N>
int index_of(const char* const (&names)[N], const std::string& name) {
    for (std::size_t i = 0; i < N; ++i)
        if (name == names[i]) return static_cast<int>(i);
    return -1;
}

// An array of strings, or the problem noted in `in`.
GroupRouter::NameSet text_set(const json* array, json_read::FieldReader& in,
                              std::string_view what) {
    GroupRouter::NameSet out;
    if (array == nullptr) return out;
    for (const json& item : *array) {
        if (!item.is_string()) {
            in.fail("an item of its " + std::string(what) + " is not a text");
            return {};
        }
        out.insert(item.get<std::string>());
    }
    return out;
}

}  // namespace

std::string GroupRouter::why_not_carried(bool& lasting) const {
    // Requests through it and its listen streams are carried (group_router_carry_requests.cpp).
    lasting = false;
    if (busy_ || !inbox_.empty()) return "it is handling a message";
    if (initializing_ || !before_initialize_.empty()) return "its handshake is under way";
    if (!modern_trigger_.empty()) return "its first request waits for its members";
    return {};
}

json GroupRouter::carried() const {
    json members = json::array();
    for (const Member& m : members_)
        members.push_back({{"state", kMemberStates[static_cast<int>(m.state)]},
                           {"modern", m.modern},
                           {"why", m.why},
                           {"capabilities", m.capabilities},
                           {"result", m.result},
                           {"templates", m.templates},
                           {"task_only", m.task_only}});
    json cursors = json::object();
    for (const auto& [key, c] : cursors_)
        cursors[key] = {{"method", c.method},
                        {"epoch", c.epoch},
                        {"member", c.member},
                        {"member_cursor", c.member_cursor ? json(*c.member_cursor) : json()}};
    return {{"nonce", nonce_},
            {"members", std::move(members)},
            {"initialized", initialized_},
            {"era", kEras[static_cast<int>(era_)]},
            {"modern_meta", modern_meta_},
            {"initialize_params", initialize_params_},
            {"protocol", protocol_},
            {"client_name", client_name_},
            {"next_id", next_id_},
            {"next_fanout", next_fanout_},
            {"next_server_request", next_server_request_},
            {"epochs", epochs_},
            {"cursors", std::move(cursors)},
            {"cursor_order", cursor_order_},
            {"next_cursor", next_cursor_},
            {"uri_owners", uri_owners_},
            {"reported_names", reported_names_},
            {"requests", carried_requests()}};
}

Result<Done> GroupRouter::restore_carried(const json& body) {
    if (!body.is_object()) return permanent_failure("a group session's state is not an object");
    json_read::FieldReader in(body);
    const std::string nonce = in.text("nonce");
    const bool initialized = in.flag("initialized");
    const int era = index_of(kEras, in.text("era"));
    std::string protocol = in.text("protocol");
    std::string client_name = in.text("client_name");
    const auto count = [&](std::string_view key) { return static_cast<std::uint64_t>(in.integer(key, 0)); };
    const std::uint64_t next_id = count("next_id"), next_fanout = count("next_fanout"),
                        next_server_request = count("next_server_request"),
                        next_cursor = count("next_cursor");
    const json* members = in.array("members");
    const json* epochs = in.object("epochs");
    const json* cursors = in.object("cursors");
    const json* order = in.array("cursor_order");
    const json* owners = in.object("uri_owners");
    const json* reported = in.array("reported_names");
    const json* meta = json_read::member(body, "modern_meta");
    const json* params = json_read::member(body, "initialize_params");
    if (in.ok() && (meta == nullptr || params == nullptr)) in.fail("its handshake is missing");
    if (in.ok() && era < 0) in.fail("its era is not one mcpd has");
    if (in.ok() && members->size() != members_.size())
        in.fail("it has another number of members than its group");
    std::vector<Member> read_members;
    if (in.ok()) {
        for (const json& entry : *members) {
            if (!entry.is_object()) {
                in.fail("a member is not an object");
                break;
            }
            json_read::FieldReader at(entry);
            Member m;
            const int state = index_of(kMemberStates, at.text("state"));
            m.modern = at.flag("modern");
            m.why = at.text("why");
            if (const json* caps = at.object("capabilities")) m.capabilities = *caps;
            if (const json* result = json_read::member(entry, "result")) m.result = *result;
            m.templates = text_set(at.array("templates"), at, "templates");
            m.task_only = text_set(at.array("task_only"), at, "task_only");
            if (at.ok() && state < 0) at.fail("its state is not one mcpd has");
            if (!at.ok()) {
                in.fail("a member: " + at.error());
                break;
            }
            m.state = static_cast<MemberState>(state);
            read_members.push_back(std::move(m));
        }
    }
    std::map<std::string, std::uint64_t> read_epochs;
    if (in.ok()) {
        for (const auto& [method, n] : epochs->items()) {
            const std::optional<std::int64_t> v = json_read::as_integer(n);
            if (!v || *v < 0) {
                in.fail("an epoch is not a count");
                break;
            }
            read_epochs[method] = static_cast<std::uint64_t>(*v);
        }
    }
    std::map<std::string, Cursor> read_cursors;
    if (in.ok()) {
        for (const auto& item : cursors->items()) {
            if (!item.value().is_object()) {
                in.fail("a cursor is not an object");
                break;
            }
            json_read::FieldReader at(item.value());
            Cursor c;
            c.method = at.text("method");
            c.epoch = static_cast<std::uint64_t>(at.integer("epoch", 0));
            c.member = static_cast<std::size_t>(
                at.integer("member", 0, static_cast<std::int64_t>(members_.size()) - 1));
            const json* member_cursor = json_read::member(item.value(), "member_cursor");
            if (member_cursor != nullptr && member_cursor->is_string())
                c.member_cursor = member_cursor->get<std::string>();
            else if (member_cursor == nullptr || !member_cursor->is_null())
                at.fail("its member cursor is neither a text nor null");
            if (!at.ok()) {
                in.fail("a cursor: " + at.error());
                break;
            }
            read_cursors[item.key()] = std::move(c);
        }
    }
    std::list<std::string> read_order;
    if (in.ok()) {
        for (const json& key : *order) {
            if (!key.is_string() || !read_cursors.contains(key.get<std::string>())) {
                in.fail("its cursor order names a cursor it has not");
                break;
            }
            read_order.push_back(key.get<std::string>());
        }
    }
    std::map<std::string, std::size_t> read_owners;
    if (in.ok()) {
        for (const auto& [uri, member] : owners->items()) {
            const std::optional<std::int64_t> v = json_read::as_integer(member);
            if (!v || *v < 0 || static_cast<std::size_t>(*v) >= members_.size()) {
                in.fail("a resource's owner is not a member");
                break;
            }
            read_owners[uri] = static_cast<std::size_t>(*v);
        }
    }
    GroupRouter::NameSet read_reported = text_set(reported, in, "reported_names");
    if (in.ok() && (read_cursors.size() > kMaxCursors || read_owners.size() > kMaxKnown))
        in.fail("it holds more cursors or resources than a group keeps");
    if (!in.ok()) return permanent_failure("a group session's state: " + in.error());
    // The counters first: the requests are checked against them. A state of a binary that
    // carried no requests through groups has none.
    const std::uint64_t before_id = next_id_, before_request = next_server_request_;
    next_id_ = std::max(next_id_, next_id);
    next_server_request_ = std::max(next_server_request_, next_server_request);
    if (const json* requests = json_read::member(body, "requests"); requests != nullptr) {
        if (Result<Done> read = restore_requests(*requests); !read) {
            next_id_ = before_id;
            next_server_request_ = before_request;
            return permanent_failure("a group session's state: " + read.error());
        }
    }

    nonce_ = nonce;
    members_ = std::move(read_members);
    initialized_ = initialized;
    era_ = static_cast<Era>(era);
    modern_meta_ = *meta;
    initialize_params_ = *params;
    protocol_ = std::move(protocol);
    client_name_ = std::move(client_name);
    next_fanout_ = std::max(next_fanout_, next_fanout);
    next_cursor_ = std::max(next_cursor_, next_cursor);
    epochs_ = std::move(read_epochs);
    cursors_ = std::move(read_cursors);
    cursor_order_ = std::move(read_order);
    uri_owners_ = std::move(read_owners);
    reported_names_ = std::move(read_reported);
    return Done{};
}

}  // namespace mcpd
