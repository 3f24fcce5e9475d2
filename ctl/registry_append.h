// Adding servers to the registry from mcpctl (import --write, adopt) as a careful editor:
// under a lock, every new table checked by the registry's own loader first, env values in
// env files of mode 0600 that the tables name (never in the registry), the file replaced
// whole, and mcpd asked to reload it afterwards.
#pragma once

#include <sys/types.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "config/registry.h"
#include "ctl/adopt_files.h"
#include "ctl/import_mcp_json.h"

namespace mcpctl {

struct Context;

// The whole regular file as bytes (at most config::kMaxTextFileBytes); the failure completes
// "FILE ...".
mcpd::Result<std::string> read_text_file(const std::string& path);

// Holds the registry's lock (flock on REGISTRY.lock beside the file it names) while it lives,
// so that two runs of adopt or import --write add to the registry one after the other.
class RegistryLock {
public:
    // Waits for the lock; creates the lock file (and the registry's directories, 0700).
    static mcpd::Result<RegistryLock> take(const std::string& registry);

private:
    explicit RegistryLock(mcpd::UniqueFd fd) : fd_(std::move(fd)) {}
    mcpd::UniqueFd fd_;
};

// The registry as it is now.
struct RegistryState {
    std::string path;                // as named
    std::string target;              // the file written: a link's target, else path
    std::string text;                // empty when there is no file yet
    std::optional<FileOwner> owner;  // nullopt when there is no file yet
    mcpd::config::Registry loaded;   // its servers and groups as mcpd reads them

    bool readable_by_others() const { return owner && (owner->mode & 044) != 0; }
};

// Read and load the registry at `path`. Fails when it exists but does not load (naming the
// first error): adding to it would hide what is wrong.
mcpd::Result<RegistryState> read_registry_state(const std::string& path);

// Whether the registry has `server` under its name: absent, as the same server (command,
// args, environment and cwd), or as another one.
enum class RegistryMatch { absent, same, other };
RegistryMatch match_server(const RegistryState& registry, const ImportedServer& server);

// Why `server` cannot be added to the registry (its env cannot go to an env file, or the
// registry would not load with it), or empty when it can.
std::string addition_problem(const RegistryState& registry, const ImportedServer& server);

// The servers to add, each with the file it came from (for its comment).
struct RegistryAddition {
    ImportedServer server;
    std::string source;
};

struct AppendOutcome {
    std::vector<std::string> env_files;  // created, one per server with env
    std::string toml;                    // the tables appended
};

// Append `additions` and then `extra` (a [groups] table) to the registry: env files created
// beside it first (0600, exclusively, owned as the registry), the whole new text loaded as
// mcpd would, then the file replaced whole (kept owner and mode; 0600 when new). On any
// failure nothing stays: not the registry's new text, not an env file.
mcpd::Result<AppendOutcome> append_to_registry(const RegistryState& registry,
                                               std::vector<RegistryAddition> additions,
                                               std::string_view extra);

// The env file a server `name` would get beside the registry now (NAME.env, else NAME.2.env...).
std::string predicted_env_file(const RegistryState& registry, const std::string& name);

// The env file text of `env`: KEY="VALUE" lines as config::parse_env_file reads them back.
// Fails naming the variable whose value cannot be written so (it spans lines).
mcpd::Result<std::string> env_file_text(
    const std::vector<std::pair<std::string, std::string>>& env);

// After writing the registry (`wrote`: "wrote 2 servers to PATH"): ask mcpd to reload it and say
// how that went, in text or in `report` ("reload", "error") in JSON mode. mcpd not running is
// not a failure: it reads the registry when it starts. Returns the exit code.
int reload_after_write(const Context& ctx, const std::string& wrote, nlohmann::json& report);

}  // namespace mcpctl
