#include "config/sandbox.h"

#include <array>
#include <charconv>

#include "config/enum_names.h"
#include "config/registry.h"

namespace mcpd::config {

namespace {

// What every boxed server reads: programs, libraries, configuration, and the kernel's views
// of itself (runtimes read /proc/self and /sys for their limits).
constexpr std::string_view kSystemRead[] = {
    "/usr", "/bin", "/sbin",  "/lib",  "/lib32", "/lib64", "/libx32",
    "/etc", "/opt", "/proc", "/sys", "/run/systemd/resolve", "/nix/store",
};

// What every boxed server writes: the devices any program opens, and the shared temporary
// directories (their own permissions still apply).
constexpr std::string_view kSystemWrite[] = {
    "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
    "/dev/shm",
};

// Package caches that npx, uvx and pip write at start: servers break without them.
constexpr std::string_view kCacheWrite[] = {"{cache}", "{state}", "~/.npm", "~/.cache"};

// Credentials and keys under a home directory: never visible to a boxed server, even under a
// tree it may read.
constexpr std::string_view kSecrets[] = {
    "~/.ssh",           "~/.gnupg",          "~/.aws",
    "~/.azure",         "~/.config/gcloud",  "~/.kube",
    "~/.docker",        "~/.netrc",          "~/.git-credentials",
    "~/.config/gh",     "~/.password-store", "~/.local/share/keyrings",
    "~/.mozilla",       "~/.config/google-chrome", "~/.config/chromium",
    "~/.pki",           "~/.npmrc",          "~/.pypirc",
    "~/.cargo/credentials.toml", "~/.config/mcpd",
};

constexpr std::string_view kPresets[] = {"project", "readonly", "none"};

void add(std::vector<std::string>& to, std::span<const std::string_view> from) {
    for (const std::string_view path : from) to.emplace_back(path);
}

void add(std::vector<std::string>& to, const std::vector<std::string>& from) {
    to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

std::string_view to_string(NetworkAccess access) {
    return name_of<NetworkAccess>(kNetworkNames, access);
}

std::string to_string(const CpuLimit& cpu) {
    if (cpu.kind == CpuLimit::Kind::quota) return std::to_string(cpu.value) + "%";
    return "weight " + std::to_string(cpu.value);
}

bool Sandbox::any() const {
    if (off) return false;
    return !preset.empty() || !read.empty() || !write.empty() || !hide.empty() ||
           network.has_value() || memory.has_value() || tasks.has_value() || cpu.has_value() ||
           open_files.has_value();
}

Sandbox layered(const Sandbox& daemon_default, const Sandbox& own) {
    if (own.off) return own;
    Sandbox out = daemon_default;
    if (!own.preset.empty()) out.preset = own.preset;
    add(out.read, own.read);
    add(out.write, own.write);
    add(out.hide, own.hide);
    if (own.network) out.network = own.network;
    if (own.memory) out.memory = own.memory;
    if (own.tasks) out.tasks = own.tasks;
    if (own.cpu) out.cpu = own.cpu;
    if (own.open_files) out.open_files = own.open_files;
    if (own.strict) out.strict = own.strict;
    return out;
}

PathRules path_rules(const Sandbox& sandbox) {
    PathRules rules;
    if (sandbox.off) return rules;
    if (sandbox.preset == "project" || sandbox.preset == "readonly") {
        add(rules.read, kSystemRead);
        // Where per-user installs of servers live (uv tools, pip --user, npm prefixes).
        rules.read.emplace_back("~/.local");
        if (sandbox.preset == "readonly") rules.read.emplace_back("~");
        rules.read.emplace_back(kProjectPlaceholder);
        if (sandbox.preset == "project") rules.write.emplace_back(kProjectPlaceholder);
        add(rules.write, kCacheWrite);
        add(rules.write, kSystemWrite);
        add(rules.hide, kSecrets);
    }
    add(rules.read, sandbox.read);
    add(rules.write, sandbox.write);
    add(rules.hide, sandbox.hide);
    return rules;
}

std::span<const std::string_view> sandbox_presets() {
    return kPresets;
}

bool is_rule_path(std::string_view path) {
    if (path.empty() || path.find('\0') != std::string_view::npos) return false;
    if (path.starts_with('/')) return true;
    if (path == "~" || path.starts_with("~/")) return true;
    for (const std::string_view placeholder :
         {kProjectPlaceholder, kCachePlaceholder, kStatePlaceholder}) {
        if (path == placeholder) return true;
        if (path.starts_with(placeholder) && path.size() > placeholder.size() &&
            path[placeholder.size()] == '/')
            return true;
    }
    return false;
}

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
    std::uint64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc{} || end == text.data()) return std::nullopt;
    std::string_view unit(end, text.data() + text.size() - end);
    if (unit.ends_with("iB")) unit.remove_suffix(2);
    if (unit.ends_with('B') && unit.size() == 2) unit.remove_suffix(1);
    unsigned shift = 0;
    if (unit.empty()) {
        shift = 0;
    } else if (unit == "K" || unit == "k") {
        shift = 10;
    } else if (unit == "M") {
        shift = 20;
    } else if (unit == "G") {
        shift = 30;
    } else if (unit == "T") {
        shift = 40;
    } else {
        return std::nullopt;
    }
    if (shift > 0 && number > (UINT64_MAX >> shift)) return std::nullopt;
    return number << shift;
}

std::optional<CpuLimit> parse_cpu_limit(std::string_view text) {
    const bool percent = text.ends_with('%');
    if (percent) text.remove_suffix(1);
    std::uint32_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc{} || end != text.data() + text.size() || number == 0) return std::nullopt;
    if (percent) return CpuLimit{CpuLimit::Kind::quota, number};
    if (number > 10000) return std::nullopt;
    return CpuLimit{CpuLimit::Kind::weight, number};
}

}  // namespace mcpd::config
