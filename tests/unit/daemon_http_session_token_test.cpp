// Signed session ids (daemon/http/session_token.h): what a restarted daemon rebuilds a session
// from. Any change to an id is refused, as is another key's; an id that would grow too long
// keeps less of the client; the key file is created private and refused when it is not.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "common/base64url.h"
#include "common/hmac.h"
#include "daemon/http/session_token.h"
#include "temp_dir.h"

using namespace mcpd;
using nlohmann::json;

namespace {

const std::string kTokenTestKey(32, '\x5a');

HttpSessionClaims token_test_claims() {
    HttpSessionClaims claims;
    claims.target = "github";
    claims.uid = 1000;
    claims.protocol_version = "2025-06-18";
    claims.client_capabilities = {{"roots", {{"listChanged", true}}}, {"sampling", json::object()}};
    claims.client_info = {{"name", "inspector"}, {"version", "0.16.1"}};
    claims.serial = 42;
    return claims;
}

// The id with its payload replaced by `payload` (JSON text), keeping the old signature.
std::string token_test_with_payload(const std::string& id, const std::string& payload) {
    const std::size_t second_dot = id.rfind('.');
    return "m1." + base64url_encode(payload) + id.substr(second_dot);
}

// An id over `payload` (JSON text) signed with kTokenTestKey as sign() signs.
std::string token_test_signed(const std::string& payload) {
    const std::string signed_part = "m1." + base64url_encode(payload);
    const auto mac = hmac_sha256(kTokenTestKey, signed_part);
    return signed_part + "." +
           base64url_encode(std::string(reinterpret_cast<const char*>(mac.data()), mac.size()));
}

std::string token_test_payload(const std::string& id) {
    const std::size_t first = id.find('.');
    const std::size_t second = id.rfind('.');
    const auto payload = base64url_decode(id.substr(first + 1, second - first - 1));
    REQUIRE(payload.has_value());
    return *payload;
}

}  // namespace

TEST_CASE("a signed session id reads back as the same claims", "[session-token]") {
    const SessionTokenSigner signer(kTokenTestKey);
    const HttpSessionClaims claims = token_test_claims();
    const std::string id = signer.sign(claims);
    CHECK(id.starts_with("m1."));
    for (const char c : id) CHECK((c >= 0x21 && c <= 0x7E));
    const Result<HttpSessionClaims> back = signer.verify(id);
    INFO((back ? "" : back.error()));
    REQUIRE(back.ok());
    CHECK(back.value() == claims);
    // The same claims sign to the same id; another serial to another.
    CHECK(signer.sign(claims) == id);
    HttpSessionClaims other = claims;
    other.serial = 43;
    CHECK(signer.sign(other) != id);
}

TEST_CASE("a session id keeps the uid exactly, and a changed uid is refused", "[session-token]") {
    const SessionTokenSigner signer(kTokenTestKey);
    HttpSessionClaims claims = token_test_claims();
    for (const uid_t uid : {uid_t{0}, uid_t{1000}, uid_t{65534}, uid_t{4294967294u}}) {
        claims.uid = uid;
        const Result<HttpSessionClaims> back = signer.verify(signer.sign(claims));
        REQUIRE(back.ok());
        CHECK(back->uid == uid);
    }
    claims.uid = 1000;
    const std::string id = signer.sign(claims);
    json payload = json::parse(token_test_payload(id));
    CHECK(payload["u"] == 1000);
    payload["u"] = 0;  // root, without the key
    const Result<HttpSessionClaims> forged =
        signer.verify(token_test_with_payload(id, payload.dump()));
    REQUIRE_FALSE(forged.ok());
    CHECK(forged.error().find("signed") != std::string::npos);
}

TEST_CASE("every change of one character of a session id is refused", "[session-token]") {
    const SessionTokenSigner signer(kTokenTestKey);
    const std::string id = signer.sign(token_test_claims());
    REQUIRE(signer.verify(id).ok());
    const std::string replacements = "Aaz09-_.m1 ";
    for (std::size_t at = 0; at < id.size(); ++at) {
        for (const char replacement : replacements) {
            if (replacement == id[at]) continue;
            std::string changed = id;
            changed[at] = replacement;
            const Result<HttpSessionClaims> verdict = signer.verify(changed);
            INFO("position " << at << " changed to '" << replacement << "'");
            REQUIRE_FALSE(verdict.ok());
            // The sentence never repeats the id.
            CHECK(verdict.error().find(changed) == std::string::npos);
        }
    }
    // Cut short, or with bytes added, likewise.
    CHECK_FALSE(signer.verify(id.substr(0, id.size() - 1)).ok());
    CHECK_FALSE(signer.verify(id + "A").ok());
    CHECK_FALSE(signer.verify("").ok());
    CHECK_FALSE(signer.verify("m1.").ok());
    CHECK_FALSE(signer.verify("m1..").ok());
}

