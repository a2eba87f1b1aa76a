// Models by name: `-hf`, `pull`, `ls`, `rm` against tests/e2e/hub/test_hub.py, a local server speaking the Hub's
// endpoints, serving a GGUF repository (one model whole, one split in three) and a safetensors repository built here
// with gen-model. Covers download + verify + run, a connection cut mid-file (resumed with Range), a wrong checksum
// (an error, nothing in snapshots/), a second run with the server gone and with HF_HUB_OFFLINE, a cache written by
// another tool, tokens, and the errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "run_binary.h"

namespace pagoda::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const char* kGgufRepo = "test-org/tiny-GGUF";
const char* kHfRepo = "test-org/tiny-hf";

// test_hub.py in a child process on a free loopback port; killed when destroyed.
class TestHub {
 public:
  TestHub(const std::string& repos, const std::string& dir, const std::vector<std::string>& knobs = {}) {
    port_file_ = dir + "/hub.port";
    log_ = dir + "/hub.log";
    fs::remove(port_file_);
    fs::remove(log_);
    std::vector<std::string> args = {"python3", std::string(PAGODA_TEST_E2E_DIR) + "/hub/test_hub.py", "--repos",
                                     repos,     "--port-file", port_file_, "--log", log_};
    args.insert(args.end(), knobs.begin(), knobs.end());
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp("python3", argv.data());
      _exit(127);
    }
    for (int i = 0; i < 300 && !fs::exists(port_file_); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    port_ = read_file(port_file_);
  }
  ~TestHub() { stop(); }
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  bool started() const { return !port_.empty(); }
  std::string endpoint() const { return "http://127.0.0.1:" + port_; }
  std::string log() const { return read_file(log_); }

 private:
  pid_t pid_ = -1;
  std::string port_file_, log_, port_;
};

class CliHubTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fixtures_ = new TempDir();
    const std::string repo = fixtures_->path() + "/repos/" + kGgufRepo;
    const std::string hf = fixtures_->path() + "/repos/" + kHfRepo;
    fs::create_directories(repo);
    fs::create_directories(fs::path(hf).parent_path());
    auto gen = [](std::vector<std::string> args) {
      ProcessResult r = run_pagoda(args);
      if (r.exit_code != 0) throw std::runtime_error("gen-model failed: " + r.err);
    };
    gen({"gen-model", "--shape", "tiny", "--type", "q8_0", "--seed", "5", "-o", repo + "/tiny-Q8_0.gguf"});
    gen({"gen-model", "--shape", "tiny", "--type", "q4_0", "--seed", "6", "--splits", "3", "-o",
         repo + "/tiny-Q4_0.gguf"});
    // The same model whole, outside the repository: the split set must run exactly as it does.
    gen({"gen-model", "--shape", "tiny", "--type", "q4_0", "--seed", "6", "-o", fixtures_->path() + "/whole.gguf"});
    write_file(repo + "/README.md", "# tiny\n");
    gen({"gen-model", "--shape", "tiny", "--format", "hf", "--seed", "7", "-o", hf});
  }
  static void TearDownTestSuite() {
    delete fixtures_;
    fixtures_ = nullptr;
  }

  std::string repos() const { return fixtures_->path() + "/repos"; }
  std::string hf_home() const { return home_.path(); }
  std::string repo_dir(const std::string& repo) const {
    std::string folder = "models--" + repo;
    folder.replace(folder.find('/'), 1, "--");
    return hf_home() + "/hub/" + folder;
  }
  std::vector<std::string> env(const TestHub* hub, bool offline = false) const {
    return {"HF_HOME=" + hf_home(), "HF_HUB_CACHE=" + hf_home() + "/hub",
            "HF_ENDPOINT=" + (hub ? hub->endpoint() : std::string("http://127.0.0.1:9")), "HF_TOKEN=",
            std::string("HF_HUB_OFFLINE=") + (offline ? "1" : "0")};
  }
  // The files under snapshots/ (any commit), by name.
  std::vector<std::string> snapshot_names(const std::string& repo) const {
    std::vector<std::string> names;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(repo_dir(repo) + "/snapshots", ec);
         !ec && it != fs::recursive_directory_iterator(); ++it)
      if (!it->is_directory()) names.push_back(it->path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  static std::string sha256_of(const std::string& path) {
    const std::string out = run_command("sha256sum '" + path + "'");
    return out.substr(0, 64);
  }

  static TempDir* fixtures_;
  TempDir home_;
};
TempDir* CliHubTest::fixtures_ = nullptr;

