// A group session's lists (one cursor space over every member's pages), and the requests that
// go to the member a name or a URI belongs to.
#include "common/json_read.h"
#include "daemon/mux/group_names.h"
#include "daemon/mux/group_router.h"
#include "daemon/mux/jsonrpc.h"

namespace mcpd {

using nlohmann::json;

namespace {

// What a server answers for a resource it does not have (MCP's "resource not found").
constexpr int kResourceNotFound = -32002;

constexpr std::string_view kKinds[][4] = {
    {"tools/list", "tools", "tools", "name"},
    {"prompts/list", "prompts", "prompts", "name"},
    {"resources/list", "resources", "resources", "uri"},
    {"resources/templates/list", "resources", "resourceTemplates", "uriTemplate"},
};

}  // namespace

const GroupRouter::ListKind* GroupRouter::list_kind(std::string_view method) {
    static const ListKind kinds[] = {
        {kKinds[0][0], kKinds[0][1], kKinds[0][2], kKinds[0][3], true},
        {kKinds[1][0], kKinds[1][1], kKinds[1][2], kKinds[1][3], true},
        {kKinds[2][0], kKinds[2][1], kKinds[2][2], kKinds[2][3], false},
        {kKinds[3][0], kKinds[3][1], kKinds[3][2], kKinds[3][3], false},
    };
    for (const ListKind& kind : kinds) {
        if (kind.method == method) return &kind;
    }
    return nullptr;
}

std::optional<std::size_t> GroupRouter::next_member_with(std::string_view capability,
                                                         std::size_t from) const {
    for (std::size_t i = from; i < members_.size(); ++i) {
        if (active(i) && json_read::object_at(members_[i].capabilities, capability) != nullptr)
            return i;
    }
    return std::nullopt;
}

void GroupRouter::remember_owner(const std::string& uri, std::size_t member) {
    if (uri_owners_.size() >= kMaxKnown && !uri_owners_.contains(uri)) uri_owners_.clear();
    uri_owners_[uri] = member;
}

std::optional<std::size_t> GroupRouter::next_reader(std::string_view uri, std::size_t from) const {
    for (auto member = next_member_with("resources", from); member;
         member = next_member_with("resources", *member + 1)) {
        if (admits(*member, "resources", uri)) return member;
    }
    return std::nullopt;
}

bool GroupRouter::admits(std::size_t member, std::string_view capability,
                         std::string_view name) const {
    const GroupMemberSpec& spec = spec_.members[member];
    const auto pick = [&](const config::ItemFilters& filters) -> const config::NameFilter& {
        return capability == "tools" ? filters.tools
               : capability == "prompts" ? filters.prompts
                                         : filters.resources;
    };
    return pick(spec.group_filters).admits(name) && pick(spec.member_filters).admits(name) &&
           pick(spec.server_filters).admits(name);
}

std::string GroupRouter::new_cursor(Cursor cursor) {
    std::string token = nonce_ + "-" + std::to_string(next_cursor_++);
    cursors_[token] = std::move(cursor);
    cursor_order_.push_back(token);
    if (cursor_order_.size() > kMaxCursors) {
        cursors_.erase(cursor_order_.front());
        cursor_order_.pop_front();
    }
    return token;
}

void GroupRouter::start_list(const ListKind& kind, const json& message, std::string_view raw_id) {
    const json* params = json_read::object_at(message, "params");
    const json* cursor_value = params != nullptr ? json_read::member(*params, "cursor") : nullptr;
    const std::string method(kind.method);
    std::size_t from = 0;
    std::optional<std::string> member_cursor;
    if (cursor_value != nullptr && !cursor_value->is_null()) {
        const auto found = cursor_value->is_string() ? cursors_.find(cursor_value->get<std::string>())
                                                     : cursors_.end();
        if (found == cursors_.end() || found->second.method != method) {
            reply_error(raw_id, jsonrpc::kInvalidParams,
                        "invalid cursor: it is not one this session was given for " + method);
            return;
        }
        if (found->second.epoch != epochs_[method]) {
            reply_error(raw_id, jsonrpc::kInvalidParams,
                        "invalid cursor: the list has changed since; list again from the start");
            return;
        }
        from = found->second.member;
        member_cursor = found->second.member_cursor;
    }
    std::optional<std::size_t> member = next_member_with(kind.capability, from);
    if (member && *member != from) member_cursor.reset();  // that member is away now
    if (!member) {
        reply(raw_id, json{{std::string(kind.items), json::array()}}, true);
        return;
    }
    json request = {{"jsonrpc", "2.0"}, {"method", method}};
    json member_params = params != nullptr ? *params : json::object();
    member_params.erase("cursor");
    if (member_cursor) member_params["cursor"] = *member_cursor;
    if (!member_params.empty()) request["params"] = std::move(member_params);
    send_member(*member, std::move(request), Sent{Kind::list, *member, std::string(raw_id), method});
}

void GroupRouter::finish_list(const Sent& sent, const json& reply_message) {
    const ListKind& kind = *list_kind(sent.list);
    const std::size_t member = sent.member;
    if (const json* error = json_read::object_at(reply_message, "error")) {
        reply_error(sent.raw_id, static_cast<int>(json_read::integer_at(*error, "code").value_or(-32603)),
                    spec_.members[member].server + ": " +
                        json_read::string_or(*error, "message", "the list failed"));
        return;
    }
    const json* result = json_read::object_at(reply_message, "result");
    const json* items = result != nullptr ? json_read::member(*result, kind.items) : nullptr;
    json out = json::object();
    json& shown = out[std::string(kind.items)] = json::array();
    const std::string& server = spec_.members[member].server;
    if (items != nullptr && items->is_array()) {
        for (json item : *items) {
            const std::string* key = json_read::string_at(item, kind.key);
            if (key == nullptr || !admits(member, kind.capability, *key)) continue;
            if (kind.method == "tools/list" && only_as_task(member, item)) continue;
            if (kind.prefixed && spec_.prefix) {
                const auto name = group::prefixed(server, spec_.separator, *key);
                if (!name) {
                    if (reported_names_.size() < kMaxKnown && reported_names_.insert(server + "/" + *key).second)
                        env_.note("group '" + spec_.name + "': " + std::string(kind.capability) +
                                  " '" + *key + "' of server '" + server + "' is left out: '" +
                                  server + spec_.separator + *key +
                                  "' would not match ^[a-zA-Z0-9_-]{1,128}$");
                    continue;
                }
                item[std::string(kind.key)] = *name;
            }
            if (kind.method == "resources/list") remember_owner(*key, member);
            if (kind.method == "resources/templates/list") {
                auto& templates = members_[member].templates;
                if (templates.size() >= kMaxKnown) templates.clear();
                templates.insert(*key);
            }
            shown.push_back(std::move(item));
        }
    }
    // The next page: the member's own next one, else the next member's first.
    const std::string* next = result != nullptr ? json_read::string_at(*result, "nextCursor") : nullptr;
    std::optional<Cursor> cursor;
    if (next != nullptr) {
        cursor = Cursor{sent.list, epochs_[sent.list], member, *next};
    } else if (const auto following = next_member_with(kind.capability, member + 1)) {
        cursor = Cursor{sent.list, epochs_[sent.list], *following, std::nullopt};
    }
    if (cursor) out["nextCursor"] = new_cursor(std::move(*cursor));
    reply(sent.raw_id, out, true);
}

std::optional<group::Unprefixed> GroupRouter::call_target(std::string_view name, bool tool) const {
    std::optional<group::Unprefixed> target =
        spec_.prefix ? group::unprefixed(server_names(), spec_.separator, name)
                     : std::optional<group::Unprefixed>(group::Unprefixed{0, name});
    if (!target || !admits(target->member, tool ? "tools" : "prompts", target->name) ||
        members_[target->member].state == MemberState::left_out ||
        (tool && members_[target->member].task_only.contains(target->name)))
        return std::nullopt;
    return target;
}

void GroupRouter::call_by_name(const json& message, std::string_view raw_id, std::string_view what) {
    const bool tool = what == "tool";
    const json* params = json_read::object_at(message, "params");
    const std::string name = params != nullptr ? json_read::string_or(*params, "name", "") : "";
    const std::optional<group::Unprefixed> target = call_target(name, tool);
    if (!target) {
        // What a server answers for a tool or prompt it does not have.
        reply_error(raw_id, jsonrpc::kInvalidParams,
                    std::string(tool ? "Unknown tool: " : "Unknown prompt: ") + name);
        return;
    }
    json forwarded = message;
    forwarded["params"]["name"] = std::string(target->name);
    send_member(target->member, std::move(forwarded),
                Sent{Kind::forward, target->member, std::string(raw_id)});
}

bool GroupRouter::forward_call(const wire::Envelope& e, std::string_view line, std::string_view raw_id) {
    const bool tool = e.method_is("tools/call");
    // A name given twice, a task asked for, the 2026-07-28 era's answers (which gain fields)
    // or anything not a plain call: the tree way, which writes one name and takes tasks out.
    if ((!tool && !e.method_is("prompts/get")) || !initialized_ || era_ != Era::legacy ||
        e.name.empty() || e.name_repeated || e.params_task || e.meta_client_capabilities)
        return false;
    std::string storage;
    const std::string_view name = e.name_in(line, storage);
    const std::optional<group::Unprefixed> target = call_target(name, tool);
    if (!target) {
        reply_error(raw_id, jsonrpc::kInvalidParams,
                    std::string(tool ? "Unknown tool: " : "Unknown prompt: ") + std::string(name));
        return true;
    }
    const std::uint64_t id = next_id_++;
    waiting_.emplace(raw_id, id);
    sent_.try_emplace(id, Kind::forward, target->member, std::string(raw_id));  // ids are new
    char id_digits[24];
    wire::Replacements changes{{e.id, jsonrpc::id_text(id, id_digits)}};
    std::string name_text;
    if (storage.empty()) {
        // The name lies in the line unescaped, and the member's own name is its tail: only the
        // prefix before it goes (none when the group does not prefix).
        const std::uint32_t body = e.name.offset + 1;
        const auto prefix = static_cast<std::uint32_t>(target->name.data() - (line.data() + body));
        if (prefix != 0) changes.push_back({wire::Span{body, prefix}, {}});
    } else {
        name_text = jsonrpc::quote(target->name);
        changes.push_back({e.name, name_text});
    }
    wire::splice(line, changes, spliced_);
    // `e` is envelope_, which nothing reads after this: moved to the new text, it goes with the
    // line so that the member's router does not read the line again.
    envelope_.after_splice(changes);
    env_.to_member_scanned(target->member, spliced_, envelope_);
    return true;
}

std::optional<std::size_t> GroupRouter::owner_of(std::string_view uri) const {
    if (const auto found = uri_owners_.find(std::string(uri)); found != uri_owners_.end()) {
        if (members_[found->second].state != MemberState::left_out) return found->second;
    }
    for (std::size_t i = 0; i < members_.size(); ++i) {
        if (members_[i].state == MemberState::left_out) continue;
        for (const std::string& uri_template : members_[i].templates) {
            if (group::template_matches(uri_template, uri)) return i;
        }
    }
    return std::nullopt;
}

void GroupRouter::by_uri(const json& message, std::string_view raw_id) {
    const json* params = json_read::object_at(message, "params");
    const std::string uri = params != nullptr ? json_read::string_or(*params, "uri", "") : "";
    const std::string method = json_read::string_or(message, "method", "");
    std::optional<std::size_t> owner = owner_of(uri);
    const bool admitted = owner ? admits(*owner, "resources", uri) : true;
    if (!owner && admitted && method == "resources/read") {
        // Not listed (yet): the members that have resources are asked in turn; reading has no
        // effect, so the first that has it answers.
        if (const auto first = next_reader(uri, 0)) {
            send_member(*first, message,
                        Sent{Kind::read_probe, *first, std::string(raw_id), {}, {}, message.dump()});
            return;
        }
    }
    if (!owner || !admitted) {
        const json data = {{"uri", uri}};
        reply_error(raw_id, kResourceNotFound, "Resource not found", &data);
        return;
    }
    send_member(*owner, message, Sent{Kind::forward, *owner, std::string(raw_id), method});
}

void GroupRouter::complete(const json& message, std::string_view raw_id) {
    const json* params = json_read::object_at(message, "params");
    const json* ref = params != nullptr ? json_read::object_at(*params, "ref") : nullptr;
    const std::string type = ref != nullptr ? json_read::string_or(*ref, "type", "") : "";
    json forwarded = message;
    std::optional<std::size_t> owner;
    if (type == "ref/prompt") {
        const std::string name = json_read::string_or(*ref, "name", "");
        const auto target = spec_.prefix ? group::unprefixed(server_names(), spec_.separator, name)
                                         : std::optional<group::Unprefixed>(group::Unprefixed{0, name});
        if (target && admits(target->member, "prompts", target->name)) {
            owner = target->member;
            forwarded["params"]["ref"]["name"] = std::string(target->name);
        }
    } else if (type == "ref/resource") {
        const std::string uri = json_read::string_or(*ref, "uri", "");
        for (std::size_t i = 0; i < members_.size() && !owner; ++i) {
            for (const std::string& uri_template : members_[i].templates) {
                if (uri_template == uri && admits(i, "resources", uri)) owner = i;
            }
        }
        if (!owner && !spec_.prefix) owner = 0;
    }
    if (!owner || members_[*owner].state == MemberState::left_out) {
        reply_error(raw_id, jsonrpc::kInvalidParams,
                    "invalid params: no server of the group has the prompt or resource template "
                    "this completion refers to");
        return;
    }
    send_member(*owner, std::move(forwarded), Sent{Kind::forward, *owner, std::string(raw_id)});
}

}  // namespace mcpd
