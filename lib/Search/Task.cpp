//===- Task.cpp - Tasks from a launch manifest ----------------------------===//
//
// See include/kopt/Search/Task.h.
//
//===----------------------------------------------------------------------===//

#include "kopt/Search/Task.h"
#include "kopt/Search/Database.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace kopt::search {

namespace sched = kopt::schedule;

std::string scheduleText(const sched::MatmulSchedule &s) {
  return canonicalSchedule(sched::toJSON(s));
}

Params paramsOf(const sched::MatmulSchedule &s) {
  return {int64_t(s.instruction), int64_t(s.copy), s.blockM,  s.blockN,
          s.blockK,               s.warpM,         s.warpN,   s.stages,
          s.splitK,               s.swizzle,       s.vectorWidth,
          s.persistent,           s.warpSpecialize, s.tmaStore};
}

int64_t Task::indexOf(const sched::MatmulSchedule &s) const {
  Params key = paramsOf(s);
  auto it = std::lower_bound(space.begin(), space.end(), key,
                             [](const sched::MatmulSchedule &a,
                                const Params &k) { return paramsOf(a) < k; });
  if (it == space.end() || paramsOf(*it) != key)
    return -1;
  return it - space.begin();
}

std::optional<sched::MatmulSchedule>
scheduleFromText(const std::string &text, const sched::MatmulSchedule &base,
                 std::string &error) {
  std::optional<nlohmann::json> j = sched::parseJSON(text, error);
  if (!j)
    return std::nullopt;
  if (!j->is_object()) {
    error = "a schedule is a JSON object";
    return std::nullopt;
  }
  return sched::fromJSON(*j, base, error);
}

int64_t Task::indexOf(const std::string &text) const {
  std::string error;
  std::optional<sched::MatmulSchedule> s =
      scheduleFromText(text, heuristic, error);
  return s ? indexOf(*s) : -1;
}

Expected<std::vector<Task>> tasksFromManifest(const manifest::Manifest &m) {
  std::optional<sched::Target> target = sched::Target::forChip(m.chip);
  if (!target)
    return Status::error(m.sourceName + ": unknown chip '" + m.chip + "'");
  std::map<std::string, int64_t> launches;
  for (const manifest::FunctionSpec &f : m.functions)
    for (const manifest::LaunchSpec &l : f.launches)
      ++launches[l.kernel];
  std::vector<Task> tasks;
  for (const manifest::KernelSpec &k : m.kernels) {
    const manifest::OpSpec *mm = k.findOp(manifest::OpKind::Matmul);
    if (!mm || !k.schedule)
      continue;
    const std::string *aName = mm->operand("a"), *bName = mm->operand("b");
    const manifest::TensorSpec *a = aName ? k.findValue(*aName) : nullptr;
    const manifest::TensorSpec *b = bName ? k.findValue(*bName) : nullptr;
    const manifest::TensorSpec *c = k.findValue(mm->result);
    if (!a || !b || !c || a->shape.size() != 2 || c->shape.size() != 2)
      return Status::error(m.sourceName + ": kernel '" + k.name +
                           "': its matmul's operands are not 2-d tensors of "
                           "the kernel");
    sched::MatmulWorkload w;
    w.m = c->shape[0];
    w.n = c->shape[1];
    w.k = mm->attrs.transposeA ? a->shape[0] : a->shape[1];
    w.a = a->dtype;
    w.b = b->dtype;
    w.c = c->dtype;
    w.aKContiguous = !mm->attrs.transposeA;
    w.bKContiguous = mm->attrs.transposeB;
    w.tf32 = mm->attrs.tf32;
    Task t;
    t.kernel = k.name;
    t.ops = k.opsName();
    t.workload = w;
    t.target = *target;
    t.workloadKey = w.key(target->chip);
    t.heuristic = sched::defaultSchedule(w, *target);
    // The schedule the module was compiled with, when it parses (a
    // schedule file or attribute may have set it): the tuner's baseline.
    if (!k.schedule->json.empty()) {
      std::string error;
      if (std::optional<sched::MatmulSchedule> s =
              scheduleFromText(k.schedule->json, t.heuristic, error))
        if (!sched::validate(*s, w, *target))
          t.heuristic = *s;
    }
    t.flops = 2 * w.m * w.n * w.k;
    t.bytes = k.totalParamBytes();
    auto it = launches.find(k.name);
    t.launches = it == launches.end() ? 1 : std::max<int64_t>(1, it->second);
    tasks.push_back(std::move(t));
  }
  return tasks;
}

