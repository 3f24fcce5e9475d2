#include "daemon/managed_server.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstring>

#include "common/json_envelope.h"
#include "common/log.h"
#include "daemon/config_change.h"
#include "daemon/jsonrpc.h"
#include "daemon/message_edges.h"
#include "daemon/reaper.h"
#include "daemon/spawn.h"

extern char** environ;

namespace mcpd {

using nlohmann::json;

namespace {

constexpr std::size_t kLogRingLines = 1000;
constexpr std::size_t kLogRingBytes = 256 * 1024;
constexpr Duration kAbandonPipesAfter = std::chrono::seconds(2);
constexpr unsigned kNoiseLinesLogged = 20;
constexpr Duration kExitAfterStdoutClose = std::chrono::milliseconds(250);
// Sessions stop being read while this much waits for the server's stdin, and resume below
// the low mark: the pipe itself holds only 64 KiB.
constexpr std::size_t kStdinHighWater = 1024 * 1024;
constexpr std::size_t kStdinLowWater = 64 * 1024;

std::string signal_name(int signo) {
    const char* abbrev = sigabbrev_np(signo);
    return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

std::int64_t ms_between(TimePoint from, TimePoint to) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

}  // namespace

ManagedServer::ManagedServer(ServerHost& host, const config::ServerConfig& config)
    : host_(host),
      config_(config),
      supervisor_(config, *this),
      logs_(kLogRingLines, kLogRingBytes),
      abandon_timer_(host.loop().base(),
                     [this] {
                         for (auto& child : draining_) {
                             if (child->exited()) child->abandon_pipes();
                         }
                     }),
      stdout_closed_timer_(host.loop().base(),
                           [this] {
                               if (child_ && !child_->exited()) supervisor_.on_stdout_closed();
                           }),
      router_(config, *this, host.max_message_bytes()),
      router_timer_(host.loop().base(), [this] { router_.on_timer(); }),
      idle_timer_(host.loop().base(),
                  [this] {
                      if (router_.session_count() > 0 || !supervisor_.wanted_up()) return;
                      log::info(config_.name, "no session for idle_timeout (" +
                                                  format_duration(config_.idle_timeout) +
                                                  "): stopping");
                      supervisor_.request_stop(StopReason::idle);
                  }),
      scanner_(host.max_message_bytes()),
      era_(config.era),
      probe_timer_(host.loop().base(), [this] {
          if (handshake_ && handshake_->probe_timed_out()) {
              log::info(config_.name,
                        "no answer to server/discover in time: sending initialize "
                        "(a late answer to the probe still decides the era)");
          }
      }) {}

ManagedServer::~ManagedServer() {
    if (child_) host_.reaper().forget(child_->pid());
    for (auto& child : draining_) host_.reaper().forget(child->pid());
}

void ManagedServer::apply_config(const config::ServerConfig& config) {
    const ConfigChange change = classify_change(config_, config);
    if (change == ConfigChange::none) return;
    config_ = config;
    supervisor_.set_config(config);
    router_.set_config(config);
    if (change == ConfigChange::access) {
        // The process never sees who may use it; the daemon ends sessions no longer allowed.
        log::info(config_.name, "allow_users/allow_groups changed: applied without a restart");
        return;
    }
    era_.reset(config.era);
    if (supervisor_.wanted_up()) {
        supervisor_.request_restart(StopReason::reload);
    } else if (config.autostart) {
        supervisor_.request_start();
    }
}

TimePoint ManagedServer::now() const { return Clock::now(); }

SpawnResult ManagedServer::spawn() {
    SpawnResult result;
    std::vector<std::string> env = build_child_environment(config_, environ);
    const std::string base_dir = config_.cwd.empty() ? host_.registry_dir() : config_.cwd;
    const ResolvedCommand command =
        resolve_command(config_.command, find_env(env, "PATH"), base_dir);
    if (!command.ok) {
        result.error = command.error;
        log::error(config_.name, "cannot start: " + result.error);
        return result;
    }
    SpawnRequest request;
    request.path = command.path;
    request.argv.push_back(config_.command);
    request.argv.insert(request.argv.end(), config_.args.begin(), config_.args.end());
    request.env = std::move(env);
    request.cwd = config_.cwd;

    SpawnOutcome outcome = spawn_process(request);
    if (!outcome.ok) {
        result.error = outcome.error;
        result.transient = outcome.transient;
        log::error(config_.name, "cannot start: " + result.error);
        return result;
    }

    ChildProcess::Callbacks callbacks;
    callbacks.on_message = [this](ChildProcess& c, wire::PaddedText line) { on_child_message(&c, line); };
    callbacks.on_oversized = [this](ChildProcess& c, std::size_t bytes, std::string_view head,
                                    std::string_view tail) {
        const std::string limit = std::to_string(host_.max_message_bytes());
        log::warning(config_.name, "dropped a message of " + std::to_string(bytes) +
                                       " bytes on stdout: over max_message_bytes (" + limit + ")");
        if (&c != child_.get()) return;
        if (handshake_) handshake_->child_showed_life();
        fail_lost_reply(read_message_edges(head, tail),
                        "the server's answer was " + std::to_string(bytes) +
                            " bytes, over max_message_bytes (" + limit + "); it was dropped",
                        "answer too large");
    };
    callbacks.on_log = [this](ChildProcess& c, std::string_view line) {
        if (&c == child_.get() && handshake_) handshake_->child_showed_life();
        on_child_log(line);
    };
    callbacks.on_stdout_closed = [this](ChildProcess& c) {
        // A process that is exiting closes stdout just before its exit is reported: give the
        // exit a moment to arrive, so a crash is recorded as a crash.
        if (&c == child_.get() && !c.exited()) stdout_closed_timer_.arm(kExitAfterStdoutClose);
    };
    callbacks.on_finished = [this](ChildProcess& c) { on_child_finished(&c); };
    callbacks.on_input_drained = [this](ChildProcess& c) { on_child_input_drained(&c); };

    const int pid = outcome.process.pid;
    child_ = std::make_unique<ChildProcess>(host_.loop().base(), std::move(outcome.process),
                                            host_.max_message_bytes(), std::move(callbacks));
    ChildProcess* child = child_.get();
    child->set_input_watermark(kStdinLowWater);
    host_.reaper().watch(child->mark(), [this, child](int status) { on_child_exit(child, status); });

    ids_ = std::make_unique<ChildIds>();
    Handshake::Callbacks hs;
    hs.send = [this, child](std::string_view line) {
        if (child == child_.get()) child->send(line);
    };
    hs.on_ready = [this](const json& result_object) {
        probe_timer_.cancel();
        era_.ready(handshake_->modern());
        initialize_result_ = result_object;
        const auto info = result_object.find("serverInfo");
        log::info(config_.name,
                  "ready: protocol " + handshake_->protocol_version() +
                      (info != result_object.end() ? ", server " + info->dump() : ""));
        supervisor_.on_ready();
        router_.on_child_ready(result_object, handshake_->protocol_version(), handshake_->modern());
    };
    hs.on_failed = [this](std::string why) {
        log::error(config_.name, "handshake failed: " + why);
        supervisor_.on_handshake_failed(std::move(why));
    };
    hs.on_pong = [this] { supervisor_.on_health_reply(); };
    hs.probe_timer = [this, child](std::optional<Duration> after) {
        if (child != child_.get()) return;
        if (after) {
            probe_timer_.arm(*after);
        } else {
            probe_timer_.cancel();
        }
    };
    handshake_ = std::make_unique<Handshake>(*ids_, std::move(hs));

    log::info(config_.name, "started pid " + std::to_string(pid) + ": " + command.path);
    start_handshake();
    result.ok = true;
    result.pid = pid;
    return result;
}

void ManagedServer::start_handshake() {
    const Handshake::CapabilitiesFor capabilities = client_capabilities;
    switch (era_.next_start()) {
        case EraMemory::Start::legacy:
            handshake_->begin(capabilities);
            return;
        case EraMemory::Start::modern:
            handshake_->begin_probe(capabilities);
            return;
        case EraMemory::Start::probe:
            // A legacy server answers with an error, exits, or stays silent (handshake.cpp).
            handshake_->begin_probe(capabilities, config_.start_timeout);
            return;
    }
}

void ManagedServer::send_health_ping() {
    if (handshake_) handshake_->send_ping();
}

void ManagedServer::close_stdin() {
    if (child_) child_->close_stdin();
}

void ManagedServer::signal_group(int signo) {
    if (!child_) return;
    if (signo != SIGCONT) {
        log::info(config_.name, "sending " + signal_name(signo) + " to process group " +
                                    std::to_string(child_->pid()));
    }
    child_->signal_group(signo);
}

Timer& ManagedServer::timer(TimerKind kind) {
    auto& slot = timers_[kind];
    if (!slot) {
        slot = std::make_unique<Timer>(host_.loop().base(),
                                       [this, kind] { supervisor_.on_timer(kind); });
    }
    return *slot;
}

void ManagedServer::arm_timer(TimerKind kind, Duration after) { timer(kind).arm(after); }

void ManagedServer::cancel_timer(TimerKind kind) {
    const auto it = timers_.find(kind);
    if (it != timers_.end()) it->second->cancel();
}

void ManagedServer::state_changed(ServerState from, ServerState to) {
    std::string why;
    if (to == ServerState::stopping) {
        why = " (" + std::string(to_string(supervisor_.stop_reason())) +
              (is_fault(supervisor_.stop_reason()) && !supervisor_.error().empty()
                   ? ": " + supervisor_.error()
                   : "") +
              ")";
    } else if (to == ServerState::failed && !supervisor_.error().empty()) {
        why = ": " + supervisor_.error();
    }
    log::info(config_.name, std::string(to_string(from)) + " -> " + std::string(to_string(to)) + why);
    const StopReason reason = supervisor_.stop_reason();
    if (to == ServerState::stopping &&
        (reason == StopReason::handshake_failed || reason == StopReason::start_timeout)) {
        era_.start_failed();  // the era it was started in may be stale: probe next time
    }
    if (to == ServerState::failed) router_.fail_waiting("it failed: " + supervisor_.error());
    if (to == ServerState::stopped) router_.fail_waiting("it was stopped");
    host_.server_state_changed(*this, from, to);
}

void ManagedServer::on_child_exit(ChildProcess* child, int status) {
    child->mark_exited(status);
    const bool current = child_.get() == child;
    const bool on_probe = current && handshake_ && handshake_->exited_on_probe();
    if (current) {
        probe_timer_.cancel();
        stdout_closed_timer_.cancel();
        // Keep the record until its pipes close; the supervisor may spawn a successor now.
        draining_.push_back(std::move(child_));
        handshake_.reset();
        ids_.reset();
        router_.on_child_gone("the server exited with status " + std::to_string(status));
        if (sessions_paused_) {
            sessions_paused_ = false;
            host_.pause_sessions(*this, false);
        }
    }
    if (!child->finished()) abandon_timer_.arm(kAbandonPipesAfter);
    if (!current) return;
    if (on_probe && supervisor_.state() == ServerState::starting) {
        // Some legacy servers exit on any request before initialize (rmcp-based ones, for
        // one): not a crash, and not counted toward start_limit.
        era_.exited_on_probe();
        log::info(config_.name, "pid " + std::to_string(child->pid()) + " (status " +
                                    std::to_string(status) +
                                    ") exited on the era probe; starting it as a legacy server");
        supervisor_.on_probe_exit(status);
        return;
    }
    const ExitStep step =
        supervisor_.state() == ServerState::stopping ? supervisor_.stop_step() : ExitStep::exit;
    log::info(config_.name, "pid " + std::to_string(child->pid()) + " exited with status " +
                                std::to_string(status) + " (" + std::string(to_string(step)) +
                                ")");
    supervisor_.on_exit(status);
}

void ManagedServer::on_child_finished(ChildProcess* child) {
    // Called from inside the child's own callbacks: free it on the next loop turn.
    host_.loop().defer([this, child] {
        const auto it = std::find_if(draining_.begin(), draining_.end(),
                                     [child](const auto& c) { return c.get() == child; });
        if (it != draining_.end()) draining_.erase(it);
        if (drained()) host_.server_drained(*this);
    });
}

void ManagedServer::on_child_message(ChildProcess* child, wire::PaddedText message) {
    if (child != child_.get()) return;  // a dead child's last words
    if (handshake_) handshake_->child_showed_life();
    const std::string_view line = message.text;
    if (scanner_.scan(message, envelope_) != wire::ScanStatus::ok || !envelope_.jsonrpc_ok) {
        const std::string why =
            scanner_.error().empty() ? std::string("\"jsonrpc\" is not \"2.0\"") : scanner_.error();
        if (++noise_lines_ <= kNoiseLinesLogged) {
            log::warning(config_.name, "dropped a line on stdout that is not a JSON-RPC message (" +
                                           why + ")" +
                                           std::string(noise_lines_ == kNoiseLinesLogged
                                                           ? " (no more such warnings)"
                                                           : ""));
        }
        // Never forwarded; but when it answers a session's request, that request gets an error
        // instead of waiting forever.
        fail_lost_reply(read_message_edges(line, line),
                        "the server's answer is not a valid JSON-RPC message (" + why +
                            "); it was dropped",
                        "answer not JSON");
        return;
    }
    const wire::Envelope& e = envelope_;
    if (e.is_request() && e.method == "ping") {
        // The child pings us: answer at once, whoever is attached. An id that is neither a
        // string nor an integer cannot be echoed in a valid answer.
        if (e.id_kind == wire::IdKind::string || e.id_kind == wire::IdKind::integer) {
            child->send(jsonrpc::result(e.id.in(line), "{}"));
        } else {
            child->send(jsonrpc::error({}, jsonrpc::kInvalidRequest,
                                       "invalid request: an id must be a string or an integer"));
        }
        return;
    }
    if (handshake_ && e.is_response() && e.id_kind == wire::IdKind::integer) {
        std::uint64_t id = 0;
        const std::string_view raw = e.id.in(line);
        const auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), id);
        if (ec == std::errc() && end == raw.data() + raw.size() && handshake_->owns(id)) {
            json answer = json::parse(line, nullptr, false);
            // nlohmann refuses lone surrogates, which the scanner accepted (a server's
            // string cut mid-pair): read them as U+FFFD rather than lose the answer.
            if (answer.is_discarded())
                answer = json::parse(wire::without_lone_surrogates(line), nullptr, false);
            handshake_->handle(answer);
            return;
        }
    }
    if (!handshake_ || !handshake_->ready()) {
        log::debug(config_.name, "dropped a message sent before the handshake completed");
        return;
    }
    router_.on_child_message(line, e);
}

