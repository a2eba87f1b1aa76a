// ServerProcess and the raw-socket HTTP client of the server tests.
#include "server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <regex>
#include <thread>

#include "run_binary.h"

namespace pagoda::e2e {

ServerProcess::ServerProcess(const std::vector<std::string>& args, const std::vector<std::string>& launcher,
                             const std::vector<std::string>& env) {
  dir_ = make_temp_dir();
  err_path_ = dir_ + "/stderr";
  launched_ = !launcher.empty();
  std::vector<std::string> argv_storage = launcher;
  for (const char* a : {PAGODA_TEST_BINARY, "serve", "--port", "0"}) argv_storage.push_back(a);
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    const int err_fd = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null_fd = open("/dev/null", O_RDWR);
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    dup2(err_fd, 2);
    for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
    execvp(argv[0], argv.data());
    _exit(127);
  }
  const std::regex listening("listening on http://[0-9.]+:([0-9]+)");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    const std::string text = log();
    if (std::regex_search(text, m, listening)) {
      port_ = std::stoi(m[1]);
      break;
    }
    if (reap()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (port_ > 0 && http_request(port_, "GET", "/health").status != 200) port_ = -1;
}

ServerProcess::~ServerProcess() {
  // A launcher passes SIGTERM on to what it started; SIGKILL would leave that running.
  if (launched_ && !exited_ && pid_ > 0) {
    kill(pid_, SIGTERM);
    wait_exit(std::chrono::seconds(10));
  }
  if (!exited_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  std::filesystem::remove_all(dir_);
}

bool ServerProcess::reap() {
  int status = 0;
  if (!exited_ && waitpid(pid_, &status, WNOHANG) == pid_) {
    exited_ = true;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return exited_;
}

std::string ServerProcess::log() const { return read_file(err_path_); }

void ServerProcess::signal(int sig) {
  if (!exited_) kill(pid_, sig);
}

int ServerProcess::wait_exit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reap() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return exited_ ? exit_code_ : -1;
}

std::string metrics(const ServerProcess& server) { return http_request(server.port(), "GET", "/metrics").body; }

bool wait_for_metrics(const ServerProcess& server, std::chrono::milliseconds timeout,
                      const std::function<bool(const std::string&)>& done) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done(metrics(server))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

bool wait_idle(const ServerProcess& server, std::chrono::milliseconds timeout) {
  return wait_for_metrics(server, timeout, [](const std::string& m) {
    // Idle: nothing being prepared (parsed, templated, tokenized) either, or a request about to be submitted
    // would count after the wait.
    return metric_value(m, "pagoda:num_requests_running") == 0.0 &&
           metric_value(m, "pagoda:num_requests_waiting") == 0.0 &&
           metric_value(m, "pagoda:num_requests_preparing") == 0.0;
  });
}

}  // namespace pagoda::e2e
