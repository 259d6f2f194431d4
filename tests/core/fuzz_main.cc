// A libFuzzer-compatible driver for builds without libFuzzer (gcc): replays the files
// given as arguments, or, with none, mutates a built-in corpus of valid UIR for
// --iterations=N rounds with a fixed seed (so a failure reproduces).
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

const char* const kCorpus[] = {
    "%0 = range 4 : idx=0 kind=loop\n%1 = buffer 1 : dtype=i32 slot=1\n%2 = index %1, 0\n"
    "%3 = load %2\n%4 = range %3 : idx=1 kind=loop\n%5 = floordiv %4, 8\n%6 = add %0, %5\n",
    "%0 = var : name=n lo=1 hi=8\n%1 = range %0 : idx=1 kind=reduce\n%2 = cmplt %1, %0\n",
    "%0 = buffer 24 : dtype=f16 slot=3\n%1 = reshape %0, 2, 3, 4\n%2 = permute %1 : axes=2,0,1\n"
    "%3 = reduce %2 : op=max axes=0,2\n%4 = copy %3 : device=CUDA:0\n",
    "%0 = const 1.5 : dtype=bf16\n%1 = cast %0 : dtype=f32\n%2 = add %1, nan\n%3 = const -inf\n"
    "%4 = max %2, %3\n%5 = const 18446744073709551615 : dtype=u64\n%6 = sink %4, %5\n",
    "%0 = alloc 1 : dtype=f32 slot=0\n%1 = range 4 : idx=0 kind=loop\n%2 = after %0, %1\n"
    "%3 = index %2, 0\n%4 = store %3, 0.0\n%5 = end %4, %1\n%6 = sink %5\n",
};

const char* const kTokens[] = {
    "%",     "=",     ",",     ":",     " ",     "\n",     "0",        "1",
    "-1",    "8",     "%0",    "%1",    "add",   "mul",    "floordiv", "mod",
    "range", "var",   "const", "where", "cmplt", "dtype=", "i64",      "f16",
    "idx=",  "kind=", "axes=", "nan",   "true",  "1e309",  "-0.0",     "99999999999999999999",
    "#"};

std::string Mutate(std::string s, std::mt19937& rng) {
  int edits = 1 + rng() % 4;
  for (int e = 0; e < edits; ++e) {
    size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 5) {
      case 0:
        if (!s.empty() && at < s.size()) s.erase(at, 1 + rng() % 8);
        break;
      case 1: s.insert(at, kTokens[rng() % (sizeof kTokens / sizeof *kTokens)]); break;
      case 2:
        if (at < s.size()) s[at] = static_cast<char>(rng() % 256);
        break;
      case 3:
        if (at < s.size()) s[at] = "%=:, \n0123456789-"[rng() % 17];
        break;
      default: {  // splice a line of another corpus entry
        std::string other = kCorpus[rng() % (sizeof kCorpus / sizeof *kCorpus)];
        size_t from = rng() % other.size();
        s.insert(at, other.substr(from, other.find('\n', from) - from + 1));
      }
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  long iterations = 100000;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (!std::strncmp(argv[i], "--iterations=", 13))
      iterations = std::atol(argv[i] + 13);
    else if (!std::strcmp(argv[i], "--help")) {
      std::cout << "usage: " << argv[0] << " [--iterations=N] [FILE...]\n";
      return 0;
    } else
      files.push_back(argv[i]);
  }
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
  if (!files.empty()) return 0;
  std::mt19937 rng(20261129);
  for (long i = 0; i < iterations; ++i) {
    std::string s = Mutate(kCorpus[i % (sizeof kCorpus / sizeof *kCorpus)], rng);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
  std::cout << iterations << " mutated inputs, no crash\n";
  return 0;
}
