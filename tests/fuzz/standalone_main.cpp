// main() for fuzz targets built without libFuzzer (g++ builds): runs every
// file of the given corpus directories (or files), then -runs=N random
// mutations of them, deterministic for a given -seed. Accepts and ignores
// other libFuzzer-style "-flag=value" arguments. Exit 0 unless the target
// aborts (a sanitizer or a property check), like libFuzzer.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> readFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void run(const std::vector<uint8_t>& in) {
  // A fresh heap copy of exactly the input's size, so ASan sees overreads.
  auto* p = new uint8_t[in.size() ? in.size() : 1];
  if (!in.empty()) std::memcpy(p, in.data(), in.size());
  LLVMFuzzerTestOneInput(p, in.size());
  delete[] p;
}

// Mutations that matter for length-prefixed formats.
void mutate(std::vector<uint8_t>& b, std::mt19937_64& rng,
            const std::vector<std::vector<uint8_t>>& corpus) {
  auto pick = [&](size_t n) { return n ? static_cast<size_t>(rng() % n) : 0; };
  static const uint32_t kInteresting[] = {
      0,      1,      2,      3,       4,          5,          7,         8,     15,
      16,     17,     20,     0x7f,    0x80,       0xff,       0x100,     0xfff, 0x1000,
      0x7fff, 0x8000, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff};
  int n = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) {
    switch (rng() % 9) {
      case 0:  // flip a bit
        if (!b.empty()) b[pick(b.size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1:  // random byte
        if (!b.empty()) b[pick(b.size())] = static_cast<uint8_t>(rng());
        break;
      case 2:  // insert bytes
        b.insert(b.begin() + static_cast<long>(pick(b.size() + 1)), 1 + rng() % 8,
                 static_cast<uint8_t>(rng()));
        break;
      case 3:  // erase a range
        if (!b.empty()) {
          size_t at = pick(b.size());
          size_t len = 1 + pick(std::min<size_t>(16, b.size() - at));
          b.erase(b.begin() + static_cast<long>(at), b.begin() + static_cast<long>(at + len));
        }
        break;
      case 4:  // truncate
        b.resize(pick(b.size() + 1));
        break;
      case 5:  // interesting u16 at an even offset (nla_len, nla_type)
        if (b.size() >= 2) {
          size_t at = pick(b.size() / 2) * 2;
          uint16_t v = static_cast<uint16_t>(kInteresting[pick(std::size(kInteresting))]);
          std::memcpy(&b[at], &v, 2);
        }
        break;
      case 6:  // interesting u32 at an aligned offset (nlmsg_len, values)
        if (b.size() >= 4) {
          size_t at = pick(b.size() / 4) * 4;
          uint32_t v = kInteresting[pick(std::size(kInteresting))];
          std::memcpy(&b[at], &v, 4);
        }
        break;
      case 7:  // duplicate a range (repeated attributes, messages)
        if (!b.empty()) {
          size_t at = pick(b.size());
          size_t len = 1 + pick(std::min<size_t>(64, b.size() - at));
          std::vector<uint8_t> part(b.begin() + static_cast<long>(at),
                                    b.begin() + static_cast<long>(at + len));
          b.insert(b.begin() + static_cast<long>(pick(b.size() + 1)), part.begin(), part.end());
        }
        break;
      case 8: {  // splice with another input
        const auto& o = corpus[pick(corpus.size())];
        if (!o.empty()) {
          size_t from = pick(o.size());
          b.resize(pick(b.size() + 1));
          b.insert(b.end(), o.begin() + static_cast<long>(from), o.end());
        }
        break;
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  long runs = 10000;
  uint64_t seed = 1;
  std::vector<std::vector<uint8_t>> corpus;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("-runs=", 0) == 0) {
      runs = std::strtol(a.c_str() + 6, nullptr, 10);
    } else if (a.rfind("-seed=", 0) == 0) {
      seed = std::strtoull(a.c_str() + 6, nullptr, 10);
    } else if (a[0] == '-') {
      continue;
    } else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::directory_iterator(a))
        if (e.is_regular_file()) corpus.push_back(readFile(e.path()));
    } else {
      corpus.push_back(readFile(a));
    }
  }
  if (corpus.empty()) corpus.push_back({});
  for (const auto& in : corpus) run(in);
  std::mt19937_64 rng(seed);
  for (long i = 0; i < runs; ++i) {
    auto b = corpus[rng() % corpus.size()];
    mutate(b, rng, corpus);
    run(b);
  }
  std::printf("standalone fuzz driver: %zu corpus inputs, %ld mutations, seed %llu: no failure\n",
              corpus.size(), runs, static_cast<unsigned long long>(seed));
  return 0;
}
