// Scratch directories and whole-file reads.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace vdev::testkit {

// A directory made with mkdtemp, removed with everything in it at
// destruction unless keep() was called. Move-only.
class TempDir {
 public:
  // prefix: the path up to the random part, e.g. "/tmp/vdev-e2e.".
  static Result<TempDir> create(const std::string& prefix);
  TempDir(TempDir&& o) noexcept;
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();

  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }
  // Leaves the directory behind (to look at after a failure).
  void keep() { keep_ = true; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
  bool keep_ = false;
};

// The whole file.
Result<std::string> readFile(const std::string& path);

}  // namespace vdev::testkit
