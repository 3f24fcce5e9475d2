#include "daemon/mux/replay_policy.h"

#include <array>
#include <iterator>

namespace mcpd {

bool safe_to_repeat(std::string_view method) {
    static constexpr std::array<std::string_view, 9> kSafe = {
        "tools/list",     "prompts/list",          "resources/list",
        "resources/templates/list", "resources/read", "prompts/get",
        "completion/complete",      "ping",           "server/discover"};
    for (std::string_view safe : kSafe) {
        if (method == safe) return true;
    }
    return false;
}

bool tool_repeatable(const ToolHints& hints) {
    if (hints.destructive == true) return false;
    if (hints.read_only == true) return true;
    return hints.idempotent == true && hints.destructive == false;
}

bool worth_keeping(std::string_view method, const std::optional<ToolHints>& tool,
                   config::Replay mode) {
    if (mode == config::Replay::off) return false;
    if (safe_to_repeat(method)) return true;
    return mode == config::Replay::annotated && method == "tools/call" && tool &&
           tool_repeatable(*tool);
}

ReplayVerdict replay_verdict(const ReplayFacts& facts) {
    // Nothing of it reached the child: sending it now is as if it had come a moment later.
    if (!facts.written) return ReplayVerdict::unwritten;
    // Progress means the child was working on it: whatever it did may have happened.
    if (facts.progressed) return ReplayVerdict::progressed;
    // In flight when the child before died too: it may be what kills them.
    if (facts.crashes > 0) return ReplayVerdict::poison;
    if (!worth_keeping(facts.method, facts.tool, facts.mode)) return ReplayVerdict::unknown;
    return safe_to_repeat(facts.method) ? ReplayVerdict::safe : ReplayVerdict::annotated;
}

std::string_view unknown_outcome_message(ReplayVerdict verdict) {
    switch (verdict) {
        case ReplayVerdict::progressed:
            return "the server stopped while it was working on this request (it had reported "
                   "progress); it may have run: check its effect before sending it again";
        case ReplayVerdict::poison:
            return "the server stopped before answering, and so did the one before it with "
                   "this request in flight: it is not sent again; it may have run, and it may "
                   "be what stops the server (see 'mcpctl logs')";
        default:
            return "the server stopped before answering; the request may have run: check its "
                   "effect before sending it again";
    }
}

std::string_view to_string(ReplayVerdict verdict) {
    // In the order of the enum, as kReplayVerdicts lists it.
    static constexpr std::string_view kNames[] = {"unwritten", "safe",       "annotated",
                                                  "unknown",   "progressed", "poison"};
    static_assert(std::size(kNames) == std::size(kReplayVerdicts));
    return kNames[static_cast<std::size_t>(verdict)];
}

}  // namespace mcpd
