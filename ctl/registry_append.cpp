#include "ctl/registry_append.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "common/control_protocol.h"
#include "ctl/command.h"
#include "ctl/daemon_client.h"
#include "ctl/output.h"

namespace mcpctl {

namespace fs = std::filesystem;
using nlohmann::json;

mcpd::Result<std::string> read_text_file(const std::string& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) return mcpd::permanent_failure("is a directory, not a file");
    std::ifstream in(path, std::ios::binary);
    if (!in) return mcpd::permanent_failure(std::string("cannot be read: ") + std::strerror(errno));
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) return mcpd::permanent_failure("cannot be read");
    return buffer.str();
}

mcpd::Result<std::string> read_registry(const std::string& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return std::string();
    mcpd::Result<std::string> read = read_text_file(path);
    if (!read) return mcpd::permanent_failure(path + ": " + read.error());
    return read;
}

mcpd::Result<mcpd::Done> append_to_registry(const std::string& path, std::string_view existing,
                                            std::string_view toml) {
    std::error_code ec;
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty() && !fs::create_directories(parent, ec) && ec)
        return mcpd::permanent_failure("cannot create " + parent.string() + ": " + ec.message());
    std::string text;
    if (!existing.empty()) text = existing.ends_with('\n') ? "\n" : "\n\n";
    text += toml;
    std::ofstream out(path, std::ios::binary | std::ios::app);
    if (!out || !(out << text) || !out.flush())
        return mcpd::permanent_failure("cannot write " + path + ": " + std::strerror(errno));
    return mcpd::Done{};
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
