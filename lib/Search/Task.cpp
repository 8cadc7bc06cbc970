//===- Task.cpp - Tasks from a launch manifest ----------------------------===//
//
// See include/kopt/Search/Task.h.
//
//===----------------------------------------------------------------------===//

#include "kopt/Search/Task.h"
#include "kopt/Search/Database.h"

#include <algorithm>
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
