#include "ctl/registry_append.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/control_protocol.h"
#include "common/scope_guard.h"
#include "config/env_file.h"
#include "config/text_file.h"
#include "ctl/command.h"
#include "ctl/daemon_client.h"
#include "ctl/output.h"

namespace mcpctl {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// "first error (and N more)", never a value: the loader's messages name keys and lines only.
std::string first_error(const std::vector<mcpd::config::ConfigError>& errors) {
    if (errors.empty()) return "it does not load";
    std::string text = errors.front().to_string();
    if (errors.size() > 1) text += " (and " + std::to_string(errors.size() - 1) + " more)";
    return text;
}

// The registry's text with `toml` after it, a blank line between them.
std::string appended(std::string_view existing, std::string_view toml) {
    std::string text(existing);
    if (!existing.empty()) text += existing.ends_with('\n') ? "\n" : "\n\n";
    text += toml;
    return text;
}

// The tables of `additions`, grouped by the file they came from, as render_toml writes them.
std::string render_additions(const std::vector<RegistryAddition>& additions) {
    std::string toml;
    for (std::size_t i = 0; i < additions.size();) {
        ImportResult group;
        const std::string& source = additions[i].source;
        for (; i < additions.size() && additions[i].source == source; ++i)
            group.servers.push_back(additions[i].server);
        if (!toml.empty()) toml += '\n';
        toml += render_toml(group, source);
    }
    return toml;
}

// A value as an env file line takes it back: quoted when blanks at its ends, a leading quote
// or emptiness would otherwise change it (quotes are taken literally, without escapes).
std::string env_value(std::string_view value) {
    const bool plain = !value.empty() && value.front() != ' ' && value.front() != '\t' &&
                       value.back() != ' ' && value.back() != '\t' && value.front() != '"' &&
                       value.front() != '\'';
    if (plain) return std::string(value);
    std::string quoted;
    quoted.reserve(value.size() + 2);
    quoted += '"';
    quoted += value;
    quoted += '"';
    return quoted;
}

// Env files created so far, removed again unless the registry that names them was written.
class CreatedFiles {
public:
    CreatedFiles() = default;
    CreatedFiles(const CreatedFiles&) = delete;
    CreatedFiles& operator=(const CreatedFiles&) = delete;
    ~CreatedFiles() {
        if (!kept_)
            for (const std::string& path : paths_) ::unlink(path.c_str());
    }
    void add(std::string path) { paths_.push_back(std::move(path)); }
    std::vector<std::string> keep() {
        kept_ = true;
        return paths_;
    }

private:
    std::vector<std::string> paths_;
    bool kept_ = false;
};

constexpr int kEnvFileNames = 20;

// The n-th name (from 1) an env file of server `name` may take in `dir`.
std::string env_file_name(const std::string& dir, const std::string& name, int n) {
    // Appended piece by piece: gcc 12 at -O3 warns falsely on `"." + std::to_string(n)`.
    std::string path = dir;
    path += '/';
    path += name;
    if (n != 1) {
        path += '.';
        path += std::to_string(n);
    }
    path += ".env";
    return path;
}

// The registry's directory, absolute.
std::string registry_dir(const RegistryState& registry) {
    std::error_code ec;
    const fs::path dir = fs::absolute(fs::path(registry.target).parent_path(), ec);
    return dir.lexically_normal().string();
}

// Create NAME.env in `dir` (NAME.2.env ... when taken) holding `text`; its path.
mcpd::Result<std::string> create_env_file(const std::string& dir, const std::string& name,
                                          std::string_view text,
                                          const std::optional<FileOwner>& owner) {
    for (int n = 1; n <= kEnvFileNames; ++n) {
        const std::string path = env_file_name(dir, name, n);
        mcpd::Result<bool> created = create_file(path, text, 0600, owner);
        if (!created) return mcpd::permanent_failure(created.error());
        if (created.value()) return path;
    }
    return mcpd::permanent_failure("cannot create an env file for " + name + " in " + dir + ": " +
                                   name + ".env and the next names are taken");
}

}  // namespace

mcpd::Result<std::string> read_text_file(const std::string& path) {
    std::string text;
    if (const int error = mcpd::config::read_text_file(path, text); error != 0)
        return mcpd::permanent_failure("cannot be read: " + mcpd::config::text_file_error(error));
    return text;
}

mcpd::Result<RegistryLock> RegistryLock::take(const std::string& registry) {
    const std::string target = write_target(registry);
    if (auto made = make_private_dirs(fs::path(target).parent_path().string()); !made)
        return made.failure();
    const std::string path = target + ".lock";
    mcpd::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd)
        return mcpd::permanent_failure("cannot open the lock " + path + ": " +
                                       std::strerror(errno));
    while (::flock(fd.get(), LOCK_EX) != 0)
        if (errno != EINTR)
            return mcpd::permanent_failure("cannot lock " + path + ": " + std::strerror(errno));
    return RegistryLock(std::move(fd));
}

mcpd::Result<RegistryState> read_registry_state(const std::string& path) {
    RegistryState state;
    state.path = path;
    state.target = write_target(path);
    std::error_code ec;
    if (!fs::exists(state.target, ec)) {
        state.loaded.path = path;
        return state;
    }
    mcpd::Result<std::string> text = read_text_file(state.target);
    if (!text) return mcpd::permanent_failure(path + " " + text.error());
    state.text = std::move(text).value();
    state.owner = file_owner(state.target);
    mcpd::config::LoadResult loaded = mcpd::config::parse_registry(state.text, path);
    if (!loaded.registry)
        return mcpd::permanent_failure(path +
                                       " does not load as it is: " + first_error(loaded.errors) +
                                       "; fix it first (mcpd --check-config), nothing was added");
    state.loaded = std::move(*loaded.registry);
    return state;
}