void ManagedServer::fail_lost_reply(const MessageEdges& edges, const std::string& message,
                                    std::string_view reason) {
    if (!edges.response || edges.request || edges.id.empty()) return;
    if (!handshake_ || !handshake_->ready()) return;
    if (router_.on_child_reply_lost(edges.id, message, reason)) {
        log::warning(config_.name, "answered request " + edges.id + " with an error: " + message);
    }
}

void ManagedServer::on_child_input_drained(ChildProcess* child) {
    if (child != child_.get() || !sessions_paused_) return;
    sessions_paused_ = false;
    host_.pause_sessions(*this, false);
}

void ServerHost::session_send_spliced(SessionId session, std::span<const std::string_view> pieces) {
    std::string line;
    for (std::string_view piece : pieces) line.append(piece);
    session_send(session, line);
}

bool ManagedServer::child_send(std::string_view line) {
    return child_send_spliced(std::span<const std::string_view>(&line, 1));
}

bool ManagedServer::child_send_spliced(std::span<const std::string_view> pieces) {
    if (!child_ || !handshake_ || !handshake_->ready()) return false;
    if (!child_->send(pieces)) return false;
    if (!sessions_paused_ && child_->queued_input_bytes() > kStdinHighWater) {
        sessions_paused_ = true;
        host_.pause_sessions(*this, true);
    }
    return true;
}

