// TempDirTest: a GoogleTest fixture that gives each test a fresh, private temporary folder (mkdtemp, so two runs of
// the suite at once never share a file) and removes it afterwards; process_temp_path does the same for plain
// TEST()s. Header-only test support; no product code.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace pagoda::testing_support {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pagoda-test-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  // A file name inside the folder.
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

// For plain TEST()s: `name` inside one private folder of this process (mkdtemp), removed when the process exits.
inline std::string process_temp_path(const std::string& name) {
  struct ProcessTempDir {
    std::filesystem::path dir;
    ProcessTempDir() {
      std::string tmpl = (std::filesystem::temp_directory_path() / "pagoda-test-XXXXXX").string();
      if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
      dir = tmpl;
    }
    ~ProcessTempDir() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  };
  static const ProcessTempDir temp;
  return (temp.dir / name).string();
}

}  // namespace pagoda::testing_support
