// The real binary split over MPI ranks (mpirun -np 2 on this machine): greedy text identical to one process for
// tensor parallel 2, pipeline parallel 2 and both (4 ranks), on the bundled model and through `pagoda serve`;
// the logits of a TinyLlama-shape F32 model (2 layers of it) within 1e-4 relative of one process's; bad launches
// as clear errors; and a rank killed in the middle of a served stream makes the job end, with mpirun naming the
// rank, instead of hanging.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "run_binary.h"
#include "server_process.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;

#ifdef PAGODA_HAVE_MPI
constexpr bool kHaveMpi = true;
#else
constexpr bool kHaveMpi = false;
#endif

// mpirun refuses root unless told, and the tests may run 4 ranks on 2 cores.
const std::vector<std::string> kMpiEnv = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                          "OMPI_MCA_rmaps_base_oversubscribe=1"};

std::vector<std::string> mpirun(int ranks) { return {"mpirun", "-np", std::to_string(ranks), "--oversubscribe"}; }

ProcessResult run_split(int ranks, const std::vector<std::string>& args) {
  std::vector<std::string> argv = mpirun(ranks);
  argv.push_back(PAGODA_TEST_BINARY);
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, kMpiEnv);
}

std::vector<float> read_floats(const std::string& path) {
  const std::string bytes = read_file(path);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

class CliParallelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kHaveMpi) GTEST_SKIP() << "built without MPI";
  }
  // A TinyLlama-1.1B-shape F32 model cut to 2 layers (837 MiB), written once per process, removed after the suite.
  static const std::string& tinyllama_f32() {
    if (model_path_.empty()) {
      model_dir_ = make_temp_dir();
      model_path_ = model_dir_ + "/tinyllama-2l-f32.gguf";
      const ProcessResult r =
          run_pagoda({"gen-model", "--shape", "tinyllama-1.1b", "--layers", "2", "--type", "f32", "-o", model_path_});
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    return model_path_;
  }
  static void TearDownTestSuite() {
    if (!model_dir_.empty()) std::filesystem::remove_all(model_dir_);
    model_dir_.clear();
    model_path_.clear();
  }
  static std::string model_dir_, model_path_;
};

std::string CliParallelTest::model_dir_, CliParallelTest::model_path_;

TEST_F(CliParallelTest, GreedyTextOfTheBundledModelIsTheSingleProcessText) {
  const std::vector<std::string> run = {
      "run", "-p", "Once upon a time, in a big forest,", "-n", "120", "--temp", "0", "--threads", "1", "--ignore-eos"};
  const ProcessResult alone = run_pagoda(run);
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  ASSERT_GT(alone.out.size(), 200u);
  struct Split {
    int ranks;
    std::vector<std::string> flags;
  };
  for (const Split& s : {Split{2, {"--tp", "2"}}, Split{2, {"--pp", "2"}}, Split{4, {"--tp", "2", "--pp", "2"}}}) {
    std::vector<std::string> args = run;
    args.insert(args.end(), s.flags.begin(), s.flags.end());
    const ProcessResult split = run_split(s.ranks, args);
    ASSERT_EQ(split.exit_code, 0) << s.flags[0] << "\n" << split.err;
    EXPECT_EQ(split.out, alone.out) << s.flags[0];
    // Rank 0's closing figures include what the split cost it.
    EXPECT_THAT(split.err, HasSubstr("in communication")) << s.flags[0];
  }
}

