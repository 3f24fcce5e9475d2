// Deterministic CPU: instructions counted by valgrind's callgrind in mcpd and in the minimal
// relay for the same workloads. Each figure is the difference of two runs that differ only in
// the amount of work (N and 2N round trips, or one and two large results), so start-up and
// shut-down cancel out; the same difference per function (callgrind_annotate's self costs)
// says where the instructions go.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

#include "figures.h"
#include "http_session.h"

namespace bench {
namespace {

constexpr std::size_t kMiB = 1024 * 1024;

// The total instruction count in a callgrind output file.
double total_instructions(const std::string& path) {
    std::istringstream in(read_text(path));
    for (std::string line; std::getline(in, line);) {
        for (const char* key : {"summary: ", "totals: "}) {
            if (line.rfind(key, 0) == 0) return std::stod(line.substr(std::string(key).size()));
        }
    }
    throw std::runtime_error("no instruction total in " + path);
}

struct Work {
    int echoes = 0;
    int larges = 0;
    std::size_t large_bytes = 0;
    // Echoes pipelined through `sessions` sessions at once (figure 2's load), after the rest.
    int sessions = 0;
    int pipelined = 0;
};

// Requests in flight per session in the pipelined work (figure 2's default).
constexpr int kPipelineDepth = 8;

// The work's pipelined echoes through `sessions`, kPipelineDepth in flight each.
void drive_pipelined(std::vector<Session>& sessions, const Work& w, pid_t middle, pid_t server) {
    if (w.pipelined == 0) return;
    const Measure m =
        pipeline(sessions, sessions.size(), w.pipelined, kPipelineDepth, middle, server);
    if (m.misrouted != 0) throw std::runtime_error("callgrind: a pipelined reply was misrouted");
}

void drive(Session& s, const Work& w) {
    for (int i = 0; i < w.echoes; ++i) s.echo("hello");
    for (int i = 0; i < w.larges; ++i) s.large(w.large_bytes);
}

// How a session reaches mcpd: on the control socket, as a group session (a group of demo and
// demo2, calls prefixed), or over HTTP on mcpd's HTTP socket.
enum class Path { socket, group, http };

// mcpd's HTTP socket beside its control socket, once it is there.
std::string http_socket(const TempDir& dir, const std::string& name) {
    const std::string socket = dir.file(name + "-http.sock");
    for (int i = 0; i < 6000 && ::access(socket.c_str(), F_OK) != 0; ++i) sleep_ms(10);
    return socket;
}

// callgrind writes one file per process, named by its pid: a process mcpd or the relay forks
// is counted until it executes its program, and writes a profile of its own when it ends. In
// one shared file those profiles were interleaved, and a total could be the child's.
std::vector<std::string> valgrind_argv(const Config& c, const TempDir& dir,
                                       const std::string& name) {
    return {c.valgrind, "--tool=callgrind", "--callgrind-out-file=" + dir.file(name + ".%p.out"),
            "-q"};
}

// The output file of the process `pid` of the run `name`, copied to c.keep_profiles if asked.
std::string out_file(const Config& c, const TempDir& dir, const std::string& name, pid_t pid) {
    const std::string out = dir.file(name + "." + std::to_string(pid) + ".out");
    if (!c.keep_profiles.empty()) {
        std::filesystem::create_directories(c.keep_profiles);
        std::filesystem::copy_file(out, std::filesystem::path(c.keep_profiles) / (name + ".out"),
                                   std::filesystem::copy_options::overwrite_existing);
    }
    return out;
}

// Runs mcpd under callgrind for `w` (after the same warm-up every run has) through `path`;
// the output file.
std::string mcpd_run(const Config& c, const TempDir& dir, const std::string& name, const Work& w,
                     Path path = Path::socket) {
    McpdOptions options;
    options.prefix = valgrind_argv(c, dir, name);
    options.start_timeout_ms = 60000;
    options.max_message_bytes = 64 * kMiB;
    if (path == Path::group) {
        options.servers = 2;
        options.pair_group = true;
    }
    Mcpd mcpd(c.bin, dir, name, options);
    if (path == Path::http) {
        HttpSession s(http_socket(dir, name));
        std::uint64_t id = 1000;
        for (int i = 0; i < 20 + w.echoes; ++i) s.echo(id++);
    } else {
        Session s = path == Path::group ? mcpd.attach("pair") : mcpd.attach();
        if (path == Path::group) s.echo_tool = "demo__echo";
        drive(s, Work{20, 0, 0});
        drive(s, w);
        std::vector<Session> load;
        for (int i = 0; i < w.sessions; ++i) load.push_back(mcpd.attach());
        drive_pipelined(load, w, mcpd.pid(), mcpd.server_pid());
    }
    const pid_t pid = mcpd.pid();
    mcpd.stop(120000);
    return out_file(c, dir, name, pid);
}

std::string relay_run(const Config& c, const TempDir& dir, const std::string& name, const Work& w) {
    std::vector<std::string> argv = valgrind_argv(c, dir, name);
    const std::string socket = dir.file(name + ".sock");
    for (const std::string& a : {c.bin.relay, std::string("serve"), std::string("--socket"), socket,
                                 std::string("--init"), std::string("--")}) {
        argv.push_back(a);
    }
    for (const std::string& a : demo_argv(c.bin)) argv.push_back(a);
    Child relay(argv, Child::Options{false, dir.file(name + ".log"), {}});
    int fd = -1;
    for (int i = 0; i < 6000 && fd < 0; ++i) {
        try {
            fd = Channel::connect_unix(socket);
        } catch (const std::exception&) {
            sleep_ms(10);
        }
    }
    if (fd < 0) throw std::runtime_error("the relay under valgrind did not listen");
    {
        Session s;
        s.channel = std::make_unique<Channel>(fd, fd);
        drive(s, Work{20, 0, 0});
        drive(s, w);
        std::vector<Session> load;
        for (int i = 0; i < w.sessions; ++i) {
            load.emplace_back();
            const int more = Channel::connect_unix(socket);
            load.back().channel = std::make_unique<Channel>(more, more);
        }
        drive_pipelined(load, w, relay.pid(), relay.pid());
    }
    const pid_t pid = relay.pid();
    relay.stop(120000);
    return out_file(c, dir, name, pid);
}

// Instructions per function in a callgrind output file (self, or with its callees), from
// callgrind_annotate.
std::map<std::string, double> costs_by_function(const Config& c, const std::string& out,
                                                bool inclusive) {
    const std::string tool = c.valgrind.substr(0, c.valgrind.rfind('/') + 1) + "callgrind_annotate";
    const std::string command = tool + " --inclusive=" + (inclusive ? "yes" : "no") +
                                " --threshold=100 --auto=no " + out + " 2>/dev/null";
    std::FILE* pipe = ::popen(command.c_str(), "r");
    std::map<std::string, double> costs;
    if (pipe == nullptr) return costs;
    std::string text;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
        text.append(buffer, n);
    ::pclose(pipe);
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        // "  1,234,567 (12.34%)  file:function [object]"
        const auto paren = line.find(" (");
        const auto close = line.find(")  ");
        if (paren == std::string::npos || close == std::string::npos || close < paren) continue;
        std::string number;
        for (const char ch : line.substr(0, paren)) {
            if (ch >= '0' && ch <= '9') number += ch;
        }
        if (number.empty()) continue;
        std::string name = line.substr(close + 3);
        if (name.find("PROGRAM TOTALS") != std::string::npos) continue;
        costs[name] += std::stod(number);
    }
    return costs;
}

// The functions whose cost grows with the work: (cost in `more` - cost in `less`) / units,
// largest first, as "instructions  function" lines.
std::string profile_difference(const Config& c, const std::string& less, const std::string& more,
                               double units, int top, bool inclusive = false) {
    const auto a = costs_by_function(c, less, inclusive);
    const auto b = costs_by_function(c, more, inclusive);
    std::vector<std::pair<double, std::string>> rows;
    for (const auto& [name, cost] : b) {
        const auto it = a.find(name);
        const double per_unit = (cost - (it == a.end() ? 0 : it->second)) / units;
        if (per_unit > 0) rows.emplace_back(per_unit, name);
    }
    std::sort(rows.rbegin(), rows.rend());
    std::string text;
    char row[64];
    for (int i = 0; i < top && i < static_cast<int>(rows.size()); ++i) {
        std::snprintf(row, sizeof row, "%12.0f  ", rows[static_cast<std::size_t>(i)].first);
        std::string name = rows[static_cast<std::size_t>(i)].second;
        if (name.size() > 160) {
            name.resize(157);
            name += "...";
        }
        text += row + name + "\n";
    }
    return text;
}

struct Pair {
    std::string less, more;  // the output files of the two runs
    double per_unit = 0;     // the difference of their instructions, per unit of work
};

// `run(tag, work)` for `less` and then `more` work, `units` apart. A pair whose difference is
// not positive had a one-off cost in its first run (a slow start under valgrind): such a pair
// is taken again, once.
template <typename Run>
Pair measured_pair(const std::string& tag, const Work& less, const Work& more, double units,
                   const Run& run) {
    for (int attempt = 0;; ++attempt) {
        const std::string name = tag + "-" + std::to_string(attempt);
        Pair p{run(name + "-a", less), run(name + "-b", more)};
        p.per_unit = (total_instructions(p.more) - total_instructions(p.less)) / units;
        if (p.per_unit > 0 || attempt == 1) return p;
    }
}

// Two runs that differ by `extra` units of work: instructions per unit, and where they go.
Json compare(const Config& c, const TempDir& dir, const std::string& name, const Work& less,
             const Work& more, double units) {
    const Pair m = measured_pair("mcpd-" + name, less, more, units,
                                 [&](const std::string& tag, const Work& work) {
                                     return mcpd_run(c, dir, tag, work);
                                 });
    const Pair r = measured_pair("relay-" + name, less, more, units,
                                 [&](const std::string& tag, const Work& work) {
                                     return relay_run(c, dir, tag, work);
                                 });
    const double own = m.per_unit;
    const double floor = r.per_unit;
    note("callgrind " + name + ": mcpd " + std::to_string(own) + " instructions per unit, relay " +
         std::to_string(floor));
    return {{"mcpd", own},
            {"relay", floor},
            {"ratio", own / floor},
            {"mcpd_profile", profile_difference(c, m.less, m.more, units, 25)},
            {"mcpd_profile_inclusive", profile_difference(c, m.less, m.more, units, 40, true)},
            {"relay_profile", profile_difference(c, r.less, r.more, units, 10)}};
}

// The same per echo round trip through a group or an HTTP session, beside a socket session's
// (`socket`, instructions per round trip).
Json compare_path(const Config& c, const TempDir& dir, const std::string& name, Path path, int n,
                  double socket) {
    const Pair m = measured_pair("mcpd-" + name, Work{n, 0, 0}, Work{2 * n, 0, 0}, n,
                                 [&](const std::string& tag, const Work& work) {
                                     return mcpd_run(c, dir, tag, work, path);
                                 });
    note("callgrind " + name + ": mcpd " + std::to_string(m.per_unit) +
         " instructions per round trip");
    return {{"mcpd", m.per_unit},
            {"socket", socket},
            {"ratio_to_socket", socket > 0 ? m.per_unit / socket : 0.0},
            {"calls", n},
            {"mcpd_profile", profile_difference(c, m.less, m.more, n, 25)},
            {"mcpd_profile_inclusive", profile_difference(c, m.less, m.more, n, 40, true)}};
}

}  // namespace

