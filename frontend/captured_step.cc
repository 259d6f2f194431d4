#include "frontend/captured_step.h"

#include "absl/strings/str_cat.h"

#include "frontend/random.h"

namespace uopc {
namespace {

/// Runs `step` on `inputs` while the runtime records the plans it runs.
std::vector<Runtime::PlanRun> Recorded(const std::function<void()>& step) {
  std::vector<Runtime::PlanRun> runs;
  Runtime& rt = Runtime::Get();
  rt.Record(&runs);
  try {
    step();
  } catch (...) {
    rt.Record(nullptr);
    throw;
  }
  rt.Record(nullptr);
  return runs;
}

/// Where `b` is among `of` (the same memory), or -1.
int Find(const std::vector<Buffer>& of, const Buffer& b) {
  for (size_t s = 0; s < of.size(); ++s)
    if (of[s].SameMemory(b)) return static_cast<int>(s);
  return -1;
}

}  // namespace

CapturedStep::CapturedStep(const Step& step, std::vector<Tensor> inputs,
                           std::vector<Tensor>* outputs) {
  for (Tensor& t : inputs) t.Realize();
  std::vector<Runtime::PlanRun> runs = Recorded([&] {
    *outputs = step(inputs);
    std::vector<Tensor*> out;
    for (Tensor& t : *outputs) {
      if (t.realized() || std::count_if(outputs->begin(), outputs->end(), [&](const Tensor& o) {
                            return o.data() == t.data();
                          }) > 1)
        ThrowInvalid("captured step: an output that is realized already, or twice; expected "
                     "each output a new tensor the step computes");
      out.push_back(&t);
    }
    Tensor::RealizeAll(out);
  });
  if (runs.size() != 1)
    ThrowInvalid(absl::StrCat("captured step: the step ran ", runs.size(),
                              " plans; expected one (realize what it needs before capturing)"));
  ThrowIfError(Keep(std::move(runs[0]), inputs, *outputs, /*step_realized=*/false, {}));
}

absl::StatusOr<CapturedStep> CapturedStep::CaptureUpdate(const Step& step,
                                                         std::vector<Tensor> inputs,
                                                         std::vector<Tensor*> state,
                                                         std::vector<Tensor>* outputs) {
  for (Tensor& t : inputs) t.Realize();
  std::vector<Buffer> was;
  for (Tensor* t : state) {
    if (!t->realized())
      return absl::InvalidArgumentError(
          absl::StrCat("captured step: a state tensor of shape ", ShapeString(t->shape()),
                       " is not realized; expected the values the step starts from"));
    was.push_back(t->data()->buffer);
  }
  const auto drawn = RandomStream::Global().position();
  std::vector<Runtime::PlanRun> runs = Recorded([&] { *outputs = step(inputs); });
  if (RandomStream::Global().position() != drawn)
    return absl::FailedPreconditionError(
        "captured step: the step draws random numbers on the host (dropout?), which every "
        "run would repeat; expected none");
  if (runs.size() != 1)
    return absl::FailedPreconditionError(
        absl::StrCat("captured step: the step ran ", runs.size(), " plans; expected one"));
  CapturedStep c;
  c.state_.reserve(state.size());
  for (Tensor* t : state) c.state_.push_back({t, -1, -1});
  if (absl::Status s = c.Keep(std::move(runs[0]), inputs, *outputs, /*step_realized=*/true, was);
      !s.ok())
    return absl::FailedPreconditionError(s.message());
  return c;
}

absl::Status CapturedStep::Keep(Runtime::PlanRun run, const std::vector<Tensor>& inputs,
                                const std::vector<Tensor>& outputs, bool step_realized,
                                const std::vector<Buffer>& state_was) {
  plan_ = std::move(run.plan);
  bound_ = std::move(run.inputs);
  vars_ = std::move(run.vars);
  checks_ = std::move(run.checks);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int slot = Find(bound_, inputs[i].data()->buffer);
    if (slot < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("captured step: input ", i, " of shape ", ShapeString(inputs[i].shape()),
                       " is not read by the step's plan; expected every input read"));
    slot_.push_back(slot);
  }
  for (size_t r = 0; r < outputs.size(); ++r) {
    const Tensor& t = outputs[r];
    Output o{t.shape(), t.dtype(), static_cast<int>(r)};
    if (step_realized && (!t.realized() || (o.slot = Find(run.outputs, t.data()->buffer)) < 0))
      return absl::InvalidArgumentError(absl::StrCat(
          "captured step: output ", r, " of shape ", ShapeString(t.shape()),
          " is not one the step's plan made; expected each output realized by the step"));
    outputs_.push_back(std::move(o));
  }
  for (size_t s = 0; s < state_.size(); ++s) {
    State& st = state_[s];
    st.input = Find(bound_, state_was[s]);
    st.output = st.tensor->realized() ? Find(run.outputs, st.tensor->data()->buffer) : -1;
    if (st.input < 0 || st.output < 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "captured step: state tensor ", s, " of shape ", ShapeString(st.tensor->shape()),
          st.input < 0 ? " is not read by the step's plan"
                       : " is not assigned a value the step's plan made",
          "; expected each state tensor read and assigned anew"));
    const Buffer& b = st.tensor->data()->buffer;
    st.dtype = b.dtype(), st.count = b.count(), st.device = b.device();
    bound_[st.input] = Buffer();  // (its value is bound at each run: the old one is not kept)
  }
  return absl::OkStatus();
}

