// A private directory for a test's sockets and files, removed with everything in it.
#pragma once

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <string_view>

class TempDir {
public:
    explicit TempDir(std::string_view prefix = "mcpd-test") {
        std::string pattern = "/tmp/" + std::string(prefix) + "-XXXXXX";
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    std::string path(std::string_view name) const { return path_ + "/" + std::string(name); }

private:
    std::string path_;
};
