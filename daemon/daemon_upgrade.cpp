// Daemon: an upgrade in place (docs/UPGRADE.md). What stands in the way, the state written and
// checked by the new binary, the exec, and, in the new process, the servers restored.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "common/control_protocol.h"
#include "common/descriptors.h"
#include "common/log.h"
#include "common/log_output.h"
#include "common/state_file.h"
#include "daemon/control_commands.h"
#include "daemon/daemon.h"
#include "daemon/group_attach.h"
#include "daemon/server/keeper.h"
#include "daemon/upgrade_binary.h"
#include "daemon/upgrade_state.h"

namespace mcpd {

namespace {

// "a; b": the blockers in one sentence.
std::string joined(const std::vector<std::string>& parts) {
    std::string sentence;
    for (const std::string& part : parts) sentence += (sentence.empty() ? "" : "; ") + part;
    return sentence;
}

}  // namespace

Daemon::UpgradeBlockers Daemon::upgrade_blockers(const ControlConnection* asker) {
    loop_.writes().flush();
    // What the state cannot hold refuses the upgrade (lasting) or is waited out (passing):
    // nothing is dropped silently.
    UpgradeBlockers found;
    pool_.for_each_instance([&](const ManagedServer& server, const ServerPool::InstanceRole& role) {
        bool passing = true;
        const std::string what = role.kind == "shared" ? "server " + server.name()
                                                       : server.name() + "'s " + std::string(role.kind) +
                                                             " process";
        if (role.kind == "retired") {
            found.passing.push_back(what + " is stopping");
        } else if (const std::string why = server.why_not_carried(passing); !why.empty()) {
            (passing ? found.passing : found.lasting).push_back(what + ": " + why);
        }
    });
    sessions_.upgrade_blockers(found.lasting, found.passing);
    // An idle connection, owed nothing and with nothing unread, is simply closed by the exec
    // (its client sees mcpd hang up, as at a restart); a passed session's link is carried with
    // its session; any other is busy with something.
    const std::set<const ControlConnection*> links = sessions_.links();
    std::set<const ControlConnection*> followers;
    for (const auto& [connection, server] : commands_->followers()) followers.insert(connection);
    std::size_t following = 0, answering = 0, catching_up = 0;
    for (const auto& [raw, connection] : connections_) {
        if (raw == asker || raw->idle_and_silent() || (links.contains(raw) && raw->linked()))
            continue;
        if (followers.contains(raw)) {
            // Carried once what it was sent has gone out, and it is in the middle of nothing.
            if (raw->queued_output() > 0 || raw->reading_request()) ++catching_up;
            continue;
        }
        ++(raw->follows() ? following : answering);
    }
    if (catching_up > 0)
        found.passing.push_back(std::to_string(catching_up) +
                                " mcpctl logs -f still being written to");
    if (following > 0)
        found.lasting.push_back(std::to_string(following) +
                                " other control connection(s) are busy waiting for something "
                                "(a --wait): upgrade once they have ended");
    if (answering > 0)
        found.passing.push_back(std::to_string(answering) +
                                " other control connection(s) wait for their answers");
    if (metrics_ != nullptr && metrics_->connections() > 0)
        found.passing.push_back("a metrics scrape is being answered");
    if (http_ != nullptr) http_->upgrade_blockers(found.passing);
    return found;
}

std::string Daemon::registry_edited() const {
    // The new process reads the registry from its file: it must be the one running now.
    const config::LoadResult loaded = config::load_registry(options_.config_path);
    if (!loaded.registry)
        return "the registry " + options_.config_path +
               " has errors now: fix them (check it with 'mcpd --check-config'), then upgrade";
    const ReloadPlan plan = plan_reload(registry_, *loaded.registry, true);
    if (!plan.added.empty() || !plan.removed.empty() || !plan.changed.empty() ||
        !plan.access_only.empty() || loaded.registry->daemon != registry_.daemon ||
        loaded.registry->groups != registry_.groups)
        return "the registry " + options_.config_path +
               " changed since mcpd read it: run 'mcpctl reload' first";
    return {};
}

UpgradeState Daemon::upgrade_state() const {
    UpgradeState state;
    state.mcpd_version = MCPD_VERSION;
    state.pid = ::getpid();
    state.config_path = options_.config_path;
    state.socket_path = options_.socket_path;
    state.listening_path = listening_path_;
    state.socket_activated = activated_;
    state.control_fd = control_ != nullptr ? control_->fd() : -1;
    if (Keeper::instance().running()) {
        state.keeper_pid = Keeper::instance().pid();
        state.keeper_fd = Keeper::instance().pipe_fd();
    }
    if (http_ != nullptr) state.http_listeners = http_->listening_descriptors();
    if (metrics_ != nullptr)
        state.metrics_listener.emplace(registry_.daemon.metrics_listen, metrics_->listening_fd());
    state.uptime_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_at_).count();
    state.upgrades = upgrades_;
    pool_.for_each_instance([&](const ManagedServer& server, const ServerPool::InstanceRole& role) {
        if (role.kind == "retired") return;  // refused before (upgrade_blockers)
        CarriedServer carried{server.name(), server.supervisor().snapshot(), server.carried_process(),
                              server.router().carried(), std::nullopt, server.carried_box()};
        if (role.kind != "shared") {
            const InstanceKey* key = pool_.key_of(&server);
            if (key == nullptr) return;  // refused before (upgrade_blockers)
            const Project* project = pool_.project_of(*key);
            carried.instance = CarriedInstance{key->kind, key->qualifier,
                                               project != nullptr ? std::optional<Project>(*project)
                                                                  : std::nullopt};
        }
        state.servers.push_back(std::move(carried));
    });
    state.next_session = sessions_.peek_next_id();
    state.pool = pool_.carried();
    state.sessions = sessions_.carried();
    if (http_ != nullptr) {
        state.http = http_->carried();
        for (CarriedSession& session : state.sessions)
            if (session.http) session.http->token = http_->carried_token(session.id, session.http->session_id);
    }
    for (const auto& [connection, server] : commands_->followers())
        if (connection->fd() >= 0) state.followers.emplace_back(connection->fd(), server);
    return state;
}

