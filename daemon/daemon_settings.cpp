// Daemon: what a reload applies (the servers a changed registry adds, removes and changes) and
// the [daemon] settings it changes while mcpd runs (the HTTP front door, the metrics endpoint,
// the log level, the limits).
#include "common/log.h"
#include "common/metrics_text.h"
#include "daemon/control/metrics_access.h"
#include "daemon/daemon.h"

namespace mcpd {

ReloadReport Daemon::reload(bool allow_remove_all) {
    ReloadReport report;
    log::info("reloading " + options_.config_path);
    config::LoadResult loaded = config::load_registry(options_.config_path);
    if (!loaded.registry) {
        for (const config::ConfigError& e : loaded.errors) {
            report.errors.push_back(e.to_string());
            log::error(e.to_string());
        }
        return report;
    }
    config::Registry next = std::move(*loaded.registry);
    static_cast<ReloadPlan&>(report) = plan_reload(registry_, next, allow_remove_all);
    if (!report.refusal.empty()) {
        std::string error = options_.config_path;
        error += ": ";
        error += report.refusal;
        report.errors.push_back(std::move(error));
        log::error(report.errors.back());
        return report;
    }
    notifier_.reloading();
    apply_daemon_settings(next.daemon);
    const bool request_log_changed = next.daemon.request_log != registry_.daemon.request_log;
    registry_ = std::move(next);
    open_list_cache();  // a reload may bring the first lazy server
    if (request_log_changed)
        pool_.for_each_instance([](ManagedServer& server) { server.refresh_request_log(); });
    for (const std::string& name : report.removed) {
        sessions_.close_sessions_of(name, "the server was removed from the registry");
        pool_.remove(name);
    }
    for (const std::string& name : report.changed) pool_.apply_config(*registry_.find(name));
    for (const std::string& name : report.added) {
        const config::ServerConfig& added = *registry_.find(name);
        ManagedServer& server = pool_.add(added);
        if (added.autostart && !added.lazy.value_or(false) && !config::starts_children(added))
            server.supervisor().request_start();
    }
    pool_.set_order(report.order);
    revoke_access();
    warn_unreachable_peers();
    sessions_.apply_filters(registry_);
    log::info("reload applied: " + std::to_string(report.added.size()) + " added, " +
              std::to_string(report.removed.size()) + " removed, " +
              std::to_string(report.changed.size()) + " changed (" +
              std::to_string(report.access_only.size()) +
              " only in settings applied without a restart, kept running), " +
              std::to_string(report.unchanged.size()) + " unchanged");
    if (ready_) notifier_.ready(status_text());
    check_waiters();
    return report;
}

void Daemon::serve_metrics(const config::DaemonConfig& settings) {
    metrics_.reset();
    // After an upgrade in place, the socket the process before the exec listened on (closed
    // here when it is not wanted).
    std::optional<std::pair<std::string, UniqueFd>> inherited = std::move(inherited_metrics_);
    inherited_metrics_.reset();
    if (settings.metrics_listen.empty()) return;
    // The registry refuses an address without a token file; the file itself is read now.
    Result<std::string> token = read_metrics_token(settings.metrics_token_file, authority_.owner());
    if (!token) {
        log::error(token.error() + "; no metrics over HTTP until it is fixed and mcpd reloaded");
        return;
    }
    MetricsHttp::Render render = [this] {
        const std::vector<ManagedServer*> all = pool_.servers();
        return metrics_text(stats({all.begin(), all.end()}, {true, false}));
    };
    Result<std::unique_ptr<MetricsHttp>> http =
        inherited && inherited->first == settings.metrics_listen
            ? MetricsHttp::take_over(loop_, std::move(inherited->second), settings.metrics_listen,
                                     std::move(token).value(), std::move(render))
            : MetricsHttp::listen(loop_, settings.metrics_listen, std::move(token).value(),
                                  std::move(render));
    if (!http) {
        // The pool is served all the same; the metrics wait for a fixed registry and a reload.
        log::error("metrics_listen: " + http.error() + "; no metrics over HTTP");
        return;
    }
    metrics_ = std::move(http).value();
    log::info("metrics served on http://" + metrics_->bound_address() + "/metrics");
}

void Daemon::serve_http(const config::DaemonConfig& settings) {
    if (http_ == nullptr) return;
    // By default beside a control socket that is a file: mcpd.sock → mcpd-http.sock.
    std::string beside;
    if (!listening_path_.empty() && listening_path_.front() == '/') {
        beside = listening_path_;
        if (beside.ends_with(".sock")) beside.resize(beside.size() - 5);
        beside += "-http.sock";
    }
    http_->apply(settings, beside, options_.socket_access);
}

void Daemon::apply_daemon_settings(const config::DaemonConfig& next) {
    serve_http(next);
    if (next.metrics_listen != registry_.daemon.metrics_listen || metrics_ == nullptr) {
        serve_metrics(next);
    } else if (Result<std::string> token =
                   read_metrics_token(next.metrics_token_file, authority_.owner())) {
        metrics_->set_token(std::move(token).value());  // the file may hold a new token
    } else {
        log::error(token.error() +
                   "; metrics over HTTP stopped until it is fixed and mcpd reloaded");
        metrics_.reset();
    }
    if (next.socket != registry_.daemon.socket) {
        log::warning("[daemon].socket changed; the new path takes effect when mcpd restarts");
    }
    log::set_level(next.log_level);
    if (next.max_owner_connections != limits_.owner_cap()) {
        // New connections go by it; what is held already stays until it closes.
        log::info("max_owner_connections is now " + std::to_string(next.max_owner_connections) +
                  " (was " + std::to_string(limits_.owner_cap()) + ")");
        limits_.set_owner_cap(next.max_owner_connections);
    }
    if (next.max_queued_output != budget_.limit()) {
        // Applied at once: the budget covers every client, not only those that come later.
        log::info("max_queued_output is now " + std::to_string(next.max_queued_output) +
                  " bytes (was " + std::to_string(budget_.limit()) + ")");
        budget_.set_limit(next.max_queued_output);
        budget_check_.arm(Duration(0));
    }
}

}  // namespace mcpd