TEST_F(CliHubTest, RunDownloadsVerifiesAndLoadsASplitModel) {
  TestHub hub(repos(), hf_home());
  ASSERT_TRUE(hub.started());
  ProcessResult run = run_pagoda({"run", "-hf", std::string(kGgufRepo) + ":q4_0", "-p", "Once", "-n", "6", "--temp",
                                  "0"},
                                 env(&hub));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("generated tokens: 6\n"));
  EXPECT_THAT(run.err, HasSubstr("(3 files,"));
  EXPECT_THAT(snapshot_names(kGgufRepo),
              ::testing::ElementsAre("tiny-Q4_0-00001-of-00003.gguf", "tiny-Q4_0-00002-of-00003.gguf",
                                     "tiny-Q4_0-00003-of-00003.gguf"));
  // Blobs named by their sha256, snapshots linking to them, refs/main holding the commit.
  const std::string first = repos() + "/" + kGgufRepo + "/tiny-Q4_0-00001-of-00003.gguf";
  EXPECT_TRUE(fs::is_regular_file(repo_dir(kGgufRepo) + "/blobs/" + sha256_of(first)));
  EXPECT_EQ(read_file(repo_dir(kGgufRepo) + "/refs/main").size(), 40u);
  EXPECT_THAT(hub.log(), HasSubstr("GET /api/models/test-org/tiny-GGUF/revision/main?blobs=true"));

  // The three splits run exactly as the whole file.
  ProcessResult whole = run_pagoda({"run", "-m", fixtures_->path() + "/whole.gguf", "-p", "Once", "-n", "6", "--temp",
                                    "0"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(run.out, whole.out);
}

TEST_F(CliHubTest, PullPicksTheDefaultQuantAndShowsProgress) {
  TestHub hub(repos(), hf_home());
  ASSERT_TRUE(hub.started());
  // No Q4_K_M in the repository: llama.cpp's second choice, Q8_0.
  ProcessResult pull = run_pagoda({"pull", kGgufRepo}, env(&hub));
  ASSERT_EQ(pull.exit_code, 0) << pull.err;
  EXPECT_THAT(pull.out, HasSubstr("/snapshots/"));
  EXPECT_THAT(pull.out, HasSubstr("/tiny-Q8_0.gguf\n"));
  EXPECT_THAT(pull.err, HasSubstr("download: "));
  EXPECT_THAT(pull.err, HasSubstr("(100%) tiny-Q8_0.gguf"));
  // llama.cpp's spelling of the exact-file flag, on a run.
  ProcessResult exact = run_pagoda({"run", "-hf", kGgufRepo, "-hff", "tiny-Q8_0.gguf", "-p", "x", "-n", "2"}, env(&hub));
  ASSERT_EQ(exact.exit_code, 0) << exact.err;
  EXPECT_THAT(exact.err, HasSubstr("0.0 MiB downloaded"));  // the blob is in the cache already
}

TEST_F(CliHubTest, ASafetensorsRepositoryRunsAsAFolder) {
  TestHub hub(repos(), hf_home());
  ASSERT_TRUE(hub.started());
  ProcessResult run = run_pagoda({"run", "-hf", kHfRepo, "-p", "Once", "-n", "4", "--temp", "0"}, env(&hub));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("generated tokens: 4\n"));
  const std::vector<std::string> names = snapshot_names(kHfRepo);
  EXPECT_THAT(names, ::testing::Contains("config.json"));
  EXPECT_THAT(names, ::testing::Contains("model.safetensors"));
}