std::uint64_t ManagedServer::child_next_id() { return ids_ ? ids_->next() : 0; }

void ManagedServer::session_send(SessionId session, std::string_view line) {
    host_.session_send(session, line);
}

void ManagedServer::session_send_spliced(SessionId session, std::span<const std::string_view> pieces) {
    host_.session_send_spliced(session, pieces);
}

void ManagedServer::session_close(SessionId session, const std::string& reason) {
    host_.session_close(session, reason);
}

std::string ManagedServer::failure() const {
    const std::string advice = "fix it, then run 'mcpctl start " + config_.name + "'";
    const std::string& error = supervisor_.error();
    if (error.find(advice) != std::string::npos) return error;
    return error.empty() ? advice : error + "; " + advice;
}

bool ServerHost::pass_to_legacy(ManagedServer&, SessionId, std::string_view) { return false; }

bool ManagedServer::pass_to_legacy(SessionId session, std::string_view line) {
    return host_.pass_to_legacy(*this, session, line);
}

void ManagedServer::want_child() {
    if (supervisor_.state() == ServerState::stopped) {
        log::info(config_.name, "starting for a client session");
        supervisor_.request_start();
    } else if (supervisor_.state() == ServerState::failed) {
        // A failed server does not come back by itself: answer now, not after start_timeout
        // (on the next turn: this runs inside the router's handling of the line).
        host_.loop().defer([this] {
            if (supervisor_.state() != ServerState::failed) return;
            router_.fail_waiting("it failed: " + failure());
        });
    }
}

