// The terminal for a full-screen view (mcpctl top), taken over for as long as the object lives:
// the alternate screen with the cursor hidden, keys read one at a time without echo, and the
// signals that end or resize the view caught. The destructor gives everything back, however
// the view ends (a key, a signal, an error).
#pragma once

#include <signal.h>
#include <termios.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"

namespace mcpctl {

class TerminalScreen {
public:
    // Draw on `out_fd`, a terminal. Keys are read from `in_fd` when it is a terminal too
    // (no echo, no line editing, ^C read as a key rather than sent as SIGINT).
    TerminalScreen(int in_fd, int out_fd);
    ~TerminalScreen();
    TerminalScreen(const TerminalScreen&) = delete;
    TerminalScreen& operator=(const TerminalScreen&) = delete;

    struct Size {
        std::size_t width;
        std::size_t height;
    };
    // The window's size (TIOCGWINSZ); 80x24 when the terminal does not say.
    Size size() const;

    // Replace the screen's contents with `lines`, each at most the width.
    void draw(const std::vector<std::string>& lines);

    struct Event {
        enum class Kind { timeout, key, resized, signal };
        Kind kind = Kind::timeout;
        char key = 0;   // Kind::key
        int signo = 0;  // Kind::signal: SIGINT, SIGTERM or SIGHUP
    };
    // Wait until `deadline` for a key, a change of the window's size or a signal that ends the
    // view. Keys typed together come out one per call.
    Event wait(mcpd::TimePoint deadline);

private:
    // Write all of `bytes` to the terminal (a terminal that went away is ignored).
    void write_all(const std::string& bytes) const;

    int in_fd_;
    int out_fd_;
    std::optional<termios> saved_termios_;
    sigset_t saved_mask_{};
    sigset_t wait_mask_{};
    struct sigaction saved_actions_[4]{};
    bool keys_closed_ = false;  // the input hung up
    std::string pending_keys_;
};

}  // namespace mcpctl
