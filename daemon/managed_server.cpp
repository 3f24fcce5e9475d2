#include "daemon/managed_server.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>

#include "common/log.h"
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
      stdout_closed_timer_(host.loop().base(), [this] {
          if (child_ && !child_->exited()) supervisor_.on_stdout_closed();
      }) {}

ManagedServer::~ManagedServer() {
    if (child_) host_.reaper().forget(child_->pid());
    for (auto& child : draining_) host_.reaper().forget(child->pid());
}

void ManagedServer::apply_config(const config::ServerConfig& config) {
    if (config == config_) return;
    config_ = config;
    supervisor_.set_config(config);
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
    callbacks.on_message = [this](ChildProcess& c, std::string& line) { on_child_message(&c, line); };
    callbacks.on_oversized = [this](ChildProcess&, std::size_t bytes) {
        log::warning(config_.name, "dropped a message of " + std::to_string(bytes) +
                                       " bytes on stdout: over max_message_bytes (" +
                                       std::to_string(host_.max_message_bytes()) + ")");
    };
    callbacks.on_log = [this](ChildProcess&, std::string_view line) { on_child_log(line); };
    callbacks.on_stdout_closed = [this](ChildProcess& c) {
        // A process that is exiting closes stdout just before its exit is reported: give the
        // exit a moment to arrive, so a crash is recorded as a crash.
        if (&c == child_.get() && !c.exited()) stdout_closed_timer_.arm(kExitAfterStdoutClose);
    };
    callbacks.on_finished = [this](ChildProcess& c) { on_child_finished(&c); };

    const int pid = outcome.process.pid;
    child_ = std::make_unique<ChildProcess>(host_.loop().base(), std::move(outcome.process),
                                            host_.max_message_bytes(), std::move(callbacks));
    ChildProcess* child = child_.get();
    host_.reaper().watch(pid, [this, child](int status) { on_child_exit(child, status); });

    ids_ = std::make_unique<ChildIds>();
    Handshake::Callbacks hs;
    hs.send = [this, child](std::string_view line) {
        if (child == child_.get()) child->send(line);
    };
    hs.on_ready = [this](const json& result_object) {
        initialize_result_ = result_object;
        const auto info = result_object.find("serverInfo");
        log::info(config_.name,
                  "ready: protocol " + handshake_->protocol_version() +
                      (info != result_object.end() ? ", server " + info->dump() : ""));
        supervisor_.on_ready();
    };
    hs.on_failed = [this](std::string why) {
        log::error(config_.name, "handshake failed: " + why);
        supervisor_.on_handshake_failed(std::move(why));
    };
    hs.on_pong = [this] { supervisor_.on_health_reply(); };
    handshake_ = std::make_unique<Handshake>(*ids_, std::move(hs));

    log::info(config_.name, "started pid " + std::to_string(pid) + ": " + command.path);
    handshake_->begin();
    result.ok = true;
    result.pid = pid;
    return result;
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
    host_.server_state_changed(*this, from, to);
}

void ManagedServer::on_child_exit(ChildProcess* child, int status) {
    child->mark_exited(status);
    if (child == child_.get()) stdout_closed_timer_.cancel();
    const bool current = child_.get() == child;
    if (current) {
        // Keep the record until its pipes close; the supervisor may spawn a successor now.
        draining_.push_back(std::move(child_));
        handshake_.reset();
        ids_.reset();
    }
    if (!child->finished()) abandon_timer_.arm(kAbandonPipesAfter);
    if (!current) return;
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

void ManagedServer::on_child_message(ChildProcess* child, std::string& line) {
    if (child != child_.get()) return;  // a dead child's last words
    json message = json::parse(line, nullptr, false);
    if (message.is_discarded() || !message.is_object()) {
        if (++noise_lines_ <= kNoiseLinesLogged) {
            log::warning(config_.name, "dropped a line on stdout that is not a JSON-RPC message" +
                                           std::string(noise_lines_ == kNoiseLinesLogged
                                                           ? " (no more such warnings)"
                                                           : ""));
        }
        return;
    }
    if (handshake_ && handshake_->handle(message)) return;
    if (message.contains("method") && message.contains("id")) {
        reply_no_session(message);
        return;
    }
    log::debug(config_.name, "no session attached; dropped " + line.substr(0, 200));
}

void ManagedServer::reply_no_session(const json& request) {
    const json reply = {
        {"jsonrpc", "2.0"},
        {"id", request["id"]},
        {"error", {{"code", -32603}, {"message", "no client session is attached to mcpd"}}}};
    if (child_) child_->send(reply.dump());
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
        {"sessions", 0},
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
