#include "daemon/http/session_token.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <utility>

#include "common/base64url.h"
#include "common/file_mode.h"
#include "common/hmac.h"
#include "common/unique_fd.h"

namespace mcpd {

namespace {

using nlohmann::json;

constexpr std::string_view kPrefix = "m1.";
constexpr std::size_t kKeyBytes = 32;
constexpr std::size_t kInfoStringBytes = 64;

// Short keys: the id travels with every request.
constexpr const char* kTarget = "t";
constexpr const char* kUid = "u";
constexpr const char* kVersion = "v";
constexpr const char* kCapabilities = "c";
constexpr const char* kInfo = "i";
constexpr const char* kSerial = "s";

std::string as_text(const std::array<unsigned char, 32>& bytes) {
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// At most `limit` bytes of `text`, never cutting a UTF-8 character in two.
std::string cut_utf8(const std::string& text, std::size_t limit) {
    if (text.size() <= limit) return text;
    std::size_t end = limit;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    return text.substr(0, end);
}

json object_or_empty(const json& value) {
    return value.is_object() ? value : json::object();
}

json capabilities_keys_only(const json& capabilities) {
    json kept = json::object();
    for (auto it = capabilities.begin(); it != capabilities.end(); ++it)
        kept[it.key()] = json::object();
    return kept;
}

json info_name_and_version(const json& info) {
    json kept = json::object();
    for (const char* field : {"name", "version"}) {
        const auto it = info.find(field);
        if (it != info.end() && it->is_string())
            kept[field] = cut_utf8(it->get<std::string>(), kInfoStringBytes);
    }
    return kept;
}

Failure refused(std::string_view why) {
    return permanent_failure("the session id " + std::string(why) +
                             ": start a new session (initialize without Mcp-Session-Id)");
}

// The claims in a verified payload, each field of its JSON type.
Result<HttpSessionClaims> claims_from(const json& document) {
    const auto malformed = [] { return refused("holds claims of the wrong shape"); };
    if (!document.is_object() || document.size() != 6) return malformed();
    const auto target = document.find(kTarget);
    const auto uid = document.find(kUid);
    const auto version = document.find(kVersion);
    const auto capabilities = document.find(kCapabilities);
    const auto info = document.find(kInfo);
    const auto serial = document.find(kSerial);
    const auto end = document.end();
    if (target == end || !target->is_string() || uid == end || !uid->is_number_unsigned() ||
        version == end || !version->is_string() || capabilities == end ||
        !capabilities->is_object() || info == end || !info->is_object() || serial == end ||
        !serial->is_number_unsigned())
        return malformed();
    const auto uid_number = uid->get<std::uint64_t>();
    if (uid_number > std::numeric_limits<uid_t>::max()) return malformed();
    HttpSessionClaims claims;
    claims.target = target->get<std::string>();
    claims.uid = static_cast<uid_t>(uid_number);
    claims.protocol_version = version->get<std::string>();
    claims.client_capabilities = *capabilities;
    claims.client_info = *info;
    claims.serial = serial->get<std::uint64_t>();
    return claims;
}

// The rest of a file's key checks once it is open: type, owner, mode, size, then its bytes.
Result<std::string> read_key(int fd, const std::string& where, const std::string& path) {
    struct stat st {};
    if (::fstat(fd, &st) != 0)
        return permanent_failure("cannot read " + where + ": " + std::strerror(errno));
    const std::string remove =
        ": remove it and mcpd writes a new one (sessions over HTTP then start again)";
    if (!S_ISREG(st.st_mode)) return permanent_failure(where + " is not a regular file" + remove);
    if (st.st_uid != ::geteuid()) {
        return permanent_failure(where + " belongs to uid " + std::to_string(st.st_uid) +
                                 ", not to mcpd's user (uid " + std::to_string(::geteuid()) + ")" +
                                 remove);
    }
    if ((st.st_mode & 077) != 0) {
        return permanent_failure(
            where + " has mode " + mode_octal(st.st_mode) +
            ", so other users may read the key that signs session ids: make it 0600 (chmod 600 " +
            path + ")");
    }
    if (st.st_size != static_cast<off_t>(kKeyBytes)) {
        return permanent_failure(where + " holds " + std::to_string(st.st_size) +
                                 " bytes instead of " + std::to_string(kKeyBytes) + remove);
    }
    std::string key(kKeyBytes, '\0');
    std::size_t got = 0;
    while (got < key.size()) {
        const ssize_t n = ::read(fd, key.data() + got, key.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return permanent_failure("cannot read " + where + ": " + std::strerror(errno));
        if (n == 0) return permanent_failure(where + " was cut short while it was read" + remove);
        got += static_cast<std::size_t>(n);
    }
    return key;
}

Result<std::string> random_key(const std::string& where) {
    std::string key(kKeyBytes, '\0');
    std::size_t got = 0;
    while (got < key.size()) {
        const ssize_t n = ::getrandom(key.data() + got, key.size() - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            return permanent_failure("cannot create " + where +
                                     ": getrandom failed: " + std::strerror(errno));
        got += static_cast<std::size_t>(n);
    }
    return key;
}

// A new key, written to a temporary file beside `path` and renamed over it, so that a crash
// never leaves a short key behind.
Result<std::string> create_key(const std::string& where, const std::string& path) {
    Result<std::string> key = random_key(where);
    if (!key) return key;
    std::string temp = path + ".XXXXXX";
    const UniqueFd fd(::mkstemp(temp.data()));  // 0600, O_EXCL
    if (!fd) return permanent_failure("cannot create " + where + ": " + std::strerror(errno));
    const auto fail = [&temp, &where](int error) {
        ::unlink(temp.c_str());
        return permanent_failure("cannot create " + where + ": " + std::strerror(error));
    };
    std::size_t written = 0;
    const std::string& bytes = key.value();
    while (written < bytes.size()) {
        const ssize_t n = ::write(fd.get(), bytes.data() + written, bytes.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return fail(n < 0 ? errno : ENOSPC);
        written += static_cast<std::size_t>(n);
    }
    if (::fsync(fd.get()) != 0) return fail(errno);
    if (::rename(temp.c_str(), path.c_str()) != 0) return fail(errno);
    return key;
}

}  // namespace

SessionTokenSigner::SessionTokenSigner(std::string key) : key_(std::move(key)) {}

std::string SessionTokenSigner::sign(const HttpSessionClaims& claims) const {
    json document = {{kTarget, claims.target},
                     {kUid, static_cast<std::uint64_t>(claims.uid)},
                     {kVersion, claims.protocol_version},
                     {kCapabilities, object_or_empty(claims.client_capabilities)},
                     {kInfo, object_or_empty(claims.client_info)},
                     {kSerial, claims.serial}};
    const auto make = [this, &document] {
        const std::string signed_part =
            std::string(kPrefix) +
            base64url_encode(document.dump(-1, ' ', false, json::error_handler_t::replace));
        return signed_part + "." + base64url_encode(as_text(hmac_sha256(key_, signed_part)));
    };
    std::string id = make();
    if (id.size() <= kMaxSessionIdBytes) return id;
    document[kCapabilities] = capabilities_keys_only(document[kCapabilities]);
    id = make();
    if (id.size() <= kMaxSessionIdBytes) return id;
    document[kInfo] = info_name_and_version(document[kInfo]);
    id = make();
    if (id.size() <= kMaxSessionIdBytes) return id;
    document[kCapabilities] = json::object();
    return make();
}

Result<HttpSessionClaims> SessionTokenSigner::verify(std::string_view id) const {
    if (id.size() > kMaxSessionIdBytes)
        return refused("is longer than " + std::to_string(kMaxSessionIdBytes) + " bytes");
    if (!id.starts_with(kPrefix)) {
        // "mN." is a format this daemon does not know: one written by another version of mcpd.
        const std::size_t dot = id.find('.');
        const bool versioned =
            id.size() > 1 && id.front() == 'm' && dot != std::string_view::npos && dot > 1 &&
            id.substr(1, dot - 1).find_first_not_of("0123456789") == std::string_view::npos;
        return refused(versioned ? "is of another format version than this mcpd writes"
                                 : "is not one mcpd issued (it is malformed)");
    }
    const std::size_t dot = id.find('.', kPrefix.size());
    if (dot == std::string_view::npos || id.find('.', dot + 1) != std::string_view::npos)
        return refused("is not one mcpd issued (it is malformed)");
    const std::string_view signed_part = id.substr(0, dot);
    const std::optional<std::string> signature = base64url_decode(id.substr(dot + 1));
    if (!signature || signature->size() != 32)
        return refused("is not one mcpd issued (its signature is malformed)");
    if (!equal_in_constant_time(*signature, as_text(hmac_sha256(key_, signed_part))))
        return refused("was not signed by this mcpd's session key (or was changed)");
    const std::optional<std::string> payload = base64url_decode(signed_part.substr(kPrefix.size()));
    if (!payload) return refused("is not one mcpd issued (it is malformed)");
    const json document = json::parse(*payload, nullptr, false);
    if (document.is_discarded()) return refused("holds claims that are not JSON");
    return claims_from(document);
}

Result<std::string> load_or_create_session_key(const std::filesystem::path& file) {
    const std::string path = file.string();
    const std::string where = "the session key file " + path;
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (fd) return read_key(fd.get(), where, path);
    if (errno == ENOENT) return create_key(where, path);
    if (errno == ELOOP)
        return permanent_failure(
            where +
            " is a symbolic link, which is not followed: remove it and mcpd writes a new key file");
    return permanent_failure("cannot read " + where + ": " + std::strerror(errno));
}

}  // namespace mcpd