TEST_CASE("a session id signed with another key is refused", "[session-token]") {
    const SessionTokenSigner signer(kTokenTestKey);
    const SessionTokenSigner other(std::string(32, '\x5b'));
    const Result<HttpSessionClaims> verdict = other.verify(signer.sign(token_test_claims()));
    REQUIRE_FALSE(verdict.ok());
    CHECK(verdict.error() ==
          "the session id was not signed by this mcpd's session key (or was changed): start a "
          "new session (initialize without Mcp-Session-Id)");
}

TEST_CASE("a session id of another format or shape is refused", "[session-token]") {
    const SessionTokenSigner signer(kTokenTestKey);
    const std::string id = signer.sign(token_test_claims());
    const Result<HttpSessionClaims> newer = signer.verify("m2" + id.substr(2));
    REQUIRE_FALSE(newer.ok());
    CHECK(newer.error().find("another format version") != std::string::npos);
    CHECK(signer.verify("8f1c2d3e-uuid-like").error().find("malformed") != std::string::npos);
}

TEST_CASE("claims signed with the key but of the wrong shape are refused", "[session-token]") {
    const SessionTokenSigner signer(kTokenTestKey);
    const json good = json::parse(token_test_payload(signer.sign(token_test_claims())));
    // Signed by hand as sign() does, so that only the claims differ.
    REQUIRE(signer.verify(token_test_signed(good.dump())).ok());
    const auto refused = [&signer](const std::string& payload) {
        const Result<HttpSessionClaims> verdict = signer.verify(token_test_signed(payload));
        return !verdict.ok();
    };
    const auto with = [&good](const char* key, const json& value) {
        json changed = good;
        changed[key] = value;
        return changed.dump();
    };
    CHECK(refused(with("u", "1000")));
    CHECK(refused(with("u", -1)));
    CHECK(refused(with("u", 1000.0)));
    CHECK(refused(with("u", std::uint64_t{1} << 32)));  // no uid_t holds it
    CHECK(refused(with("t", 7)));
    CHECK(refused(with("v", nullptr)));
    CHECK(refused(with("c", json::array())));
    CHECK(refused(with("i", "inspector")));
    CHECK(refused(with("s", -42)));
    CHECK(refused(with("extra", 1)));
    json missing = good;
    missing.erase("s");
    CHECK(refused(missing.dump()));
    CHECK(refused("[]"));
    CHECK(refused("not json"));
    CHECK(signer.verify(token_test_signed("{")).error() ==
          "the session id holds claims that are not JSON: start a new session (initialize "
          "without Mcp-Session-Id)");
}

TEST_CASE("an id over kMaxSessionIdBytes is refused", "[session-token]") {
    const SessionTokenSigner signer(kTokenTestKey);
    const std::string id = signer.sign(token_test_claims());
    const std::string long_id = id + std::string(kMaxSessionIdBytes, 'A');
    const Result<HttpSessionClaims> verdict = signer.verify(long_id);
    REQUIRE_FALSE(verdict.ok());
    CHECK(verdict.error().find("longer than 4096 bytes") != std::string::npos);
}

