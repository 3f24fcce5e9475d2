// Which requests in flight when a child dies are sent to the child that follows it, decided
// per request from what mcpd knows of it (docs/MULTIPLEXING.md, "Replay after a crash").
// Pure: the Router gathers the facts and carries out the verdict.
#pragma once

#include <optional>
#include <string_view>

#include "config/registry.h"

namespace mcpd {

// The annotations a child listed for a tool; unset: the tool did not say.
struct ToolHints {
    std::optional<bool> read_only;
    std::optional<bool> idempotent;
    std::optional<bool> destructive;
    bool operator==(const ToolHints&) const = default;
};

struct ReplayFacts {
    std::string_view method;
    bool written = true;     // some of its bytes reached the child's pipe
    bool progressed = false; // a progress notification of it was relayed to its session
    unsigned crashes = 0;    // children that died with it in flight before this one
    // tools/call: the hints the child listed for the tool called; unset: none known.
    std::optional<ToolHints> tool;
    config::Replay mode = config::Replay::safe;
};

enum class ReplayVerdict {
    unwritten,  // never reached the child: sent to the next as if it had just come
    safe,       // a method the specification makes safe to repeat: sent once more
    annotated,  // a tool the child marks read-only or idempotent (replay = "annotated")
    unknown,    // it may have run: answered -32603 with data.outcome = "unknown"
    progressed, // the same, because the child had already reported progress on it
    poison,     // the same, because it was in flight when the child before died too
};

inline constexpr ReplayVerdict kReplayVerdicts[] = {
    ReplayVerdict::unwritten, ReplayVerdict::safe,       ReplayVerdict::annotated,
    ReplayVerdict::unknown,   ReplayVerdict::progressed, ReplayVerdict::poison};

inline bool sent_again(ReplayVerdict verdict) {
    return verdict == ReplayVerdict::unwritten || verdict == ReplayVerdict::safe ||
           verdict == ReplayVerdict::annotated;
}

// Whether repeating `method` is harmless by the specification: the lists, resources/read,
// prompts/get, completion/complete, ping and server/discover.
bool safe_to_repeat(std::string_view method);

// Whether a tool with `hints` may be called again: read-only and not marked destructive, or
// idempotent and marked not destructive (the specification's default for destructiveHint is
// true). Contradictions fail closed.
bool tool_repeatable(const ToolHints& hints);

// Whether a request with these facts could be replayed if it turns out to have been written:
// only then does the Router keep a copy of its line.
bool worth_keeping(std::string_view method, const std::optional<ToolHints>& tool,
                   config::Replay mode);

ReplayVerdict replay_verdict(const ReplayFacts& facts);

std::string_view to_string(ReplayVerdict verdict);

// The error message for a request not sent again (unknown, progressed, poison).
std::string_view unknown_outcome_message(ReplayVerdict verdict);

}  // namespace mcpd