TEST_F(CliParallelTest, TinyLlamaShapeF32LogitsWithin1e4RelativeOfOneProcess) {
  const std::string& model = tinyllama_f32();
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  auto logits_of = [&](int ranks, const std::vector<std::string>& flags, const std::string& name) {
    std::vector<std::string> args = {"run",
                                     "-m",
                                     model,
                                     "-p",
                                     "Once upon a time, there was a",
                                     "-n",
                                     "6",
                                     "--temp",
                                     "0",
                                     "--threads",
                                     "1",
                                     "--ignore-eos",
                                     "--logits-out",
                                     dir + "/" + name};
    args.insert(args.end(), flags.begin(), flags.end());
    const ProcessResult r = ranks == 1 ? run_pagoda(args) : run_split(ranks, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::pair(read_floats(dir + "/" + name), r.out);
  };
  const auto [whole, whole_text] = logits_of(1, {}, "whole.bin");
  const int64_t vocab = 32000;
  ASSERT_EQ(whole.size(), size_t(6 * vocab));
  for (const auto& [ranks, flags] :
       std::vector<std::pair<int, std::vector<std::string>>>{{2, {"--tp", "2"}}, {2, {"--pp", "2"}}}) {
    const auto [split, split_text] = logits_of(ranks, flags, flags[0].substr(2) + ".bin");
    ASSERT_EQ(split.size(), whole.size()) << flags[0];
    EXPECT_EQ(split_text, whole_text) << flags[0];
    for (int64_t row = 0; row < 6; ++row) {
      float max_abs = 0.0f, max_diff = 0.0f;
      for (int64_t v = row * vocab; v < (row + 1) * vocab; ++v) {
        max_abs = std::max(max_abs, std::fabs(whole[size_t(v)]));
        max_diff = std::max(max_diff, std::fabs(whole[size_t(v)] - split[size_t(v)]));
      }
      EXPECT_GT(max_abs, 0.1f);
      EXPECT_LE(max_diff, 1e-4f * max_abs) << flags[0] << " row " << row;
    }
  }
}

TEST_F(CliParallelTest, BadLaunchesAreClearErrors) {
  // Without mpirun.
  ProcessResult r = run_pagoda({"run", "-p", "x", "--tp", "2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("launch with mpirun -np 2"));
  // A world of the wrong size: every rank says so and the job ends.
  r = run_split(3, {"run", "-p", "x", "--tp", "2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--tp 2 x --pp 1 needs 2 processes, mpirun started 3"));
  // A split the model does not allow (the bundled model has 8 heads and 5 layers).
  r = run_split(3, {"run", "-p", "x", "--tp", "3"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("8 attention heads do not split over 3 ranks"));
  // Subcommands that run in one process note a config file's parallel settings and go on.
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  write_file(dir + "/c.json", R"({"parallel": {"tensor_parallel": 2}})");
  r = run_pagoda({"tokenize", "--config", dir + "/c.json", "Once"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("this subcommand runs in one process"));
}

// The pid of world rank `rank` among `launcher`'s children.
pid_t find_rank(pid_t launcher, int rank) {
  const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string pid, comm, state;
    pid_t ppid = 0;
    if (!(stat >> pid >> comm >> state >> ppid) || ppid != launcher) continue;
    std::string env = read_file((entry.path() / "environ").string());
    for (char& c : env)
      if (c == '\0') c = '\n';
    if (("\n" + env).find("\n" + want + "\n") != std::string::npos) return pid_t(std::stoi(name));
  }
  return -1;
}

TEST_F(CliParallelTest, ARankKilledMidStreamEndsTheJobInsteadOfHanging) {
  ServerProcess server({"-m", tinyllama_f32(), "--tp", "2", "--threads", "1"}, mpirun(2), kMpiEnv);
  ASSERT_TRUE(server.started()) << server.log();
  const pid_t rank1 = find_rank(server.pid(), 1);
  ASSERT_GT(rank1, 0);
  const int fd = connect_loopback(server.port());
  ASSERT_GE(fd, 0);
  const std::string body = R"({"prompt": "Once upon a time", "max_tokens": 400, "stream": true, "ignore_eos": true})";
  const std::string request =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(write(fd, request.data(), request.size()), ssize_t(request.size()));
  // Wait for a few tokens, so the kill lands mid-stream.
  std::string received;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::count(received.begin(), received.end(), '\n') < 20 && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) break;
      received.append(buf, size_t(n));
    }
  }
  ASSERT_THAT(received, HasSubstr("data: {")) << server.log();
  ASSERT_EQ(kill(rank1, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  // The job ends (mpirun's exit status is not 0) and the client's connection closes; neither hangs.
  EXPECT_NE(server.wait_exit(std::chrono::seconds(60)), 0);
  bool closed = false;
  while (!closed && std::chrono::steady_clock::now() < killed + std::chrono::seconds(60)) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) closed = read(fd, buf, sizeof(buf)) <= 0;
  }
  close(fd);
  EXPECT_TRUE(closed);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_LT(seconds, 60.0);
  EXPECT_THAT(server.log(), HasSubstr("rank 1"));
  std::printf("job ended %.1f s after rank 1 was killed\n", seconds);
}

}  // namespace
}  // namespace pagoda::e2e
