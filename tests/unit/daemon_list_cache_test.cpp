// The lazy servers' cache: what a child's catalog holds and how it is compared (mux/catalog),
// its key, and its files (server/list_cache): written 0600 in a 0700 directory, read back
// exactly, and never trusted when truncated, corrupt, of another format or key, or open to
// others.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <string>

#include "daemon/mux/catalog.h"
#include "daemon/server/list_cache.h"
#include "temp_dir.h"

using namespace mcpd;
using nlohmann::json;

namespace {

Catalog sample_catalog() {
    Catalog catalog;
    catalog.protocol_version = "2025-06-18";
    catalog.handshake = {{"protocolVersion", "2025-06-18"},
                         {"capabilities", {{"tools", {{"listChanged", true}}},
                                           {"resources", json::object()}}},
                         {"serverInfo", {{"name", "demo"}, {"version", "1"}}},
                         {"instructions", "use it"}};
    catalog.list(ListKind::tools).items = json::array({{{"name", "echo"}}, {{"name", "add"}}});
    catalog.list(ListKind::tools).known = true;
    catalog.list(ListKind::resources).items = json::array({{{"uri", "demo://a"}}});
    catalog.list(ListKind::resources).known = true;
    catalog.list(ListKind::resources).private_scope = true;
    catalog.saved_at = 1795000000;
    return catalog;
}

config::ServerConfig keyed_entry() {
    config::ServerConfig config;
    config.name = "demo";
    config.command = "demo-server";
    config.args = {"--flag"};
    config.env = {{"A", "1"}};
    config.cwd = "/srv";
    return config;
}

std::string read_whole(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_whole(const std::string& path, const std::string& text, mode_t mode = 0600) {
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << text;
    }
    REQUIRE(::chmod(path.c_str(), mode) == 0);
}

}  // namespace

TEST_CASE("catalog: list methods, members and notifications by kind", "[cache]") {
    CHECK(list_method(ListKind::resource_templates) == "resources/templates/list");
    CHECK(list_member(ListKind::resource_templates) == "resourceTemplates");
    CHECK(list_changed_method(ListKind::resource_templates) ==
          "notifications/resources/list_changed");
    CHECK(list_kind_of("prompts/list") == ListKind::prompts);
    CHECK(list_capability(ListKind::resource_templates) == "resources");
    for (const ListKind kind : kListKinds) CHECK(list_kind_of(list_method(kind)) == kind);
    CHECK_FALSE(list_kind_of("tools/call"));
}

TEST_CASE("catalog: complete once every list the capabilities offer is known", "[cache]") {
    Catalog catalog = sample_catalog();
    // tools and resources are offered; resources/templates/list is not known yet.
    CHECK_FALSE(catalog.complete());
    catalog.list(ListKind::resource_templates).known = true;
    CHECK(catalog.complete());  // prompts are not offered
}

TEST_CASE("catalog: the lists that changed are the ones sessions are told of", "[cache]") {
    const Catalog before = sample_catalog();
    Catalog after = before;
    CHECK(changed_lists(before, after).empty());
    after.list(ListKind::tools).items.push_back({{"name", "new"}});
    CHECK(changed_lists(before, after) == std::vector<ListKind>{ListKind::tools});
    // A list that becomes known counts as changed; one that is not known says nothing.
    after.list(ListKind::prompts).known = true;
    CHECK(changed_lists(before, after) ==
          std::vector<ListKind>{ListKind::tools, ListKind::prompts});
    Catalog unknown = before;
    unknown.list(ListKind::tools).known = false;
    CHECK(changed_lists(before, unknown).empty());
}

TEST_CASE("catalog: JSON round trip, and every malformed field refused", "[cache]") {
    const Catalog catalog = sample_catalog();
    const Result<Catalog> back = catalog_from_json(catalog_to_json(catalog));
    REQUIRE(back);
    CHECK(back->protocol_version == catalog.protocol_version);
    CHECK(back->handshake == catalog.handshake);
    CHECK(back->saved_at == catalog.saved_at);
    for (const ListKind kind : kListKinds) {
        CHECK(back->list(kind).known == catalog.list(kind).known);
        CHECK(back->list(kind).items == catalog.list(kind).items);
        CHECK(back->list(kind).private_scope == catalog.list(kind).private_scope);
    }
    const json good = catalog_to_json(catalog);
    for (const char* field : {"protocol_version", "modern", "handshake", "lists", "saved_at"}) {
        json bad = good;
        bad.erase(field);
        INFO(field);
        CHECK_FALSE(catalog_from_json(bad));
        bad[field] = json::array();
        CHECK_FALSE(catalog_from_json(bad));
    }
    json odd = good;
    odd["lists"]["tools"]["items"] = json::array({"not an object"});
    CHECK_FALSE(catalog_from_json(odd));
    odd = good;
    odd["lists"]["widgets"] = {{"items", json::array()}, {"private", false}};
    CHECK_FALSE(catalog_from_json(odd));
}

