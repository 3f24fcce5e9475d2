// Supervisor: its state carried across an upgrade in place (docs/UPGRADE.md). Times are kept
// as ages ("this long ago") and remaining times, so they mean the same after the exec.
#include <limits>
#include <nlohmann/json.hpp>

#include "common/json_fields.h"
#include "common/json_read.h"
#include "daemon/server/supervisor.h"

namespace mcpd {

using nlohmann::json;

namespace {

template <typename Rep, typename Period>
std::int64_t ms(std::chrono::duration<Rep, Period> d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

Duration from_ms(std::int64_t count) {
    return std::chrono::duration_cast<Duration>(std::chrono::milliseconds(count));
}

using json_read::FieldReader;

// A time in milliseconds, within a century either way (so that it converts exactly).
constexpr std::int64_t kMaxMilliseconds = 100LL * 366 * 24 * 3600 * 1000;

std::int64_t milliseconds(FieldReader& in, std::string_view key) {
    return in.integer(key, -kMaxMilliseconds, kMaxMilliseconds);
}

template <typename E, std::size_t N>
E named(FieldReader& in, const char* key, const EnumName<E> (&names)[N]) {
    const std::string word = in.text(key);
    const std::optional<E> value = value_of(std::span<const EnumName<E>>(names), word);
    if (!value) {
        in.fail(std::string("its \"") + key + "\" is not one mcpd knows");
        return names[0].value;
    }
    return *value;
}

}  // namespace

bool Supervisor::without_process() const {
    return state_ == ServerState::stopped || state_ == ServerState::failed ||
           state_ == ServerState::backoff;
}

bool Supervisor::carriable() const {
    return without_process() ||
           (state_ == ServerState::running && pid_ > 0 && !ping_outstanding_ && !respawn_at_exit_);
}

json Supervisor::snapshot() const {
    const TimePoint now = env_.now();
    json failures = json::array();
    for (const TimePoint at : failure_times_) failures.push_back(ms(now - at));
    json out = {
        {"state", to_string(state_)},
        {"state_age_ms", ms(now - state_since_)},
        {"wanted_up", wanted_up_},
        {"next_start_in_ms", state_ == ServerState::backoff ? ms(next_start_ - now) : 0},
        {"restarts", restarts_},
        {"restart_reasons", restart_reasons_},
        {"restart_reason", restart_reason_},
        {"consecutive_failures", consecutive_failures_},
        {"transient_failures", transient_failures_},
        {"failure_ages_ms", std::move(failures)},
        {"error", error_},
        {"stop_reason", to_string(stop_reason_)},
        {"era_modern", era_.modern() ? json(*era_.modern()) : json(nullptr)},
        {"last_exit", nullptr},
        {"pid", state_ == ServerState::running ? pid_ : -1},
        {"running_ms", state_ == ServerState::running ? ms(now - spawned_at_) : 0},
    };
    if (has_last_exit_) {
        out["last_exit"] = {{"status", last_exit_.status},
                            {"step", to_string(last_exit_.step)},
                            {"reason", to_string(last_exit_.reason)},
                            {"age_ms", ms(now - last_exit_.at)}};
    }
    return out;
}

Result<Done> Supervisor::restore(const json& snapshot) {
    if (!snapshot.is_object()) return permanent_failure("a server's state is not an object");
    if (state_ != ServerState::stopped || restarts_ != 0)
        return permanent_failure("a server's state can only be restored into a new one");
    FieldReader in(snapshot);
    const TimePoint now = env_.now();
    const ServerState state = named(in, "state", kServerStateNames);
    const Duration age = from_ms(milliseconds(in, "state_age_ms"));
    const bool wanted = in.flag("wanted_up");
    const Duration next_in = from_ms(milliseconds(in, "next_start_in_ms"));
    const std::int64_t restarts = in.integer("restarts");
    std::map<std::string, unsigned> reasons;
    if (const json* list = in.object("restart_reasons")) {
        for (const auto& [reason, count] : list->items()) {
            const std::optional<std::int64_t> n = json_read::as_integer(count);
            if (!n || *n < 0 || *n > std::numeric_limits<unsigned>::max())
                in.fail("a restart reason's count is not a number");
            else
                reasons[reason] = static_cast<unsigned>(*n);
        }
    }
    const std::string restart_reason = in.text("restart_reason");
    const std::int64_t consecutive = in.integer("consecutive_failures");
    const std::int64_t transient = in.integer("transient_failures");
    std::deque<TimePoint> failure_times;
    if (const json* ages = in.array("failure_ages_ms")) {
        for (const json& at : *ages) {
            const std::optional<std::int64_t> failed_ago = json_read::as_integer(at);
            if (!failed_ago || *failed_ago < 0 || *failed_ago > kMaxMilliseconds)
                in.fail("a failure's age is not a number of milliseconds in range");
            else
                failure_times.push_back(now - from_ms(*failed_ago));
        }
    }
    const std::string error = in.text("error");
    const StopReason stop_reason = named(in, "stop_reason", kStopReasonNames);
    std::optional<bool> era;
    if (const auto it = snapshot.find("era_modern"); it != snapshot.end() && it->is_boolean())
        era = it->get<bool>();
    else if (it == snapshot.end() || !it->is_null())
        in.fail("its \"era_modern\" is neither true, false nor null");
    std::optional<LastExit> last;
    if (const auto it = snapshot.find("last_exit"); it != snapshot.end() && it->is_object()) {
        FieldReader exit_in(*it);
        LastExit e;
        e.status = static_cast<int>(exit_in.integer("status", std::numeric_limits<int>::min(),
                                                    std::numeric_limits<int>::max()));
        e.step = named(exit_in, "step", kExitStepNames);
        e.reason = named(exit_in, "reason", kStopReasonNames);
        e.at = now - from_ms(milliseconds(exit_in, "age_ms"));
        if (!exit_in.error().empty()) in.fail("its last exit: " + exit_in.error());
        last = e;
    } else if (it == snapshot.end() || !it->is_null()) {
        in.fail("its \"last_exit\" is neither an object nor null");
    }
    const std::int64_t pid =
        in.integer("pid", std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
    const Duration running_for = from_ms(milliseconds(in, "running_ms"));
    if (in.error().empty() && (state == ServerState::starting || state == ServerState::stopping))
        in.fail("it had a process " + std::string(to_string(state)) +
                ", which this state cannot carry");
    if (in.error().empty() && (state == ServerState::running) != (pid > 1))
        in.fail(state == ServerState::running ? "it is running without a process"
                                              : "it has a process without running");
    if (in.error().empty() && (restarts < 0 || consecutive < 0 || transient < 0))
        in.fail("a count is negative");
    if (!in.error().empty()) return permanent_failure("a server's state: " + in.error());

    state_ = state;
    state_since_ = now - age;
    wanted_up_ = wanted;
    restarts_ = static_cast<unsigned>(restarts);
    restart_reasons_ = std::move(reasons);
    restart_reason_ = restart_reason;
    consecutive_failures_ = static_cast<unsigned>(consecutive);
    transient_failures_ = static_cast<unsigned>(transient);
    failure_times_ = std::move(failure_times);
    error_ = error;
    stop_reason_ = stop_reason;
    era_.restore(era);
    has_last_exit_ = last.has_value();
    if (last) last_exit_ = *last;
    if (state_ == ServerState::backoff) {
        const Duration left = std::max(next_in, Duration::zero());
        next_start_ = now + left;
        env_.arm_timer(TimerKind::backoff, left);
    }
    if (state_ == ServerState::running) {
        pid_ = static_cast<int>(pid);
        spawned_at_ = now - running_for;
        ping_outstanding_ = false;
        // What on_ready armed: stability counted from when it became ready (as near as the
        // state knows: from its spawn), health from now.
        if (config_.stable_after.count() > 0)
            env_.arm_timer(TimerKind::stable,
                           std::max(Duration::zero(), config_.stable_after - running_for));
        if (config_.health_interval.count() > 0)
            env_.arm_timer(TimerKind::health, config_.health_interval);
    }
    if (state_ != ServerState::stopped) env_.state_changed(ServerState::stopped, state_);
    return Done{};
}

}  // namespace mcpd
