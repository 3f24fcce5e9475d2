// What a Router needs from around it (RouterEnvironment: the clock, the child's stdin, timers,
// notes, and the daemon's part in legacy processes, projects, the request log and lazy
// servers), and what it tells of itself (SettledRequest for the request log, SessionSummary
// for status). The daemon's ManagedServer implements it; unit tests implement it in memory.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "daemon/mux/catalog.h"
#include "daemon/mux/session_sink.h"
#include "daemon/mux/traffic_stats.h"

namespace mcpd {

// One settled request, for the request log (RouterEnvironment::request_settled). Never its
// arguments or its result.
struct SettledRequest {
    SessionId session = 0;
    std::string_view client;  // the name its client gave in initialize; empty before
    std::string_view method;
    std::string_view tool;  // tools/call: the tool; empty otherwise
    Outcome outcome = Outcome::reply;
    Clock::duration duration{};
    std::size_t bytes_in = 0, bytes_out = 0;
};

class RouterEnvironment {
public:
    virtual ~RouterEnvironment() = default;
    virtual TimePoint now() const = 0;
    // Write one line to the current child; false when there is none.
    virtual bool child_send(std::string_view line) = 0;
    // The next id of the current child's counter (shared with mcpd's own requests).
    virtual std::uint64_t child_next_id() = 0;
    // The same for a line in pieces (a message with ids spliced in), written in order. By
    // default the pieces are joined; the daemon writes them without joining.
    virtual bool child_send_spliced(std::span<const std::string_view> pieces);
    // A session wants the server: start it if it is not running.
    virtual void want_child() = 0;
    // The earliest deadline may have changed: call on_timer() at next_deadline().
    virtual void deadlines_changed() = 0;
    virtual void note(std::string_view message) = 0;
    // An event a peer may repeat without end (a stray reply, a declined request): `kind` is
    // a fixed phrase, `detail` this occurrence's. The daemon writes the first and counts the
    // rest (log::repeated); by default it is a note like any other.
    virtual void note_repeated(std::string_view kind, std::string_view detail);
    // A legacy client sent `initialize` to a modern (dual-era) child, whose process now
    // speaks the stateless era: legacy semantics need a process initialized for them. Hand
    // `line` (the initialize, then every later line of that session the router still sees)
    // to such a process; false when there is none to be had. By default there is none.
    virtual bool pass_to_legacy(SessionId session, std::string_view line);
    // sharing = "project": what session `session`'s client says its project is: the
    // ListRootsResult it answered mcpd's roots/list with, or null with `why` (it declared no
    // roots, did not answer within Router::kProjectWait, or answered an error). Its later
    // lines are held until Router::release_held, release_session or fail_held. By default
    // nothing is done.
    virtual void project_reported(SessionId session, const nlohmann::json* roots_result,
                                  std::string_view why);
    // A session that moved to another child while requests of its were here has had them
    // answered: it is gone from this child now. By default nothing is done.
    virtual void departed_session_gone(SessionId session);
    // sharing = "project": `session` cancelled a request this child does not have; it may be
    // at a child the session moved away from (Router::cancel_for_departed). By default
    // nothing is done.
    virtual void cancel_elsewhere(SessionId session, std::string_view line);
    // A request was settled, while the request log is on (Router::set_request_log). By
    // default nothing is done.
    virtual void request_settled(const SettledRequest& request);
    // A lazy server (Router::set_lazy): its child's lists were read again; `catalog` is what
    // sessions are answered from while it sleeps. By default nothing is done.
    virtual void catalog_refreshed(const Catalog& catalog);
    // A lazy server's child has answered nothing for its idle time and has no open work: it
    // may stop. By default nothing is done.
    virtual void child_idle();
};

// One session's SessionState as status shows it (Router::summaries).
struct SessionSummary {
    SessionId id = 0;
    std::string client_name;
    std::string client_version;
    std::string protocol;
    std::size_t in_flight = 0;
    TimePoint attached_at{};
};

}  // namespace mcpd
