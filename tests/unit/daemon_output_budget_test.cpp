#include <event2/buffer.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "daemon/control/output_budget.h"

using mcpd::OutputBudget;

namespace {

// A connection as the budget sees it: a queue of some size, and a cut that closes it (its
// queue is dropped: the account stops counting, as Session and ControlConnection do).
class Client {
public:
    Client(OutputBudget& budget, std::string name, std::vector<std::string>& cut_log)
        : name_(std::move(name)),
          cut_log_(cut_log),
          account_(budget, [this](const std::string& reason) {
              cut_log_.push_back(name_);
              reason_ = reason;
              if (drops_on_cut_) account_.unwatch();
          }) {}

    void queue(std::size_t bytes) { account_.set_queued(bytes); }
    OutputBudget::Account& account() { return account_; }
    const std::string& reason() const { return reason_; }
    // A cut that cannot drop the queue (to check that the budget still terminates).
    void keep_queue_when_cut() { drops_on_cut_ = false; }

private:
    std::string name_;
    std::vector<std::string>& cut_log_;
    std::string reason_;
    bool drops_on_cut_ = true;
    OutputBudget::Account account_;
};

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("output budget: the total is the sum of every counted queue", "[budget]") {
    OutputBudget budget(1000);
    Names cut;
    auto a = std::make_unique<Client>(budget, "a", cut);
    Client b(budget, "b", cut);
    CHECK(budget.total() == 0);
    CHECK(budget.accounts() == 0);  // counted from the first size (or watch) on
    a->queue(300);
    b.queue(200);
    CHECK(budget.accounts() == 2);
    CHECK(budget.total() == 500);
    a->queue(100);  // drained
    CHECK(budget.total() == 300);
    b.account().unwatch();  // closed: its bytes leave the total
    CHECK(budget.total() == 100);
    CHECK(budget.accounts() == 1);
    a.reset();  // freed
    CHECK(budget.total() == 0);
    CHECK(budget.accounts() == 0);
    CHECK(budget.enforce() == 0);
    CHECK(cut.empty());
}

TEST_CASE("output budget: under the limit nothing is cut", "[budget]") {
    OutputBudget budget(1000);
    Names cut;
    Client a(budget, "a", cut), b(budget, "b", cut);
    a.queue(600);
    b.queue(400);  // exactly the limit
    CHECK_FALSE(budget.over());
    CHECK(budget.enforce() == 0);
    CHECK(cut.empty());
    CHECK(budget.total() == 1000);
}

TEST_CASE("output budget: the largest queue is cut first, readers are left alone", "[budget]") {
    OutputBudget budget(10'000);
    Names cut;
    // Readers keep small queues; the stalled clients' queues grow.
    Client reader1(budget, "reader1", cut), reader2(budget, "reader2", cut);
    Client stalled_small(budget, "stalled-small", cut), stalled_big(budget, "stalled-big", cut);
    reader1.queue(120);
    reader2.queue(80);
    stalled_small.queue(3'000);
    stalled_big.queue(7'000);
    REQUIRE(budget.over());  // 10,200
    CHECK(budget.enforce() == 1);
    CHECK(cut == Names{"stalled-big"});
    CHECK(budget.total() == 3'200);
    CHECK(budget.cuts() == 1);
    CHECK(stalled_big.reason() ==
          "the client stopped reading (7000 bytes queued for it, the most of any client, with "
          "10200 bytes queued for all clients together, over max_queued_output)");
}

TEST_CASE("output budget: cuts go on, largest first, until the total is under", "[budget]") {
    OutputBudget budget(1'000);
    Names cut;
    std::vector<std::unique_ptr<Client>> clients;
    for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::size_t>>{
             {"a", 500}, {"b", 900}, {"reader", 10}, {"c", 700}, {"d", 300}}) {
        clients.push_back(std::make_unique<Client>(budget, name, cut));
        clients.back()->queue(bytes);
    }
    REQUIRE(budget.total() == 2'410);
    // 2410 - 900 = 1510 - 700 = 810: two cuts, the two largest.
    CHECK(budget.enforce() == 2);
    CHECK(cut == Names{"b", "c"});
    CHECK(budget.total() == 810);
    CHECK_FALSE(budget.over());
    CHECK(budget.accounts() == 3);
    // More output later: the next largest goes, the reader still stays.
    clients[0]->queue(800);  // a: 800, d: 300, reader: 10
    CHECK(budget.enforce() == 1);
    CHECK(cut == Names{"b", "c", "a"});
    CHECK(budget.total() == 310);
}

TEST_CASE("output budget: a cut that keeps its bytes is not cut twice and enforce ends",
          "[budget]") {
    OutputBudget budget(100);
    Names cut;
    Client stuck(budget, "stuck", cut), other(budget, "other", cut);
    stuck.keep_queue_when_cut();
    stuck.queue(500);
    other.queue(50);
    // The stuck one cannot give its bytes back: the next largest goes too, then no one is left.
    CHECK(budget.enforce() == 2);
    CHECK(cut == Names{"stuck", "other"});
    CHECK(budget.total() == 500);
    CHECK(budget.enforce() == 0);  // each account is cut at most once
    CHECK(cut.size() == 2);
}

TEST_CASE("output budget: going over inside a buffer callback asks for enforce once", "[budget]") {
    int asked = 0;
    OutputBudget budget(1'000, OutputBudget::Hooks{[&] { ++asked; }, {}});
    Names cut;
    Client a(budget, "a", cut), b(budget, "b", cut);
    a.queue(900);
    CHECK(asked == 0);
    b.queue(200);
    CHECK(asked == 1);
    b.queue(300);  // still over, still pending
    CHECK(asked == 1);
    CHECK(budget.enforce() == 1);
    CHECK(cut == Names{"a"});
    b.queue(1'200);
    CHECK(asked == 2);  // a new request once the last one ran
}

TEST_CASE("output budget: dropped queues ask for the memory to be given back", "[budget]") {
    int released = 0;
    OutputBudget budget(64 * 1024 * 1024, OutputBudget::Hooks{{}, [&] { ++released; }});
    Names cut;
    {
        Client small(budget, "small", cut);
        small.queue(100 * 1024);
    }
    CHECK(released == 0);  // not worth a trim yet
    {
        Client large(budget, "large", cut);
        large.queue(OutputBudget::kReleaseBytes);
        large.queue(0);  // the client read it all: nothing is dropped with it
    }
    CHECK(released == 0);
    for (int i = 0; i < 10; ++i) {
        Client piece(budget, "piece", cut);
        piece.queue(100 * 1024);
    }
    CHECK(released == 1);  // 1.1 MiB dropped in all: one request, the count starts again
    {
        Client big(budget, "big", cut);
        big.queue(3 * OutputBudget::kReleaseBytes);
    }
    CHECK(released == 2);
}

TEST_CASE("output budget: a watched evbuffer is counted as it fills and drains", "[budget]") {
    OutputBudget budget(4'096);
    Names cut;
    evbuffer* buffer = evbuffer_new();
    REQUIRE(buffer != nullptr);
    evbuffer_add(buffer, "already here\n", 13);  // a reply left in a handed-over buffer
    {
        Client client(budget, "client", cut);
        client.account().watch(buffer);
        CHECK(budget.total() == 13);
        const std::string line(1'000, 'x');
        for (int i = 0; i < 3; ++i) evbuffer_add(buffer, line.data(), line.size());
        CHECK(budget.total() == 3'013);
        CHECK(client.account().queued() == 3'013);
        evbuffer_drain(buffer, 2'000);  // written to the client
        CHECK(budget.total() == 1'013);
        CHECK(client.account().peak() == 3'013);
        for (int i = 0; i < 4; ++i) evbuffer_add(buffer, line.data(), line.size());
        CHECK(budget.over());  // 5,013: counted, cut only by enforce()
        CHECK(cut.empty());
        CHECK(budget.enforce() == 1);
        CHECK(cut == Names{"client"});
        CHECK(budget.total() == 0);
        evbuffer_add(buffer, line.data(), line.size());  // no longer counted
        CHECK(budget.total() == 0);
    }
    {
        Client again(budget, "again", cut);
        again.account().watch(buffer);
        CHECK(budget.total() == evbuffer_get_length(buffer));
    }
    CHECK(budget.total() == 0);  // destroyed: the callback is gone
    evbuffer_add(buffer, "x", 1);
    CHECK(budget.total() == 0);
    evbuffer_free(buffer);
}

TEST_CASE("output budget: a reload may lower the limit, then enforce cuts", "[budget]") {
    OutputBudget budget(10'000);
    Names cut;
    Client a(budget, "a", cut), b(budget, "b", cut);
    a.queue(4'000);
    b.queue(100);
    CHECK(budget.enforce() == 0);
    budget.set_limit(2'000);
    CHECK(budget.over());
    CHECK(budget.enforce() == 1);
    CHECK(cut == Names{"a"});
}

TEST_CASE("output budget: an account that outlives its budget stops counting", "[budget]") {
    Names cut;
    auto budget = std::make_unique<OutputBudget>(100);
    Client client(*budget, "client", cut);
    client.queue(50);
    budget.reset();
    client.queue(500);  // nothing to count in: no crash
    CHECK_FALSE(client.account().counted());
}
