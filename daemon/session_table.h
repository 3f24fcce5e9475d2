// Every client session of the daemon: its transport (ClientTransport), the control connection of an
// `mcpctl connect` that passed its descriptors (told when it ends), its connection slot, and
// its 2025-03-26 batches. It is the SessionSink every server's router writes to.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/indexed_map.h"
#include "config/registry.h"
#include "daemon/control/connection_limits.h"
#include "daemon/control/control_connection.h"
#include "daemon/control/output_budget.h"
#include "daemon/control/peer_auth.h"
#include "daemon/group_session.h"
#include "daemon/io/event_loop.h"
#include "daemon/managed_server.h"
#include "daemon/mux/stream_transport.h"
#include "daemon/mux/session_batch.h"
#include "daemon/mux/session_sink.h"
#include "daemon/upgrade_state.h"

namespace mcpd {

class Placement;

class SessionTable final : public SessionSink {
public:
    // `settings` is read when a session opens, so a reload's values apply to later sessions.
    SessionTable(EventLoop& loop, const config::DaemonConfig& settings, Placement& placement,
                 const Authority& authority, ConnectionLimits& limits, OutputBudget& budget);
    ~SessionTable() override;

    SessionId next_id() { return next_id_++; }
    SessionId peek_next_id() const { return next_id_; }
    // Client sessions open now (a group session is one).
    std::size_t size() const { return sessions_.size(); }
    // A session of a client, or a member session of a group session.
    bool contains(SessionId id) const { return sessions_.contains(id) || members_.contains(id); }
    // Who attached session `id` (for a group's member, the group's client); none when unknown.
    std::optional<PeerCredentials> peer_of(SessionId id) const;
    // `input`/`output` become the session's (the same bufferevent for a socket session);
    // `link` is the control connection of an fd-passing `mcpctl connect`, told when the
    // session ends. `server` is the instance it talks to.
    // `output` is empty for a session on the socket (it writes through `input`).
    void open(ManagedServer& server, SessionId id, const PeerCredentials& peer, BufferEvent input,
              BufferEvent output, ControlConnection* link);
    // A group session: the client's transport as for open(), and a member session on each of
    // `instances` (in the group's member order), whose ids `group` holds.
    void open_group(std::unique_ptr<GroupSession> group, std::vector<ManagedServer*> instances,
                    const PeerCredentials& peer, BufferEvent input, BufferEvent output,
                    ControlConnection* link);
    // The same for a session on any transport (an HTTP session, daemon/http/): `slot` is the
    // connection limit's place it holds (empty when it counts elsewhere).
    // `carried`: a session carried across an upgrade in place, taken by the router as it was
    // instead of attaching anew.
    void open(ManagedServer& server, std::unique_ptr<ClientTransport> session,
              ConnectionLimits::Slot slot, ControlConnection* link,
              std::optional<routing::SessionState> carried = std::nullopt);
    // `carried`: per member, its router state when the session was carried across an upgrade.
    void open_group(std::unique_ptr<GroupSession> group, std::vector<ManagedServer*> instances,
                    std::unique_ptr<ClientTransport> session, ConnectionLimits::Slot slot,
                    ControlConnection* link,
                    std::vector<std::optional<routing::SessionState>> carried = {});
    // Write a line, given in pieces, to session `session`'s client (a group session's router
    // writes so).
    void to_client(SessionId session, std::span<const std::string_view> pieces) {
        deliver(session, pieces);
    }
    // End a session (its client went away, or mcpd cuts it off).
    void end(SessionId id, const std::string& reason, bool by_client);
    // End every session of the server named `server`.
    void close_sessions_of(const std::string& server, const std::string& reason);
    // After a reload: end the sessions of users no longer allowed to use their server.
    void revoke_access();
    // After a reload: the registry's filters apply to the group sessions attached (their lists
    // re-filtered, list_changed sent). A session served directly, without filters, whose
    // server now has some, is ended: it has nothing that could hide items.
    void apply_filters(const config::Registry& registry);
    // The control connections that are some session's link.
    std::set<const ControlConnection*> links() const;
    // The groups with sessions that `asking` may see (it may use every member, and the session
    // is its own: visible_to): name, servers, sessions, and the members left out of a session
    // with why.
    nlohmann::json groups_json(const PeerCredentials& asking);
    // Whether `asking` may see session `id` (its client, pid, uid, project, counts): root and
    // mcpd's user see every session, anyone else only the sessions it attached itself.
    bool visible_to(SessionId id, const PeerCredentials& asking) const;
    // Whether `asking` may see one of the sessions `instance` serves (a private or a project's
    // child is shown only to who has a session there).
    bool any_visible(const ManagedServer& instance, const PeerCredentials& asking) const;
    // The sessions `asking` may see (visible_to) of servers it may use, of one server or
    // (empty filter) all.
    nlohmann::json to_json(const std::string& server_filter, const PeerCredentials& asking);
    void clear() { sessions_.clear(); }

    // SessionSink
    void send(SessionId session, std::string_view line) override;
    void send_spliced(SessionId session, std::span<const std::string_view> pieces) override;
    void send_answer(SessionId session, std::span<const std::string_view> pieces,
                     const wire::Envelope& envelope, const wire::Replacements& changes) override;
    void close(SessionId session, const std::string& reason) override;
    void server_away(SessionId session, std::string_view reason) override;
    void server_back(SessionId session) override;

