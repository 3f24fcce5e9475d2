// A server's sandbox as the registry writes it: `sandbox = "PRESET"` or a [servers.NAME.sandbox]
// table, layered on [daemon.sandbox] (docs/SANDBOX.md). Paths keep their placeholders (~,
// {project}, {cache}, {state}) here; daemon/sandbox/ resolves them for each child and decides
// what the running kernel can enforce.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mcpd::config {

// What a boxed server may reach over the network: everything, only a loopback interface of
// its own (a private network namespace), or nothing.
enum class NetworkAccess { all, loopback, none };
std::string_view to_string(NetworkAccess access);  // "all" | "loopback" | "none"

// `cpu`: a relative weight (cgroup cpu.weight, 1..10000) or a quota in percent of one CPU
// ("50%", "200%").
struct CpuLimit {
    enum class Kind { weight, quota };
    Kind kind = Kind::quota;
    std::uint32_t value = 0;
    bool operator==(const CpuLimit&) const = default;
};
std::string to_string(const CpuLimit& cpu);  // "50%" or "weight 100"

struct Sandbox {
    // "project", "readonly", or empty; "none" is `off`.
    std::string preset;
    bool off = false;  // sandbox = "none": no rule applies, not even [daemon.sandbox]'s
    // Added to the preset's lists. Each entry: an absolute path, "~" or "~/PATH", or one
    // starting with {project}, {cache} or {state}.
    std::vector<std::string> read;
    std::vector<std::string> write;
    std::vector<std::string> hide;
    std::optional<NetworkAccess> network;
    std::optional<std::uint64_t> memory;  // bytes
    std::optional<std::uint64_t> tasks;   // processes and threads
    std::optional<CpuLimit> cpu;
    std::optional<std::uint64_t> open_files;
    std::optional<bool> strict;  // a rule the kernel cannot enforce fails the start

    // Whether anything is asked for: a preset, a path rule, a network rule or a limit.
    bool any() const;
    bool operator==(const Sandbox&) const = default;
};

// In cwd, args and env values of a sharing = "project" server, and in sandbox path rules:
// the project's directory.
inline constexpr std::string_view kProjectPlaceholder = "{project}";
// The placeholders a path rule may start with besides {project} and ~.
inline constexpr std::string_view kCachePlaceholder = "{cache}";
inline constexpr std::string_view kStatePlaceholder = "{state}";

// A server's sandbox: its own layered on the daemon's defaults. `sandbox = "none"` leaves
// nothing; otherwise the server's preset and scalars win where it sets them and its lists
// are added to the daemon's.
Sandbox layered(const Sandbox& daemon_default, const Sandbox& own);

// The path lists a sandbox stands for: its preset's, then its own.
struct PathRules {
    std::vector<std::string> read;
    std::vector<std::string> write;
    std::vector<std::string> hide;
};
PathRules path_rules(const Sandbox& sandbox);

// The presets' names, for messages and documentation: "project", "readonly", "none".
std::span<const std::string_view> sandbox_presets();

// Whether `path` is a path rule the registry accepts (see Sandbox::read).
bool is_rule_path(std::string_view path);

// "512M", "2G", "64K", "1048576" (bytes), as `memory` takes them; nullopt if not one.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

// "50%" (a quota) or an integer weight; nullopt if not one.
std::optional<CpuLimit> parse_cpu_limit(std::string_view text);

}  // namespace mcpd::config
