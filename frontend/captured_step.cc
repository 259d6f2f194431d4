#include "frontend/captured_step.h"

#include "absl/strings/str_cat.h"

namespace uopc {

CapturedStep::CapturedStep(const Step& step, std::vector<Tensor> inputs,
                           std::vector<Tensor>* outputs) {
  for (Tensor& t : inputs) t.Realize();
  std::vector<Runtime::PlanRun> runs;
  Runtime& rt = Runtime::Get();
  rt.Record(&runs);
  try {
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
  } catch (...) {
    rt.Record(nullptr);
    throw;
  }
  rt.Record(nullptr);
  if (runs.size() != 1)
    ThrowInvalid(absl::StrCat("captured step: the step ran ", runs.size(),
                              " plans; expected one (realize what it needs before capturing)"));
  plan_ = runs[0].plan;
  bound_ = runs[0].inputs;
  vars_ = runs[0].vars;
  checks_ = runs[0].checks;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int slot = -1;
    for (size_t s = 0; s < bound_.size(); ++s)
      if (bound_[s].SameMemory(inputs[i].data()->buffer)) slot = static_cast<int>(s);
    if (slot < 0)
      ThrowInvalid(absl::StrCat("captured step: input ", i, " of shape ",
                                ShapeString(inputs[i].shape()),
                                " is not read by the step's plan; expected every input read"));
    slot_.push_back(slot);
  }
  for (const Tensor& t : *outputs) outputs_.push_back({t.shape(), t.dtype()});
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
  for (size_t r = 0; r < outputs_.size(); ++r) {
    TensorShape shape;
    for (const SymInt& d : outputs_[r].shape) shape.push_back(d.Rebound(v));
    result.push_back(Tensor::FromBuffer((*out)[r], std::move(shape)));
  }
  return result;
}

}  // namespace uopc
