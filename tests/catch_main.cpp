// The one Catch2 main of every test program (unit_tests_*, integration_tests); the cases live
// in their *_test.cpp files.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
