// Processes the benchmark starts: always terminated and reaped on destruction, by pid.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace bench {

class Child {
public:
    struct Options {
        bool pipes = false;                      // stdin and stdout on pipes to us (else /dev/null)
        std::string stderr_path;                 // appended to; /dev/null when empty
        std::map<std::string, std::string> env;  // added to ours
    };
    Child(const std::vector<std::string>& argv, const Options& options);
    ~Child();
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    pid_t pid() const { return pid_; }
    // Our ends of its stdin (write) and stdout (read) with Options::pipes; -1 otherwise.
    // Taking them passes ownership.
    int take_stdin() { return std::exchange(stdin_, -1); }
    int take_stdout() { return std::exchange(stdout_, -1); }
    // Whether it still runs (reaps it when it has exited).
    bool running();
    // SIGTERM, wait up to `grace_ms`, then SIGKILL; returns the wait status.
    int stop(int grace_ms = 5000);

private:
    pid_t pid_ = -1;
    int stdin_ = -1;
    int stdout_ = -1;
    bool reaped_ = false;
    int status_ = 0;
};

// A private temporary directory, removed with everything in it on destruction.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }
    std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

void write_text(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);
// Raise RLIMIT_NOFILE's soft limit to the hard one (children inherit it).
void raise_fd_limit();
void sleep_ms(int ms);

}  // namespace bench
