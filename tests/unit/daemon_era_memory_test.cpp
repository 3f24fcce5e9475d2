// EraMemory: the era verdict kept across a server's processes (daemon/server/era_memory.h).
#include <catch2/catch.hpp>

#include "daemon/server/era_memory.h"

using namespace mcpd;

TEST_CASE("era memory: pinned eras never probe") {
    EraMemory legacy(config::Era::legacy);
    EraMemory modern(config::Era::modern);
    for (int i = 0; i < 2; ++i) {
        CHECK(legacy.next_start() == EraMemory::Start::legacy);
        CHECK(modern.next_start() == EraMemory::Start::modern);
        legacy.exited_on_probe();
        legacy.start_failed();
        modern.ready(false);  // a pinned-modern child that fell back to initialize
        modern.start_failed();
    }
    CHECK(modern.next_start() == EraMemory::Start::modern);
}

TEST_CASE("era memory: auto probes until a verdict, keeps it, and probes again when it fails") {
    EraMemory era;
    CHECK(era.next_start() == EraMemory::Start::probe);
    CHECK_FALSE(era.modern().has_value());

    SECTION("a modern verdict") {
        era.ready(true);
        CHECK(era.next_start() == EraMemory::Start::modern);
        CHECK(era.next_start() == EraMemory::Start::modern);  // a crash after ready keeps it
    }
    SECTION("an exit on the probe: legacy, for the next start") {
        era.exited_on_probe();
        CHECK(era.modern() == false);
        CHECK(era.next_start() == EraMemory::Start::legacy);
        SECTION("confirmed by a legacy handshake") {
            era.ready(false);
            CHECK(era.next_start() == EraMemory::Start::legacy);
        }
        SECTION("refused: perhaps only a crash while probed, so probe again") {
            era.start_failed();
            CHECK(era.next_start() == EraMemory::Start::probe);
        }
    }
    SECTION("a verdict whose handshake later fails (an upgraded server) is probed again") {
        era.ready(false);
        era.start_failed();
        CHECK(era.next_start() == EraMemory::Start::probe);
    }
    SECTION("a changed registry entry forgets the verdict, or pins it") {
        era.ready(true);
        era.reset(config::Era::auto_detect);
        CHECK(era.next_start() == EraMemory::Start::probe);
        era.ready(true);
        era.reset(config::Era::legacy);
        CHECK(era.next_start() == EraMemory::Start::legacy);
    }
}
