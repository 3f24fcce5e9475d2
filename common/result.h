// One result convention for operations that can fail where the caller decides what to do:
// a value, or a sentence a user can act on, marked transient when trying again later may
// succeed (a descriptor limit, a busy socket) and permanent otherwise (a missing command).
#pragma once

#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace mcpd {

struct Failure {
    std::string sentence;    // what happened and what to do, ready for a log or a reply
    bool transient = false;  // trying again later may succeed
};

inline Failure permanent_failure(std::string sentence) { return Failure{std::move(sentence), false}; }
inline Failure transient_failure(std::string sentence) { return Failure{std::move(sentence), true}; }
// A system call's failure as a permanent one: "`what`: <the errno's text>".
inline Failure system_failure(const std::string& what, int error) {
    return permanent_failure(what + ": " + std::strerror(error));
}

// The value of a Result<Done>: the operation has nothing to return but success.
struct Done {};

template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit, like a return value
    Result(Failure failure) : state_(std::move(failure)) {}  // NOLINT

    bool ok() const { return std::holds_alternative<T>(state_); }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<T>(state_); }
    const T& value() const& { return std::get<T>(state_); }
    T&& value() && { return std::get<T>(std::move(state_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    const Failure& failure() const { return std::get<Failure>(state_); }
    const std::string& error() const { return failure().sentence; }
    bool transient() const { return !ok() && failure().transient; }

private:
    std::variant<T, Failure> state_;
};

}  // namespace mcpd
