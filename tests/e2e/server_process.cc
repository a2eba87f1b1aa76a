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

int connect_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string send_raw(int port, const std::string& bytes, std::chrono::milliseconds timeout) {
  const int fd = connect_loopback(port);
  if (fd < 0) return "";
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += size_t(n);
  }
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[65536];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, int(left.count())) <= 0) break;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, size_t(n));
    // One response is enough: stop once it is complete (keep-alive connections stay open).
    const HttpReply r = parse_reply(out);
    if (r.status != 0) break;
  }
  close(fd);
  return out;
}

HttpReply parse_reply(const std::string& raw) {
  HttpReply r;
  r.raw = raw;
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos || raw.compare(0, 9, "HTTP/1.1 ") != 0) return r;
  const std::string head = raw.substr(0, head_end);
  std::string lower_head = head;
  for (char& c : lower_head) c = char(std::tolower(static_cast<unsigned char>(c)));
  const std::string rest = raw.substr(head_end + 4);
  std::string body;
  if (lower_head.find("transfer-encoding: chunked") != std::string::npos) {
    size_t pos = 0;
    for (;;) {
      const size_t line_end = rest.find("\r\n", pos);
      if (line_end == std::string::npos) return r;  // incomplete
      const size_t size = std::stoul(rest.substr(pos, line_end - pos), nullptr, 16);
      if (size == 0) break;
      if (line_end + 2 + size + 2 > rest.size()) return r;
      body += rest.substr(line_end + 2, size);
      pos = line_end + 2 + size + 2;
    }
  } else {
    const size_t cl = lower_head.find("content-length: ");
    if (cl == std::string::npos) return r;
    const size_t length = std::stoul(lower_head.substr(cl + 16));
    if (rest.size() < length) return r;
    body = rest.substr(0, length);
  }
  r.status = std::stoi(head.substr(9, 3));
  r.headers = head;
  r.body = std::move(body);
  return r;
}

HttpReply http_request(int port, const std::string& method, const std::string& path, const std::string& body,
                       const std::vector<std::string>& extra_headers, std::chrono::milliseconds timeout) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!body.empty() || method == "POST")
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  for (const std::string& h : extra_headers) req += h + "\r\n";
  req += "\r\n" + body;
  return parse_reply(send_raw(port, req, timeout));
}

std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end + 2;
  }
  return out;
}

std::optional<double> metric_value(const std::string& scrape, const std::string& series) {
  size_t pos = 0;
  while ((pos = scrape.find(series, pos)) != std::string::npos) {
    if (pos == 0 || scrape[pos - 1] == '\n') {
      const size_t space = scrape.find(' ', pos);
      const size_t end = scrape.find('\n', pos);
      if (space != std::string::npos && space < end) return std::stod(scrape.substr(space + 1, end - space - 1));
    }
    pos += series.size();
  }
  return std::nullopt;
}

}  // namespace pagoda::e2e
