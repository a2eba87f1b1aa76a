// MappedFile: opens a regular file read-only and maps all of it. An empty file is a valid zero-byte mapping
// (mmap refuses length 0), so the format parser reports "too small" rather than this layer failing oddly.
#include "format/mapped_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pagoda::format {

namespace {

std::string errno_message(int error_number) { return std::strerror(error_number); }

// Closes the descriptor on every exit path; the mapping stays valid after close.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

}  // namespace

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  // O_NONBLOCK so that opening a FIFO by mistake cannot hang waiting for a writer; it is rejected below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int error_number = errno;
    if (error_number == EISDIR) return make_error(fmt::format("{} is a directory", path));
    return make_error(fmt::format("cannot open {}: {}", path, errno_message(error_number)));
  }
  FdCloser closer(fd);

  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return make_error(fmt::format("cannot stat {}: {}", path, errno_message(errno)));
  }
  if (S_ISDIR(st.st_mode)) return make_error(fmt::format("{} is a directory", path));
  if (!S_ISREG(st.st_mode)) return make_error(fmt::format("{} is not a regular file", path));

  std::unique_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ == 0) return file;

  void* addr = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) {
    const int error_number = errno;
    file->size_ = 0;
    return make_error(fmt::format("cannot map {}: {}", path, errno_message(error_number)));
  }
  file->data_ = static_cast<const uint8_t*>(addr);
  return file;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace pagoda::format
