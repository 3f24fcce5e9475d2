// Many idle control connections from one user, as an attacker or a runaway script opens them:
// a child of the test switches to that user's uid and gid (root only; or stays root, for the
// owner of a daemon the test runs as root), connects `count` times to mcpd's socket and sends
// nothing, holding every connection until told to check them or to quit.
//
// Written in C++ rather than a script: nothing beyond the test binary is needed on the
// machine. The child raises its own descriptor limit (as root, before switching) so that it
// can hold every connection.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>

#include "other_user.h"
#include "process.h"

namespace integration {

class ConnectionFlood {
public:
    // What the held connections looked like after a check.
    struct Check {
        int open = 0;    // still open, nothing received
        int closed = 0;  // mcpd closed them (EOF), after answering or not
        // The "code" of the error each answered connection got first ("none": closed without
        // an answer; "ok": a successful reply).
        std::map<std::string, int> answers;
        long long all_closed_ms = -1;  // when the last one was seen closed; -1: some stay open

        // How many got `code` as their answer.
        int answered(const std::string& code) const {
            const auto it = answers.find(code);
            return it == answers.end() ? 0 : it->second;
        }
        // "open 64, closed 136, limit 136" for messages.
        std::string describe() const;
    };

    // Fork, become `user`, connect `count` times to `socket_path`; returns once every attempt
    // is made, or after the first that fails (mcpd stopped accepting: a connect then waits
    // 5 s on the full backlog before it fails). FAILs when the child cannot be started.
    ConnectionFlood(const std::string& socket_path, const OtherUser& user, int count)
        : ConnectionFlood(socket_path, user.uid(), user.gid(), count) {}
    // The same as any uid and gid: the test's own (root) for mcpd's owner.
    ConnectionFlood(const std::string& socket_path, uid_t uid, gid_t gid, int count);
    ~ConnectionFlood();
    ConnectionFlood(const ConnectionFlood&) = delete;
    ConnectionFlood& operator=(const ConnectionFlood&) = delete;

    int connected() const { return connected_; }
    // Why the last attempt failed ("" when none did).
    const std::string& connect_error() const { return connect_error_; }
    long long connect_ms() const { return connect_ms_; }

    // Read every connection still open for up to `within` (less when all are closed before).
    Check check(Duration within);

private:
    std::string request(const std::string& line, Duration timeout);

    pid_t pid_ = -1;
    int to_child_ = -1;
    int from_child_ = -1;
    int connected_ = 0;
    std::string connect_error_;
    long long connect_ms_ = 0;
};

}  // namespace integration
