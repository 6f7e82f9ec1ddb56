// The main() of every layer's test executable: Catch2's session with the skip accounting
// of tests/skip.hpp (tests/catch_session.cpp).
#include "tests/skip.hpp"

int main(int argc, char** argv) { return twinscale::test::run_session(argc, argv); }
