#include "core/trace.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include <time.h>
#include <unistd.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "core/file.h"
#include "core/json.h"

namespace uopc::trace {
namespace {

// The events of this process, written at exit.
class Recorder {
 public:
  static Recorder& Get() {
    static Recorder* r = new Recorder;  // written by the atexit hook, never destroyed
    return *r;
  }
  const std::string& path() const { return path_; }

  void Add(const char* category, std::string name, const std::string& track, int64_t start,
           int64_t end, const std::vector<std::pair<std::string, std::string>>& args) {
    std::string a;
    for (const auto& [k, v] : args) {
      double number;
      absl::StrAppend(&a, a.empty() ? "" : ",", JsonQuote(k), ":",
                      absl::SimpleAtod(v, &number) ? v : JsonQuote(v));
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, added] = tracks_.try_emplace(track, static_cast<int>(tracks_.size()) + 1);
    events_.push_back(absl::StrCat("{\"ph\":\"X\",\"cat\":", JsonQuote(category),
                                   ",\"name\":", JsonQuote(name), ",\"pid\":", kPidPlaceholder,
                                   ",\"tid\":", it->second, ",\"ts\":", start,
                                   ",\"dur\":", end - start, ",\"args\":{", a, "}}"));
  }

  void SetRank(int rank, int world) {
    std::lock_guard<std::mutex> lock(mu_);
    rank_ = rank;
    world_ = world;
  }

  absl::Status Flush() {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string pid = std::to_string(rank_);
    std::string out = "{\"traceEvents\":[\n";
    absl::StrAppend(&out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":", pid,
                    ",\"args\":{\"name\":\"rank ", rank_, "\"}}");
    for (const auto& [track, tid] : tracks_)
      absl::StrAppend(&out, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":", pid,
                      ",\"tid\":", tid, ",\"args\":{\"name\":", JsonQuote(track), "}}");
    for (const std::string& e : events_) {
      const size_t at = e.find(kPidPlaceholder);
      absl::StrAppend(&out, ",\n", e.substr(0, at), pid,
                      e.substr(at + sizeof(kPidPlaceholder) - 1));
    }
    out += "\n]}\n";
    const std::string file = world_ > 1 ? absl::StrCat(path_, ".rank", rank_) : path_;
    return WriteFileAtomic(file, {out});
  }

 private:
  static constexpr char kPidPlaceholder[] = "@PID@";
  Recorder() {
    const char* p = std::getenv("UOPC_TRACE");
    path_ = p ? p : "";
    // a trace that could not be written is said now, not lost at exit after the run
    if (!path_.empty()) {
      const size_t slash = path_.rfind('/');
      const std::string dir = slash == std::string::npos ? "." : path_.substr(0, slash + 1);
      if (access(dir.c_str(), W_OK) != 0) {
        std::fprintf(stderr, "uopc: UOPC_TRACE=%s: its folder %s cannot be written (%s); no trace\n",
                     path_.c_str(), dir.c_str(), std::strerror(errno));
        path_.clear();
      }
    }
    if (!path_.empty())
      std::atexit([] {
        absl::Status s = Get().Flush();
        if (!s.ok())
          std::fprintf(stderr, "uopc: UOPC_TRACE: %s\n", std::string(s.message()).c_str());
      });
  }
  std::string path_;
  std::mutex mu_;
  absl::flat_hash_map<std::string, int> tracks_;
  std::vector<std::string> events_;
  int rank_ = 0, world_ = 1;
};

}  // namespace

bool Enabled() {
  static const bool on = !Recorder::Get().path().empty();
  return on;
}

int64_t NowMicros() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000 + t.tv_nsec / 1000;
}

void Record(const char* category, std::string name, const std::string& track, int64_t start_us,
            int64_t end_us, std::vector<std::pair<std::string, std::string>> args) {
  if (Enabled()) Recorder::Get().Add(category, std::move(name), track, start_us, end_us, args);
}

void SetRank(int rank, int world) { Recorder::Get().SetRank(rank, world); }

absl::Status Flush() { return Enabled() ? Recorder::Get().Flush() : absl::OkStatus(); }

absl::Status MergeRankFiles(const std::string& path, int world) {
  std::string out = "{\"traceEvents\":[\n";
  bool first = true;
  int found = 0;
  for (int r = 0; r < world; ++r) {
    const std::string part = absl::StrCat(path, ".rank", r);
    std::ifstream in(part);
    if (!in) continue;
    ++found;
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    const size_t open = text.find('['), close = text.rfind(']');
    if (open == std::string::npos || close == std::string::npos || close < open)
      return absl::DataLossError(absl::StrCat("merge traces: ", part, " is not a trace file"));
    std::string events = text.substr(open + 1, close - open - 1);
    while (!events.empty() && (events.back() == '\n' || events.front() == '\n'))
      events.erase(events.back() == '\n' ? events.size() - 1 : 0, 1);
    if (events.empty()) continue;
    absl::StrAppend(&out, first ? "" : ",\n", events);
    first = false;
  }
  if (found == 0)
    return absl::NotFoundError(absl::StrCat("merge traces: no ", path, ".rank<R> file"));
  out += "\n]}\n";
  absl::Status s = WriteFileAtomic(path, {out});
  if (!s.ok()) return s;
  for (int r = 0; r < world; ++r) std::remove(absl::StrCat(path, ".rank", r).c_str());
  return absl::OkStatus();
}

}  // namespace uopc::trace