TEST_F(CliHubTest, ACutConnectionResumesWithRange) {
  TestHub hub(repos(), hf_home(), {"--cut-after", "100000"});
  ASSERT_TRUE(hub.started());
  ProcessResult pull = run_pagoda({"pull", std::string(kGgufRepo) + ":Q8_0"}, env(&hub));
  ASSERT_EQ(pull.exit_code, 0) << pull.err;
  EXPECT_THAT(pull.err, HasSubstr("resuming at byte 100000"));
  EXPECT_THAT(hub.log(), HasSubstr(" bytes=100000-\n"));
  const std::string sha = sha256_of(repos() + "/" + kGgufRepo + "/tiny-Q8_0.gguf");
  EXPECT_EQ(sha256_of(repo_dir(kGgufRepo) + "/blobs/" + sha), sha);
  EXPECT_FALSE(fs::exists(repo_dir(kGgufRepo) + "/blobs/" + sha + ".incomplete"));
}

TEST_F(CliHubTest, APartialFileFromAnEarlierRunIsResumed) {
  TestHub hub(repos(), hf_home());
  ASSERT_TRUE(hub.started());
  const std::string source = repos() + "/" + kGgufRepo + "/tiny-Q8_0.gguf";
  const std::string sha = sha256_of(source);
  fs::create_directories(repo_dir(kGgufRepo) + "/blobs");
  write_file(repo_dir(kGgufRepo) + "/blobs/" + sha + ".incomplete", read_file(source).substr(0, 4096));
  ProcessResult pull = run_pagoda({"pull", std::string(kGgufRepo) + ":Q8_0"}, env(&hub));
  ASSERT_EQ(pull.exit_code, 0) << pull.err;
  EXPECT_THAT(pull.err, HasSubstr("resuming at 4096 of"));
  EXPECT_THAT(hub.log(), HasSubstr(" bytes=4096-\n"));
}

TEST_F(CliHubTest, AWrongChecksumIsAnErrorAndLeavesNoFile) {
  TestHub hub(repos(), hf_home(), {"--corrupt", "tiny-Q8_0.gguf"});
  ASSERT_TRUE(hub.started());
  ProcessResult run = run_pagoda({"run", "-hf", std::string(kGgufRepo) + ":Q8_0", "-p", "x", "-n", "2"}, env(&hub));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("tiny-Q8_0.gguf: checksum mismatch: the listing says sha256 "));
  EXPECT_THAT(run.err, HasSubstr("the download was removed"));
  EXPECT_TRUE(snapshot_names(kGgufRepo).empty());
  std::error_code ec;
  for (const auto& blob : fs::directory_iterator(repo_dir(kGgufRepo) + "/blobs", ec))
    ADD_FAILURE() << "left in blobs/: " << blob.path();
}

TEST_F(CliHubTest, ARedirectNamingAnotherSha256IsRefused) {
  TestHub hub(repos(), hf_home(), {"--wrong-etag", "tiny-Q8_0.gguf"});
  ASSERT_TRUE(hub.started());
  ProcessResult pull = run_pagoda({"pull", std::string(kGgufRepo) + ":Q8_0"}, env(&hub));
  EXPECT_EQ(pull.exit_code, 1);
  EXPECT_THAT(pull.err, HasSubstr("tiny-Q8_0.gguf: the Hub names sha256 "));
  EXPECT_TRUE(snapshot_names(kGgufRepo).empty());
  std::error_code ec;
  for (const auto& blob : fs::directory_iterator(repo_dir(kGgufRepo) + "/blobs", ec))
    ADD_FAILURE() << "left in blobs/: " << blob.path();
}

