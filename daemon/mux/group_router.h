// A group session: one MCP client session over several pooled servers (docs/GROUPS.md).
//
// Pure logic, like the Router: the client's lines come in, and the group answers through a
// GroupEnvironment, writing to the client or to one member session. Each member is an
// ordinary session of its server's Router (its sharing mode, ids, progress and cancellation
// are the Router's business); the group only maps the client's view onto the members:
// prefixed tool and prompt names, filters, one merged cursor space for the lists, the union
// of the members' capabilities, and which member each request, answer and server→client
// request belongs to. The group session speaks the era its client chose: the initialize
// handshake (a member that cannot is left out, with its reason), or the stateless 2026-07-28
// era (group_router_modern.cpp), in which the group initializes a legacy member's session
// itself and carries the members' change notifications on the client's listen streams.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <span>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/flat_string_map.h"
#include "common/json_envelope.h"
#include "common/result.h"
#include "common/recycling_allocator.h"
#include "common/scope_guard.h"
#include "config/item_filter.h"
#include "daemon/mux/group_names.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/request_ids.h"

namespace mcpd {

class GroupEnvironment {
public:
    virtual ~GroupEnvironment() = default;
    virtual void to_client(std::string_view line) = 0;
    virtual void to_member(std::size_t member, std::string_view line) = 0;
    // The same for a line whose envelope the group has read (and moved to the new text): the
    // member's router need not read it again.
    virtual void to_member_scanned(std::size_t member, std::string_view line,
                                   const wire::Envelope& envelope) {
        (void)envelope;
        to_member(member, line);
    }
    // The pieces of one line, in order, written as one line (a member's answer with its id
    // swapped, sent without joining them first).
    virtual void to_client_pieces(std::span<const std::string_view> pieces) {
        to_client(wire::joined(pieces));
    }
    virtual void note(std::string_view message) = 0;
};

struct GroupMemberSpec {
    std::string server;  // its prefix
    config::ItemFilters group_filters;   // the group's: both must admit a name
    config::ItemFilters member_filters;  // its [groups.G.SERVER] table's
    config::ItemFilters server_filters;  // the server's own
};

struct GroupSpec {
    std::string name;
    std::string separator = "__";
    // False for a server with filters served alone: names, serverInfo and instructions stay
    // the server's own.
    bool prefix = true;
    // A [groups.NAME] of the registry: a reload's group and member filters apply to it.
    bool from_registry = false;
    std::vector<GroupMemberSpec> members;
};

class GroupRouter {
public:
    // Names kept by the group (a member's tools and templates, names reported once), looked up
    // where they lie in a message.
    using NameSet = std::set<std::string, std::less<>>;
    // The client's requests in flight: its raw id (looked up where it lies) → the member-side id.
    using WaitingIds = FlatStringMap<std::uint64_t, RequestIds::Hash>;
    // Cursors a session may hold at once; older ones are rejected as unknown.
    static constexpr std::size_t kMaxCursors = 256;
    // Client lines kept while the members answer its initialize, and their bytes (one line may
    // pass it); later ones are refused.
    static constexpr std::size_t kMaxEarlyLines = 256;
    static constexpr std::size_t kMaxEarlyBytes = 64 * 1024 * 1024;
    // Resource URIs (and templates per member) remembered from lists, to route reads: past it
    // the group forgets them and learns again (an unknown URI is read from each member in turn).
    static constexpr std::size_t kMaxKnown = 10000;

    GroupRouter(GroupSpec spec, GroupEnvironment& env, std::uint64_t cursor_nonce);

    // Before the client's initialize: `member` is not part of this session (its server is
    // failed), for `why`.
    void exclude(std::size_t member, std::string why);

    void on_client_line(std::string_view line);
    void on_member_line(std::size_t member, std::string_view line);
    // A member's answer as its router spliced it: the child's line in `pieces` with `changes`
    // made, and the child line's `envelope`, moved here to the new text instead of read again.
    void on_member_answer(std::size_t member, std::span<const std::string_view> pieces,
                          const wire::Envelope& envelope, const wire::Replacements& changes);
    // The member's server went away (restart, crash, stop) / is serving again: its items
    // leave the group's lists, with list_changed, and come back.
    void member_down(std::size_t member, std::string_view reason);
    void member_up(std::size_t member);
    // The member session was closed (its server removed, or it was cut off): for good.
    void member_closed(std::size_t member, std::string_view reason);
    // A reload changed what the session may be shown: `filters` has every member's, in member
    // order (group_router_refilter.cpp). Cursors into a list whose filters changed are old,
    // and the client hears list_changed for it.
    void refilter(const std::vector<GroupMemberSpec>& filters);

