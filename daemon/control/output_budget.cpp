#include "daemon/control/output_budget.h"

#include <event2/buffer.h>

#include <utility>

namespace mcpd {

OutputBudget::OutputBudget(std::size_t limit, Hooks hooks)
    : limit_(limit), hooks_(std::move(hooks)) {}

OutputBudget::~OutputBudget() {
    // Accounts that outlive the budget stop counting instead of reaching back into it.
    for (Account* account : accounts_) {
        account->counted_ = false;
        account->budget_ = nullptr;
    }
}

std::size_t OutputBudget::enforce() {
    enforce_requested_ = false;
    if (enforcing_ || total_ <= limit_) return 0;
    enforcing_ = true;
    std::size_t cut = 0;
    while (total_ > limit_) {
        // Searched again after every cut: a cut may close other connections with it.
        Account* largest = nullptr;
        for (Account* account : accounts_) {
            if (account->cut_requested_) continue;
            if (largest == nullptr || account->queued_ > largest->queued_) largest = account;
        }
        if (largest == nullptr || largest->queued_ == 0) break;
        largest->cut_requested_ = true;
        ++cuts_;
        ++cut;
        const std::string reason =
            "the client stopped reading (" + std::to_string(largest->queued_) +
            " bytes queued for it, the most of any client, with " + std::to_string(total_) +
            " bytes queued for all clients together, over max_queued_output)";
        // A copy: the cut may end the account that holds the function.
        const std::function<void(const std::string&)> cut_off = largest->cut_;
        if (cut_off) cut_off(reason);
    }
    enforcing_ = false;
    return cut;
}

void OutputBudget::attach(Account& account) {
    accounts_.push_back(&account);
    account.counted_ = true;
    const std::size_t queued = account.queued_;
    account.queued_ = 0;
    resized(account, queued);
}

void OutputBudget::detach(Account& account) {
    total_ -= account.queued_;
    released_ += account.queued_;
    account.counted_ = false;
    std::erase(accounts_, &account);
    // Freed in many small pieces among live ones, this memory stays with mcpd until the
    // heap is trimmed: ask once a megabyte of it has gone.
    if (released_ >= kReleaseBytes) {
        released_ = 0;
        if (hooks_.memory_released) hooks_.memory_released();
    }
}

void OutputBudget::resized(Account& account, std::size_t queued) {
    total_ = total_ - account.queued_ + queued;
    account.queued_ = queued;
    if (queued > account.peak_) account.peak_ = queued;
    if (total_ > limit_ && !enforcing_ && !enforce_requested_ && hooks_.enforce_soon) {
        enforce_requested_ = true;
        hooks_.enforce_soon();
    }
}

OutputBudget::Account::Account(OutputBudget& budget, std::function<void(const std::string&)> cut)
    : budget_(&budget), cut_(std::move(cut)) {}

OutputBudget::Account::~Account() {
    unwatch();
}

void OutputBudget::Account::watch(evbuffer* output) {
    unwatch();
    if (budget_ == nullptr || output == nullptr) return;
    output_ = output;
    callback_ = evbuffer_add_cb(output_, &Account::on_buffer_changed, this);
    queued_ = evbuffer_get_length(output_);  // a handed-over buffer may hold a reply already
    budget_->attach(*this);
}

void OutputBudget::Account::unwatch() {
    if (output_ != nullptr && callback_ != nullptr) evbuffer_remove_cb_entry(output_, callback_);
    output_ = nullptr;
    callback_ = nullptr;
    if (counted_ && budget_ != nullptr) budget_->detach(*this);
    queued_ = 0;
}

void OutputBudget::Account::set_queued(std::size_t bytes) {
    if (budget_ == nullptr) return;
    if (!counted_) {
        queued_ = bytes;
        budget_->attach(*this);
        return;
    }
    budget_->resized(*this, bytes);
}

void OutputBudget::Account::on_buffer_changed(evbuffer* buffer, const evbuffer_cb_info*,
                                              void* self) {
    auto* account = static_cast<Account*>(self);
    if (account->counted_ && account->budget_ != nullptr)
        account->budget_->resized(*account, evbuffer_get_length(buffer));
}

}  // namespace mcpd