nlohmann::json Daemon::upgrade_fingerprint(const UpgradeState& state) {
    // What may change while the new binary checks the state without anything standing in the
    // way (a timer's line, a write that went out at once, a client that left): the sessions, the
    // processes, the routers and the followers. The supervisors' clocks are left out: a change
    // of theirs is a blocker.
    nlohmann::json servers = nlohmann::json::array();
    for (const CarriedServer& server : state.servers)
        servers.push_back({server.process ? to_json(*server.process) : nlohmann::json(),
                           server.router ? to_json(*server.router) : nlohmann::json()});
    nlohmann::json sessions = nlohmann::json::array();
    for (const CarriedSession& session : state.sessions) {
        nlohmann::json one = to_json(session);
        // An HTTP session's idleness is a clock reading, as the supervisors' are.
        if (session.http) one["http"]["idle_ms"] = 0;
        sessions.push_back(std::move(one));
    }
    return {std::move(servers), std::move(sessions), state.next_session, state.followers,
            state.http ? to_json(*state.http) : nlohmann::json()};
}

void Daemon::begin_upgrade(ControlConnection& asker, std::string binary) {
    if (upgrade_ != nullptr) {
        asker.reply_error(control::code::busy, "an upgrade is already under way");
        return;
    }
    if (control_ == nullptr) {
        asker.reply_error(control::code::busy, "mcpd is not serving yet");
        return;
    }
    if (binary.empty()) binary = options_.binary;
    if (Result<Done> usable = check_upgrade_binary(binary, authority_.owner()); !usable) {
        asker.reply_error(control::code::bad_request,
                          "cannot upgrade to this binary: " + usable.error());
        return;
    }
    UpgradeBlockers blocked = upgrade_blockers(&asker);
    if (std::string edited = registry_edited(); !edited.empty())
        blocked.lasting.push_back(std::move(edited));
    if (!blocked.lasting.empty()) {
        asker.reply_error(control::code::busy, "cannot upgrade now: " + joined(blocked.lasting));
        return;
    }
    upgrade_ = std::make_unique<PendingUpgrade>();
    // Sessions' clients are not read while the upgrade waits for what is under way to end:
    // what they send meanwhile waits in their sockets and pipes for the new process.
    sessions_.hold_input(true);
    if (http_ != nullptr) http_->hold_input(true);
    upgrade_->binary = binary;
    upgrade_->give_up_at = Clock::now() + kUpgradeWait;
    upgrade_->asker = &asker;
    upgrade_->retry = std::make_unique<Timer>(loop_.base(), [this] { try_upgrade(); });
    asker.defer_reply();
    PendingUpgrade* pending = upgrade_.get();
    asker.on_close([this, pending] {
        if (upgrade_.get() == pending) pending->asker = nullptr;
    });
    log::info("upgrade in place to " + binary + " asked by pid " + std::to_string(asker.peer().pid));
    try_upgrade();
}