void ManagedServer::deadlines_changed() {
    const std::optional<TimePoint> next = router_.next_deadline();
    if (!next) {
        router_timer_.cancel();
        return;
    }
    const auto wait = std::chrono::duration_cast<Duration>(*next - now());
    router_timer_.arm(wait.count() > 0 ? wait : Duration(0));
}

void ManagedServer::note(std::string_view message) { log::info(config_.name, message); }

void ManagedServer::note_repeated(std::string_view kind, std::string_view detail) {
    log::repeated(log::Level::info, config_.name, kind, detail);
}

void ManagedServer::sessions_changed() {
    if (router_.session_count() == 0 && config_.idle_timeout.count() > 0 &&
        supervisor_.wanted_up()) {
        idle_timer_.arm(config_.idle_timeout);
    } else {
        idle_timer_.cancel();
    }
}

void ManagedServer::on_child_log(std::string_view line) {
    log::info(config_.name, line);
    logs_.append(line);
}

json ManagedServer::status_json() const {
    const TimePoint t = now();
    const Supervisor& s = supervisor_;
    json out = {
        {"name", config_.name},
        {"state", to_string(s.state())},
        {"wanted", s.wanted_up() ? "up" : "down"},
        {"pid", s.pid() > 0 ? json(s.pid()) : json(nullptr)},
        {"state_ms", ms_between(s.state_since(), t)},
        {"uptime_ms", s.pid() > 0 ? json(ms_between(s.spawned_at(), t)) : json(nullptr)},
        {"restarts", s.restarts()},
        {"sessions", router_.session_count()},
        {"error", s.error().empty() ? json(nullptr) : json(s.error())},
        {"next_start_ms", s.state() == ServerState::backoff
                              ? json(std::max<std::int64_t>(0, ms_between(t, s.next_start())))
                              : json(nullptr)},
    };
    if (s.has_exited()) {
        const LastExit& e = s.last_exit();
        out["last_exit"] = {{"status", e.status},
                            {"step", to_string(e.step)},
                            {"reason", to_string(e.reason)},
                            {"ago_ms", ms_between(e.at, t)}};
    } else {
        out["last_exit"] = nullptr;
    }
    return out;
}

}  // namespace mcpd
