// Router: replay after a crash (docs/MULTIPLEXING.md, "Replay after a crash"). When a child
// dies, each session request it had is sent to the next child or answered with
// data.outcome = "unknown", as replay_policy.h decides. What a request needs for that is
// gathered as it passes: a copy of its line when it could be replayed (bounded by
// ReplayState::kMaxKeptBytes), whether progress on it reached its session, and how many
// children died with it. The lines the child never got are read back from its unwritten
// stdin: the id and progress token mcpd gave it are put back to the session's own.
#include <algorithm>
#include <iterator>

#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/router.h"

namespace mcpd {

void Router::keep_for_replay(std::uint64_t child_id, std::string_view line,
                             const wire::Envelope& e, std::string_view tool, bool sent) {
    if (sent) {
        // The usual call on the usual server is decided first, without comparing a method.
        if (config_.replay == config::Replay::off) return;
        std::optional<ToolHints> hints;
        if (!tool.empty()) {
            if (config_.replay != config::Replay::annotated) return;
            hints = replay_.hints(tool);
        }
        if (!worth_keeping(e.method, hints, config_.replay)) return;
    }
    Pending* p = requests_.find(child_id);
    if (p == nullptr) return;
    p->kept = replay_.keep(line);
    p->unsent = !sent;
}

std::unordered_map<std::uint64_t, std::string> Router::unwritten_requests(
    std::string_view unwritten) {
    // The first line may be the rest of one the pipe took in part: it does not scan as a
    // message (its start is missing, and what is left closes more than it opens), so only
    // whole lines are found. Each is a request mcpd wrote, with mcpd's id for the child.
    std::unordered_map<std::uint64_t, std::string> found;
    std::string line;
    while (!unwritten.empty()) {
        const std::size_t end = unwritten.find('\n');
        if (end == std::string_view::npos) break;
        line.assign(unwritten.substr(0, end));
        unwritten.remove_prefix(end + 1);
        wire::Envelope e;
        if (scanner_.scan(line, e) != wire::ScanStatus::ok || !e.is_request()) continue;
        const std::optional<std::uint64_t> child_id = jsonrpc::given_id(e.id.in(line));
        if (!child_id) continue;
        const Pending* p = requests_.find(*child_id);
        if (p == nullptr || p->kind != PendingKind::forward) continue;
        wire::Replacements changes{{e.id, p->original_id}};
        if (!e.progress_token.empty()) {
            const ProgressRoute* route = requests_.progress_route(e.progress_token.in(line));
            if (route == nullptr) continue;
            changes.push_back({e.progress_token, route->original_token});
        }
        std::string original;
        wire::splice(line, changes, original);
        found.emplace(*child_id, std::move(original));
    }
    return found;
}

ReplayVerdict Router::decide_replay(std::uint64_t child_id, const Pending& p,
                                    const std::unordered_map<std::uint64_t, std::string>& unwritten,
                                    Replay& replay) {
    const auto never_written = unwritten.find(child_id);
    ReplayFacts facts;
    facts.written = never_written == unwritten.end() && !p.unsent;
    facts.progressed = p.progressed;
    facts.crashes = p.crashes;
    facts.mode = config_.replay;
    std::string_view method;
    std::string_view line;
    wire::Envelope e;
    std::string scanned;
    if (never_written != unwritten.end()) {
        line = never_written->second;
    } else if (p.kept.kept()) {
        line = p.kept.text();
    }
    if (!line.empty()) {
        scanned.assign(line);
        if (scanner_.scan(scanned, e) == wire::ScanStatus::ok) method = e.method;
    }
    facts.method = method;
    std::string unescaped;
    if (method == "tools/call" && config_.replay == config::Replay::annotated)
        facts.tool = replay_.hints(e.name_in(scanned, unescaped));
    ReplayVerdict verdict = replay_verdict(facts);
    // Without its line (over the budget, or a method not kept) nothing can be sent again.
    if (sent_again(verdict) && method.empty()) verdict = ReplayVerdict::unknown;
    replay_.count(verdict);
    if (!sent_again(verdict)) return verdict;
    replay.child_id = child_id;
    replay.session = p.session;
    replay.line = std::move(scanned);
    replay.crashes = p.crashes + (facts.written ? 1 : 0);
    return verdict;
}

void Router::fail_queued(Queued& q, std::string_view message, std::string_view reason) {
    wire::Envelope e;
    if (scanner_.scan(q.line, e) != wire::ScanStatus::ok || !e.is_request()) return;
    // A replayed request reached a child before: it may have run there.
    if (q.crashes > 0) {
        sessions_out_.send(q.session, jsonrpc::error_with_outcome(e.id.in(q.line),
                                                                  jsonrpc::kInternalError, message,
                                                                  reason, "unknown"));
        return;
    }
    reply_error(q.session, e.id.in(q.line), jsonrpc::kInternalError, message, reason);
}

void Router::requeue(std::vector<Replay> replays, std::deque<Waiting> turns,
                     const std::string& reason) {
    if (replays.empty() && turns.empty()) return;
    // In the order they were sent (child ids grow), then those that waited their turn, all
    // ahead of the lines that came after them.
    std::sort(replays.begin(), replays.end(),
              [](const Replay& a, const Replay& b) { return a.child_id < b.child_id; });
    // Lines queued meanwhile expire first (the queue expires from its front).
    TimePoint deadline = env_.now() + config_.start_timeout;
    if (!queue_.empty()) deadline = std::min(deadline, queue_.front().deadline);
    std::deque<Queued> ahead;
    const auto wait = [&](SessionId session, std::string line, unsigned crashes) {
        SessionState* s = find(session);
        if (s == nullptr) return;
        Queued q{session, std::move(line), deadline, crashes};
        if (!admit_waiting(*s, q.line)) {
            fail_queued(q, "the server stopped before answering, and too much of this session "
                           "waits for the next one; send it again once the server is back",
                        reason);
            return;
        }
        ahead.push_back(std::move(q));
    };
    for (Replay& replay : replays) wait(replay.session, std::move(replay.line), replay.crashes);
    for (Waiting& turn : turns) wait(turn.session, std::move(turn.line), turn.crashes);
    queue_.insert(queue_.begin(), std::make_move_iterator(ahead.begin()),
                  std::make_move_iterator(ahead.end()));
    env_.want_child();
    env_.deadlines_changed();
}

}  // namespace mcpd