void Daemon::try_upgrade() {
    if (upgrade_->asker == nullptr) {
        refuse_upgrade(control::code::failed, "the client that asked for it has gone");
        return;
    }
    const UpgradeBlockers blocked = upgrade_blockers(upgrade_->asker);
    if (!blocked.lasting.empty()) {
        refuse_upgrade(control::code::busy, "cannot upgrade now: " + joined(blocked.lasting));
        return;
    }
    if (!blocked.passing.empty()) {
        // A moment's matter (an answer due, a line being read): looked at again shortly.
        if (Clock::now() >= upgrade_->give_up_at) {
            refuse_upgrade(control::code::busy, "cannot upgrade now: after " +
                                                    format_duration(kUpgradeWait) + ", still " +
                                                    joined(blocked.passing) +
                                                    "; try again once that is done");
            return;
        }
        upgrade_->retry->arm(std::chrono::milliseconds(20));
        return;
    }
    const UpgradeState state = upgrade_state();
    const std::string text = state_file::encode(to_json(state));
    Result<UniqueFd> memfd = state_file::to_sealed_memfd(text);
    const Result<state_file::Decoded> decoded = state_file::decode(text);
    if (!memfd || !decoded) {
        refuse_upgrade(control::code::failed,
                       "cannot write mcpd's state: " + (memfd ? decoded.error() : memfd.error()));
        return;
    }
    // What the state says the servers' processes had begun to write stays true until the exec:
    // nothing more is read from them meanwhile (it waits in their pipes for the new process).
    pool_.for_each_instance([](ManagedServer& server) { server.hold_output(true); });
    sessions_.hold_output(true);
    if (http_ != nullptr) http_->hold_output(true);
    upgrade_->fingerprint = upgrade_fingerprint(state);
    upgrade_->kept = kept_descriptors(state);
    upgrade_->state = std::move(memfd).value();
    upgrade_->state_bytes = text.size();
    log::info("upgrade in place: " + upgrade_->binary + " reads the state (" +
              std::to_string(text.size()) + " bytes)");
    upgrade_->check = std::make_unique<StateCheck>(
        loop_.base(), reaper_, upgrade_->binary, upgrade_->state.get(),
        state_file::acknowledgement(decoded.value()),
        [this](Result<Done> checked) { upgrade_checked(std::move(checked)); });
}

void Daemon::refuse_upgrade(std::string_view code, const std::string& why) {
    log::error("upgrade in place refused: " + why + "; mcpd carries on");
    pool_.for_each_instance([](ManagedServer& server) { server.hold_output(false); });
    sessions_.hold_output(false);
    sessions_.hold_input(false);
    if (http_ != nullptr) {
        http_->hold_output(false);
        http_->hold_input(false);
    }
    if (upgrade_->asker != nullptr) upgrade_->asker->reply_error(code, why);
    // Freed on the next turn: this may run inside the check's own callbacks.
    finished_upgrade_ = std::move(upgrade_);
    upgrade_cleanup_.arm(Duration(0));
}

