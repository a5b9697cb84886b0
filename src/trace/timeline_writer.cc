#include "trace/timeline_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "flotilla/trace/track.h"
#include "trace/json_text.h"
#include "trace/thread_buffer.h"

namespace flotilla::trace {

namespace {

void AppendArgValue(std::string& out, const Event& e, int i) {
  const uint8_t bit = static_cast<uint8_t>(1u << i);
  if (e.name_args & bit) {
    AppendJsonString(out, NameOf(static_cast<NameId>(e.args[i].value)));
  } else if (e.double_args & bit) {
    double d;
    std::memcpy(&d, &e.args[i].value, sizeof(d));
    AppendDouble(out, d);
  } else {
    out += std::to_string(e.args[i].value);
  }
}

void AppendMetadata(std::string& out, const char* name, int pid, uint32_t tid,
                    const std::string& args_json) {
  out += "{\"ph\":\"M\",\"name\":\"";
  out += name;
  out += "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
         ",\"args\":" + args_json + "}";
}

std::string NameArg(const std::string& name) {
  std::string out = "{\"name\":";
  AppendJsonString(out, name);
  return out + "}";
}

}  // namespace

void FormatEvent(std::string& out, const Event& e, int pid, uint32_t tid) {
  out += "{\"ph\":\"";
  out.push_back(e.phase);
  out += "\",\"cat\":\"";
  out += CategoryName(e.cat);
  out += "\",\"name\":";
  AppendJsonString(out, NameOf(e.name));
  out += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":";
  AppendMicros(out, e.start_ns);
  if (e.phase == 'X') {
    out += ",\"dur\":";
    AppendMicros(out, e.end_ns - e.start_ns);
  } else if (e.phase == 'i') {
    out += ",\"s\":\"t\"";
  }
  if (e.nargs > 0) {
    out += ",\"args\":{";
    for (int i = 0; i < e.nargs; ++i) {
      if (i) out.push_back(',');
      AppendJsonString(out, e.args[i].key);
      out.push_back(':');
      AppendArgValue(out, e, i);
    }
    out.push_back('}');
  }
  out.push_back('}');
}

TimelineWriter::TimelineWriter(TimelineOptions options, ProcessInfo self)
    : options_(std::move(options)), self_(std::move(self)) {
  const auto dir = std::filesystem::path(options_.path).parent_path();
  if (!dir.empty()) MakeDirs(dir.string());
  OpenFile(options_.max_bytes > 0 ? SegmentPath(0) : options_.path);
}

TimelineWriter::~TimelineWriter() {
  try {
    Close();
  } catch (const std::exception&) {
  }
}

std::string TimelineWriter::SegmentPath(int k) const {
  return options_.path + ".seg" + std::to_string(k);
}

void TimelineWriter::OpenFile(const std::string& path) {
  // O_NOFOLLOW: a link planted at the timeline's name is refused.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  file_ = fd >= 0 ? ::fdopen(fd, "w") : nullptr;
  if (file_ == nullptr && fd >= 0) ::close(fd);
  FLOTILLA_CHECK(file_ != nullptr, Unavailable, "cannot write the timeline file ", path, ": ",
                 errno == ELOOP ? "it is a symbolic link" : std::strerror(errno));
  file_bytes_ = 0;
  first_line_ = true;
  names_written_.clear();
  clock_written_ = {0, -2};
  std::string open = "[\n";
  std::fwrite(open.data(), 1, open.size(), file_);
  file_bytes_ += 2;
  WriteHeader();
}

void TimelineWriter::CloseFile() {
  if (!file_) return;
  std::fputs("\n]\n", file_);
  std::fclose(file_);
  file_ = nullptr;
}

void TimelineWriter::Emit(std::string& line) {
  if (!first_line_) line.insert(0, ",\n");
  first_line_ = false;
  std::fwrite(line.data(), 1, line.size(), file_);
  file_bytes_ += static_cast<int64_t>(line.size());
  line.clear();
}

// The process's row name and order, and its clock for the merge.
void TimelineWriter::WriteHeader() {
  std::string line;
  AppendMetadata(line, "process_name", self_.pid, 0, NameArg(self_.label));
  Emit(line);
  const int order = self_.role == "launcher" ? -1 : self_.role == "server" ? 1000 + self_.id
                                                                           : self_.id;
  AppendMetadata(line, "process_sort_index", self_.pid, 0,
                 "{\"sort_index\":" + std::to_string(order) + "}");
  Emit(line);
}

void TimelineWriter::WriteNames() {
  std::string line;
  const ClockOffset clock = GetClockOffset();
  if (clock.offset_ns != clock_written_.offset_ns || clock.error_ns != clock_written_.error_ns) {
    std::string args = "{\"label\":";
    AppendJsonString(args, self_.label);
    args += ",\"role\":\"" + self_.role + "\",\"id\":" + std::to_string(self_.id) +
            ",\"os_pid\":" + std::to_string(self_.pid) + ",\"host\":";
    AppendJsonString(args, self_.host);
    args += ",\"clock_offset_ns\":" + std::to_string(clock.offset_ns) +
            ",\"clock_error_ns\":" + std::to_string(clock.error_ns) +
            ",\"wall_minus_mono_ns\":" + std::to_string(WallNs() - MonoNs()) + "}";
    AppendMetadata(line, "flotilla_process", self_.pid, 0, args);
    Emit(line);
    clock_written_ = clock;
  }
  auto name_row = [&](uint32_t id, const std::string& name) {
    auto it = names_written_.find(id);
    if (it != names_written_.end() && it->second == name) return;
    AppendMetadata(line, "thread_name", self_.pid, id, NameArg(name));
    Emit(line);
    names_written_[id] = name;
  };
  for (const auto& b : BufferRegistry::Get().All()) {
    std::string name = b->name();
    if (name.empty()) {
      name = b->os_tid() == self_.pid ? "main" : "thread " + std::to_string(b->os_tid());
    }
    name_row(b->thread_index(), name);
  }
  for (const auto& t : AllTracks()) name_row(t.id, t.name);
}

void TimelineWriter::Flush() {
  if (closed_) return;
  WriteNames();
  std::string line;
  for (const auto& b : BufferRegistry::Get().All()) {
    b->Drain([&](const Event& e) {
      FormatEvent(line, e, self_.pid, e.track != 0 ? e.track : b->thread_index());
      Emit(line);
      ++events_;
      MaybeRotate();  // per event: a large flush must not overshoot the bound
    });
  }
  std::fflush(file_);
}

void TimelineWriter::MaybeRotate() {
  if (options_.max_bytes <= 0 || file_bytes_ < options_.max_bytes / 2) return;
  CloseFile();
  if (segment_ > 0) std::remove(SegmentPath(segment_ - 1).c_str());
  ++segment_;
  OpenFile(SegmentPath(segment_));
}

int64_t TimelineWriter::events_dropped() const {
  int64_t n = 0;
  for (const auto& b : BufferRegistry::Get().All()) n += static_cast<int64_t>(b->dropped());
  return n;
}

// <path> = the previous segment's events followed by the current one's.
void TimelineWriter::Stitch() {
  std::string out;
  for (int k = std::max(0, segment_ - 1); k <= segment_; ++k) {
    std::string part = ReadFile(SegmentPath(k));
    const size_t open = part.find('[');
    const size_t close = part.rfind(']');
    if (open == std::string::npos || close == std::string::npos || close <= open) continue;
    std::string body = part.substr(open + 1, close - open - 1);
    while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
    while (!body.empty() && body.front() == '\n') body.erase(0, 1);
    if (body.empty()) continue;
    out += out.empty() ? "[\n" : ",\n";
    out += body;
  }
  WriteFileAtomic(options_.path, out.empty() ? "[]\n" : out + "\n]\n");
  for (int k = std::max(0, segment_ - 1); k <= segment_; ++k) std::remove(SegmentPath(k).c_str());
}

void TimelineWriter::Close() {
  if (closed_) return;
  Flush();
  std::string line;
  AppendMetadata(line, "flotilla_dropped", self_.pid, 0,
                 "{\"events\":" + std::to_string(events_dropped()) + "}");
  Emit(line);
  closed_ = true;
  CloseFile();
  if (options_.max_bytes > 0) Stitch();
}

}  // namespace flotilla::trace