Expected<Task> taskFromWorkloadKey(const std::string &key,
                                   const std::string &ops) {
  auto bad = [&](const std::string &why) {
    return Status::error("workload key '" + sched::abbreviate(key, 120) +
                         "': " + why);
  };
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t slash = key.find('/', start);
    parts.push_back(key.substr(start, slash - start));
    if (slash == std::string::npos)
      break;
    start = slash + 1;
  }
  if (parts.size() != 5 || parts[0] != "matmul")
    return bad("not matmul/MxNxK/A,B->C/aX,bY/CHIP");
  sched::MatmulWorkload w;
  char tail = 0;
  long long m = 0, n = 0, k = 0;
  if (std::sscanf(parts[1].c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) !=
          3 ||
      m < 1 || n < 1 || k < 1)
    return bad("the shape '" + parts[1] + "' is not MxNxK");
  w.m = m;
  w.n = n;
  w.k = k;
  std::string types = parts[2];
  const std::string tf32 = "+tf32";
  if (types.size() > tf32.size() &&
      types.compare(types.size() - tf32.size(), tf32.size(), tf32) == 0) {
    w.tf32 = true;
    types.resize(types.size() - tf32.size());
  }
  size_t comma = types.find(','), arrow = types.find("->");
  if (comma == std::string::npos || arrow == std::string::npos ||
      arrow < comma)
    return bad("the dtypes '" + parts[2] + "' are not A,B->C");
  std::optional<sched::DType> a = sched::parseDType(types.substr(0, comma)),
                              b = sched::parseDType(
                                  types.substr(comma + 1, arrow - comma - 1)),
                              c = sched::parseDType(types.substr(arrow + 2));
  if (!a || !b || !c)
    return bad("unknown dtype in '" + parts[2] + "'");
  w.a = *a;
  w.b = *b;
  w.c = *c;
  if (parts[3] != "ak,bk" && parts[3] != "ak,bn" && parts[3] != "am,bk" &&
      parts[3] != "am,bn")
    return bad("the layouts '" + parts[3] + "' are not a{k|m},b{k|n}");
  w.aKContiguous = parts[3][1] == 'k';
  w.bKContiguous = parts[3][4] == 'k';
  std::optional<sched::Target> target = sched::Target::forChip(parts[4]);
  if (!target)
    return bad("unknown chip '" + parts[4] + "'");
  Task t;
  t.kernel = "matmul";
  t.ops = ops;
  t.workload = w;
  t.target = *target;
  t.workloadKey = w.key(target->chip);
  if (t.workloadKey != key)
    return bad("not in its canonical form ('" + t.workloadKey + "')");
  t.heuristic = sched::defaultSchedule(w, *target);
  t.flops = 2 * w.m * w.n * w.k;
  t.bytes = w.m * w.k * sched::bytesOf(w.a) + w.k * w.n * sched::bytesOf(w.b) +
            w.m * w.n * sched::bytesOf(w.c);
  return t;
}

void fillSpace(Task &task, const std::vector<std::string> *only) {
  std::vector<sched::MatmulSchedule> points;
  if (only) {
    for (const std::string &text : *only) {
      std::string error;
      std::optional<sched::MatmulSchedule> s =
          scheduleFromText(text, task.heuristic, error);
      if (s && !sched::validate(*s, task.workload, task.target))
        points.push_back(*s);
    }
  } else {
    points = sched::validPoints(task.workload, task.target);
  }
  std::sort(points.begin(), points.end(),
            [](const sched::MatmulSchedule &a, const sched::MatmulSchedule &b) {
              return paramsOf(a) < paramsOf(b);
            });
  points.erase(std::unique(points.begin(), points.end(),
                           [](const sched::MatmulSchedule &a,
                              const sched::MatmulSchedule &b) {
                             return paramsOf(a) == paramsOf(b);
                           }),
               points.end());
  task.space = std::move(points);
}

} // namespace kopt::search
