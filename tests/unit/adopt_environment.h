// HOME, adopt's record directory (XDG_STATE_HOME) and the current directory set for one test
// and put back afterwards: shared by the adopt tests.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>

class AdoptEnvironment {
public:
    AdoptEnvironment(const std::string& home, const std::string& cwd, const std::string& state)
        : cwd_(std::filesystem::current_path()) {
        save("HOME", home_);
        save("XDG_STATE_HOME", state_);
        ::setenv("HOME", home.c_str(), 1);
        ::setenv("XDG_STATE_HOME", state.c_str(), 1);
        std::filesystem::current_path(cwd);
    }
    ~AdoptEnvironment() {
        restore("HOME", home_);
        restore("XDG_STATE_HOME", state_);
        std::error_code ignored;
        std::filesystem::current_path(cwd_, ignored);
    }
    AdoptEnvironment(const AdoptEnvironment&) = delete;
    AdoptEnvironment& operator=(const AdoptEnvironment&) = delete;

private:
    static void save(const char* name, std::optional<std::string>& into) {
        if (const char* old = ::getenv(name)) into = old;
    }
    static void restore(const char* name, const std::optional<std::string>& value) {
        if (value)
            ::setenv(name, value->c_str(), 1);
        else
            ::unsetenv(name);
    }

    std::filesystem::path cwd_;
    std::optional<std::string> home_;
    std::optional<std::string> state_;
};
