// The daemon-wide budget for output queued for clients ([daemon] max_queued_output).
//
// Every session and every control connection (a `logs -f` follower among them) holds an
// Account: what waits in its output buffer counts against one limit, beside the connection's
// own cap. When the total goes over, the largest queues are cut first, until it is back
// under: a client that stopped reading has the largest queue, and one that keeps up has a
// small one, so a reader is never cut while a larger queue exists.
//
// The total is kept exact by an evbuffer callback, which libevent runs only when bytes enter
// or leave an output buffer: a message written at once (eager_write.h) costs nothing here.
// Cutting is explicit (enforce()), run by whoever has just queued or on the next loop turn,
// never from inside a buffer callback: a cut may free the very buffer being written.
// Bytes eager_write holds back during a burst are not counted: at most 256 KiB per
// destination, written or queued (and then counted) when the burst ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct evbuffer;
struct evbuffer_cb_entry;
struct evbuffer_cb_info;

namespace mcpd {

class OutputBudget {
public:
    // How much dropped output (queues of connections cut or closed) makes it worth giving
    // memory back to the system.
    static constexpr std::size_t kReleaseBytes = 1024 * 1024;

    // What the budget asks of its owner; either may be empty.
    struct Hooks {
        // The total went over the limit inside a buffer callback: run enforce() soon.
        std::function<void()> enforce_soon;
        // Connections cut or closed have dropped at least kReleaseBytes of queued output
        // since the last call: that memory is free and may be given back.
        std::function<void()> memory_released;
    };

    class Account;

    explicit OutputBudget(std::size_t limit, Hooks hooks = {});
    ~OutputBudget();
    OutputBudget(const OutputBudget&) = delete;
    OutputBudget& operator=(const OutputBudget&) = delete;

    std::size_t limit() const { return limit_; }
    // A reload may change the limit; the caller runs enforce() when it went down.
    void set_limit(std::size_t limit) { limit_ = limit; }
    // Bytes queued for every client together.
    std::size_t total() const { return total_; }
    bool over() const { return total_ > limit_; }
    // Connections counted now, and how many the budget has cut since mcpd started.
    std::size_t accounts() const { return accounts_.size(); }
    std::uint64_t cuts() const { return cuts_; }

    // Cut the largest queues until the total is within the limit; returns how many were cut.
    std::size_t enforce();

private:
    void attach(Account& account);
    void detach(Account& account);
    void resized(Account& account, std::size_t queued);

    std::size_t limit_;
    Hooks hooks_;
    std::size_t total_ = 0;
    std::uint64_t cuts_ = 0;
    std::size_t released_ = 0;  // dropped with connections since memory_released last ran
    std::vector<Account*> accounts_;
    bool enforcing_ = false;
    bool enforce_requested_ = false;
};

// One connection's output queue, counted from watch() until unwatch() or destruction.
class OutputBudget::Account {
public:
    // `cut(reason)` closes the connection and drops what is queued for it; the budget calls
    // it at most once, on the largest queue while the total is over the limit.
    Account(OutputBudget& budget, std::function<void(const std::string& reason)> cut);
    ~Account();
    Account(const Account&) = delete;
    Account& operator=(const Account&) = delete;

    // Count what `output` holds now and whenever it changes (an evbuffer callback).
    void watch(evbuffer* output);
    // Stop counting (the buffer is about to be freed or emptied, or is handed on): its bytes
    // leave the total and count as dropped.
    void unwatch();

    // What the watched buffer holds now (or what set_queued() said, without a buffer).
    std::size_t queued() const { return queued_; }
    // The most it ever held.
    std::size_t peak() const { return peak_; }
    bool counted() const { return counted_; }
    // Count `bytes` as queued without a buffer: what the callback does, for tests.
    void set_queued(std::size_t bytes);

private:
    friend class OutputBudget;
    static void on_buffer_changed(evbuffer* buffer, const evbuffer_cb_info* info, void* self);

    OutputBudget* budget_;
    std::function<void(const std::string&)> cut_;
    evbuffer* output_ = nullptr;
    evbuffer_cb_entry* callback_ = nullptr;
    std::size_t queued_ = 0;
    std::size_t peak_ = 0;
    bool counted_ = false;
    bool cut_requested_ = false;
};

}  // namespace mcpd