    // Client requests not answered yet.
    std::size_t unanswered() const { return waiting_.size() + early_requests_; }
    const GroupSpec& spec() const { return spec_; }
    // Members left out of the session, with why (status and sessions show them).
    std::map<std::string, std::string> left_out() const;
    const std::string& client_name() const { return client_name_; }
    const std::string& protocol() const { return protocol_; }

    // An upgrade in place (group_router_carry.cpp). Why the session cannot be carried now, and
    // whether that lasts (`lasting`; nothing does now) or passes (a message being handled, a
    // handshake under way); empty when it can.
    std::string why_not_carried(bool& lasting) const;
    // Its state as the upgrade's state names it, and the same taken back by a new router of
    // the same spec; a state it cannot take changes nothing and says why.
    nlohmann::json carried() const;
    Result<Done> restore_carried(const nlohmann::json& state);

private:
    // group_router_carry_requests.cpp: the requests through it and its listen streams.
    nlohmann::json carried_requests() const;
    Result<Done> restore_requests(const nlohmann::json& requests);

    enum class MemberState { starting, active, down, left_out };
    struct Member {
        MemberState state = MemberState::starting;
        bool modern = false;  // a stateless (2026-07-28) server, reached with per-request _meta
        std::string why;  // left_out: the reason
        nlohmann::json capabilities = nlohmann::json::object();
        nlohmann::json result;  // its InitializeResult
        NameSet templates;      // uriTemplates it listed (at most kMaxKnown)
        NameSet task_only;      // tools it listed as needing a task (at most kMaxKnown)
    };
    enum class Kind { forward, initialize, set_level, list, read_probe, discover, listen, internal };
    enum class Era { none, legacy, modern };
    // What the answer to a request mcpd sent a member is for.
    struct Sent {
        Sent() = default;
        Sent(Kind k, std::size_t m, std::string raw, std::string l = {}, std::string f = {},
             std::string text = {})
            : kind(k), member(m), raw_id(std::move(raw)), list(std::move(l)), fanout(std::move(f)),
              line(std::move(text)) {}
        Kind kind = Kind::forward;
        std::size_t member = 0;
        std::string raw_id;    // the client's id, byte for byte
        std::string list;      // list: the method
        std::string fanout;    // initialize, set_level: the key in fanouts_
        std::string line;      // read_probe: the request, to try the next member with
    };
    // Its nodes recycled: one comes and goes with every forwarded call.
    using SentRequests =
        std::unordered_map<std::uint64_t, Sent, std::hash<std::uint64_t>,
                           std::equal_to<std::uint64_t>,
                           RecyclingAllocator<std::pair<const std::uint64_t, Sent>>>;
    struct Fanout {  // a client request answered once every member asked has answered
        std::string raw_id;
        std::size_t remaining = 0;
        std::map<std::size_t, nlohmann::json> results;  // by member: result, or error object
    };
    struct ListKind {
        std::string_view method, capability, items, key;
        bool prefixed;  // tools and prompts: names get the member's prefix
    };
    struct Cursor {
        std::string method;
        std::uint64_t epoch = 0;
        std::size_t member = 0;
        std::optional<std::string> member_cursor;
    };
    struct ServerRequest {  // a member's request to the client
        std::size_t member = 0;
        std::string raw_id;  // the member session's id for it
        std::string progress_token;  // raw, when it asked for progress
    };

