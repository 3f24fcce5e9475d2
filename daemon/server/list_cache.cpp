#include "daemon/server/list_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/private_directories.h"
#include "common/sha256.h"
#include "common/unique_fd.h"
#include "daemon/control/socket_directory.h"

namespace mcpd {

using nlohmann::json;

namespace {

constexpr std::string_view kSuffix = ".json";
// A file larger than this is not read: a catalog's JSON plus the envelope around it.
constexpr std::size_t kMaxFileBytes = Catalog::kMaxBytes + 4096;

Result<std::string> read_small_file(const std::string& path) {
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return system_failure("cannot open it", errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return system_failure("cannot stat it", errno);
    if (!S_ISREG(st.st_mode)) return permanent_failure("it is not a regular file");
    if (st.st_uid != ::geteuid()) return permanent_failure("it belongs to another user");
    if ((st.st_mode & 0077) != 0) return permanent_failure("others may read or write it");
    if (static_cast<std::size_t>(st.st_size) > kMaxFileBytes)
        return permanent_failure("it is larger than a cache entry may be");
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    while (got < text.size()) {
        const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return system_failure("cannot read it", errno);
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    text.resize(got);
    return text;
}

}  // namespace

std::string cache_key(const config::ServerConfig& config, std::optional<uid_t> user) {
    // A JSON array, so that no two different inputs serialise alike.
    json identity = json::object();
    if (config.run_as) {
        identity = {{"uid", config.run_as->uid}, {"gid", config.run_as->gid},
                    {"groups", config.run_as->groups}, {"user", config.run_as->user},
                    {"home", config.run_as->home}};
    }
    const json key = {"mcpd-cache-key-2",
                      config.name,
                      config.command,
                      config.args,
                      config.env,
                      config.env_file,
                      config.env_file_vars,
                      config.cwd,
                      config.roots,
                      std::string(to_string(config.era)),
                      identity,
                      user ? json(*user) : json(nullptr)};
    return sha256_hex(key.dump());
}

std::string default_cache_directory() {
    const std::string state = own_state_directory();
    return state.empty() ? std::string() : state + "/cache";
}

Result<Done> ListCache::prepare() const {
    if (directory_.empty() || directory_.front() != '/')
        return permanent_failure("the cache directory must be an absolute path");
    if (Result<Done> made = make_private_directories(directory_); !made) return made;
    std::string error;
    if (!prepare_socket_directory(directory_, SocketAccess{0600, std::nullopt}, true, error))
        return permanent_failure("the cache directory " + directory_ + " cannot be used: " + error);
    return Done{};
}

std::string ListCache::path_of(const std::string& key) const {
    return directory_ + "/" + key + std::string(kSuffix);
}

Result<std::optional<Catalog>> ListCache::load(const std::string& key) const {
    const std::string path = path_of(key);
    if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return std::optional<Catalog>();
    const auto refuse = [&path](const std::string& why) {
        return permanent_failure("the cache file " + path + " is not used: " + why);
    };
    Result<std::string> text = read_small_file(path);
    if (!text) return refuse(text.error());
    const json document = json::parse(text.value(), nullptr, false);
    if (document.is_discarded()) return refuse("it is not valid JSON (truncated or corrupt)");
    if (!document.is_object()) return refuse("it is not a JSON object");
    const auto format = document.find("format");
    const auto version = document.find("version");
    if (format == document.end() || *format != kFormat || version == document.end() ||
        !version->is_number_integer() || *version != kVersion)
        return refuse(std::string("it is not of format ") + kFormat + " version " +
                      std::to_string(kVersion));
    const auto stored_key = document.find("key");
    if (stored_key == document.end() || *stored_key != key)
        return refuse("it was written for another key");
    const auto catalog = document.find("catalog");
    if (catalog == document.end()) return refuse("it holds no catalog");
    Result<Catalog> read = catalog_from_json(*catalog);
    if (!read) return refuse(read.error());
    return std::optional<Catalog>(std::move(read).value());
}

Result<Done> ListCache::save(const std::string& key, const std::string& server,
                             const Catalog& catalog) const {
    const json document = {{"format", kFormat},
                           {"version", kVersion},
                           {"key", key},
                           {"server", server},
                           {"catalog", catalog_to_json(catalog)}};
    const std::string text = document.dump();
    if (text.size() > kMaxFileBytes)
        return permanent_failure("the lists of '" + server + "' are too large to cache");
    const std::string path = path_of(key);
    std::string temp = path + ".XXXXXX";
    const UniqueFd fd(::mkstemp(temp.data()));  // 0600, never an existing file
    if (!fd) return system_failure("cannot write " + temp, errno);
    std::size_t written = 0;
    while (written < text.size()) {
        const ssize_t n = ::write(fd.get(), text.data() + written, text.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int error = errno;
            ::unlink(temp.c_str());
            return system_failure("cannot write " + temp, error);
        }
        written += static_cast<std::size_t>(n);
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        const int error = errno;
        ::unlink(temp.c_str());
        return system_failure("cannot rename " + temp, error);
    }
    return Done{};
}

void ListCache::drop(const std::string& key) const {
    ::unlink(path_of(key).c_str());
}

std::size_t ListCache::drop_server(const std::string& server) const {
    std::vector<std::string> names;
    if (DIR* dir = ::opendir(directory_.c_str())) {
        while (const dirent* entry = ::readdir(dir)) {
            const std::string name = entry->d_name;
            if (name.size() > kSuffix.size() &&
                name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0)
                names.push_back(name);
        }
        ::closedir(dir);
    }
    std::size_t dropped = 0;
    for (const std::string& name : names) {
        const std::string path = directory_ + "/" + name;
        if (!server.empty()) {
            Result<std::string> text = read_small_file(path);
            if (!text) continue;
            const json document = json::parse(text.value(), nullptr, false);
            const auto owner = document.is_object() ? document.find("server") : document.end();
            if (owner == document.end() || *owner != server) continue;
        }
        if (::unlink(path.c_str()) == 0) ++dropped;
    }
    return dropped;
}

}  // namespace mcpd