TEST_F(CliHubTest, ASecondRunNeedsNoNetwork) {
  {
    TestHub hub(repos(), hf_home());
    ASSERT_TRUE(hub.started());
    ASSERT_EQ(run_pagoda({"pull", std::string(kGgufRepo) + ":Q4_0"}, env(&hub)).exit_code, 0);
  }  // the hub is gone
  ProcessResult offline = run_pagoda({"run", "-hf", std::string(kGgufRepo) + ":Q4_0", "-p", "x", "-n", "2"},
                                     env(nullptr, /*offline=*/true));
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  EXPECT_THAT(offline.err, HasSubstr("HF_HUB_OFFLINE is set; using the cached test-org/tiny-GGUF"));
  ProcessResult unreachable = run_pagoda({"run", "-hf", std::string(kGgufRepo) + ":Q4_0", "-p", "x", "-n", "2"},
                                         env(nullptr));
  ASSERT_EQ(unreachable.exit_code, 0) << unreachable.err;
  EXPECT_THAT(unreachable.err, HasSubstr("cannot be reached"));
  // What the cache does not hold is a clear error offline.
  ProcessResult other = run_pagoda({"run", "-hf", std::string(kGgufRepo) + ":Q8_0", "-p", "x"}, env(nullptr, true));
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_THAT(other.err, HasSubstr("HF_HUB_OFFLINE is set, and the cached snapshot"));
  EXPECT_THAT(other.err, HasSubstr("has no Q8_0 GGUF"));
  ProcessResult absent = run_pagoda({"pull", kHfRepo}, env(nullptr, true));
  EXPECT_EQ(absent.exit_code, 1);
  EXPECT_THAT(absent.err, HasSubstr("test-org/tiny-hf (revision main) is not in the cache"));
}

TEST_F(CliHubTest, ACacheWrittenByAnotherToolIsReused) {
  // huggingface_hub's layout, written here: a blob by sha256, a snapshot linking to it, refs/main.
  const std::string source = repos() + "/" + kGgufRepo + "/tiny-Q8_0.gguf";
  const std::string sha = sha256_of(source);
  const std::string commit = "1111111111111111111111111111111111111111";
  fs::create_directories(repo_dir(kGgufRepo) + "/blobs");
  fs::create_directories(repo_dir(kGgufRepo) + "/snapshots/" + commit);
  fs::create_directories(repo_dir(kGgufRepo) + "/refs");
  fs::copy_file(source, repo_dir(kGgufRepo) + "/blobs/" + sha);
  fs::create_symlink("../../blobs/" + sha, repo_dir(kGgufRepo) + "/snapshots/" + commit + "/tiny-Q8_0.gguf");
  write_file(repo_dir(kGgufRepo) + "/refs/main", commit);

  ProcessResult offline = run_pagoda({"run", "-hf", kGgufRepo, "-p", "x", "-n", "2"}, env(nullptr, true));
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  EXPECT_THAT(offline.err, HasSubstr("snapshots/" + commit + "/tiny-Q8_0.gguf"));

  // Online: the Hub's commit differs, the blob is the same: linked, not downloaded.
  TestHub hub(repos(), hf_home());
  ASSERT_TRUE(hub.started());
  ProcessResult online = run_pagoda({"pull", std::string(kGgufRepo) + ":Q8_0"}, env(&hub));
  ASSERT_EQ(online.exit_code, 0) << online.err;
  EXPECT_THAT(online.err, HasSubstr("0.0 MiB downloaded"));
  EXPECT_THAT(hub.log(), Not(HasSubstr("/cdn/")));
  EXPECT_THAT(hub.log(), Not(HasSubstr("/resolve/")));
}