TEST_CASE("cache key: every input that makes the child what it is changes it", "[cache]") {
    const config::ServerConfig base = keyed_entry();
    const std::string key = cache_key(base, std::nullopt);
    CHECK(key.size() == 64);
    CHECK(cache_key(keyed_entry(), std::nullopt) == key);
    std::set<std::string> keys{key};
    const auto vary = [&](auto change) {
        config::ServerConfig changed = keyed_entry();
        change(changed);
        keys.insert(cache_key(changed, std::nullopt));
    };
    vary([](config::ServerConfig& c) { c.command = "other"; });
    vary([](config::ServerConfig& c) { c.args.push_back("--more"); });
    vary([](config::ServerConfig& c) { c.args = {"--fl", "ag"}; });
    vary([](config::ServerConfig& c) { c.env["A"] = "2"; });
    vary([](config::ServerConfig& c) { c.env_file = "/etc/secret"; });
    vary([](config::ServerConfig& c) { c.env_file_vars["TOKEN"] = "x"; });
    vary([](config::ServerConfig& c) { c.cwd = "/srv/project"; });
    vary([](config::ServerConfig& c) { c.roots = {"file:///srv/project"}; });
    vary([](config::ServerConfig& c) { c.era = config::Era::modern; });
    vary([](config::ServerConfig& c) { c.run_as = config::ChildIdentity{1001, 1001, {}, "a", "/"}; });
    CHECK(keys.size() == 11);
    CHECK(cache_key(base, 1001) != key);
    CHECK(cache_key(base, 1001) != cache_key(base, 1002));
    // One entry per registry entry: two entries that run the same program have their own (a
    // cache clear of one leaves the other's).
    config::ServerConfig renamed = keyed_entry();
    renamed.name = "other-name";
    CHECK(cache_key(renamed, std::nullopt) != key);
}

TEST_CASE("list cache: written 0600 in a 0700 directory and read back as it was", "[cache]") {
    TempDir temp("mcpd-cache");
    const ListCache cache(temp.path("state/mcpd/cache"));
    REQUIRE(cache.prepare());
    struct stat st {};
    REQUIRE(::stat(cache.directory().c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0700);

    const std::string key = cache_key(keyed_entry(), std::nullopt);
    const Result<std::optional<Catalog>> none = cache.load(key);
    REQUIRE(none);
    CHECK_FALSE(none.value());

    REQUIRE(cache.save(key, "demo", sample_catalog()));
    const std::string file = cache.directory() + "/" + key + ".json";
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    const Result<std::optional<Catalog>> loaded = cache.load(key);
    REQUIRE(loaded);
    REQUIRE(loaded.value());
    CHECK(loaded.value()->list(ListKind::tools).items == sample_catalog().list(ListKind::tools).items);
    CHECK(loaded.value()->list(ListKind::resources).private_scope);

    // Saved again: replaced whole, no temporary file left behind.
    Catalog changed = sample_catalog();
    changed.list(ListKind::tools).items.push_back({{"name", "third"}});
    REQUIRE(cache.save(key, "demo", changed));
    CHECK(cache.load(key).value().value().list(ListKind::tools).items.size() == 3);
    std::size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(cache.directory())) {
        (void)entry;
        ++files;
    }
    CHECK(files == 1);
}

