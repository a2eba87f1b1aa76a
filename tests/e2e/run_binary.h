// Runs the real pagoda binary in a child process and captures its exit status, stdout and stderr.
#pragma once

#include <string>
#include <vector>

namespace pagoda::e2e {

struct ProcessResult {
  int exit_code = -1;   // the exit status, or -1 when the process died of a signal
  int term_signal = 0;  // the signal that killed it, 0 when it exited
  std::string out;
  std::string err;
};

// Runs PAGODA_TEST_BINARY with `args` (no shell). `env` entries "K=V" are added to the environment.
ProcessResult run_pagoda(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
// Runs argv[0] (a path, or a name looked up in PATH) with the rest as its arguments, as run_pagoda does.
ProcessResult run_program(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});

// A fresh temporary directory for one test, removed by the caller with remove_all if wanted.
std::string make_temp_dir();
void write_file(const std::string& path, const std::string& bytes);
std::string read_file(const std::string& path);

}  // namespace pagoda::e2e