TEST_F(CliHubTest, LsAndRm) {
  TestHub hub(repos(), hf_home());
  ASSERT_TRUE(hub.started());
  ASSERT_EQ(run_pagoda({"pull", std::string(kGgufRepo) + ":Q8_0"}, env(&hub)).exit_code, 0);
  ProcessResult ls = run_pagoda({"ls"}, env(&hub));
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_THAT(ls.out, HasSubstr("test-org/tiny-GGUF"));
  EXPECT_THAT(ls.out, HasSubstr(" MiB  tiny-Q8_0.gguf\n"));
  ProcessResult rm = run_pagoda({"rm", kGgufRepo}, env(&hub));
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_FALSE(fs::exists(repo_dir(kGgufRepo)));
  ProcessResult again = run_pagoda({"rm", kGgufRepo}, env(&hub));
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("test-org/tiny-GGUF is not in the cache"));
}

TEST_F(CliHubTest, HttpsIsVerifiedAgainstTheCertificateStore) {
  // A self-signed certificate for localhost, trusted through SSL_CERT_FILE (OpenSSL's default store override).
  const std::string cert = hf_home() + "/cert.pem", key = hf_home() + "/key.pem";
  run_command("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -addext "
              "subjectAltName=DNS:localhost -keyout '" + key + "' -out '" + cert + "' 2>/dev/null");
  if (!fs::exists(cert)) GTEST_SKIP() << "the openssl command is not installed";
  TestHub hub(repos(), hf_home(), {"--tls", cert, key});
  ASSERT_TRUE(hub.started());
  const std::string port = hub.endpoint().substr(hub.endpoint().rfind(':') + 1);
  std::vector<std::string> trusted = env(&hub);
  trusted.push_back("HF_ENDPOINT=https://localhost:" + port);
  trusted.push_back("SSL_CERT_FILE=" + cert);
  ProcessResult ok = run_pagoda({"pull", std::string(kGgufRepo) + ":Q8_0"}, trusted);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("tiny-Q8_0.gguf"));

  // Not trusted, or trusted for another name: refused.
  std::vector<std::string> untrusted = env(&hub);
  untrusted.push_back("HF_ENDPOINT=https://localhost:" + port);
  untrusted.push_back("SSL_CERT_FILE=/nonexistent");
  ProcessResult refused = run_pagoda({"pull", kHfRepo}, untrusted);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("the TLS handshake failed"));
  std::vector<std::string> other_name = trusted;
  other_name.push_back("HF_ENDPOINT=https://127.0.0.1:" + port);
  ProcessResult mismatch = run_pagoda({"pull", kHfRepo}, other_name);
  EXPECT_EQ(mismatch.exit_code, 1);
  EXPECT_THAT(mismatch.err, HasSubstr("the TLS handshake failed"));
}

TEST_F(CliHubTest, TokensAndErrors) {
  TestHub hub(repos(), hf_home(), {"--token", "hf_test"});
  ASSERT_TRUE(hub.started());
  ProcessResult anonymous = run_pagoda({"pull", kGgufRepo}, env(&hub));
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_THAT(anonymous.err, HasSubstr("HTTP 401"));
  EXPECT_THAT(anonymous.err, HasSubstr("is gated or private: set HF_TOKEN"));
  std::vector<std::string> with_token = env(&hub);
  with_token.push_back("HF_TOKEN=hf_test");
  ProcessResult ok = run_pagoda({"pull", kGgufRepo}, with_token);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;

  ProcessResult missing = run_pagoda({"pull", "test-org/nope"}, with_token);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("no repository test-org/nope (revision main)"));
  ProcessResult quant = run_pagoda({"pull", std::string(kGgufRepo) + ":Q6_K"}, with_token);
  EXPECT_EQ(quant.exit_code, 1);
  EXPECT_THAT(quant.err, HasSubstr("has no Q6_K GGUF (GGUF files: tiny-Q4_0-00001-of-00003.gguf, tiny-Q8_0.gguf)"));
  ProcessResult both = run_pagoda({"run", "-m", "x.gguf", "-hf", kGgufRepo}, with_token);
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_THAT(both.err, HasSubstr("-m and -hf both name the model"));
  ProcessResult bad = run_pagoda({"pull", "not-a-repo"}, with_token);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("is not a Hugging Face repository id"));
}

}  // namespace
}  // namespace pagoda::e2e