TEST_CASE("list cache: a truncated, corrupt, foreign or exposed file is never trusted",
          "[cache]") {
    TempDir temp("mcpd-cache");
    const ListCache cache(temp.path("cache"));
    REQUIRE(cache.prepare());
    const std::string key = cache_key(keyed_entry(), std::nullopt);
    REQUIRE(cache.save(key, "demo", sample_catalog()));
    const std::string file = cache.directory() + "/" + key + ".json";
    const std::string good = read_whole(file);

    const auto refused = [&](const std::string& text, const std::string& why, mode_t mode = 0600) {
        write_whole(file, text, mode);
        const Result<std::optional<Catalog>> loaded = cache.load(key);
        INFO(text.substr(0, 80));
        REQUIRE_FALSE(loaded);
        CHECK_THAT(loaded.error(), Catch::Contains(why));
    };
    refused(good.substr(0, good.size() / 2), "not valid JSON");
    refused("", "not valid JSON");
    refused("[1,2]", "not a JSON object");
    json other = json::parse(good);
    other["format"] = "something-else";
    refused(other.dump(), "not of format");
    other = json::parse(good);
    other["version"] = 2;
    refused(other.dump(), "not of format");
    other = json::parse(good);
    other["key"] = std::string(64, '0');
    refused(other.dump(), "another key");
    other = json::parse(good);
    other["catalog"]["lists"]["tools"]["items"] = "nope";
    refused(other.dump(), "malformed");
    refused(good, "others may read", 0644);

    // A symbolic link in its place is not followed.
    REQUIRE(::unlink(file.c_str()) == 0);
    const std::string elsewhere = temp.path("elsewhere.json");
    write_whole(elsewhere, good);
    REQUIRE(::symlink(elsewhere.c_str(), file.c_str()) == 0);
    CHECK_FALSE(cache.load(key));
}

TEST_CASE("list cache: a directory others may write to is refused", "[cache]") {
    TempDir temp("mcpd-cache");
    const std::string open_dir = temp.path("open");
    REQUIRE(::mkdir(open_dir.c_str(), 0777) == 0);
    REQUIRE(::chmod(open_dir.c_str(), 0777) == 0);
    const Result<Done> prepared = ListCache(open_dir).prepare();
    REQUIRE_FALSE(prepared);
    CHECK_THAT(prepared.error(), Catch::Contains(open_dir));
    CHECK_FALSE(ListCache("relative/cache").prepare());
}

TEST_CASE("list cache: entries are dropped by key and by server", "[cache]") {
    TempDir temp("mcpd-cache");
    const ListCache cache(temp.path("cache"));
    REQUIRE(cache.prepare());
    config::ServerConfig other = keyed_entry();
    other.command = "other-server";
    const std::string first = cache_key(keyed_entry(), std::nullopt);
    const std::string second = cache_key(other, std::nullopt);
    const std::string third = cache_key(keyed_entry(), 1001);
    REQUIRE(cache.save(first, "demo", sample_catalog()));
    REQUIRE(cache.save(second, "other", sample_catalog()));
    REQUIRE(cache.save(third, "demo", sample_catalog()));
    CHECK(cache.drop_server("demo") == 2);
    CHECK_FALSE(cache.load(first).value());
    CHECK_FALSE(cache.load(third).value());
    CHECK(cache.load(second).value());
    cache.drop(second);
    CHECK_FALSE(cache.load(second).value());
    REQUIRE(cache.save(first, "demo", sample_catalog()));
    CHECK(cache.drop_server("") == 1);
}

TEST_CASE("list cache: where it lives", "[cache]") {
    const auto with = [](const char* name, const char* value) {
        if (value == nullptr) {
            ::unsetenv(name);
        } else {
            ::setenv(name, value, 1);
        }
    };
    const char* saved_state = std::getenv("STATE_DIRECTORY");
    const char* saved_xdg = std::getenv("XDG_STATE_HOME");
    const std::string keep_state = saved_state ? saved_state : "";
    const std::string keep_xdg = saved_xdg ? saved_xdg : "";
    with("STATE_DIRECTORY", "/var/lib/mcpd:/var/lib/other");
    CHECK(default_cache_directory() == "/var/lib/mcpd/cache");
    with("STATE_DIRECTORY", nullptr);
    with("XDG_STATE_HOME", "/home/u/.state");
    CHECK(default_cache_directory() == "/home/u/.state/mcpd/cache");
    with("XDG_STATE_HOME", nullptr);
    if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/')
        CHECK(default_cache_directory() == std::string(home) + "/.local/state/mcpd/cache");
    with("STATE_DIRECTORY", saved_state ? keep_state.c_str() : nullptr);
    with("XDG_STATE_HOME", saved_xdg ? keep_xdg.c_str() : nullptr);
}
