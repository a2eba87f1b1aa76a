// fork/exec with stdout and stderr sent to temporary files (no pipes to deadlock on large outputs).
#include "run_binary.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pagoda::e2e {

std::string make_temp_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "pagoda-e2e-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

TempDir::~TempDir() {
  std::error_code ignored;  // a test that already removed it, or a file still open: nothing to report
  std::filesystem::remove_all(path_, ignored);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string write_slow_model(const TempDir& dir) {
  const std::string model = dir.path() + "/stories15m.gguf";
  const ProcessResult gen = run_pagoda({"gen-model", "--shape", "stories15m", "--type", "q8_0", "-o", model});
  if (gen.exit_code != 0) throw std::runtime_error("gen-model failed: " + gen.err);
  return model;
}

ProcessResult run_pagoda(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::vector<std::string> argv{PAGODA_TEST_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, env);
}

ProcessResult run_program(const std::vector<std::string>& program_argv, const std::vector<std::string>& env) {
  const std::string dir = make_temp_dir();
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  std::vector<std::string> argv_storage = program_argv;
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = fork();
  if (pid == 0) {
    const int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null_fd = open("/dev/null", O_RDONLY);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    dup2(null_fd, 0);
    for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ProcessResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  std::filesystem::remove_all(dir);
  return r;
}

std::string run_command(const std::string& command_line) {
  std::string out;
  FILE* p = popen(command_line.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

}  // namespace pagoda::e2e