TEST_CASE("a session id that would be too long keeps less of the client", "[session-token]") {
    const SessionTokenSigner signer(kTokenTestKey);
    HttpSessionClaims claims = token_test_claims();
    claims.client_capabilities["experimental"] = {{"huge", std::string(5000, 'x')}};
    std::string id = signer.sign(claims);
    CHECK(id.size() <= kMaxSessionIdBytes);
    Result<HttpSessionClaims> back = signer.verify(id);
    REQUIRE(back.ok());
    // Each capability's contents dropped, its name kept; the client's info kept whole.
    CHECK(back->client_capabilities == json({{"experimental", json::object()},
                                             {"roots", json::object()},
                                             {"sampling", json::object()}}));
    CHECK(back->client_info == claims.client_info);
    CHECK(back->target == claims.target);
    CHECK(back->serial == claims.serial);

    // Then the client's info keeps its name and version, 64 bytes each.
    claims.client_info = {
        {"name", std::string(100, 'n')}, {"version", "1.0"}, {"title", std::string(5000, 't')}};
    back = signer.verify(signer.sign(claims));
    REQUIRE(back.ok());
    CHECK(back->client_info == json({{"name", std::string(64, 'n')}, {"version", "1.0"}}));
    CHECK(back->client_capabilities.size() == 3);

    // A cut never splits a character in two.
    claims.client_info = {{"name", std::string(63, 'n') + "\xc3\xa9"},
                          {"icons", std::string(5000, 'i')}};
    back = signer.verify(signer.sign(claims));
    REQUIRE(back.ok());
    CHECK(back->client_info == json({{"name", std::string(63, 'n')}}));

    // Then no capabilities at all, when their names alone are too many.
    for (int i = 0; i < 400; ++i) claims.client_capabilities["capability" + std::to_string(i)] = 1;
    id = signer.sign(claims);
    CHECK(id.size() <= kMaxSessionIdBytes);
    back = signer.verify(id);
    REQUIRE(back.ok());
    CHECK(back->client_capabilities == json::object());
    CHECK(back->uid == 1000);
}

TEST_CASE("capabilities or client info that are not objects are signed as {}", "[session-token]") {
    const SessionTokenSigner signer(kTokenTestKey);
    HttpSessionClaims claims = token_test_claims();
    claims.client_capabilities = json::array();
    claims.client_info = "a string";
    const Result<HttpSessionClaims> back = signer.verify(signer.sign(claims));
    REQUIRE(back.ok());
    CHECK(back->client_capabilities == json::object());
    CHECK(back->client_info == json::object());
}

TEST_CASE("the session key file is created private and read back", "[session-token]") {
    TempDir dir("mcpd-session-key");
    const std::string path = dir.path("session.key");
    const Result<std::string> first = load_or_create_session_key(path);
    INFO((first ? "" : first.error()));
    REQUIRE(first.ok());
    CHECK(first->size() == 32);
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(st.st_size == 32);
    CHECK(st.st_uid == ::geteuid());
    const Result<std::string> second = load_or_create_session_key(path);
    REQUIRE(second.ok());
    CHECK(second.value() == first.value());
    // No temporary file left beside it.
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path("")))
        ++files;
    CHECK(files == 1);
    // Another file, another key.
    const Result<std::string> other = load_or_create_session_key(dir.path("other.key"));
    REQUIRE(other.ok());
    CHECK(other.value() != first.value());
}

TEST_CASE("a session key file others may read, or of another size, is refused", "[session-token]") {
    TempDir dir("mcpd-session-key");
    const std::string open = dir.path("open.key");
    std::ofstream(open, std::ios::binary) << std::string(32, 'k');
    REQUIRE(::chmod(open.c_str(), 0644) == 0);
    const Result<std::string> shared = load_or_create_session_key(open);
    REQUIRE_FALSE(shared.ok());
    CHECK(shared.error() == "the session key file " + open +
                                " has mode 0644, so other users may read the key that signs "
                                "session ids: make it 0600 (chmod 600 " +
                                open + ")");

    const std::string short_key = dir.path("short.key");
    std::ofstream(short_key, std::ios::binary) << std::string(16, 'k');
    REQUIRE(::chmod(short_key.c_str(), 0600) == 0);
    const Result<std::string> wrong_size = load_or_create_session_key(short_key);
    REQUIRE_FALSE(wrong_size.ok());
    CHECK(wrong_size.error().find(short_key + " holds 16 bytes instead of 32") !=
          std::string::npos);
    CHECK(wrong_size.error().find("remove it") != std::string::npos);

    const Result<std::string> directory = load_or_create_session_key(dir.path(""));
    REQUIRE_FALSE(directory.ok());
    CHECK(directory.error().find("not a regular file") != std::string::npos);

    const std::string link = dir.path("link.key");
    REQUIRE(::symlink(short_key.c_str(), link.c_str()) == 0);
    const Result<std::string> linked = load_or_create_session_key(link);
    REQUIRE_FALSE(linked.ok());
    CHECK(linked.error().find("symbolic link") != std::string::npos);

    const Result<std::string> nowhere = load_or_create_session_key(dir.path("missing/dir.key"));
    REQUIRE_FALSE(nowhere.ok());
    CHECK(nowhere.error().find("cannot create the session key file") != std::string::npos);
}
