#include "ctl/terminal_screen.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <iterator>

namespace mcpctl {

namespace {

// The signals caught while the screen lives: three that end the view, one that resizes it.
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
static_assert(std::size(kSignals) == 4, "saved_actions_ has one slot per signal");

volatile sig_atomic_t g_ending_signal = 0;
volatile sig_atomic_t g_resized = 0;

// Note the signal; the ppoll it interrupted returns EINTR and wait() reports it.
void on_signal(int signo) {
    if (signo == SIGWINCH)
        g_resized = 1;
    else
        g_ending_signal = signo;
}

// Alternate screen on, cursor hidden, screen cleared; and back.
constexpr const char kEnter[] = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";
constexpr const char kLeave[] = "\x1b[?25h\x1b[?1049l";

// CSI row;1 H: the cursor to the start of a row (1-based).
std::string move_to_row(std::size_t row) {
    return "\x1b[" + std::to_string(row) + ";1H";
}

}  // namespace

TerminalScreen::TerminalScreen(int in_fd, int out_fd)
    : in_fd_(::isatty(in_fd) ? in_fd : -1), out_fd_(out_fd) {
    g_ending_signal = 0;
    g_resized = 0;
    // Blocked except inside wait()'s ppoll, so none can slip in between a check and the wait.
    sigset_t block;
    sigemptyset(&block);
    for (const int signo : kSignals) sigaddset(&block, signo);
    sigprocmask(SIG_BLOCK, &block, &saved_mask_);
    wait_mask_ = saved_mask_;
    for (const int signo : kSignals) sigdelset(&wait_mask_, signo);

    for (std::size_t i = 0; i < std::size(kSignals); ++i) {
        sigaction(kSignals[i], nullptr, &saved_actions_[i]);
        // A signal the shell made us ignore (nohup, a background job's SIGINT) stays ignored.
        if (saved_actions_[i].sa_handler == SIG_IGN) continue;
        struct sigaction action {};
        action.sa_handler = on_signal;
        sigemptyset(&action.sa_mask);
        sigaction(kSignals[i], &action, nullptr);
    }

    termios raw{};
    if (in_fd_ >= 0 && ::tcgetattr(in_fd_, &raw) == 0) {
        saved_termios_ = raw;
        raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | ISIG);
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        ::tcsetattr(in_fd_, TCSANOW, &raw);
    }
    write_all(kEnter);
}

TerminalScreen::~TerminalScreen() {
    write_all(kLeave);
    if (saved_termios_) ::tcsetattr(in_fd_, TCSANOW, &*saved_termios_);
    // Unblock first, while our handlers still catch what is pending, then restore them.
    sigprocmask(SIG_SETMASK, &saved_mask_, nullptr);
    for (std::size_t i = 0; i < std::size(kSignals); ++i)
        sigaction(kSignals[i], &saved_actions_[i], nullptr);
}

TerminalScreen::Size TerminalScreen::size() const {
    winsize window{};
    if (::ioctl(out_fd_, TIOCGWINSZ, &window) == 0 && window.ws_col > 0 && window.ws_row > 0)
        return {window.ws_col, window.ws_row};
    return {80, 24};
}

void TerminalScreen::draw(const std::vector<std::string>& lines) {
    // Each line from its row's start, after erasing the row: an erase after the text would
    // take the last column of a line as wide as the window with it.
    std::string bytes;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        bytes += move_to_row(i + 1);
        bytes += "\x1b[2K";
        bytes += lines[i];
    }
    if (lines.size() < size().height) bytes += move_to_row(lines.size() + 1) + "\x1b[J";
    write_all(bytes);
}

TerminalScreen::Event TerminalScreen::wait(mcpd::TimePoint deadline) {
    for (;;) {
        if (!pending_keys_.empty()) {
            const char key = pending_keys_.front();
            pending_keys_.erase(0, 1);
            return {Event::Kind::key, key, 0};
        }
        if (g_ending_signal != 0) return {Event::Kind::signal, 0, g_ending_signal};
        if (g_resized != 0) {
            g_resized = 0;
            return {Event::Kind::resized, 0, 0};
        }
        const auto left = deadline - mcpd::Clock::now();
        if (left <= mcpd::Clock::duration::zero()) return {};
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        const timespec timeout{static_cast<time_t>(ns / 1'000'000'000),
                               static_cast<long>(ns % 1'000'000'000)};
        pollfd keys{in_fd_, POLLIN, 0};
        const bool reading = in_fd_ >= 0 && !keys_closed_;
        const int ready = ::ppoll(&keys, reading ? 1 : 0, &timeout, &wait_mask_);
        if (ready < 0 && errno != EINTR) keys_closed_ = true;  // nothing left to poll but time
        if (ready <= 0 || keys.revents == 0) continue;
        char buffer[64];
        const ssize_t got = ::read(in_fd_, buffer, sizeof buffer);
        if (got > 0)
            pending_keys_.append(buffer, static_cast<std::size_t>(got));
        else if (got == 0 || (errno != EINTR && errno != EAGAIN))
            keys_closed_ = true;  // the terminal hung up: go on without keys until a signal
    }
}

void TerminalScreen::write_all(const std::string& bytes) const {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t wrote = ::write(out_fd_, bytes.data() + done, bytes.size() - done);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) return;
        done += static_cast<std::size_t>(wrote);
    }
}

}  // namespace mcpctl
