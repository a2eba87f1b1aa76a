// The one source of pagoda_test_pch: the target exists to build the test binaries' shared precompiled header
// (tests/CMakeLists.txt); the program itself does nothing.
int main() { return 0; }
