// Tests for MappedFile and GgufFile::open on real files: a file written by GgufWriter::write maps and parses,
// and missing paths, directories, FIFOs, unreadable and empty files fail with clean messages.
#include "format/mapped_file.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "support/temp_dir_test.h"

namespace pagoda::format {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class MappedFileTest : public testing_support::TempDirTest {};

TEST_F(MappedFileTest, WritesAndOpensARealFile) {
  std::vector<uint8_t> weights(5 * 3 * 2);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<uint8_t>(i * 7);
  GgufWriter writer;
  writer.set("general.architecture", GgufValue::string("llama"));
  writer.add_tensor("w", GgmlType::kF16, {5, 3}, weights.data(), weights.size());
  const std::string file_path = path("model.gguf");
  ASSERT_TRUE(writer.write(file_path).ok());

  // write() and to_bytes() agree byte for byte, and no temporary file is left behind.
  std::ifstream in(file_path, std::ios::binary);
  const std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(on_disk, writer.to_bytes());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);

  auto file = GgufFile::open(file_path);
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->name(), file_path);
  EXPECT_EQ(file->get_string("general.architecture")->value(), "llama");
  const GgufTensorInfo* w = file->find_tensor("w");
  ASSERT_NE(w, nullptr);
  const auto* p = static_cast<const uint8_t*>(w->data);
  EXPECT_EQ(std::vector<uint8_t>(p, p + w->size_bytes), weights);

  // Moving the GgufFile keeps tensor pointers valid: the mapping moves with it.
  GgufFile moved = std::move(file).value();
  EXPECT_EQ(moved.find_tensor("w")->data, p);
  EXPECT_EQ(static_cast<const uint8_t*>(moved.find_tensor("w")->data)[1], 7);
}

TEST_F(MappedFileTest, WriteReplacesAnExistingFile) {
  const std::string file_path = path("model.gguf");
  { std::ofstream(file_path) << "old contents"; }
  GgufWriter writer;
  writer.set("k", GgufValue::u32(1));
  ASSERT_TRUE(writer.write(file_path).ok());
  auto file = GgufFile::open(file_path);
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->get_u32("k")->value(), 1u);
}

TEST_F(MappedFileTest, WriteIntoMissingDirectoryFails) {
  GgufWriter writer;
  const Status status = writer.write(path("no/such/dir/model.gguf"));
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("cannot create"));
  EXPECT_THAT(status.message(), HasSubstr("No such file or directory"));
}

TEST_F(MappedFileTest, MissingFile) {
  auto mapped = MappedFile::open(path("missing.gguf"));
  ASSERT_FALSE(mapped.ok());
  EXPECT_EQ(mapped.error(), fmt::format("cannot open {}: No such file or directory", path("missing.gguf")));
  auto file = GgufFile::open(path("missing.gguf"));
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.error(), HasSubstr("No such file or directory"));
}

TEST_F(MappedFileTest, Directory) {
  auto file = GgufFile::open(dir_.string());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error(), fmt::format("{} is a directory", dir_.string()));
}

TEST_F(MappedFileTest, FifoIsRejectedWithoutBlocking) {
  const std::string fifo = path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto file = MappedFile::open(fifo);
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.error(), HasSubstr("is not a regular file"));
}

TEST_F(MappedFileTest, EmptyFileMapsAsZeroBytes) {
  const std::string empty = path("empty.gguf");
  { std::ofstream out(empty); }
  auto mapped = MappedFile::open(empty);
  ASSERT_TRUE(mapped.ok()) << mapped.error();
  EXPECT_EQ((*mapped)->bytes().size(), 0u);
  EXPECT_EQ((*mapped)->path(), empty);
  auto file = GgufFile::open(empty);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error(), empty + ": too small to be a GGUF file (0 bytes)");
}

TEST_F(MappedFileTest, UnreadableFile) {
  const std::string locked = path("locked.gguf");
  { std::ofstream(locked) << "GGUF"; }
  ASSERT_EQ(::chmod(locked.c_str(), 0), 0);
  // Root reads files whatever their mode, so the open runs in a child that drops to an unprivileged user.
  EXPECT_EXIT(
      {
        if (::geteuid() == 0 && ::setuid(65534) != 0) std::_Exit(2);
        auto file = MappedFile::open(locked);
        const bool clean_error = !file.ok() && file.error().find("Permission denied") != std::string::npos;
        std::_Exit(clean_error ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace pagoda::format