    // Stop or resume reading every session of `server` (its stdin is backed up / drained).
    void pause(ManagedServer& server, bool paused);

    // An upgrade in place (session_table_carry.cpp). What keeps the sessions from being
    // carried: what lasts until someone acts, and what passes in a moment (a session ending, a
    // batch being gathered, a group's handshake under way).
    void upgrade_blockers(std::vector<std::string>& lasting,
                          std::vector<std::string>& passing) const;
    // While an upgrade waits for quiet, no session's client is read (new sessions' neither);
    // while the new binary checks the state, nothing is written to them either.
    void hold_input(bool held);
    void hold_output(bool held);
    // Every session as the state names it, with its server's router's view of it.
    std::vector<CarriedSession> carried() const;
    // In the new process: session `session`, carried, on `server` (the instance under `key`),
    // with its link (a passed session's `mcpctl connect`, made by the daemon). Its descriptors
    // are taken, or closed when they are not what the state says.
    // `modern`: a legacy client's, the instance it came through. `http`: an HTTP session's
    // transport, made by the front door (its session has no descriptors of its own).
    Result<Done> adopt_carried(ManagedServer& server, const InstanceKey& key,
                               const std::optional<InstanceKey>& modern, CarriedSession session,
                               ControlConnection* link, std::unique_ptr<ClientTransport> http = nullptr);
    // The same for a group session, of the group `spec` (made again from the registry).
    Result<Done> adopt_carried_group(GroupSpec spec, CarriedSession session, ControlConnection* link,
                                     std::unique_ptr<ClientTransport> http = nullptr);
    // The ids to give from now on (never one given before the upgrade).
    void set_next_id(SessionId next) { next_id_ = std::max(next_id_, next); }

private:
    struct Entry {
        std::unique_ptr<ClientTransport> session;
        ControlConnection* link = nullptr;
        ConnectionLimits::Slot slot;  // a socket session's; a linked one counts on its link's
        std::unique_ptr<GroupSession> group;  // a group session's router and members
    };
    // A member session of a group session: no transport of its own.
    struct MemberOf {
        SessionId client = 0;
        std::size_t index = 0;
    };
    // An upgrade in place (session_table_carry.cpp): a session's transport as the state names
    // it, the route of a session (or a group's member), a group session whole, and a carried
    // session's transport over its descriptors (who it acts as read again).
    // (An HTTP session's token is the front door's to sign: left empty here.)
    CarriedSession carried_client(SessionId id, const ClientTransport& session, const Entry& entry) const;
    void carried_route(SessionId id, std::optional<CarriedInstance>& instance,
                       std::optional<Project>& working) const;
    CarriedSession carried_group(SessionId id, const ClientTransport& session, const Entry& entry) const;
    // `http` when given, else a transport over the session's descriptors.
    Result<std::unique_ptr<ClientTransport>> carried_transport(CarriedSession& session,
                                                               ControlConnection* link,
                                                               std::unique_ptr<ClientTransport> http);
    // The group a member session `id` belongs to, and its index there; nullptr for any other.
    GroupSession* group_of_member(SessionId id, std::size_t& index);
    // How the router read an answer it sends (see ClientTransport::send_answer).
    struct AnswerReading {  // both null, or both set
        const wire::Envelope* envelope;
        const wire::Replacements* changes;
    };
    // Write to a session's client, gathering a batch's answers (send_spliced's second half).
    void deliver(SessionId session, std::span<const std::string_view> pieces,
                 AnswerReading reading = {});
    // A group session as `sessions` lists it; null when `asking` may not see it (it may not
    // use a member, or the session is not its own), or it has nothing to do with
    // `server_filter`.
    nlohmann::json group_json(SessionId id, const Entry& entry, const PeerCredentials& asking,
                              const std::string& server_filter);
    // A session leaves the server `server_name` (detach, or its private process ends).
    void leave_server(SessionId id, const std::string& server_name);

    ClientTransport::Callbacks callbacks(const std::string& server_name);
    // A group session's: its lines go to its group router.
    ClientTransport::Callbacks group_callbacks(const std::string& name, GroupSession& group);
    void on_line(ClientTransport& session, const std::string& server_name, wire::PaddedText line);
    // A line its transport scanned already (an HTTP POST's one message): routed with that reading.
    void on_scanned_line(ClientTransport& session, const std::string& server_name,
                         std::string_view line, const wire::Envelope& envelope);
    // A group session's line, to its group router (a 2025-03-26 batch split first).
    void on_group_line(ClientTransport& session, GroupSession& group, wire::PaddedText line);
    void on_closed(ClientTransport& session, const std::string& reason, bool by_client);
    // On the next turn after on_closed: the session leaves its server and the table.
    void remove(SessionId id, const std::string& reason, bool by_client);
    // A session whose client closed its input ends once its requests are answered.
    void finish_if_answered(SessionId id);

    EventLoop& loop_;
    const config::DaemonConfig& settings_;
    Placement& placement_;
    const Authority& authority_;
    ConnectionLimits& limits_;
    OutputBudget& budget_;
    IndexedMap<SessionId, Entry> sessions_;  // found by hash per message
    std::unordered_map<SessionId, MemberOf> members_;  // the member sessions of group sessions
    // 2025-03-26 batches: split on the way in, their answers gathered on the way out.
    SessionBatches batches_;
    SessionId next_id_ = 1;
    bool input_held_ = false;  // an upgrade waits for quiet
};

}  // namespace mcpd