RegistryMatch match_server(const RegistryState& registry, const ImportedServer& server) {
    const mcpd::config::ServerConfig* have = registry.loaded.find(server.name);
    if (have == nullptr) return RegistryMatch::absent;
    std::map<std::string, std::string> env = have->env_file_vars;
    for (const auto& [key, value] : have->env) env[key] = value;
    const std::map<std::string, std::string> wanted(server.env.begin(), server.env.end());
    std::string cwd = server.cwd;
    if (!cwd.empty() && !cwd.starts_with('/'))
        cwd = (fs::path(registry.path).parent_path() / cwd).lexically_normal().string();
    const bool same = have->command == server.command && have->args == server.args &&
                      env == wanted && have->cwd == cwd;
    return same ? RegistryMatch::same : RegistryMatch::other;
}

std::string addition_problem(const RegistryState& registry, const ImportedServer& server) {
    if (const auto text = env_file_text(server.env); !text) return text.error();
    // The env values inline here: this text is only loaded, never written.
    ImportResult one;
    one.servers.push_back(server);
    one.servers.back().env_file.clear();
    const mcpd::config::LoadResult loaded =
        mcpd::config::parse_registry(appended(registry.text, render_toml(one, "")), registry.path);
    if (loaded.registry) return {};
    std::string message = loaded.errors.front().message;
    return "the registry would not load with it: " + message;
}

mcpd::Result<AppendOutcome> append_to_registry(const RegistryState& registry,
                                               std::vector<RegistryAddition> additions,
                                               std::string_view extra) {
    const std::string dir = fs::path(registry.target).parent_path().string();
    if (auto made = make_private_dirs(dir); !made) return made.failure();
    CreatedFiles created;
    for (RegistryAddition& addition : additions) {
        ImportedServer& server = addition.server;
        if (server.env.empty()) continue;
        mcpd::Result<std::string> text = env_file_text(server.env);
        if (!text) return mcpd::permanent_failure(server.name + ": " + text.error());
        mcpd::Result<std::string> path =
            create_env_file(registry_dir(registry), server.name, text.value(), registry.owner);
        if (!path) return path.failure();
        server.env_file = path.value();
        created.add(std::move(path).value());
    }
    std::string toml = render_additions(additions);
    if (!extra.empty()) {
        if (!toml.empty()) toml += '\n';
        toml += extra;
    }
    const std::string text = appended(registry.text, toml);
    const mcpd::config::LoadResult loaded = mcpd::config::parse_registry(text, registry.path);
    if (!loaded.registry)
        return mcpd::permanent_failure("the registry " + registry.path +
                                       " would not load with the new servers: " +
                                       first_error(loaded.errors) + "; nothing was written");
    if (auto written = replace_file(registry.target, text, 0600); !written)
        return mcpd::permanent_failure(written.error() + "; nothing was written");
    return AppendOutcome{created.keep(), std::move(toml)};
}

std::string predicted_env_file(const RegistryState& registry, const std::string& name) {
    const std::string dir = registry_dir(registry);
    for (int n = 1; n <= kEnvFileNames; ++n) {
        std::error_code ec;
        const std::string path = env_file_name(dir, name, n);
        if (!fs::exists(fs::symlink_status(path, ec))) return path;
    }
    return env_file_name(dir, name, 1);
}

mcpd::Result<std::string> env_file_text(
    const std::vector<std::pair<std::string, std::string>>& env) {
    std::string text;
    for (const auto& [key, value] : env) {
        if (value.find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos)
            return mcpd::permanent_failure("the value of its env variable " + key +
                                           " spans lines, which an env file cannot hold");
        text += key + "=" + env_value(value) + "\n";
    }
    // Read back as mcpd will: the same variables, or it is not written.
    const mcpd::config::EnvFileResult parsed = mcpd::config::parse_env_file(text);
    const std::map<std::string, std::string> wanted(env.begin(), env.end());
    if (!parsed.errors.empty() || parsed.vars != wanted)
        return mcpd::permanent_failure(
            "its env variables cannot be written to an env file as they are (a name that is "
            "not letters, digits and '_', or one given twice)");
    return text;
}

int reload_after_write(const Context& ctx, const std::string& wrote, json& report) {
    const bool json_mode = ctx.output.json();
    DaemonClient client(ctx.endpoint);
    mcpd::control::Reply reply;
    if (!client.connect() || !client.call(mcpd::control::to_json(mcpd::control::ReloadRequest{}),
                                          reply, kReplyTimeout)) {
        if (client.error().code == "not_running") {
            report["reload"] = nullptr;
            if (!json_mode)
                ctx.output.error(wrote + "; mcpd is not running (nothing listens on " +
                                 ctx.endpoint.describe() + "), it will read them when it starts");
            return kExitOk;
        }
        if (json_mode)
            report["error"] = {{"code", client.error().code}, {"message", client.error().message}};
        else
            ctx.output.error(wrote + "; " + client.error().message);
        return client.error().exit_code;
    }
    if (!reply.ok) {
        if (json_mode) {
            report["error"] = reply.error;
        } else {
            ctx.output.error(wrote + ", but mcpd did not reload it:");
            ctx.output.daemon_error(reply.error);
        }
        return kExitError;
    }
    const json& reload = reply.result;
    report["reload"] = reload;
    if (!json_mode) {
        const mcpd::Result<const Command*> reload_command = find_command("reload");
        ctx.output.print_text(wrote + "; mcpd reloaded it:\n" +
                              (reload_command && reload_command.value()->render
                                   ? reload_command.value()->render(reload)
                                   : reload.dump() + '\n'));
    }
    return kExitOk;
}

}  // namespace mcpctl