void Daemon::upgrade_checked(Result<Done> checked) {
    if (!checked) {
        refuse_upgrade(control::code::failed,
                       "the new binary cannot take this mcpd's state: " + checked.error());
        return;
    }
    if (upgrade_->asker == nullptr) {
        refuse_upgrade(control::code::failed, "the client that asked for it has gone");
        return;
    }
    // The check took a moment: what it read must still be all there is, and the registry the
    // new process will read still the one running (read once more, just before the exec).
    if (const std::string edited = registry_edited(); !edited.empty()) {
        refuse_upgrade(control::code::busy, "cannot upgrade now: " + edited);
        return;
    }
    if (const UpgradeBlockers blocked = upgrade_blockers(upgrade_->asker);
        !blocked.lasting.empty() || !blocked.passing.empty() ||
        upgrade_fingerprint(upgrade_state()) != upgrade_->fingerprint) {
        // The state is stale: written again (and checked again) once nothing is under way,
        // for as long as an upgrade waits for what passes.
        if (Clock::now() >= upgrade_->give_up_at) {
            refuse_upgrade(control::code::busy,
                           "cannot upgrade now: mcpd's state kept changing while the new binary "
                           "checked it, for " + format_duration(kUpgradeWait) + "; try again");
            return;
        }
        pool_.for_each_instance([](ManagedServer& server) { server.hold_output(false); });
        sessions_.hold_output(false);
        if (http_ != nullptr) http_->hold_output(false);
        spent_check_ = std::move(upgrade_->check);
        upgrade_->state.reset();
        upgrade_cleanup_.arm(Duration(0));
        try_upgrade();
        return;
    }
    upgrade_->asker->reply_ok(control::to_json(
        control::UpgradeResult{upgrade_->binary, upgrade_->state_bytes, upgrades_ + 1}));
    upgrade_->asker->flush_now(std::chrono::seconds(1));
    upgrade_->asker = nullptr;  // answered: a failed exec below is only logged
    exec_upgrade();
    // Only when the exec failed: the old process is still whole and serves on.
    refuse_upgrade(control::code::failed, "the exec of " + upgrade_->binary + " failed");
}

void Daemon::exec_upgrade() {
    // Exactly the descriptors the checked state names (it is still what mcpd holds: see
    // upgrade_checked), and the state itself.
    std::vector<int> kept = upgrade_->kept;
    kept.push_back(upgrade_->state.get());
    std::vector<std::string> args = {upgrade_->binary};
    for (const std::string& arg : options_.args) args.push_back(arg);
    args.push_back("--restore-state");
    args.push_back(std::to_string(upgrade_->state.get()));
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);

    log::info("upgrading in place: exec " + upgrade_->binary);
    log::stderr_output().flush();
    notifier_.reloading();
    for (const int fd : kept)
        if (fd >= 0) set_close_on_exec(fd, false);
    ::execv(argv[0], argv.data());
    const int exec_errno = errno;
    for (const int fd : kept)
        if (fd >= 0) set_close_on_exec(fd, true);
    log::error("upgrade in place: cannot exec " + upgrade_->binary + ": " +
               std::strerror(exec_errno));
    if (ready_) notifier_.ready(status_text());
}

void Daemon::restore_servers(const UpgradeState& state) {
    started_at_ = Clock::now() - std::chrono::milliseconds(state.uptime_ms);
    upgrades_ = state.upgrades + 1;
    for (const CarriedServer& carried : state.servers) {
        ManagedServer* server = pool_.find(carried.name);
        if (server == nullptr) {
            log::warning("upgrade in place: server '" + carried.name +
                         "' of the old state is not in the registry; its state is dropped");
            continue;
        }
        if (carried.instance) server = &restore_instance(*server, *carried.instance);
        if (Result<Done> restored = server->take_over(carried.supervisor, carried.process, carried.box);
            !restored)
            log::error("upgrade in place: " + restored.error());
        else if (carried.router)
            server->router().restore_carried(*carried.router);
    }
    pool_.restore_carried(state.pool);
    sessions_.set_next_id(state.next_session);
    // The connections before the sessions, whose exchanges name them.
    if (state.http && http_ != nullptr) http_->take_carried(*state.http);
    for (const CarriedSession& carried : state.sessions) restore_session(carried);
    if (http_ != nullptr) http_->close_orphans();
    pool_.for_each_instance([](ManagedServer& server) { server.router().carried_in(); });
    for (const auto& [fd, server] : state.followers) restore_follower(UniqueFd(fd), server);
    log::info("upgraded in place from mcpd " + state.mcpd_version + " (upgrade " +
              std::to_string(upgrades_) + " of pid " + std::to_string(state.pid) + ")");
}

