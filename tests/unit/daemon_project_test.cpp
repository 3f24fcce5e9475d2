// sharing = "project": a session's project from its roots or its working directory, root
// normalisation, and the configuration a project's child runs with.
#include <catch2/catch.hpp>

#include "daemon/mux/project.h"

using mcpd::normalise_root_uri;
using mcpd::Project;
using mcpd::project_from_directory;
using mcpd::project_from_roots;
using nlohmann::json;

namespace {

Project roots_project(const json& result) {
    auto project = project_from_roots(result);
    REQUIRE(project.ok());
    return project.value();
}

json roots(std::initializer_list<const char*> uris) {
    json list = json::array();
    for (const char* uri : uris) list.push_back({{"uri", uri}, {"name", "x"}});
    return json{{"roots", list}};
}

}  // namespace

TEST_CASE("root URIs have one spelling", "[project]") {
    const std::vector<std::pair<std::string, std::string>> rows = {
        {"file:///home/a/proj", "file:///home/a/proj"},
        {"file:///home/a/proj/", "file:///home/a/proj"},
        {"file://localhost/home/a/proj", "file:///home/a/proj"},
        {"FILE://LocalHost/home/a/proj", "file:///home/a/proj"},
        {"file:/home/a/proj", "file:///home/a/proj"},
        {"file:///home//a/./proj", "file:///home/a/proj"},
        {"file:///home/a/b/../proj", "file:///home/a/proj"},
        {"file:///../../home/a/proj", "file:///home/a/proj"},
        {"file:///home/a/My%20Project", "file:///home/a/My%20Project"},
        {"file:///home/a/My Project", "file:///home/a/My%20Project"},
        {"file:///home/a/%7euser", "file:///home/a/~user"},
        {"file:///home/a/b%40c", "file:///home/a/b@c"},
        {"file:///home/a/%c3%a9", "file:///home/a/%C3%A9"},
        {"file:///home/a/proj?query#frag", "file:///home/a/proj"},
        {"file:///", "file:///"},
        {"file://", "file:///"},
    };
    for (const auto& [written, normal] : rows) {
        INFO(written);
        const auto got = normalise_root_uri(written);
        REQUIRE(got);
        CHECK(*got == normal);
        // Normalising twice changes nothing.
        CHECK(normalise_root_uri(*got) == got);
    }
}

TEST_CASE("what is not a usable root URI is refused, other schemes are kept as written",
          "[project]") {
    CHECK_FALSE(normalise_root_uri("/home/a/proj"));    // a path, not a URI
    CHECK_FALSE(normalise_root_uri("file:home/a"));     // relative
    CHECK_FALSE(normalise_root_uri("file:///a/%zz"));   // a broken escape
    CHECK_FALSE(normalise_root_uri("file:///a/%2Fb"));  // a separator inside a name
    CHECK_FALSE(normalise_root_uri("file:///a/%00"));   // NUL
    CHECK_FALSE(normalise_root_uri("file:///a/%4"));    // cut short
    CHECK_FALSE(normalise_root_uri("1file:///a"));
    CHECK_FALSE(normalise_root_uri(""));
    CHECK(normalise_root_uri("https://example.invalid/x/") == "https://example.invalid/x/");
    // A file on another host names no directory here: not a root mcpd takes.
    CHECK_FALSE(normalise_root_uri("file://otherhost/a"));
    CHECK_FALSE(normalise_root_uri("FILE://Other.Host/etc/secret"));
}

TEST_CASE("a project from roots is the set of its normalised URIs", "[project]") {
    const Project a = roots_project(roots({"file:///w/one/", "file:///w/two"}));
    const Project b = roots_project(roots({"file://localhost/w/two", "file:/w/one"}));
    const Project c = roots_project(roots({"file:///w/one", "file:///w/two", "file:///w/one/"}));
    CHECK(a.key() == b.key());
    CHECK(a.key() == c.key());
    CHECK(a.roots == std::vector<std::string>{"file:///w/one", "file:///w/two"});
    CHECK(a.from_roots);
    // The directory is the client's first file root, as it listed them.
    CHECK(a.directory == "/w/one");
    CHECK(b.directory == "/w/two");

    const Project other = roots_project(roots({"file:///w/one"}));
    CHECK(other.key() != a.key());
}

TEST_CASE("a roots result that gives no project says why", "[project]") {
    CHECK_FALSE(project_from_roots(json::object()).ok());
    CHECK_FALSE(project_from_roots(json{{"roots", "file:///a"}}).ok());
    CHECK_FALSE(project_from_roots(json{{"roots", json::array()}}).ok());
    CHECK_FALSE(project_from_roots(json{{"roots", {{{"name", "no uri"}}}}}).ok());
    CHECK_FALSE(project_from_roots(json{{"roots", {{{"uri", 7}}}}}).ok());
    CHECK_FALSE(project_from_roots(roots({"relative/path"})).ok());
    const auto remote_only = project_from_roots(roots({"https://example.invalid/repo"}));
    REQUIRE_FALSE(remote_only.ok());
    CHECK(remote_only.error() == "the client reported no file:// root");
}

TEST_CASE("a project from a working directory", "[project]") {
    const auto project = project_from_directory("/home/a/proj/");
    REQUIRE(project.ok());
    CHECK(project->directory == "/home/a/proj");
    CHECK(project->roots == std::vector<std::string>{"file:///home/a/proj"});
    CHECK_FALSE(project->from_roots);
    // The same directory reported as a root is the same project.
    CHECK(project->key() == roots_project(roots({"file:///home/a/proj"})).key());
    CHECK(project_from_directory("/home/a/./b/..//proj")->key() == project->key());
    CHECK_FALSE(project_from_directory("relative").ok());
    CHECK_FALSE(project_from_directory("").ok());
}

TEST_CASE("the child's roots/list result names every root of the project", "[project]") {
    const Project p = roots_project(roots({"file:///w/two", "file:///w/My%20One"}));
    CHECK(p.roots_result() ==
          json::parse(R"({"roots":[{"uri":"file:///w/My%20One","name":"My One"},)"
                      R"({"uri":"file:///w/two","name":"two"}]})"));
}

TEST_CASE("a project's child runs in the project with {project} filled in", "[project]") {
    mcpd::config::ServerConfig server;
    server.name = "fs";
    server.command = "server-filesystem";
    server.args = {"--root", "{project}", "{project}/sub", "plain"};
    server.env = {{"PROJECT_DIR", "{project}"}, {"OTHER", "x"}};
    const Project project = project_from_directory("/w/one").value();

    mcpd::config::ServerConfig child = mcpd::config_for_project(server, project);
    CHECK(child.cwd == "/w/one");
    CHECK(child.args == std::vector<std::string>{"--root", "/w/one", "/w/one/sub", "plain"});
    CHECK(child.env.at("PROJECT_DIR") == "/w/one");
    CHECK(child.env.at("OTHER") == "x");
    CHECK(child.roots == std::vector<std::string>{"file:///w/one"});
    CHECK(child.name == "fs");

    server.cwd = "/srv/{project}/x";
    CHECK(mcpd::config_for_project(server, project).cwd == "/srv//w/one/x");
    server.cwd = "/fixed";
    CHECK(mcpd::config_for_project(server, project).cwd == "/fixed");
    // A directory that itself holds the placeholder text is put in once.
    server.args = {"{project}"};
    const Project odd = project_from_directory("/w/{project}").value();
    CHECK(mcpd::config_for_project(server, odd).args == std::vector<std::string>{"/w/{project}"});
}
