// 5. What a sandbox costs a server's start: `restart` with `wait` (the old process stopped, a
// new one spawned and initialized) of the same demo server, plain and boxed with the project
// preset, a network of its own and a limit, taking turns in each round.
#include <stdexcept>

#include "figures.h"

namespace bench {
namespace {

// The milliseconds of each restart of `mcpd`'s demo server, `count` times.
std::vector<double> restarts(Mcpd& mcpd, int count) {
    std::vector<double> ms;
    for (int i = 0; i < count; ++i) {
        const auto start = Clock::now();
        const Json result = mcpd.request(
            {{"protocol", 1}, {"command", "restart"}, {"servers", {"demo"}}, {"wait", true}});
        ms.push_back(seconds_since(start) * 1000);
        if (result["servers"][0]["state"] != "running")
            throw std::runtime_error("sandbox: the server did not start: " + result.dump());
    }
    return ms;
}

}  // namespace

Json run_sandbox(const Config& config) {
    const Profile& p = config.profile;
    TempDir dir;
    Mcpd plain(config.bin, dir, "plain");
    McpdOptions boxed_options;
    // No memory limit: under the sanitizers (the smoke test of ./dev sanitize) the demo
    // server's shadow memory would be past any; an rlimit is one more system call anyway.
    boxed_options.server_toml =
        "sandbox = { preset = \"project\", network = \"none\", open_files = 1024 }";
    Mcpd boxed(config.bin, dir, "boxed", boxed_options);
    const Json how = boxed.request({{"protocol", 1}, {"command", "status"}, {"servers", {"demo"}}});
    Json rounds = Json::array();
    std::vector<double> plain_medians, boxed_medians;
    for (int round = 0; round < p.rounds; ++round) {
        const std::vector<double> a = restarts(plain, p.sandbox_starts);
        const std::vector<double> b = restarts(boxed, p.sandbox_starts);
        const double pm = median(a), bm = median(b);
        plain_medians.push_back(pm);
        boxed_medians.push_back(bm);
        rounds.push_back({{"plain_p50_ms", pm}, {"boxed_p50_ms", bm}, {"ratio", bm / pm}});
    }
    const double pm = median(plain_medians), bm = median(boxed_medians);
    return {{"starts_per_round", p.sandbox_starts},
            {"sandbox", how["servers"][0]["sandbox"]},
            {"rounds", rounds},
            {"plain_p50_ms", pm},
            {"boxed_p50_ms", bm},
            {"ratio", bm / pm}};
}

}  // namespace bench
