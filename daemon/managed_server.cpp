#include "daemon/managed_server.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>

#include "common/accounts.h"
#include "common/check.h"
#include "common/log.h"
#include "daemon/mux/mcp_versions.h"
#include "daemon/mux/request_log.h"
#include "daemon/server/config_change.h"
#include "daemon/server/reaper.h"
#include "daemon/server/sandbox_setup.h"
#include "daemon/server/user_env_file.h"

extern char** environ;

namespace mcpd {

using nlohmann::json;

namespace {

constexpr std::size_t kLogRingLines = 1000;
constexpr std::size_t kLogRingBytes = 256 * 1024;

std::string signal_name(int signo) {
    const char* abbrev = sigabbrev_np(signo);
    return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

std::int64_t ms_between(TimePoint from, TimePoint to) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

}  // namespace

ManagedServer::ManagedServer(ServerHost& host, const config::ServerConfig& config,
                             std::optional<uid_t> cache_user)
    : host_(host),
      config_(config),
      supervisor_(config, *this),
      logs_(kLogRingLines, kLogRingBytes),
      router_(config, *this, host.session_sink(), host.max_message_bytes()),
      router_timer_(host.loop().base(), [this] { router_.on_timer(); }),
      output_(config.name, host.max_message_bytes(), [this](std::string_view line) {
          if (child_) child_->send(line);
      }) {
    cache_user_ = cache_user;
    refresh_request_log();
    refresh_lazy();
}

void ManagedServer::refresh_request_log() {
    router_.set_request_log(config_.request_log.value_or(host_.request_log_default()));
}

std::optional<ServerMark> ManagedServer::process_mark() const {
    if (!child_) return std::nullopt;
    return child_->mark();
}

void ManagedServer::request_settled(const SettledRequest& request) {
    const RequestLogLine line = request_log_line(config_.name, request);
    log::write_with_fields(log::Level::info, config_.name, line.message, line.fields);
}

ManagedServer::~ManagedServer() {
    if (child_) host_.reaper().forget(child_->pid());
    for (auto& child : draining_) host_.reaper().forget(child->pid());
}

void ManagedServer::apply_config(const config::ServerConfig& config) {
    const ConfigChange change = classify_change(config_, config);
    // request_log is read as each request settles: no restart, whatever else changed.
    if (config.request_log != config_.request_log) {
        config_.request_log = config.request_log;
        refresh_request_log();
    }
    if (change == ConfigChange::none) return;
    // What it ran is no longer what it runs: that cache entry goes.
    const std::string old_key = config_.lazy.value_or(false) ? cache_key_now() : std::string();
    config_ = config;
    router_.set_config(config);
    if (const ListCache* cache = host_.list_cache(); cache != nullptr && !old_key.empty() &&
                                                     old_key != cache_key_now())
        cache->drop(old_key);
    refresh_lazy();
    supervisor_.apply_config(config, change);
}

TimePoint ManagedServer::now() const {
    return Clock::now();
}

Result<int> ManagedServer::spawn() {
    Result<SpawnedProcess> process = start_process();
    if (!process) {
        log::error(config_.name, "cannot start: " + process.error());
        return process.failure();
    }
    const int pid = process->pid;
    watch_child(std::move(process).value());
    return pid;
}

// Resolve the command against the child's own PATH, and fork and exec it.
Result<SpawnedProcess> ManagedServer::start_process() {
    std::vector<std::string> env;
    if (is_user_env_file(config_.env_file)) {
        // The user's own file, read now as that user (its contents are never kept).
        const char* own_home = std::getenv("HOME");
        Result<std::map<std::string, std::string>> vars =
            read_user_env_file(config_.env_file, config_.run_as, own_home ? own_home : "");
        if (!vars) return vars.failure();
        config::ServerConfig with_vars = config_;
        with_vars.env_file_vars = std::move(vars).value();
        env = build_child_environment(with_vars, environ);
    } else {
        env = build_child_environment(config_, environ);
    }
    const std::string base_dir = config_.cwd.empty() ? host_.registry_dir() : config_.cwd;
    Result<std::string> path = resolve_command(config_.command, find_env(env, "PATH"), base_dir);
    if (!path) return path.failure();
    SpawnRequest request;
    request.path = std::move(path).value();
    request.argv.push_back(config_.command);
    request.argv.insert(request.argv.end(), config_.args.begin(), config_.args.end());
    request.env = std::move(env);
    request.cwd = config_.cwd;
    request.identity = config_.run_as;
    Result<PreparedSandbox> box = prepare_sandbox(config_, request.path);
    if (!box) return box.failure();
    if (box->child) {
        sandbox_plan_ = box->plan;
        request.sandbox = &*box->child;
        if (!box->tmpdir.empty()) {
            std::erase_if(request.env, [](const std::string& e) { return e.starts_with("TMPDIR="); });
            request.env.push_back("TMPDIR=" + box->tmpdir);
        }
        log_sandbox(config_.name, box->plan);
    }
    if (!box->cgroup_leaf.empty()) request.cgroup_procs = box->cgroup_leaf + "/cgroup.procs";
    request.cgroup_required = box->plan.cgroup.any();
    Result<SpawnedProcess> process = spawn_process(request);
    oom_killed_ = false;
    if (!process && !box->cgroup_leaf.empty()) sandbox::remove_leaf(box->cgroup_leaf);
    cgroup_.started(process ? box->cgroup_leaf : std::string());
    if (process) {
        log::info(config_.name,
                  "started pid " + std::to_string(process->pid) + ": " + request.path +
                      (request.identity ? " as " + accounts::describe_uid(request.identity->uid)
                                        : std::string()));
    }
    return process;
}

// Its pipes, its exit, and the stdin watermark the backlog decision needs.
void ManagedServer::watch_child(SpawnedProcess process) {
    child_ = std::make_unique<ChildProcess>(host_.loop(), std::move(process),
                                            host_.max_message_bytes(), child_callbacks());
    ChildProcess* child = child_.get();
    child->set_input_watermark(StdinBacklog::kLowWater);
    host_.reaper().watch(child->mark(),
                         [this, child](int status) { on_child_exit(child, status); });
}

ChildProcess::Callbacks ManagedServer::child_callbacks() {
    ChildProcess::Callbacks callbacks;
    callbacks.on_message = [this](ChildProcess& c, wire::PaddedText line) {
        if (&c == child_.get()) output_.on_message(line, handshake_.get(), router_);
    };
    callbacks.on_oversized = [this](ChildProcess& c, std::size_t bytes, std::string_view head,
                                    std::string_view tail) {
        Handshake* handshake = &c == child_.get() ? handshake_.get() : nullptr;
        output_.on_oversized(bytes, head, tail, handshake, router_);
    };
    callbacks.on_log = [this](ChildProcess& c, std::string_view line) {
        if (&c == child_.get() && handshake_) handshake_->child_showed_life();
        log::info(config_.name, line);
        logs_.append(line);
    };
    callbacks.on_stdout_closed = [this](ChildProcess& c) {
        if (&c == child_.get() && !c.exited()) supervisor_.on_stdout_eof();
    };
    callbacks.on_finished = [this](ChildProcess& c) { on_child_finished(&c); };
    callbacks.on_input_drained = [this](ChildProcess& c) {
        if (&c == child_.get()) supervisor_.on_input_backlog(c.queued_input_bytes());
    };
    return callbacks;
}

void ManagedServer::begin_handshake(EraMemory::Start start) {
    MCPD_CHECK(child_ != nullptr, "a handshake begins with the process just spawned");
    ids_ = std::make_unique<ChildIds>();
    handshake_ = std::make_unique<Handshake>(*ids_, handshake_callbacks(child_.get()));
    const Handshake::CapabilitiesFor capabilities = config_.sharing == config::Sharing::project
                                                        ? project_client_capabilities
                                                        : client_capabilities;
    switch (start) {
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

Handshake::Callbacks ManagedServer::handshake_callbacks(ChildProcess* child) {
    Handshake::Callbacks hs;
    hs.send = [this, child](std::string_view line) {
        if (child == child_.get()) child->send(line);
    };
    hs.on_ready = [this](const json& result) { on_handshake_ready(result); };
    hs.on_failed = [this](std::string why) {
        log::error(config_.name, "handshake failed: " + why);
        supervisor_.on_handshake_failed(std::move(why));
    };
    hs.on_pong = [this] { supervisor_.on_health_reply(); };
    hs.probe_timer = [this, child](std::optional<Duration> after) {
        if (child == child_.get()) supervisor_.on_probe_wait(after);
    };
    return hs;
}

void ManagedServer::on_handshake_ready(const json& result) {
    initialize_result_ = result;
    const auto info = result.find("serverInfo");
    log::info(config_.name, "ready: protocol " + handshake_->protocol_version() +
                                (info != result.end() ? ", server " + info->dump() : ""));
    supervisor_.on_ready(handshake_->modern());
    router_.on_child_ready(result, handshake_->protocol_version(), handshake_->modern());
}

bool ManagedServer::fall_back_to_initialize() {
    return handshake_ && handshake_->probe_timed_out();
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

void ManagedServer::abandon_pipes() {
    for (auto& child : draining_) {
        if (child->exited()) child->abandon_pipes();
    }
}

void ManagedServer::pause_sessions(bool paused) {
    host_.pause_sessions(*this, paused);
}

void ManagedServer::fail_waiting(const std::string& why) {
    router_.fail_waiting(why);
}

void ManagedServer::arm_timer(TimerKind kind, Duration after) {
    auto& slot = timers_[kind];
    if (!slot) {
        slot = std::make_unique<Timer>(host_.loop().base(),
                                       [this, kind] { supervisor_.on_timer(kind); });
    }
    slot->arm(after);
}

void ManagedServer::cancel_timer(TimerKind kind) {
    const auto it = timers_.find(kind);
    if (it != timers_.end()) it->second->cancel();
}

void ManagedServer::state_changed(ServerState from, ServerState to) {
    // A process being stopped takes no new request: they wait for the next one.
    if (to == ServerState::stopping) router_.on_child_stopping();
    host_.server_state_changed(*this, from, to);
}

void ManagedServer::on_child_exit(ChildProcess* child, int status) {
    child->mark_exited(status);
    const bool current = child_.get() == child;
    const bool on_probe = current && handshake_ && handshake_->exited_on_probe();
    if (current) {
        // Keep the record until its pipes close; the supervisor may spawn a successor now.
        draining_.push_back(std::move(child_));
        handshake_.reset();
        ids_.reset();
        if (cgroup_.ended()) {
            oom_killed_ = true;
            log::warning(config_.name, "the kernel's OOM killer ended it at its cgroup's "
                                       "memory limit");
        }
        // What it never read of its stdin may go to the next process (router_replay.cpp).
        const std::string unwritten = child->take_unwritten_input();
        router_.on_child_gone("the server exited with status " + std::to_string(status),
                              unwritten);
    }
    if (!child->finished()) supervisor_.on_exit_pipes_open();
    if (!current) return;
    if (on_probe) {
        supervisor_.on_probe_exit(status);
    } else {
        supervisor_.on_exit(status);
    }
}

void ManagedServer::on_child_finished(ChildProcess* child) {
    // Called from inside the child's own callbacks: free it on the next loop turn.
    host_.loop().defer([this, child] {
        const auto it = std::find_if(draining_.begin(), draining_.end(),
                                     [child](const auto& c) { return c.get() == child; });
        if (it != draining_.end()) draining_.erase(it);
        cgroup_.tidy();
        if (drained()) host_.server_drained(*this);
    });
}

bool ManagedServer::child_send(std::string_view line) {
    return child_send_spliced(std::span<const std::string_view>(&line, 1));
}

bool ManagedServer::child_send_spliced(std::span<const std::string_view> pieces) {
    if (!child_ || !handshake_ || !handshake_->ready()) return false;
    if (!child_->send(pieces)) return false;
    supervisor_.on_input_backlog(child_->queued_input_bytes());
    return true;
}

std::uint64_t ManagedServer::child_next_id() {
    return ids_ ? ids_->next() : 0;
}

bool ManagedServer::pass_to_legacy(SessionId session, std::string_view line) {
    return host_.pass_to_legacy(*this, session, line);
}

void ManagedServer::project_reported(SessionId session, const nlohmann::json* roots_result,
                                     std::string_view why) {
    host_.project_reported(*this, session, roots_result, why);
}

void ManagedServer::departed_session_gone(SessionId) {
    host_.departed_session_gone(*this);
}

void ManagedServer::cancel_elsewhere(SessionId session, std::string_view line) {
    host_.cancel_elsewhere(*this, session, line);
}

void ManagedServer::set_project_roots(const std::vector<std::string>& roots) {
    config_.roots = roots;
    router_.set_config(config_);
    supervisor_.set_config(config_);
    router_.roots_changed();
}

void ManagedServer::want_child() {
    supervisor_.on_child_wanted();
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

void ManagedServer::note(std::string_view message) {
    log::info(config_.name, message);
}

std::string ManagedServer::exit_cause() const {
    return oom_killed_ ? "oom-kill" : std::string();
}

std::string ManagedServer::start_failure_hint() const {
    if (config_.sandbox.network.value_or(config::NetworkAccess::all) != config::NetworkAccess::none ||
        !config_.sandbox.any())
        return {};
    return "its sandbox has network = \"none\", and a server that fetches its package when it "
           "starts (npx -y, uvx) cannot: install it first and run it from there, or allow the "
           "network";
}

void ManagedServer::note_repeated(std::string_view kind, std::string_view detail) {
    log::repeated(log::Level::info, config_.name, kind, detail);
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
    // Counted only in cgroup leaves (docs/SANDBOX.md): null without a delegated cgroup.
    const std::optional<std::uint64_t> oom_kills = cgroup_.oom_kills();
    out["oom_kills"] = oom_kills ? json(*oom_kills) : json(nullptr);
    // What its running process's cgroup leaf counted: null without one.
    if (const std::optional<sandbox::CgroupUsage> leaf = cgroup_.usage()) {
        const auto figure = [](const std::optional<std::uint64_t>& n) {
            return n ? json(*n) : json(nullptr);
        };
        out["cgroup"] = {{"cpu_us", figure(leaf->cpu_us)},
                         {"memory_bytes", figure(leaf->memory_bytes)},
                         {"peak_bytes", figure(leaf->peak_bytes)},
                         {"tasks", figure(leaf->tasks)}};
    } else {
        out["cgroup"] = nullptr;
    }
    out["sandbox"] = sandbox_json(config_, sandbox_plan_);
    if (router_.lazy()) {
        // What a lazy server's sessions are answered from while it sleeps.
        const std::optional<Catalog>& catalog = router_.catalog();
        out["lazy"] = {{"cached", catalog ? json(catalog->saved_at) : json(nullptr)},
                       {"answered_from_cache", router_.answered_from_cache()}};
    } else {
        out["lazy"] = nullptr;
    }
    return out;
}

}  // namespace mcpd
