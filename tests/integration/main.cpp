// The Catch2 main of integration_tests; the cases live in the *_test.cpp files beside it.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