    // A line read with nlohmann, lone surrogates read as U+FFFD (the scanner lets them
    // through, as servers send them); discarded when it is not JSON.
    static nlohmann::json parse(std::string_view line);
    // A member's answer to a call forwarded as the client sent it, in the legacy era: written
    // with only its id swapped, or false for the general path (group_router_members.cpp).
    bool answer_in_place(std::size_t member, std::span<const std::string_view> pieces,
                         const wire::Envelope& envelope, const wire::Replacements& changes);
    // The id of `e` (in `line`) as one the group gave, read where it lies.
    static std::optional<std::uint64_t> given_id(const wire::Envelope& e, std::string_view line) {
        return e.id_kind == wire::IdKind::integer ? jsonrpc::given_id(e.id.in(line)) : std::nullopt;
    }
    // Whatever reaches the group: handled at once, or after the line in hand when it arrives
    // from inside a handler (a member's router may answer from inside a call to it).
    // member_answer: a member's line whose envelope is in envelope_ already (never queued).
    enum class Source { client, member, member_answer, down, up, closed };
    void receive(Source source, std::size_t member, std::string_view line);
    // Handle this one now (the group is idle), then what arrives meanwhile.
    void run_now(Source source, std::size_t member, std::string_view line);
    // The same for any handler: `handle` runs as the group's one handler of the moment, then
    // what reached the group meanwhile, in order.
    template <typename Handle>
    void while_busy(Handle&& handle) {
        busy_ = true;
        const OnScopeEnd done([this] { busy_ = false; });
        handle();
        drain();
    }
    void dispatch(Source source, std::size_t member, std::string_view line);
    void handle_client_line(std::string_view line);
    void handle_member_down(std::size_t member, std::string_view reason);
    void handle_member_up(std::size_t member);
    void handle_member_closed(std::size_t member, std::string_view reason);
    // `scanned`: envelope_ holds the line's envelope already.
    void handle_member_line(std::size_t member, std::string_view line, bool scanned = false);
    void drain();
    void client_request(const nlohmann::json& message, std::string_view raw_id,
                        std::string_view line);
    void client_notification(const nlohmann::json& message, const wire::Envelope& e,
                             std::string_view line);
    void client_response(const wire::Envelope& e, std::string_view line);
    // The member side (group_router_members.cpp).
    void member_response(std::size_t member, const wire::Envelope& e, std::string_view line);
    void member_request(std::size_t member, const wire::Envelope& e, std::string_view line);
    void member_notification(std::size_t member, const wire::Envelope& e, std::string_view line);

    // The stateless era (group_router_modern.cpp).
    static bool modern_request(const nlohmann::json& message);
    void start_modern(const nlohmann::json& message, std::string_view raw_id, std::string_view line);
    void modern_member_settled(std::size_t member, const std::string& fanout,
                               const nlohmann::json& reply, bool initialize);
    void finish_modern(Fanout& fanout);
    nlohmann::json discover_result() const;
    void start_listen(const nlohmann::json& message, std::string_view raw_id);
    // Open what the client's stream needs at each member (or at `only`): a modern member's
    // listen, a legacy member's subscriptions.
    void open_member_listens(std::size_t stream, std::optional<std::size_t> only = std::nullopt);
    void end_listen(std::string_view raw_id);
    // A legacy member's unsolicited notification, or a modern member's stream notification,
    // to the client's streams that asked for it. False when it is for no stream.
    bool to_streams(std::size_t member, const wire::Envelope& e, std::string_view line);
    // `method` with `params` on the client's stream `raw_id` (_meta.subscriptionId = its id).
    std::string stream_notification(std::string_view method, nlohmann::json params,
                                    std::string_view raw_id) const;

    // Handshake (group_router_handshake.cpp).
    void start_initialize(const nlohmann::json& message, std::string_view raw_id);
    void finish_initialize(Fanout& fanout);
    // Send `request` (its id set per member) to every member not left out; its answers are
    // gathered under a key starting with `prefix` and finish_fanout runs when all are in.
    void fan_out(std::string_view prefix, std::string_view raw_id, Kind kind,
                 const nlohmann::json& request);
    // The members' instructions, each under a "## SERVER" heading.
    std::string joined_instructions() const;
    nlohmann::json merged_capabilities() const;
    void start_set_level(const nlohmann::json& message, std::string_view raw_id);
    void finish_fanout(const std::string& key);

    // Lists and names (group_router_lists.cpp).
    static const ListKind* list_kind(std::string_view method);
    void start_list(const ListKind& kind, const nlohmann::json& message, std::string_view raw_id);
    void finish_list(const Sent& sent, const nlohmann::json& reply);
    std::optional<std::size_t> next_member_with(std::string_view capability, std::size_t from) const;
    // `uri` is `member`'s (from a list or a read), within kMaxKnown.
    void remember_owner(const std::string& uri, std::size_t member);
    // The next member from `from` on that has resources and whose filters admit `uri`.
    std::optional<std::size_t> next_reader(std::string_view uri, std::size_t from) const;
    std::string new_cursor(Cursor cursor);
    bool admits(std::size_t member, std::string_view capability, std::string_view name) const;
    void call_by_name(const nlohmann::json& message, std::string_view raw_id, std::string_view what);
    // The member and its own name for the client's tool or prompt `name`; none when it is not
    // the group's to call (answered as a server answers a name it does not have).
    std::optional<group::Unprefixed> call_target(std::string_view name, bool tool) const;
    // The usual tools/call or prompts/get of an initialized session forwarded as the client's
    // bytes with the member's id and name spliced in, no tree built. False when the request is
    // not such (it then takes the tree way).
    bool forward_call(const wire::Envelope& e, std::string_view line, std::string_view raw_id);
    void by_uri(const nlohmann::json& message, std::string_view raw_id);
    void complete(const nlohmann::json& message, std::string_view raw_id);
    std::optional<std::size_t> owner_of(std::string_view uri) const;
    void list_changed(std::string_view list);
    void members_changed(std::size_t member);

