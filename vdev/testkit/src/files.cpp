#include "testkit/files.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

namespace vdev::testkit {

Result<TempDir> TempDir::create(const std::string& prefix) {
  std::string tmpl = prefix + "XXXXXX";
  if (!::mkdtemp(tmpl.data())) return errnoError("mkdtemp " + tmpl);
  return TempDir(std::move(tmpl));
}

TempDir::TempDir(TempDir&& o) noexcept : path_(std::exchange(o.path_, std::string())), keep_(o.keep_) {}

TempDir::~TempDir() {
  if (path_.empty() || keep_) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{errno ? errno : ENOENT, "open " + path};
  std::ostringstream os;
  os << in.rdbuf();
  if (in.bad()) return Error{errno ? errno : EIO, "read " + path};
  return os.str();
}

}  // namespace vdev::testkit
