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

// A fresh temporary directory (pagoda-e2e-XXXXXX under the system's temp folder).
std::string make_temp_dir();
// One that is removed with everything in it when the TempDir goes out of scope, pass or fail.
class TempDir {
 public:
  TempDir() : path_(make_temp_dir()) {}
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};
// Writes a random stories15M-shaped Q8_0 model (26 MB; far slower a token than the bundled model)
// into `dir` and returns its path: for tests that need a request still running when the next one arrives. Throws
// std::runtime_error with gen-model's stderr when it fails.
std::string write_slow_model(const TempDir& dir);
void write_file(const std::string& path, const std::string& bytes);
std::string read_file(const std::string& path);
// Runs a shell command line and returns what it wrote on stdout (add 2>&1 for stderr too).
std::string run_command(const std::string& command_line);

}  // namespace pagoda::e2e