    // Tasks (group_router_tasks.cpp). A group declares no tasks: what it sends a member asks
    // for none (params.task and the tasks extension of the client's capabilities are taken
    // out), and the tools that can only run as tasks are not shown.
    void without_tasks(nlohmann::json& message) const;
    // `tool` (a member's tools/list item) can only be called as a task; remembered for the
    // member, so that calling it by name is refused as for a tool that is not there.
    bool only_as_task(std::size_t member, const nlohmann::json& tool);

    // Sending.
    std::uint64_t send_member(std::size_t member, nlohmann::json message, Sent sent);
    // `cacheable`: a list, resources/read or server/discover result (2026-07-28 cache hints).
    void reply(std::string_view raw_id, const nlohmann::json& result, bool cacheable = false);
    // A member's answer `line` to the client's request `raw_id`, with the client's id.
    void answer_client(const wire::Envelope& e, std::string_view line, std::string_view raw_id,
                       bool cacheable = false);
    void reply_error(std::string_view raw_id, int code, std::string_view message,
                     const nlohmann::json* data = nullptr);
    bool active(std::size_t member) const { return members_[member].state == MemberState::active; }
    const std::vector<std::string>& server_names() const { return server_names_; }

    GroupSpec spec_;
    std::vector<std::string> server_names_;  // the members' prefixes, in member order
    GroupEnvironment& env_;
    std::string nonce_;
    std::vector<Member> members_;
    wire::EnvelopeScanner scanner_;
    wire::Envelope envelope_;
    std::string scratch_;
    std::string spliced_;  // a forwarded call's text
    std::string answer_;   // a member's answer handed over in pieces
    std::string reply_;    // a forwarded answer's text for the client, its id put back
    std::vector<std::string_view> swapped_;  // a member's answer's pieces, the client's id in

    bool busy_ = false;
    // What reached the group while it was busy, in order: a client line, a member line, or a
    // member's server going away, coming back or closing its session (`line` the reason).
    struct Inbound {
        Source source = Source::client;
        std::size_t member = 0;
        std::string line;
    };
    std::list<Inbound> inbox_;  // lists here: no memory while empty (a std::deque allocates)

    bool initializing_ = false;
    bool initialized_ = false;
    Era era_ = Era::none;
    nlohmann::json modern_meta_;  // the client's _meta of its first request: version, capabilities
    std::string modern_trigger_;  // that request, answered once the members are settled
    // The client's subscriptions/listen streams (stateless era).
    struct Stream {
        std::string raw_id;
        bool tools = false, prompts = false, resources = false;
        std::vector<std::string> uris;
        std::map<std::size_t, std::uint64_t> member_listens;  // modern member → its listen's id
    };
    std::vector<Stream> streams_;
    nlohmann::json initialize_params_;
    std::string protocol_;
    std::string client_name_;
    std::list<std::string> before_initialize_;  // client lines that came during the handshake
    std::size_t early_requests_ = 0;             // of those, the requests
    std::size_t early_bytes_ = 0;                // and their bytes

    std::uint64_t next_id_ = 1;
    SentRequests sent_;  // by the id a member was sent
    WaitingIds waiting_;  // client raw id → member-side id
    std::map<std::string, Fanout> fanouts_;
    std::uint64_t next_fanout_ = 1;
    std::uint64_t next_server_request_ = 1;
    std::unordered_map<std::uint64_t, ServerRequest> server_requests_;  // by the client's id

    std::map<std::string, std::uint64_t> epochs_;  // list method → changes seen
    std::map<std::string, Cursor> cursors_;
    std::list<std::string> cursor_order_;
    std::uint64_t next_cursor_ = 1;
    std::map<std::string, std::size_t> uri_owners_;  // resources listed, by URI
    NameSet reported_names_;                         // names left out, said once
};

}  // namespace mcpd
