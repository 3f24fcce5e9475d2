// mcpctl top [NAME...]: the stats table refreshed every tick, like top(1). On a terminal it
// takes the screen (terminal_screen) and reads keys; otherwise it prints one plain screen.
#include <poll.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <iostream>
#include <limits>

#include "common/control_protocol.h"
#include "ctl/command.h"
#include "ctl/daemon_client.h"
#include "ctl/interrupt.h"
#include "ctl/output.h"
#include "ctl/stats_view.h"
#include "ctl/terminal_screen.h"

namespace mcpctl {

namespace {

namespace control = mcpd::control;
using mcpd::Clock;
using nlohmann::json;

constexpr OptionSpec kOptions[] = {
    {'\0', "sort", "KEY", "name, calls (default), errors, p99, cpu or rss"},
    {'\0', "tools", "", "a row per tool and method under the servers"},
    {'\0', "interval", "SECONDS", "time between two refreshes (default 1)"},
    {'\0', "iterations", "N", "stop after N refreshes"},
};

// The shortest interval: mcpd samples /proc for each request.
constexpr mcpd::Duration kMinInterval = std::chrono::milliseconds(100);
// A kept connection is used again only this soon after its last answer: mcpd closes a control
// connection that is idle for 10 s.
constexpr mcpd::Duration kKeepConnectionFor = std::chrono::seconds(5);
// How long a tick waits for mcpd.
constexpr mcpd::Duration kTickTimeout = std::chrono::seconds(10);

struct TopOptions {
    SortKey sort = SortKey::calls;
    bool tools = false;
    mcpd::Duration interval = std::chrono::seconds(1);
    std::optional<long> iterations;  // unset: until q (on a terminal), else 1
};

// All of `text` read as a number; nullopt when it is anything else.
template <typename Number>
std::optional<Number> parse_number(std::string_view text) {
    Number value{};
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
    return value;
}

mcpd::Result<TopOptions> parse_options(const CommandLine& line) {
    TopOptions options;
    options.tools = line.has("tools");
    if (line.has("sort")) {
        const std::optional<SortKey> key = sort_key_named(line.value("sort"));
        if (!key)
            return mcpd::permanent_failure(
                "--sort wants one of name, calls, errors, p99, cpu, rss, not '" +
                line.value("sort") + "'");
        options.sort = *key;
    }
    if (line.has("interval")) {
        const std::optional<double> seconds = parse_number<double>(line.value("interval"));
        if (!seconds || !(*seconds >= 0.1) || *seconds > 86400)
            return mcpd::permanent_failure(
                "--interval wants a number of seconds from 0.1 to 86400 (such as 2 or 0.5), "
                "not '" +
                line.value("interval") + "'");
        options.interval =
            std::max(kMinInterval, mcpd::Duration(static_cast<long>(*seconds * 1000)));
    }
    if (line.has("iterations")) {
        const std::optional<long> count = parse_number<long>(line.value("iterations"));
        if (!count || *count < 1)
            return mcpd::permanent_failure(
                "--iterations wants a number of refreshes (1 or more), not '" +
                line.value("iterations") + "'");
        options.iterations = count;
    }
    return options;
}

mcpd::Result<json> build(const CommandLine& line) {
    const mcpd::Result<TopOptions> options = parse_options(line);
    if (!options) return options.failure();
    return control::to_json(control::StatsRequest{.servers = line.args, .tools = options->tools});
}

// The stats of each tick. One connection is kept while ticks come often enough, and a new one
// is made otherwise, or once when the kept one failed (mcpd may have closed it meanwhile).
class StatsSource {
public:
    explicit StatsSource(Endpoint endpoint) : endpoint_(std::move(endpoint)) {}

    // The result for `request`; false when there is none, and report() says why.
    bool fetch(const json& request, json& result) {
        control::Reply reply;
        if (!call(request, reply)) return false;
        if (!reply.ok) {
            client_error_.reset();
            daemon_error_ = std::move(reply.error);
            return false;
        }
        result = std::move(reply.result);
        return true;
    }

