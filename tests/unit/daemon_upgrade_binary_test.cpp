// Which file an upgrade in place may exec (daemon/upgrade_binary.h), and what the new process
// is run with.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "daemon/upgrade_binary.h"
#include "daemon/upgrade_state.h"
#include "temp_dir.h"

using namespace mcpd;

namespace {

std::string refusal(const std::string& path, uid_t owner = ::geteuid()) {
    const Result<Done> checked = check_upgrade_binary(path, owner);
    return checked.ok() ? std::string() : checked.error();
}

std::string executable(const TempDir& dir, const std::string& name, mode_t mode = 0755) {
    const std::string path = dir.path(name);
    std::ofstream(path) << "#!/bin/sh\n";
    ::chmod(path.c_str(), mode);
    return path;
}

}  // namespace

TEST_CASE("upgrade binary: a file only root or mcpd's user can change is accepted") {
    const TempDir dir("mcpd-upgrade-binary");
    ::chmod(dir.path("").c_str(), 0700);
    CHECK(refusal(executable(dir, "mcpd")).empty());
    CHECK(refusal("/bin/sh").empty());  // root's, in root's directory
    // The file this test runs is one as well, and it is found by its own name.
    CHECK(running_binary().ends_with("/unit_tests_daemon"));
}

TEST_CASE("upgrade binary: a relative, missing, non-regular, non-executable or open file is refused, saying why") {
    const TempDir dir("mcpd-upgrade-binary");
    ::chmod(dir.path("").c_str(), 0700);
    CHECK(refusal("mcpd").find("absolute path") != std::string::npos);
    CHECK(refusal("").find("absolute path") != std::string::npos);
    CHECK(refusal(dir.path("missing")).find("No such file or directory") != std::string::npos);
    CHECK(refusal(dir.path("")).find("is not a regular file") != std::string::npos);
    CHECK(refusal(executable(dir, "plain", 0644)).find("is not executable") != std::string::npos);
    CHECK(refusal(executable(dir, "open", 0777)).find("may be written by others") !=
          std::string::npos);
    CHECK(refusal(executable(dir, "group", 0775)).find("may be written by its group") !=
          std::string::npos);
    // Someone else's file, and a file in a directory others may write.
    CHECK(refusal("/bin/sh", 12345).empty());  // root's is fine for any owner
    const std::string mine = executable(dir, "mine");
    if (::geteuid() != 0) {
        CHECK(refusal(mine, ::geteuid() + 1).find("neither root nor mcpd's user") !=
              std::string::npos);
    }
    ::chmod(dir.path("").c_str(), 0777);
    CHECK(refusal(mine).find("its directory") != std::string::npos);
    // A link from a directory nobody else may write is judged by where it leads.
    const TempDir safe("mcpd-upgrade-link");
    ::chmod(safe.path("").c_str(), 0700);
    const std::string link = safe.path("mcpd");
    REQUIRE(::symlink(mine.c_str(), link.c_str()) == 0);
    CHECK(refusal(link).find("its directory") != std::string::npos);
    ::chmod(dir.path("").c_str(), 01777);  // sticky: nobody can replace another's file
    CHECK(refusal(mine).empty());
    ::chmod(dir.path("").c_str(), 0700);
}

TEST_CASE("upgrade binary: the new process gets mcpd's arguments without an old --restore-state") {
    CHECK(arguments_to_keep({"--config", "/r.toml", "--restore-state", "7", "--socket", "/s"}) ==
          std::vector<std::string>{"--config", "/r.toml", "--socket", "/s"});
    CHECK(arguments_to_keep({"--restore-state=9", "-c", "x"}) ==
          std::vector<std::string>{"-c", "x"});
    CHECK(arguments_to_keep({}).empty());
}
