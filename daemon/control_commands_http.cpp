// ControlCommands: http_token (`mcpctl http-token [--rotate]`). Each user gets its own bearer
// token for the HTTP front door's TCP addresses, and only its own: the token is who the
// request acts as (docs/HTTP.md). It is told only over the control socket, whose peer
// credentials say who asks.
#include "common/log.h"
#include "daemon/control_commands.h"
#include "daemon/daemon.h"

namespace mcpd {

using nlohmann::json;

void ControlCommands::http_token(ControlConnection& c, const json& request) {
    const Result<control::HttpTokenRequest> parsed = control::parse_http_token(request);
    if (!parsed) {
        c.reply_error(control::code::bad_request, parsed.error());
        return;
    }
    HttpFront* http = daemon_.http();
    if (http == nullptr) {
        c.reply_error(control::code::failed, "mcpd does not serve HTTP yet");
        return;
    }
    const Result<std::string> token = http->token_for(c.peer().uid, parsed->rotate);
    if (!token) {
        log::error("http-token for uid " + std::to_string(c.peer().uid) + ": " + token.error());
        c.reply_error(control::code::failed, token.error());
        return;
    }
    if (parsed->rotate) log::info("uid " + std::to_string(c.peer().uid) + " rotated its HTTP token");
    c.reply_ok({{"token", token.value()}, {"addresses", http->addresses()}});
}

}  // namespace mcpd