    // Print why the last fetch failed; returns the exit code.
    int report(Output& output) const {
        if (client_error_) {
            output.client_error(*client_error_);
            return client_error_->exit_code;
        }
        output.daemon_error(daemon_error_);
        return kExitError;
    }

private:
    // Send on the kept connection when it is recent, else (or when that failed) on a new one.
    bool call(const json& request, control::Reply& reply) {
        if (client_ && Clock::now() - last_answer_ < kKeepConnectionFor &&
            client_->call(request, reply, kTickTimeout)) {
            last_answer_ = Clock::now();
            return true;
        }
        client_.emplace(endpoint_);
        if (client_->connect() && client_->call(request, reply, kTickTimeout)) {
            last_answer_ = Clock::now();
            return true;
        }
        client_error_ = client_->error();
        client_.reset();
        return false;
    }

    Endpoint endpoint_;
    std::optional<DaemonClient> client_;
    Clock::time_point last_answer_{};
    std::optional<ClientError> client_error_;
    json daemon_error_;
};

// Sleep for `interval`; false when ^C came first.
bool sleep_for(mcpd::Duration interval, const InterruptGuard& interrupt) {
    const auto deadline = Clock::now() + interval;
    while (!interrupt.fired()) {
        const auto left = deadline - Clock::now();
        if (left <= Clock::duration::zero()) return true;
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        const timespec timeout{static_cast<time_t>(ns / 1'000'000'000),
                               static_cast<long>(ns % 1'000'000'000)};
        ::ppoll(nullptr, 0, &timeout, &interrupt.wait_mask());
    }
    return false;
}

// The width of a plain screen: $COLUMNS when it is a number, else 80.
std::size_t plain_width() {
    const char* columns = std::getenv("COLUMNS");
    const std::optional<std::size_t> width =
        columns ? parse_number<std::size_t>(columns) : std::nullopt;
    return width && *width > 0 ? *width : 80;
}

std::string plain_screen(const json& result, const TopOptions& options) {
    const TopView view{options.sort, options.tools, plain_width(),
                       std::numeric_limits<std::size_t>::max()};
    return join(top_screen(result, view), "\n") + "\n";
}

// Without a terminal (or with --json): --iterations ticks (default 1), then the last screen,
// or every result as a JSON line.
int run_plain(const Context& ctx, const TopOptions& options, const json& request,
              StatsSource& source, json result) {
    const InterruptGuard interrupt;
    if (ctx.output.json()) ctx.output.print_json(result);
    for (long tick = 1; tick < options.iterations.value_or(1); ++tick) {
        if (!sleep_for(options.interval, interrupt)) break;
        if (!source.fetch(request, result)) return source.report(ctx.output);
        if (ctx.output.json()) ctx.output.print_json(result);
    }
    if (!ctx.output.json()) ctx.output.print_text(plain_screen(result, options));
    return kExitOk;
}

// What a key asks for.
enum class KeyAction { none, quit, redraw, refresh };

KeyAction apply_key(char key, TopView& view) {
    switch (key) {
        case 'q':
        case 'Q':
        case '\x03':  // ^C: the terminal sends it as a key while the screen is ours
            return KeyAction::quit;
        case 's':
        case '>':
            view.sort = next_sort_key(view.sort);
            return KeyAction::redraw;
        case '<':
            view.sort = next_sort_key(view.sort, -1);
            return KeyAction::redraw;
        case 't':
            view.tools = !view.tools;
            return view.tools ? KeyAction::refresh : KeyAction::redraw;
        case ' ':
            return KeyAction::refresh;
        default:
            return KeyAction::none;
    }
}

// How the screen ended.
struct ScreenEnd {
    bool failed = false;   // mcpd did not answer: source.report() says why
    bool ran_out = false;  // --iterations were done
    int signo = 0;         // SIGINT, SIGTERM or SIGHUP
};

// Draw, wait for the tick, a key or a signal, fetch; until q, a signal or an error.
ScreenEnd screen_loop(TerminalScreen& screen, const TopOptions& options,
                      control::StatsRequest request, StatsSource& source, json& result) {
    TopView view{options.sort, options.tools};
    long ticks = 1;
    auto next_tick = Clock::now() + options.interval;
    for (;;) {
        const TerminalScreen::Size size = screen.size();
        view.width = size.width;
        view.height = size.height;
        screen.draw(top_screen(result, view));
        if (options.iterations && ticks >= *options.iterations) return {.ran_out = true};

        const TerminalScreen::Event event = screen.wait(next_tick);
        bool refresh = event.kind == TerminalScreen::Event::Kind::timeout;
        if (event.kind == TerminalScreen::Event::Kind::signal) return {.signo = event.signo};
        if (event.kind == TerminalScreen::Event::Kind::key) {
            const KeyAction action = apply_key(event.key, view);
            if (action == KeyAction::quit) return {};
            refresh = action == KeyAction::refresh;
        }
        if (!refresh) continue;
        request.tools = view.tools;
        if (!source.fetch(control::to_json(request), result)) return {.failed = true};
        ++ticks;
        next_tick = Clock::now() + options.interval;
    }
}

// On the terminal: the screen until q; the terminal is given back before anything is printed.
int run_screen(const Context& ctx, const TopOptions& options, const control::StatsRequest& request,
               StatsSource& source, json result) {
    ScreenEnd end;
    {
        TerminalScreen screen(STDIN_FILENO, STDOUT_FILENO);
        end = screen_loop(screen, options, request, source, result);
    }
    if (end.failed) return source.report(ctx.output);
    if (end.signo == SIGTERM || end.signo == SIGHUP) {
        // Die of it, as without the screen, now that the terminal is restored.
        ::signal(end.signo, SIG_DFL);
        ::raise(end.signo);
        return 128 + end.signo;
    }
    // The last screen stays in the terminal's history when the refreshes ran out.
    if (end.ran_out) ctx.output.print_text(plain_screen(result, options));
    return kExitOk;
}

// The screen is for a terminal on the process's own stdout, and never for --json.
bool on_terminal(const Context& ctx) {
    return !ctx.output.json() && ctx.output.out().rdbuf() == std::cout.rdbuf() &&
           ::isatty(STDOUT_FILENO) == 1;
}

int exec(const Context& ctx) {
    const TopOptions options = parse_options(ctx.line()).value();  // build checked them
    const control::StatsRequest request{ctx.line().args, options.tools, false};
    StatsSource source(ctx.endpoint);
    // The first answer before the screen: a failure (or ssh asking for a password) is seen
    // on the terminal as it is.
    json result;
    if (!source.fetch(control::to_json(request), result)) return source.report(ctx.output);
    if (on_terminal(ctx)) return run_screen(ctx, options, request, source, std::move(result));
    return run_plain(ctx, options, control::to_json(request), source, std::move(result));
}

}  // namespace

extern const Command cmd_top{
    .name = "top",
    .usage = "top [NAME...] [--sort KEY] [--tools] [--interval SECONDS] [--iterations N]",
    .summary = "show the stats table, refreshed every second",
    .help =
        "The table of 'mcpctl stats' (see 'mcpctl stats --help' for its columns), of every\n"
        "server or of the named ones, refreshed every --interval seconds (default 1) on the\n"
        "whole terminal, under a line with mcpd's uptime and the number of servers,\n"
        "sessions and calls per second. The column the rows are sorted by is marked '*'.\n"
        "Keys:\n"
        "  q, ^C    quit\n"
        "  s, >     sort by the next key: name, calls, errors, p99, cpu, rss\n"
        "  <        sort by the previous key\n"
        "  t        show or hide a row per tool and method of each server\n"
        "  space    refresh now\n"
        "With --iterations N, stop after N refreshes and leave the last screen printed.\n"
        "When stdout is not a terminal, print one plain screen (no escape sequences) after\n"
        "--iterations refreshes (default 1), as wide as $COLUMNS (default 80). With --json,\n"
        "print mcpd's reply as one JSON line per refresh, --iterations of them (default 1).\n"
        "Exits with 0 on q, 1 when mcpd refuses, 3 when nothing listens or mcpd went away.\n",
    .options = kOptions,
    .min_args = 0,
    .max_args = Command::kUnlimited,
    .build = build,
    .render = nullptr,
    .exec = exec,
};

}  // namespace mcpctl
