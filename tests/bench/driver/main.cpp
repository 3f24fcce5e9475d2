// mcpd-bench: takes the figures 1-5, 2b and 9 of docs/PERFORMANCE.md (and callgrind instruction
// counts) with mcpd, mcpctl, the demo server and the minimal relay of a build, and writes them as
// JSON.
//
//   mcpd-bench --bin-dir DIR [--out FILE] [--quick | --smoke] [--rounds N] [--sessions N,...]
//              [--sizes MIB,...]
//              [--only latency,throughput,http,large,scale,sandbox,upgrade,callgrind]
//
// --quick: fewer rounds and calls (a few minutes); --smoke: tiny counts, for the ctest check
// that the harness still runs and produces numbers. --sessions and --sizes: figure 2's session
// counts and figure 3's sizes instead of the profile's (to look at one load under a profiler).
// Never a pass/fail on timings: the exit status only says whether every measurement could be
// taken.
#include <signal.h>
#include <simdjson.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "figures.h"
#include "proc.h"

namespace {

using bench::Json;

int usage() {
    std::fputs(
        "usage: mcpd-bench --bin-dir DIR [--out FILE] [--quick | --smoke] [--rounds N]\n"
        "                  [--sessions N,...] [--sizes MIB,...] [--keep-profiles DIR]\n"
        "                  [--only latency,throughput,http,large,scale,sandbox,upgrade,callgrind]\n",
        stderr);
    return 2;
}

bench::Profile quick_profile() {
    bench::Profile p;
    p.rounds = 3;
    p.latency_calls = 1000;
    p.throughput_messages = 10000;
    p.large_bytes_per_measure = 16;
    p.idle_sessions = 500;
    p.sandbox_starts = 20;
    p.http_messages = 3000;
    p.callgrind_calls = 1000;
    p.upgrades = 5;
    return p;
}

bench::Profile smoke_profile() {
    bench::Profile p;
    p.rounds = 1;
    p.latency_calls = 20;
    p.latency_chunk = 10;
    p.sessions = {1, 4};
    p.throughput_messages = 200;
    p.pipeline_depth = 2;
    p.sizes_mib = {1};
    p.large_bytes_per_measure = 1;
    p.idle_servers = 3;
    p.idle_sessions = 10;
    p.idle_bridges = 1;
    p.sandbox_starts = 3;
    p.http_sessions = {1, 4};
    p.http_messages = 200;
    p.callgrind = false;
    p.upgrades = 2;
    return p;
}

std::string find_valgrind() {
    for (const char* path : {"/usr/bin/valgrind", "/usr/local/bin/valgrind"}) {
        if (::access(path, X_OK) == 0) return path;
    }
    return {};
}

std::string now_utc() {
    const std::time_t t = std::time(nullptr);
    char text[64];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    std::string bin_dir, out_path, keep_profiles, profile_name = "full";
    std::set<std::string> only;
    int rounds = 0;
    std::vector<int> sessions;
    std::vector<std::size_t> sizes;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--bin-dir" && has_value)
            bin_dir = argv[++i];
        else if (arg == "--out" && has_value)
            out_path = argv[++i];
        else if (arg == "--rounds" && has_value)
            rounds = std::atoi(argv[++i]);
        else if (arg == "--keep-profiles" && has_value)
            keep_profiles = argv[++i];
        else if (arg == "--quick")
            profile_name = "quick";
        else if (arg == "--smoke")
            profile_name = "smoke";
        else if (arg == "--sessions" && has_value) {
            std::stringstream list(argv[++i]);
            for (std::string item; std::getline(list, item, ',');) {
                const int n = std::atoi(item.c_str());
                if (n <= 0) return usage();
                sessions.push_back(n);
            }
        } else if (arg == "--sizes" && has_value) {
            std::stringstream list(argv[++i]);
            for (std::string item; std::getline(list, item, ',');) {
                const int n = std::atoi(item.c_str());
                if (n <= 0) return usage();
                sizes.push_back(static_cast<std::size_t>(n));
            }
        } else if (arg == "--only" && has_value) {
            std::stringstream list(argv[++i]);
            for (std::string item; std::getline(list, item, ',');) only.insert(item);
        } else {
            return usage();
        }
    }
    if (bin_dir.empty()) return usage();
    ::signal(SIGPIPE, SIG_IGN);
    bench::raise_fd_limit();

    bench::Config config;
    config.bin = bench::Binaries::in(std::filesystem::absolute(bin_dir).string());
    config.profile = profile_name == "quick"   ? quick_profile()
                     : profile_name == "smoke" ? smoke_profile()
                                               : bench::Profile{};
    if (rounds > 0) config.profile.rounds = rounds;
    if (!sessions.empty()) config.profile.sessions = sessions;
    if (!sizes.empty()) config.profile.sizes_mib = sizes;
    if (config.profile.callgrind) config.valgrind = find_valgrind();
    config.keep_profiles = keep_profiles;
    const auto wanted = [&](const std::string& name) {
        return only.empty() ? (name != "callgrind" || config.profile.callgrind)
                            : only.contains(name);
    };

    const bench::Machine m = bench::machine();
    Json result = {
        {"profile", profile_name},
        {"rounds", config.profile.rounds},
        {"date", now_utc()},
        {"machine",
         {{"cpu", m.cpu_model},
          {"cores", m.cores},
          {"kernel", m.kernel},
          {"load_at_start", {m.load1, m.load5, m.load15}}}},
        {"cpu_time_source", bench::cpu_has_ns_resolution() ? "/proc/PID/schedstat (ns)"
                                                           : "/proc/PID/stat (clock ticks)"},
        // The same library and compiler flags as mcpd: on-demand parsing uses the builtin
        // kernel (fixed at compile time), the DOM API the one chosen at run time.
        {"simdjson",
         {{"version", std::to_string(simdjson::SIMDJSON_VERSION_MAJOR) + "." +
                          std::to_string(simdjson::SIMDJSON_VERSION_MINOR) + "." +
                          std::to_string(simdjson::SIMDJSON_VERSION_REVISION)},
          {"active_implementation", simdjson::get_active_implementation()->name()},
          {"builtin_implementation", simdjson::builtin_implementation()->name()}}},
    };

    using Run = Json (*)(const bench::Config&);
    const std::pair<const char*, Run> figures[] = {
        {"latency", bench::run_latency},     {"throughput", bench::run_throughput},
        {"http", bench::run_http},
        {"large", bench::run_large},         {"scale", bench::run_scale},
        {"sandbox", bench::run_sandbox},     {"upgrade", bench::run_upgrade},
        {"callgrind", bench::run_callgrind},
    };
    int failures = 0;
    for (const auto& [name, run] : figures) {
        if (!wanted(name)) continue;
        bench::note(std::string("--- ") + name);
        const auto start = bench::Clock::now();
        try {
            result["figures"][name] = run(config);
            result["figures"][name]["took_s"] = bench::seconds_since(start);
        } catch (const std::exception& e) {
            ++failures;
            result["figures"][name] = {{"error", e.what()}};
            bench::note(std::string(name) + " FAILED: " + e.what());
        }
    }
    result["load_at_end"] = bench::load_average();

    const std::string text = result.dump(2) + "\n";
    if (out_path.empty()) {
        std::cout << text;
    } else {
        std::ofstream(out_path) << text;
        bench::note("results in " + out_path);
    }
    return failures == 0 ? 0 : 1;
}
