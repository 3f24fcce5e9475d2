// The new binary proves it can take mcpd's state before it is run in place (docs/UPGRADE.md):
// `BINARY --check-state 3` with the sealed state on descriptor 3, which must print exactly the
// acknowledgement carrying the state's digest and exit 0, within kTimeout. Run as a child of
// its own session, watched from the event loop, so nothing waits on it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "daemon/io/event_loop.h"
#include "daemon/io/fd_watcher.h"
#include "daemon/server/reaper.h"

namespace mcpd {

class StateCheck {
public:
    static constexpr Duration kTimeout = std::chrono::seconds(10);
    // What of its output is kept for the refusal's sentence.
    static constexpr std::size_t kMaxOutputBytes = 4096;
    using OnDone = std::function<void(Result<Done>)>;

    // Starts the check; `done` runs once, from the loop (never from here), and may destroy
    // the check.
    StateCheck(event_base* base, Reaper& reaper, const std::string& binary, int state_fd,
               std::string acknowledgement, OnDone done);
    // A check still running is killed.
    ~StateCheck();
    StateCheck(const StateCheck&) = delete;
    StateCheck& operator=(const StateCheck&) = delete;

private:
    void on_output();
    void on_exit(int status);
    void on_timeout();
    void finish_if_done();
    void finish(Result<Done> verdict);

    Reaper& reaper_;
    std::string binary_;
    std::string acknowledgement_;
    OnDone done_;
    pid_t pid_ = -1;
    UniqueFd output_fd_;
    FdWatcher output_;
    Timer timeout_;
    Timer start_failed_;  // reports a fork that failed, from the loop
    std::string start_error_;
    std::string output_text_;
    bool eof_ = false;
    bool exited_ = false;
    int status_ = 0;
    bool timed_out_ = false;
};

}  // namespace mcpd