Json run_callgrind(const Config& config) {
    if (config.valgrind.empty()) return {{"skipped", "valgrind is not installed"}};
    TempDir dir;
    const int n = config.profile.callgrind_calls;
    Json j;
    // Per echo round trip (request and reply).
    j["echo"] = compare(config, dir, "echo", Work{n, 0, 0}, Work{2 * n, 0, 0}, n);
    j["echo"]["calls"] = n;
    const double socket = j["echo"]["mcpd"].get<double>();
    // The same under figure 2's load: 64 sessions pipelining, where reads and writes gather
    // many lines (what a core forwards at saturation, counted).
    const int sessions = 64;
    j["echo_64"] = compare(config, dir, "echo-64", Work{0, 0, 0, sessions, 8 * n},
                           Work{0, 0, 0, sessions, 16 * n}, 8 * n);
    j["echo_64"]["sessions"] = sessions;
    j["echo_64"]["pipeline_depth"] = kPipelineDepth;
    j["echo_group"] = compare_path(config, dir, "echo-group", Path::group, n, socket);
    j["echo_http"] = compare_path(config, dir, "echo-http", Path::http, n, socket);
    // Per MiB of a large result, at two sizes (a cost growing faster than the size shows).
    for (const std::size_t mib : {std::size_t{1}, std::size_t{16}}) {
        const std::string key = "large_" + std::to_string(mib) + "mib";
        j[key] = compare(config, dir, key, Work{0, 1, mib * kMiB}, Work{0, 2, mib * kMiB},
                         static_cast<double>(mib));
    }
    return j;
}

}  // namespace bench
