// One registry entry brought to life: its Supervisor, its process, timers and logs.
//
// ManagedServer is the SupervisorEnvironment of its Supervisor: it turns the state machine's
// decisions into processes, signals and libevent timers, and the process's behaviour (exit,
// handshake, stdout EOF) back into events.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daemon/child_process.h"
#include "daemon/event_loop.h"
#include "daemon/handshake.h"
#include "daemon/log_ring.h"
#include "daemon/message_edges.h"
#include "daemon/router.h"
#include "daemon/supervisor.h"

namespace mcpd {

class Reaper;
class ManagedServer;

// What a ManagedServer needs from the daemon around it.
class ServerHost {
public:
    virtual ~ServerHost() = default;
    virtual EventLoop& loop() = 0;
    virtual Reaper& reaper() = 0;
    virtual std::size_t max_message_bytes() const = 0;
    // Where relative commands are looked up when the server has no cwd.
    virtual const std::string& registry_dir() const = 0;
    virtual void server_state_changed(ManagedServer& server, ServerState from, ServerState to) = 0;
    // The server has no process left, not even one whose pipes are still draining.
    virtual void server_drained(ManagedServer& server) = 0;
    // Sessions attached to a server (see Router).
    virtual void session_send(SessionId session, std::string_view line) = 0;
    // The same in pieces (see RouterEnvironment::session_send_spliced); joined by default.
    virtual void session_send_spliced(SessionId session, std::span<const std::string_view> pieces);
    virtual void session_close(SessionId session, const std::string& reason) = 0;
    // Stop or resume reading every session of `server` (its stdin is backed up / drained).
    virtual void pause_sessions(ManagedServer& server, bool paused) = 0;
    // A legacy client of `server`, whose process speaks the stateless era (see
    // RouterEnvironment::pass_to_legacy): take `line` to a legacy process. False: none.
    virtual bool pass_to_legacy(ManagedServer& server, SessionId session, std::string_view line);
};

class ManagedServer final : public SupervisorEnvironment, public RouterEnvironment {
public:
    ManagedServer(ServerHost& host, const config::ServerConfig& config);
    ~ManagedServer() override;

    const std::string& name() const { return config_.name; }
    const config::ServerConfig& config() const { return config_; }
    Supervisor& supervisor() { return supervisor_; }
    const Supervisor& supervisor() const { return supervisor_; }
    LogRing& logs() { return logs_; }
    Router& router() { return router_; }
    const Router& router() const { return router_; }
    const nlohmann::json& initialize_result() const { return initialize_result_; }

    // Apply a changed registry entry: restart if it should be up, start if it now autostarts;
    // a change of allow_users/allow_groups alone only replaces them (config_change.h).
    void apply_config(const config::ServerConfig& config);
    // No process at all, not even one draining.
    bool drained() const { return child_ == nullptr && draining_.empty(); }

    // The STATUS object of docs/CONTROL.md.
    nlohmann::json status_json() const;

    // SupervisorEnvironment
    TimePoint now() const override;
    SpawnResult spawn() override;
    void send_health_ping() override;
    void close_stdin() override;
    void signal_group(int signo) override;
    void arm_timer(TimerKind kind, Duration after) override;
    void cancel_timer(TimerKind kind) override;
    void state_changed(ServerState from, ServerState to) override;

    // RouterEnvironment (now() is shared with SupervisorEnvironment)
    bool child_send(std::string_view line) override;
    bool child_send_spliced(std::span<const std::string_view> pieces) override;
    std::uint64_t child_next_id() override;
    void session_send(SessionId session, std::string_view line) override;
    void session_send_spliced(SessionId session, std::span<const std::string_view> pieces) override;
    void session_close(SessionId session, const std::string& reason) override;
    void want_child() override;
    void deadlines_changed() override;
    void note(std::string_view message) override;
    void note_repeated(std::string_view kind, std::string_view detail) override;
    bool pass_to_legacy(SessionId session, std::string_view line) override;

    // Why the server failed, with what to do about it (for a failed server).
    std::string failure() const;
    // A session attached or left: manage the idle timer.
    void sessions_changed();

private:
    void on_child_exit(ChildProcess* child, int status);
    void start_handshake();
    void on_child_finished(ChildProcess* child);
    void on_child_message(ChildProcess* child, wire::PaddedText message);
    void on_child_input_drained(ChildProcess* child);
    // A line the child wrote could not be used: if its edges show an answer to a session's
    // request, fail that request with `message`.
    void fail_lost_reply(const MessageEdges& edges, const std::string& message,
                         std::string_view reason);
    void on_child_log(std::string_view line);
    Timer& timer(TimerKind kind);

    ServerHost& host_;
    config::ServerConfig config_;
    Supervisor supervisor_;
    LogRing logs_;
    std::map<TimerKind, std::unique_ptr<Timer>> timers_;
    Timer abandon_timer_;  // gives up on pipes a dead child's escaped descendants keep open
    Timer stdout_closed_timer_;  // stdout closed: is it exiting, or did it only close stdout?

    std::unique_ptr<ChildProcess> child_;
    std::vector<std::unique_ptr<ChildProcess>> draining_;  // exited, pipes not yet closed
    std::unique_ptr<ChildIds> ids_;
    std::unique_ptr<Handshake> handshake_;
    nlohmann::json initialize_result_;

    Router router_;
    Timer router_timer_;
    Timer idle_timer_;
    wire::EnvelopeScanner scanner_;
    wire::Envelope envelope_;
    bool sessions_paused_ = false;
    EraMemory era_;
    Timer probe_timer_;  // armed and cancelled by the handshake (Handshake::Callbacks)

    unsigned noise_lines_ = 0;  // non-JSON stdout lines, logged sparingly
};

}  // namespace mcpd
