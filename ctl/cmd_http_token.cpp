// mcpctl http-token [--rotate]: print the asker's bearer token for mcpd's HTTP front door over
// TCP (docs/HTTP.md). --rotate makes a new one; the old one stops working at once.
#include <string>

#include "common/control_protocol.h"
#include "common/json_read.h"
#include "ctl/command.h"

namespace mcpctl {

namespace {

constexpr OptionSpec kOptions[] = {
    {'\0', "rotate", "", "make a new token (the old one stops working at once)"},
};

mcpd::Result<nlohmann::json> build(const CommandLine& line) {
    return mcpd::control::to_json(mcpd::control::HttpTokenRequest{line.has("rotate")});
}

std::string render(const nlohmann::json& result) {
    return mcpd::json_read::string_or(result, "token", "") + "\n";
}

}  // namespace

extern const Command cmd_http_token{
    .name = "http-token",
    .usage = "http-token [--rotate]",
    .summary = "print your bearer token for MCP over HTTP",
    .help =
        "Prints your own token for mcpd's HTTP front door on TCP addresses ([daemon]\n"
        "http_listen): a client sends it as \"Authorization: Bearer TOKEN\" and its requests\n"
        "act as you. --rotate makes a new token; the old one stops working at once. Over\n"
        "mcpd's unix socket no token is needed: the socket says who connects.\n",
    .options = kOptions,
    .min_args = 0,
    .max_args = 0,
    .build = build,
    .render = render,
    .exec = exec_request,
};

}  // namespace mcpctl