std::vector<Tensor> CapturedStep::Run(std::vector<Tensor> inputs, const VarValues& vars) const {
  if (inputs.size() != slot_.size())
    ThrowInvalid(absl::StrCat("captured step: ", inputs.size(), " inputs; it was captured with ",
                              slot_.size()));
  std::vector<Buffer> bufs = bound_;
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i].Realize();
    const Buffer& b = inputs[i].data()->buffer;
    const Buffer& was = bound_[slot_[i]];
    if (b.dtype() != was.dtype() || b.count() != was.count() || b.device() != was.device())
      ThrowInvalid(absl::StrCat("captured step: input ", i, " of shape ",
                                ShapeString(inputs[i].shape()), ", dtype ",
                                DTypeName(inputs[i].dtype()), " on ", inputs[i].device()->name(),
                                "; expected ", b.count() == was.count() ? "" : "another size, ",
                                "dtype ", DTypeName(was.dtype()), " on ", was.device()->name()));
    bufs[slot_[i]] = b;
  }
  for (size_t s = 0; s < state_.size(); ++s) {
    const Tensor& t = *state_[s].tensor;
    if (!t.realized() || t.data()->buffer.count() != state_[s].count ||
        t.dtype() != state_[s].dtype || t.device() != state_[s].device)
      ThrowInvalid(absl::StrCat("captured step: state tensor ", s, " of shape ",
                                ShapeString(t.shape()), ", dtype ", DTypeName(t.dtype()), " on ",
                                t.device()->name(),
                                " is not the value it was captured with; "
                                "expected it realized, of dtype ",
                                DTypeName(state_[s].dtype), " on ", state_[s].device->name()));
    bufs[state_[s].input] = t.data()->buffer;
  }
  VarValues v = vars_;
  for (const auto& [name, value] : vars) {
    if (!v.contains(name))
      ThrowInvalid(absl::StrCat("captured step: a value for VAR ", name,
                                ", which the step does not read"));
    v[name] = value;
  }
  absl::StatusOr<std::vector<Buffer>> out = Runtime::Get().executor().Run(*plan_, bufs, v);
  ThrowIfError(out.status());
  ThrowIfError(Runtime::CheckIndices(checks_, *out, v));
  std::vector<Tensor> result;
  for (const Output& o : outputs_) {
    TensorShape shape;
    for (const SymInt& d : o.shape) shape.push_back(d.Rebound(v));
    result.push_back(Tensor::FromBuffer((*out)[o.slot], std::move(shape)));
  }
  for (const State& s : state_)
    s.tensor->Assign(Tensor::FromBuffer((*out)[s.output], s.tensor->shape()));
  return result;
}

}  // namespace uopc
