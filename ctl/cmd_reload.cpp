// mcpctl reload: re-read the registry and report what changed.
#include "common/control_protocol.h"
#include "ctl/command.h"
#include "ctl/output.h"

namespace mcpctl {

namespace {

constexpr OptionSpec kOptions[] = {
    {'\0', "allow-remove-all", "", "apply a registry that removes every server"},
};

mcpd::Result<nlohmann::json> build(const CommandLine& line) {
    return mcpd::control::to_json(mcpd::control::ReloadRequest{line.has("allow-remove-all")});
}

// "added: a, b" per category, "-" when a category is empty.
std::string render(const nlohmann::json& result) {
    std::string text;
    for (const char* key : {"added", "removed", "changed", "unchanged"}) {
        std::vector<std::string> names;
        if (result.contains(key) && result[key].is_array())
            for (const auto& name : result[key])
                names.push_back(name.is_string() ? name.get<std::string>() : name.dump());
        text += std::string(key) + ": " + (names.empty() ? "-" : join(names, ", ")) + '\n';
    }
    return text;
}

}  // namespace

extern const Command cmd_reload{
    .name = "reload",
    .usage = "reload [--allow-remove-all]",
    .summary = "re-read the registry and apply what changed",
    .help =
        "Ask mcpd to re-read its registry file (as SIGHUP does). Only added, removed and\n"
        "changed servers are touched; the others keep running. Prints the names in each\n"
        "category. When the file has errors mcpd keeps the running configuration, and\n"
        "mcpctl prints each error (file:line:column: message) and exits with 1.\n"
        "\n"
        "A registry that would remove every running server (an empty file, or one an\n"
        "editor is still writing) is refused the same way unless --allow-remove-all is\n"
        "given.\n",
    .options = kOptions,
    .min_args = 0,
    .max_args = 0,
    .build = build,
    .render = render,
    .exec = exec_request,
};

}  // namespace mcpctl
