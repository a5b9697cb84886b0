#include "flotilla/trace/doctor.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "flotilla/trace/clock.h"
#include "trace/doctor_input.h"

namespace flotilla::trace {

namespace {

std::string Size(int64_t bytes) {
  char buf[32];
  if (bytes >= (1 << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MB", static_cast<double>(bytes) / (1 << 20));
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f KB", static_cast<double>(bytes) / 1024);
  } else {
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(bytes));
  }
  return buf;
}

std::string Secs(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", static_cast<double>(ns) / 1e9);
  return buf;
}

std::string Who(const char* role, const std::vector<int>& ids) {
  std::vector<std::string> s;
  for (int id : ids) s.push_back(std::to_string(id));
  return StrCat(role, ids.size() == 1 ? " " : "s ", Join(s, ","));
}

// "allreduce #812 (bucket 3, 4.0 MB)"
std::string Collective(const DumpedRecord& r) {
  std::vector<std::string> facts;
  if (r.comm != 0) facts.push_back(StrCat("comm ", r.comm));
  if (r.bucket >= 0) facts.push_back(StrCat("bucket ", r.bucket));
  facts.push_back(Size(r.bytes));
  return StrCat(r.kind, " #", r.seq, " (", Join(facts, ", "), ")");
}

// "allreduce #17 (bucket 1, 128 B) issued at step 5 in op c_allreduce_start"
std::string Issued(const DumpedRecord& r) {
  std::string out = Collective(r);
  if (r.step >= 0) out += StrCat(" issued at step ", r.step);
  if (!r.op.empty()) out += StrCat(" in op ", r.op);
  return out;
}

// Two ranks ran the same collective as #seq when kind, size and bucket agree.
bool Same(const DumpedRecord& a, const DumpedRecord& b) {
  return a.kind == b.kind && a.bytes == b.bytes && a.bucket == b.bucket;
}

// "now in op mul_grad (step 97)" / "outside any op for 3.0 s (step 97)"
std::string Where(const ProcessDump& d) {
  if (d.in_op) return StrCat("now in op ", d.op, " (step ", d.step, ")");
  const std::string idle = d.op_since_ns ? StrCat(" for ", Secs(d.mono_ns - d.op_since_ns)) : "";
  return StrCat("outside any op", idle, " (step ", d.step, ")");
}

std::string TimeOfDay(int64_t wall_ns) {
  char buf[16];
  return std::string(FormatTimeOfDay(wall_ns, buf));
}

// What the launcher saw of a process that left no dump or stopped.
std::string StatusNote(const DoctorInput& in, const std::string& label) {
  auto it = in.status.find(label);
  if (it == in.status.end()) return "";
  const ProcessStatus& s = it->second;
  if (s.state == "running") return "";
  std::string note = s.state == "stopped" ? " (its process is stopped: " + s.status + ")"
                                          : " (it " + s.state + ": " + s.status + ")";
  auto line = in.last_log_line.find(label);
  if (s.state != "stopped" && line != in.last_log_line.end() && !line->second.empty()) {
    note += StrCat("; last log line: \"", line->second.substr(0, 200), "\"");
  }
  return note;
}

// One communicator of one group as every rank recorded it.
struct RankView {
  const ProcessDump* dump = nullptr;
  std::map<uint64_t, const DumpedRecord*> by_seq;
  const DumpedRecord* first_pending = nullptr;
};

using GroupKey = std::pair<std::string, int>;  // group, communicator

std::map<GroupKey, std::map<int, RankView>> CollectiveViews(const DoctorInput& in,
                                                            std::map<GroupKey, int>* sizes) {
  std::map<GroupKey, std::map<int, RankView>> views;
  for (const ProcessDump& d : in.dumps) {
    for (const DumpedRecord& r : d.records) {
      if (r.type != "collective") continue;
      const GroupKey key{r.group, r.comm};
      (*sizes)[key] = std::max((*sizes)[key], r.participants);
      RankView& v = views[key][r.rank];
      v.dump = &d;
      v.by_seq[r.seq] = &r;
      if (r.pending() && (!v.first_pending || r.seq < v.first_pending->seq)) v.first_pending = &r;
    }
  }
  return views;
}

// The first sequence number whose collective the ranks disagree on.
void FindMismatch(const std::map<int, RankView>& ranks, Diagnosis& out) {
  std::map<uint64_t, std::vector<std::pair<int, const DumpedRecord*>>> at;
  for (const auto& [rank, v] : ranks) {
    for (const auto& [seq, r] : v.by_seq) at[seq].push_back({rank, r});
  }
  for (const auto& [seq, entries] : at) {
    std::vector<std::pair<const DumpedRecord*, std::vector<int>>> kinds;
    for (const auto& [rank, r] : entries) {
      auto it = std::find_if(kinds.begin(), kinds.end(),
                             [&r = r](auto& k) { return Same(*k.first, *r); });
      if (it == kinds.end()) kinds.push_back({r, {rank}});
      else it->second.push_back(rank);
    }
    if (kinds.size() < 2) continue;
    std::sort(kinds.begin(), kinds.end(),
              [](auto& a, auto& b) { return a.second.size() > b.second.size(); });
    std::vector<std::string> parts;
    for (const auto& [r, rs] : kinds) parts.push_back(StrCat(Who("rank", rs), " ran ", Issued(*r)));
    out.findings.push_back(StrCat("the ranks disagree on collective #", seq, ": ",
                                  Join(parts, "; "), " — ", Who("rank", kinds.back().second),
                                  " skipped, added or reordered a collective before it"));
    return;
  }
}

// "ranks 0,1,3 waiting 30.2 s; rank 2 never entered — last record: ..."
void DiagnoseGroup(const DoctorInput& in, const std::map<int, RankView>& ranks, int size,
                   Diagnosis& out) {
  FindMismatch(ranks, out);
  const DumpedRecord* stuck = nullptr;
  for (const auto& [rank, v] : ranks) {
    if (v.first_pending && (!stuck || v.first_pending->seq < stuck->seq)) stuck = v.first_pending;
  }
  if (!stuck) return;
  std::vector<int> waiting;
  int64_t waited = 0;
  std::vector<std::string> others;
  for (int rank = 0; rank < std::max(size, 1); ++rank) {
    auto it = ranks.find(rank);
    const std::string label = StrCat("rank ", rank);
    if (it == ranks.end()) {
      others.push_back(StrCat(label, " left no flight record", StatusNote(in, label)));
      continue;
    }
    const RankView& v = it->second;
    const DumpedRecord* mine = v.by_seq.count(stuck->seq) ? v.by_seq.at(stuck->seq) : nullptr;
    const std::string note = StatusNote(in, v.dump->label);
    if (mine && mine->pending() && Same(*mine, *stuck)) {
      waiting.push_back(rank);
      waited = std::max(waited, v.dump->mono_ns - mine->since_ns());
    } else if (!mine) {
      const DumpedRecord* last = v.by_seq.empty() ? nullptr : v.by_seq.rbegin()->second;
      const std::string last_text =
          last ? StrCat("last record: ", Collective(*last), " ", last->state, ", ") : "";
      others.push_back(StrCat(label, " never entered — ", last_text, Where(*v.dump), note));
    } else if (mine->pending()) {
      others.push_back(StrCat(label, " is in ", Issued(*mine), " instead", note));
    } else {
      const std::string now = v.first_pending ? StrCat("now in ", Collective(*v.first_pending))
                                              : Where(*v.dump);
      others.push_back(StrCat(label, " ran ", Collective(*mine), " as #", mine->seq, " (",
                              mine->state, "); ", now, note));
    }
  }
  out.findings.insert(out.findings.begin(),
                      StrCat(Collective(*stuck), ": ", Who("rank", waiting), " waiting ",
                             Secs(waited), others.empty() ? "" : "; ", Join(others, "; ")));
}

void DiagnoseCollectives(const DoctorInput& in, Diagnosis& out) {
  std::map<GroupKey, int> sizes;
  for (const auto& [key, ranks] : CollectiveViews(in, &sizes)) {
    DiagnoseGroup(in, ranks, sizes[key], out);
  }
}

struct ServerView {
  std::string endpoint;
  int64_t since_wall = INT64_MAX;         // earliest pending call
  int64_t first_failure_wall = INT64_MAX;
  int64_t pending_ns = 0;
  bool failed = false;
  std::set<int> trainers;
  std::set<std::string> calls;
};

// Labels of the trainers the launcher saw stopped (SIGSTOP, a debugger).
std::vector<std::string> StoppedTrainers(const DoctorInput& in) {
  std::vector<std::string> labels;
  for (const auto& [label, s] : in.status) {
    if (s.state == "stopped" && s.role == "trainer") labels.push_back(label);
  }
  return labels;
}

void DiagnosePs(const DoctorInput& in, Diagnosis& out) {
  std::map<int, ServerView> servers;
  for (const ProcessDump& d : in.dumps) {
    for (const DumpedRecord& r : d.records) {
      if (r.type != "rpc" || !(r.pending() || r.state == "failed")) continue;
      ServerView& s = servers[r.server];
      s.endpoint = r.endpoint;
      const int64_t wall = r.since_ns() + d.wall_minus_mono_ns;
      if (r.pending()) {
        s.since_wall = std::min(s.since_wall, wall);
        s.pending_ns = std::max(s.pending_ns, d.mono_ns - r.since_ns());
      } else {
        s.failed = true;
        s.first_failure_wall = std::min(s.first_failure_wall, wall);
      }
      s.trainers.insert(d.role == "trainer" ? d.id : r.trainer);
      s.calls.insert(r.table.empty() ? r.kind : StrCat(r.kind, " table ", r.table));
    }
  }
  const std::vector<std::string> stopped = StoppedTrainers(in);
  for (const auto& [server, s] : servers) {
    if (!s.failed && s.pending_ns < 1000000000) continue;  // calls in flight, not stuck
    const std::string label = StrCat("server ", server);
    const bool dumped = std::any_of(in.dumps.begin(), in.dumps.end(),
                                    [&](const ProcessDump& d) { return d.label == label; });
    const char* verb = dumped ? "has not answered since " : "unreachable since ";
    // A live server holding a barrier or a sync step for a stopped trainer.
    const std::string cause =
        dumped && !stopped.empty() ? StrCat(", waiting on the stopped ", Join(stopped, ", ")) : "";
    out.findings.insert(out.findings.begin(),
                        StrCat("pserver ", server, " (", s.endpoint, ") ", verb,
                               TimeOfDay(s.pending_ns > 0 ? s.since_wall : s.first_failure_wall),
                               cause, StatusNote(in, label), "; ",
                               Who("trainer", {s.trainers.begin(), s.trainers.end()}),
                               " blocked in ", Join({s.calls.begin(), s.calls.end()}, ", ")));
  }
}

// A stopped process (SIGSTOP, a debugger) neither dumps nor answers: the
// others' pending calls point at whoever they wait on (a server holding a
// barrier, a collective's peers), so the stopped one is named first. A
// stopped server that trainers wait on is named by DiagnosePs already.
void DiagnoseStopped(const DoctorInput& in, Diagnosis& out) {
  for (const auto& [label, s] : in.status) {
    if (s.state != "stopped") continue;
    const std::string as_pserver = StrCat("pserver ", s.id, " (");
    if (s.role == "server" && std::any_of(out.findings.begin(), out.findings.end(),
                                          [&](const std::string& f) {
                                            return f.find(as_pserver) == 0;
                                          })) {
      continue;
    }
    out.findings.insert(out.findings.begin(),
                        StrCat(label, " (pid ", s.pid, ", ", s.endpoint, ") is stopped (",
                               s.status, "): it cannot run or answer, and whoever waits on it "
                               "waits forever"));
  }
}

void DiagnoseExits(const DoctorInput& in, Diagnosis& out) {
  for (const auto& [label, s] : in.status) {
    if (s.state != "failed") continue;
    auto line = in.last_log_line.find(label);
    const std::string last = line == in.last_log_line.end() || line->second.empty()
                                 ? ""
                                 : StrCat("; last log line: \"", line->second.substr(0, 200), "\"");
    out.findings.push_back(StrCat(label, " failed: ", s.status, last));
  }
}

void Details(const DoctorInput& in, Diagnosis& out) {
  for (const ProcessDump& d : in.dumps) {
    std::string last, pending;
    for (const DumpedRecord& r : d.records) {
      const std::string what = r.type == "collective" ? Collective(r)
                                                      : StrCat(r.kind, " to server ", r.server);
      if (r.pending() && pending.empty()) {
        pending = StrCat("; waiting in ", what, " for ", Secs(d.mono_ns - r.since_ns()));
      }
      if (!r.pending()) last = StrCat("; last done: ", what, " ", r.state);
    }
    out.details.push_back(StrCat(d.label, " (pid ", d.pid, ", dumped on ", d.reason, "): ",
                                 Where(d), last, pending));
  }
}

}  // namespace

Diagnosis Diagnose(const std::string& log_dir) {
  const DoctorInput in = ReadDoctorInput(log_dir);
  Diagnosis d;
  DiagnoseCollectives(in, d);
  DiagnosePs(in, d);
  DiagnoseStopped(in, d);
  DiagnoseExits(in, d);
  Details(in, d);
  d.notes = in.notes;
  if (in.dumps.empty() && d.notes.empty()) {
    d.notes.push_back("no flight-recorder dumps in " + log_dir);
  }
  return d;
}

std::string FormatDiagnosis(const Diagnosis& d) {
  std::string out;
  if (d.findings.empty()) out += "no stuck collective, stuck call or failed process found\n";
  for (const auto& f : d.findings) out += f + "\n";
  if (!d.details.empty()) out += "\nwhere each process was:\n";
  for (const auto& s : d.details) out += "  " + s + "\n";
  for (const auto& n : d.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace flotilla::trace