void Daemon::restore_follower(UniqueFd fd, const std::string& server_name) {
    ManagedServer* server = pool_.find(server_name);
    ControlConnection* connection = server != nullptr ? adopt_connection(std::move(fd)) : nullptr;
    if (connection == nullptr) {
        log::warning("upgrade in place: a logs -f of '" + server_name + "' could not be carried");
        return;
    }
    commands_->follow_carried(*connection, *server);
}

void Daemon::end_link(ControlConnection* link) {
    if (link == nullptr) return;
    link->send(control::ended_message({"mcpd could not carry the session across its upgrade", false}));
    link->close_after_flush();
}

void Daemon::restore_group_session(CarriedSession carried, ControlConnection* link,
                                   std::unique_ptr<ClientTransport> http) {
    // The group made again from the registry, which is the one the old process ran.
    std::optional<GroupSpec> spec;
    const CarriedGroup& group = *carried.group;
    if (group.kind == "registry") {
        if (const config::GroupConfig* found = registry_.find_group(group.name)) spec = registry_group(*found);
    } else if (group.kind == "adhoc") {
        if (const auto members = adhoc_members(group.name)) spec = adhoc_group(*members);
    } else if (const ManagedServer* server = pool_.find(group.name)) {
        spec = solo_group(server->config());
    }
    if (!spec && !carried.http) {
        ::close(carried.fd);
        if (carried.passed_fds) ::close(carried.output_fd);
    }
    Result<Done> adopted = spec ? sessions_.adopt_carried_group(std::move(*spec), std::move(carried), link,
                                                                std::move(http))
                                : Result<Done>(permanent_failure("group session " + std::to_string(carried.id) +
                                                                 " of " + carried.server +
                                                                 ": its group is not in the registry"));
    if (!adopted) {
        log::error("upgrade in place: " + adopted.error());
        end_link(link);
    }
}

ManagedServer& Daemon::restore_instance(ManagedServer& entry, const CarriedInstance& instance) {
    // Made as placement makes it, from the entry's configuration: the pool makes it its
    // project's child's, or a legacy process's.
    const InstanceKey key{entry.name(), instance.kind, instance.qualifier};
    bool made = false;
    return pool_.make(key, entry.config(), instance.project, made);
}

void Daemon::restore_session(CarriedSession carried) {
    std::unique_ptr<ClientTransport> http;
    if (carried.http) {
        Result<std::unique_ptr<HttpTransport>> made =
            http_ != nullptr ? http_->adopt_session(carried.id, carried.server, *carried.http)
                             : Result<std::unique_ptr<HttpTransport>>(permanent_failure("no HTTP front door"));
        if (!made) {
            log::error("upgrade in place: " + made.error() + "; it is dropped");
            return;
        }
        http = std::move(made).value();
    }
    ControlConnection* link = nullptr;
    if (carried.passed_fds) {
        const SessionId id = carried.id;
        link = adopt_connection(UniqueFd(carried.link_fd));
        if (link != nullptr)
            link->link_carried([this, id] { sessions_.end(id, "mcpctl connect went away", true); });
    }
    if (carried.group) {
        restore_group_session(std::move(carried), link, std::move(http));
        return;
    }
    const InstanceKey key = carried.instance ? InstanceKey{carried.server, carried.instance->kind,
                                                           carried.instance->qualifier}
                                             : InstanceKey::shared_of(carried.server);
    ManagedServer* server = pool_.find(key);
    if (server == nullptr) {
        log::warning("upgrade in place: session " + std::to_string(carried.id) + " of '" +
                     carried.server + "', whose instance is not here, is dropped");
        if (!carried.http) ::close(carried.fd);
        if (carried.passed_fds) ::close(carried.output_fd);
        end_link(link);
        return;
    }
    std::optional<InstanceKey> modern;
    if (carried.modern) modern = InstanceKey{carried.server, carried.modern->first, carried.modern->second};
    if (Result<Done> adopted =
            sessions_.adopt_carried(*server, key, modern, std::move(carried), link, std::move(http));
        !adopted) {
        log::error("upgrade in place: " + adopted.error());
        end_link(link);
    }
}

}  // namespace mcpd
