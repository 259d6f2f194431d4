// gpt_train: trains a character-level GPT on a text file with AdamW, a cosine learning rate
// with warmup and gradient clipping, printing a progress line as it goes and saving a
// safetensors checkpoint every --save-every steps and at the end. --resume continues a
// run from its checkpoint (weights, optimizer moments, step).
//
// Started by uopc_launch (or torchrun, Slurm, Open MPI), it trains data-parallel: each of
// the p ranks takes batch/p of every step's sequences, the gradients are averaged over the
// ranks, and every rank applies the same update, so the run follows the single-process one
// (up to the order of float sums). Rank 0 prints and saves.
//   uopc_launch --nproc 2 -- gpt_train --batch 16
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "core/file.h"

#include "distributed/process_group.h"
#include "distributed/tensor_collectives.h"
#include "examples/gpt/char_corpus.h"
#include "examples/gpt/device_flag.h"
#include "examples/gpt/model_config.h"
#include "core/flags.h"
#include "frontend/nn.h"
#include "frontend/optim.h"
#include "frontend/realize.h"
#include "frontend/safetensors.h"
#include "runtime/plan.h"

using namespace uopc;

namespace {

std::string Eta(double seconds) {
  int s = static_cast<int>(seconds + 0.5);
  return s >= 60 ? absl::StrCat(s / 60, "m", s % 60 < 10 ? "0" : "", s % 60, "s")
                 : absl::StrCat(s, "s");
}

int Fail(const std::string& what) {
  std::cerr << "gpt_train: " << what << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = "/usr/share/common-licenses/GPL-3", checkpoint = "gpt.safetensors",
              device = "CPU";
  int64_t layers = 2, dim = 64, heads = 4, context = 64, batch = 16, steps = 300, warmup = 30,
          save_every = 100, seed = 0, log_every = 10, stop_at = 0;
  double lr = 3e-3, min_lr = 3e-4, weight_decay = 0.01, clip = 1.0, dropout = 0.0;
  bool resume = false, skip_nonfinite = false, tie = false;
  Flags flags(
      "usage: gpt_train [flags]\n\nTrains a character-level GPT on a text file and saves it as a "
      "safetensors checkpoint.\nUnder `uopc_launch --nproc N -- gpt_train ...` it trains data-parallel: "
      "--batch is split over the N ranks.");
  flags.Add("data", &data, "the text file to train on");
  flags.Add("layers", &layers, "transformer blocks", kLayers.lo, kLayers.hi);
  flags.Add("dim", &dim, "embedding width", kDim.lo, kDim.hi);
  flags.Add("heads", &heads, "attention heads (must divide dim)", kHeads.lo, kHeads.hi);
  flags.Add("context", &context, "tokens of context", kContext.lo, kContext.hi);
  flags.Add("batch", &batch, "sequences per step", kBatch.lo, kBatch.hi);
  flags.Add("steps", &steps, "training steps in all (a resumed run stops here too)", kSteps.lo,
            kSteps.hi);
  flags.Add("lr", &lr, "peak learning rate (AdamW)", 0, 10);
  flags.Add("min-lr", &min_lr, "learning rate at the end of the cosine decay", 0, 10);
  flags.Add("warmup", &warmup, "steps of linear warmup", 0, kSteps.hi);
  flags.Add("weight-decay", &weight_decay, "AdamW's decoupled weight decay", 0, 10);
  flags.Add("clip", &clip, "gradient clipping: largest global norm (0: off)", 0, 1e9);
  flags.Add("dropout", &dropout, "dropout probability", 0, 0.99);
  flags.Add("tie-embeddings", &tie,
            "the output projection is the token embedding (GPT-2's convention: one tensor)");
  flags.Add("seed", &seed, "random seed (weights and batches)", 0, INT64_MAX);
  flags.Add("checkpoint", &checkpoint, "where to save (and, with --resume, load) the checkpoint");
  flags.Add("save-every", &save_every, "save a checkpoint every N steps (0: only at the end)", 0,
            kSteps.hi);
  flags.Add("log-every", &log_every, "print a progress line every N steps", 1, kSteps.hi);
  flags.Add("stop-at", &stop_at,
            "stop (and save) after this step, as if the run were interrupted (0: run to --steps)",
            0, kSteps.hi);
  flags.Add("resume", &resume, "continue from --checkpoint");
  flags.Add("skip-nonfinite", &skip_nonfinite,
            "skip a step whose loss or gradients are nan or inf (default: stop the run there)");
  flags.Add("device", &device, kDeviceHelp);
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;

  // data parallelism when started as one rank of several
  std::unique_ptr<ProcessGroup> group;
  if (std::getenv("RANK") || std::getenv("SLURM_PROCID") || std::getenv("OMPI_COMM_WORLD_RANK")) {
    absl::StatusOr<JobEnv> env = JobEnv::FromEnvironment();
    if (!env.ok()) return Fail(std::string(env.status().message()));
    if (env->world_size > 1) {
      if (batch % env->world_size != 0)
        return Fail(
            absl::StrCat("--batch ", batch, " does not split over ", env->world_size, " ranks"));
      absl::StatusOr<std::unique_ptr<ProcessGroup>> g = ProcessGroup::Create(*env);
      if (!g.ok()) return Fail(std::string(g.status().message()));
      group = *std::move(g);
    }
  }
  const int rank = group ? group->rank() : 0, ranks = group ? group->world_size() : 1;
  const int64_t local = batch / ranks;                   // this rank's sequences of each step
  if (rank != 0) std::cout.setstate(std::ios::failbit);  // rank 0 speaks for the job
  auto check = [](const absl::Status& s) {
    if (!s.ok()) throw Error(s);
  };

  try {
    Checkpoint ckpt;
    int64_t start = 0;
    if (resume) {  // the file's shape and step, checked before anything is built from them
      absl::StatusOr<Checkpoint> c = LoadSafetensors(checkpoint);
      if (!c.ok()) return Fail(std::string(c.status().message()));
      ckpt = *std::move(c);
      absl::StatusOr<GptConfig> saved = ConfigFromMetadata(ckpt.metadata, checkpoint);
      if (!saved.ok()) return Fail(std::string(saved.status().message()));
      if (absl::Status m = MatchesTensors(*saved, ckpt, checkpoint); !m.ok())
        return Fail(std::string(m.message()));
      absl::StatusOr<int64_t> step = StepFromMetadata(ckpt.metadata, checkpoint);
      if (!step.ok()) return Fail(std::string(step.status().message()));
      layers = saved->layers, dim = saved->dim, heads = saved->heads, context = saved->context;
      tie = saved->tie_embeddings;
      start = *step;
    }
    if (absl::Status w = rank == 0 ? CheckWritable(checkpoint) : absl::OkStatus(); !w.ok())
      return Fail(absl::StrCat("--checkpoint ", w.message()));  // now, not after training
    if (dim % heads) return Fail(absl::StrCat("--dim ", dim, " is not a multiple of --heads ", heads));
    absl::StatusOr<CharCorpus> corpus = LoadCorpus(data, context);
    if (!corpus.ok()) return Fail(std::string(corpus.status().message()));
    if (resume && ckpt.metadata["vocab"] != corpus->vocab)
      return Fail("--resume with another corpus: the vocabularies differ");
    const int64_t end = stop_at > 0 ? std::min(stop_at, steps) : steps;
    if (start >= end) {
      std::cout << "gpt_train: " << checkpoint << " is at step " << start
                << ", which is --steps or past it: nothing to train, and nothing written\n";
      return 0;
    }
    GptConfig config{static_cast<int64_t>(corpus->vocab.size()), context, dim, heads, layers,
                     dropout, tie};
    std::vector<DeviceRef> devices = DeviceList(device);
    double have = 0, need = TrainingBytes(config, local);
    for (const DeviceRef& d : devices) have += static_cast<double>(d.get()->mem_total());
    if (need > have)
      return Fail(absl::StrFormat(
          "a model of %d layers x %d dims with batches of %d x %d needs about %s to train; %s "
          "has %s: choose a smaller --layers, --dim, --batch or --context",
          layers, dim, local, context, ByteString(static_cast<uint64_t>(need)), device,
          ByteString(static_cast<uint64_t>(have))));
    Tensor::ManualSeed(static_cast<uint64_t>(seed));
    Gpt model(config);
    model.Split(devices);  // before the optimizer: its state lives where the parameters do
    AdamW opt(model.Parameters(), lr, 0.9, 0.95, 1e-8, weight_decay);
    NamedParams named = model.NamedParameters();
    std::vector<std::pair<std::string, Tensor*>> state;
    std::vector<Tensor*> moments = opt.State();
    for (size_t i = 0; i < named.size(); ++i) {
      state.push_back({"optim.m." + named[i].first, moments[i]});
      state.push_back({"optim.v." + named[i].first, moments[named.size() + i]});
    }
    if (resume) {
      if (absl::Status s = LoadModel(ckpt, model, state); !s.ok())
        return Fail(std::string(s.message()));
      opt.set_steps(start);
    }
    if (group) check(BroadcastParameters(*group, model.Parameters()));  // one start for all
    int64_t params = 0;
    for (Tensor* p : model.Parameters()) params += p->numel().value();
    std::cout << "gpt_train: " << corpus->tokens.size() << " characters, vocabulary "
              << corpus->vocab.size() << ", " << layers << " layers x " << dim << " dims, " << heads
              << " heads, context " << context << ": " << params << " parameters"
              << (resume ? absl::StrCat(", resuming at step ", start) : "")
              << (group ? absl::StrCat(", data-parallel over ", ranks, " ranks") : "")
              << (device == "CPU" ? "" : absl::StrCat(", on ", device)) << "\n";
    auto save = [&](int64_t step) {
      if (rank != 0) return;
      std::map<std::string, std::string> meta{{"vocab", corpus->vocab},
                                              {"layers", std::to_string(layers)},
                                              {"dim", std::to_string(dim)},
                                              {"heads", std::to_string(heads)},
                                              {"context", std::to_string(context)},
                                              {"tie_embeddings", tie ? "1" : "0"},
                                              {"step", std::to_string(step)},
                                              {"format", "uopc gpt 1"}};
      if (absl::Status s = SaveModel(checkpoint, model, meta, state); !s.ok()) throw Error(s);
    };
    std::vector<int32_t> xs, ys;
    auto t0 = std::chrono::steady_clock::now();
    double tokens = 0;
    const uint64_t sent_before = group ? group->bytes_sent() : 0;
    for (int64_t step = start; step < end; ++step) {
      Batch(corpus->tokens, batch, context, static_cast<uint64_t>(seed), step, &xs, &ys);
      const int64_t first = rank * local * context;  // this rank's rows of the step's batch
      Tensor x = Tensor::FromVector(
                 std::vector<int32_t>(xs.begin() + first, xs.begin() + first + local * context),
                 {local, context}, DType::kI32, devices.front()),
             y = Tensor::FromVector(
                 std::vector<int32_t>(ys.begin() + first, ys.begin() + first + local * context),
                 {local * context}, DType::kI32, devices.back());
      Tensor loss = model.Forward(x).Reshape({local * context, config.vocab}).CrossEntropy(y);
      loss.Backward();
      if (group) check(AverageGradients(*group, model.Parameters(), {&loss}));
      // a step with a non-finite loss or gradient changes nothing (inside the plan)
      Tensor norm = clip > 0 ? ClipGradNorm(model.Parameters(), clip) : GradNorm(model.Parameters());
      Tensor loss_ok = AllFinite(loss).To(norm.device());
      Tensor finite = loss_ok.Where(AllFinite(norm), loss_ok);  // both
      opt.set_lr(CosineLr(step, warmup, steps, lr, min_lr));
      opt.Step({&loss, &finite}, finite);
      if (!finite.Item<bool>()) {
        opt.set_steps(opt.steps() - 1);  // the step did not happen
        std::string what = absl::StrCat("step ", step + 1, ": the loss (", loss.Item<float>(),
                                        ") or a gradient is not finite");
        if (!skip_nonfinite)
          return Fail(absl::StrCat(what, "; stopping with the weights of step ", step,
                                   " (--skip-nonfinite skips such steps)"));
        std::cerr << "gpt_train: " << what << "; skipped\n";
      }
      tokens += static_cast<double>(batch * context);
      if ((step + 1) % log_every == 0 || step + 1 == end || step == start) {
        double value = loss.Item<float>();
        if (group) {  // the step's loss over the whole batch
          absl::StatusOr<Tensor> mean = AllReduce(*group, loss, ReduceOp::kAvg);
          check(mean.status());
          value = mean->Item<float>();
        }
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        double rate = tokens / secs;
        if (rank == 0)
          std::printf("step %5lld/%lld  loss %.4f  lr %.2e  %7.0f tok/s  eta %s\n",
                      static_cast<long long>(step + 1), static_cast<long long>(steps), value,
                      opt.lr(), rate, Eta((end - step - 1) * batch * context / rate).c_str());
        std::fflush(stdout);
      }
      if (save_every > 0 && (step + 1) % save_every == 0 && step + 1 < end) save(step + 1);
    }
    if (group && rank == 0 && end > start) {  // what data parallelism cost on the wire
      const double p = ranks, sent = static_cast<double>(group->bytes_sent() - sent_before);
      std::cout << "gpt_train: sent " << ByteString(static_cast<uint64_t>(sent / (end - start)))
                << " a step to the other ranks (a ring all-reduce of the " << params
                << " f32 gradients needs "
                << ByteString(static_cast<uint64_t>(2 * (p - 1) / p * params * 4)) << ")\n";
    }
    save(end);
    std::cout << "gpt_train: saved " << checkpoint << " (" << Runtime::Get().plans().size()
              << " plans compiled)\n";
  } catch (const Error& e) {
    return Fail(e.what());
  }
  return 0;
}
