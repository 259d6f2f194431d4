// gpt_train: trains a character-level GPT on a text file with AdamW, a cosine learning rate
// with warmup and gradient clipping, printing a progress line as it goes and saving a
// safetensors checkpoint every --save-every steps and at the end. --resume continues a
// run from its checkpoint (weights, optimizer moments, step; the batches follow from the
// step), --resume-if-present when there is one (a job that uopc_launch --max-restarts
// starts again).
//
// Started by uopc_launch (or torchrun, Slurm, Open MPI) on D x P x T ranks, it trains
// data-parallel over D (each of the D groups takes batch/D of every step's sequences, and the
// gradients are averaged over them), pipeline-parallel over P (the blocks in P stages on
// P ranks, the group's sequences in --micro-batches run in --schedule order,
// distributed/pipeline_parallel.h) and tensor-parallel over T (Megatron: the ranks of a
// stage share every block's heads and MLP units, frontend/nn.h), so the run follows the
// single-process one (up to the order of float sums). Ranks are numbered tensor-parallel
// first, then by stage, then by data-parallel group. Rank 0 prints and saves one checkpoint
// in the single-process layout, which any layout resumes.
//   uopc_launch --nproc 4 -- gpt_train --batch 16 --tp 2 --pp 2
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "core/file.h"
#include "core/flags.h"
#include "distributed/data_parallel.h"
#include "distributed/graph_collectives.h"
#include "distributed/pipeline_link.h"
#include "distributed/pipeline_parallel.h"
#include "distributed/process_group.h"
#include "distributed/tensor_collectives.h"
#include "distributed/tensor_parallel.h"
#include "examples/gpt/char_corpus.h"
#include "examples/gpt/device_flag.h"
#include "examples/gpt/model_config.h"
#include "frontend/autocast.h"
#include "frontend/captured_step.h"
#include "frontend/loss_scaler.h"
#include "frontend/nn.h"
#include "frontend/optim.h"
#include "frontend/realize.h"
#include "frontend/safetensors.h"
#include "runtime/plan.h"

using namespace uopc;

namespace {

// "4.0 KiB" ... "1.5 GiB"; a count past 2^64 bytes (a size estimate of absurd flags) in GiB,
// where ByteString's integer would wrap to "0 B".
std::string ApproxBytes(double bytes) {
  if (bytes < 1.8e19) return ByteString(static_cast<uint64_t>(bytes));
  return absl::StrFormat("%.3g GiB", bytes / 1073741824.0);
}

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
              device = "CPU", schedule_name = "1f1b", precision = "f32";
  int64_t layers = 2, dim = 64, heads = 4, context = 64, batch = 16, steps = 300, warmup = 30,
          save_every = 100, seed = 0, log_every = 10, stop_at = 0, tp = 1, dp = 0, pp = 1,
          micro_batches = 0;
  double lr = 3e-3, min_lr = 3e-4, weight_decay = 0.01, clip = 1.0, dropout = 0.0, bucket_mb = 25.0;
  bool resume = false, resume_if_present = false, skip_nonfinite = false, tie = false,
       capture = true;
  Flags flags(
      "usage: gpt_train [flags]\n\nTrains a character-level GPT on a text file and saves it as a "
      "safetensors checkpoint.\nUnder `uopc_launch --nproc N -- gpt_train ...` it trains over N = "
      "--dp x --pp x --tp ranks: --batch is split over the --dp groups, the blocks over the --pp "
      "stages of a group, and each block over the --tp ranks of a stage.");
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
  flags.Add("precision", &precision,
            "f32, bf16 or f16: the matmuls and the activations after them in that dtype, "
            "summing in f32, with layer norm, softmax and the loss in f32 and f32 master "
            "weights and optimizer state (as PyTorch's autocast); f16 with dynamic loss "
            "scaling (GradScaler's: from 2^16, halved on a non-finite gradient, which skips "
            "the step, doubled after 2000 clean steps); a checkpoint resumes in any");
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
  flags.Add("resume-if-present", &resume_if_present,
            "continue from --checkpoint if it exists, else start: one command line for the "
            "first start and every restart (uopc_launch --max-restarts)");
  flags.Add("skip-nonfinite", &skip_nonfinite,
            "skip a step whose loss or gradients are nan or inf (default: stop the run there)");
  flags.Add("capture", &capture,
            "run each step after the second from the second's plan, without building its "
            "graph (as CUDA graphs do; not with --pp, --micro-batches or --dropout; "
            "false: every step builds it, as eager frameworks do)");
  flags.Add("device", &device, kDeviceHelp);
  flags.Add("tp", &tp,
            "tensor-parallel ranks: each block's heads and MLP units are split over them "
            "(Megatron); must divide --heads",
            1, 4096);
  flags.Add("pp", &pp,
            "pipeline stages: the blocks in contiguous stages on as many ranks, activations "
            "passed forward and their gradients back between them",
            1, 4096);
  flags.Add("micro-batches", &micro_batches,
            "pipeline: each step's sequences (of a data-parallel group) in this many "
            "micro-batches (0: --pp of them); must divide them",
            0, kBatch.hi);
  flags.Add("schedule", &schedule_name,
            "pipeline schedule of the micro-batches' forward and backward passes: gpipe (all "
            "forward, then all backward) or 1f1b (at most --pp micro-batches in flight)");
  flags.Add("dp", &dp, "data-parallel groups (0: the ranks / (--tp x --pp))", 0, 4096);
  flags.Add("bucket-mb", &bucket_mb,
            "data parallelism: gradients are all-reduced in buckets of this many MiB, each as "
            "soon as the backward pass has made it",
            0.001, 1024);
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  if (precision != "f32" && precision != "bf16" && precision != "f16")
    return Fail("--precision " + precision + "; expected f32, bf16 or f16");
  if (precision == "f16" && pp > 1)
    return Fail("--precision f16 with --pp: loss scaling over a pipeline is not supported yet "
                "(bf16 needs no scaling)");

  // several ranks: a job of dp x tp, tensor-parallel groups of consecutive ranks
  std::unique_ptr<ProcessGroup> group, tp_group, dp_group;
  std::optional<JobEnv> env;
  if (std::getenv("RANK") || std::getenv("SLURM_PROCID") || std::getenv("OMPI_COMM_WORLD_RANK")) {
    absl::StatusOr<JobEnv> e = JobEnv::FromEnvironment();
    if (!e.ok()) return Fail(std::string(e.status().message()));
    env = *std::move(e);
  }
  const int world = env ? env->world_size : 1;
  const std::string job = world == 1 ? "this process is a job of 1 rank (start it under "
                                       "uopc_launch --nproc N)"
                                     : absl::StrCat("the job has ", world, " ranks");
  absl::StatusOr<PipelineSchedule> schedule = ParsePipelineSchedule(schedule_name);
  if (!schedule.ok()) return Fail(absl::StrCat("--schedule: ", schedule.status().message()));
  const int64_t model_ranks = tp * pp;  // of each data-parallel group
  const std::string layout =
      pp > 1 ? absl::StrCat("--pp ", pp, " x --tp ", tp) : absl::StrCat("--tp ", tp);
  if (dp == 0 && world % model_ranks != 0)
    return Fail(absl::StrCat(layout, " does not divide the ranks: ", job));
  if (dp == 0) dp = world / model_ranks;
  if (dp * model_ranks != world)
    return Fail(absl::StrCat("--dp ", dp, " x ", layout, " makes ", dp * model_ranks, " ranks; ",
                             job));
  if (micro_batches == 0) micro_batches = pp;
  if (batch % (dp * micro_batches) != 0)
    return Fail(absl::StrCat("--batch ", batch, " does not split over ", dp,
                             " data-parallel groups x ", micro_batches, " micro-batches"));
  if (pp > 1 && device.find(',') != std::string::npos)
    return Fail(absl::StrCat("--device ", device,
                             " with --pp: a pipeline stage is one device of one rank"));
  if (world > 1) {
    absl::StatusOr<std::unique_ptr<ProcessGroup>> g = ProcessGroup::Create(*env);
    if (!g.ok()) return Fail(std::string(g.status().message()));
    group = *std::move(g);
    // `count` groups of `size` ranks, group j holding ranks j * outer + i * inner; every rank
    // makes every group, in one order (ProcessGroup::NewGroup), and keeps its own
    auto make = [&](int count, int size, int outer, int inner,
                    std::unique_ptr<ProcessGroup>& mine) -> absl::Status {
      for (int j = 0; j < count; ++j) {
        std::vector<int> ranks;
        for (int i = 0; i < size; ++i) ranks.push_back(j * outer + i * inner);
        absl::StatusOr<std::unique_ptr<ProcessGroup>> n = group->NewGroup(ranks);
        if (!n.ok()) return n.status();
        if (*n) mine = *std::move(n);
      }
      return absl::OkStatus();
    };
    const int t = static_cast<int>(tp), d = static_cast<int>(dp), m = static_cast<int>(model_ranks);
    absl::Status made = absl::OkStatus();
    if (t > 1) made = make(d * m / t, t, t, 1, tp_group);                // consecutive ranks
    if (made.ok() && m > 1 && d > 1) made = make(m, d, 1, m, dp_group);  // one of each
    if (!made.ok()) return Fail(std::string(made.message()));
  }
  ProcessGroup* dp_ranks = model_ranks > 1 ? dp_group.get() : (dp > 1 ? group.get() : nullptr);
  std::unique_ptr<PipelineLink> pipe = pp > 1 ? std::make_unique<PipelineLink>(*group) : nullptr;
  std::unique_ptr<GraphGroup> tp_graph =
      tp_group ? std::make_unique<GraphGroup>(*tp_group) : nullptr;
  std::unique_ptr<GraphGroup> dp_graph =
      dp_ranks ? std::make_unique<GraphGroup>(*dp_ranks) : nullptr;
  const int rank = group ? group->rank() : 0, dp_rank = rank / static_cast<int>(model_ranks),
            stage = rank / static_cast<int>(tp) % static_cast<int>(pp);
  const int64_t local = batch / dp;                      // this rank's sequences of each step
  if (rank != 0) std::cout.setstate(std::ios::failbit);  // rank 0 speaks for the job
  auto check = [](const absl::Status& s) {
    if (!s.ok()) throw Error(s);
  };

  try {
    Checkpoint ckpt;
    int64_t start = 0;
    std::error_code missing;
    if (resume_if_present && std::filesystem::exists(checkpoint, missing)) resume = true;
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
      // the checkpoint's shape wins; a flag given for it must agree (it was ignored silently)
      for (const auto& [name, given, saved_value] :
           {std::tuple{"layers", layers, saved->layers}, std::tuple{"dim", dim, saved->dim},
            std::tuple{"heads", heads, saved->heads}, std::tuple{"context", context, saved->context},
            std::tuple{"tie-embeddings", int64_t{tie}, int64_t{saved->tie_embeddings}}})
        if (flags.Given(name) && given != saved_value)
          return Fail(absl::StrCat("--resume: --", name, " ", given, " differs from ", checkpoint,
                                   "'s ", saved_value, " (a resumed run has its checkpoint's "
                                   "shape: leave --", name, " out)"));
      layers = saved->layers, dim = saved->dim, heads = saved->heads, context = saved->context;
      tie = saved->tie_embeddings;
      start = *step;
    }
    if (absl::Status w = rank == 0 ? CheckWritable(checkpoint) : absl::OkStatus(); !w.ok())
      return Fail(absl::StrCat("--checkpoint ", w.message()));  // now, not after training
    if (dim % heads) return Fail(absl::StrCat("--dim ", dim, " is not a multiple of --heads ", heads));
    if (heads % tp)
      return Fail(absl::StrCat("--heads ", heads, " do not split over --tp ", tp, " ranks"));
    if (tp > 1 && dropout > 0)
      return Fail(
          "--dropout with --tp: dropout inside a tensor-parallel block is not supported yet");
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
    if (pp > 1) {  // this rank's pipeline: the ranks of its group with its tensor-parallel rank
      std::vector<int> ranks;
      for (int s = 0; s < pp; ++s)
        ranks.push_back(rank + (s - stage) * static_cast<int>(tp));
      devices = StageDevices(ranks, devices.front().get()->name());
    }
    double have = 0, need = TrainingBytes(config, local) / static_cast<double>(pp);
    for (const DeviceRef& d : devices) have += static_cast<double>(d.get()->mem_total());
    if (need > have)
      return Fail(absl::StrFormat(
          "a model of %d layers x %d dims with batches of %d x %d needs at least about %s to "
          "train; %s has %s: choose a smaller --layers, --dim, --batch or --context",
          layers, dim, local, context, ApproxBytes(need), device, ApproxBytes(have)));
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
    // one start for all (a pipeline's ranks hold their stages only: they start alike, from
    // one seed or one checkpoint)
    if (group && pp == 1) check(BroadcastParameters(*group, model.Parameters()));
    int64_t params = 0;
    for (Tensor* p : model.Parameters()) params += p->numel().value();
    ShardedParams sharded;  // (tensor parallelism: the parameters of which a rank holds a part)
    if (tp_graph) {
      model.ShardTensorParallel({tp_graph->number(), tp_group->rank(), static_cast<int>(tp)},
                                state);
      for (auto& [name, t] : named)
        if (TensorParallelSplitOf(config, name)) sharded.parts.push_back(t);
      sharded.sum = [&](const Tensor& t) { return AllReduceOf(*tp_graph, t); };
    }
    std::cout << "gpt_train: " << corpus->tokens.size() << " characters, vocabulary "
              << corpus->vocab.size() << ", " << layers << " layers x " << dim << " dims, " << heads
              << " heads, context " << context << ": " << params << " parameters"
              << (resume ? absl::StrCat(", resuming at step ", start) : "")
              << (precision == "f32" ? "" : ", in " + precision)
              << (dp > 1 ? absl::StrCat(", data-parallel over ", dp, " groups") : "")
              << (pp > 1 ? absl::StrCat(", pipeline-parallel over ", pp, " stages (",
                                        micro_batches, " micro-batches, ", schedule_name, ")")
                         : "")
              << (tp > 1 ? absl::StrCat(", tensor-parallel over ", tp, " ranks") : "")
              << (device == "CPU" ? "" : absl::StrCat(", on ", device)) << "\n";
    // (the step's matmuls, as this thread builds them)
    const DType low = precision == "bf16" ? DType::kBF16
                      : precision == "f16" ? DType::kF16
                                           : DType::kF32;
    const Autocast policy(low);
    std::optional<LossScaler> scaler;  // f16: the scale carries on from an f16 checkpoint
    if (low == DType::kF16) {
      LossScaler::Options o;
      const bool was_f16 = resume && ckpt.metadata["precision"] == "f16";
      if (was_f16) {
        o.scale = std::atof(ckpt.metadata["loss_scale"].c_str());
        o.clean_steps = std::atoll(ckpt.metadata["loss_scale_clean_steps"].c_str());
      }
      if (!(o.scale > 0)) o.scale = LossScaler::Options{}.scale;  // (absent, or unreadable)
      scaler.emplace(o, devices.front());
    }
    auto save = [&](int64_t step) {
      if (dp_rank != 0) return;  // (tensor parallelism: the first group gathers for rank 0)
      std::map<std::string, std::string> meta{{"vocab", corpus->vocab},
                                              {"layers", std::to_string(layers)},
                                              {"dim", std::to_string(dim)},
                                              {"heads", std::to_string(heads)},
                                              {"context", std::to_string(context)},
                                              {"tie_embeddings", tie ? "1" : "0"},
                                              {"step", std::to_string(step)},
                                              {"precision", precision},
                                              {"format", "uopc gpt 1"}};
      if (scaler) {  // (a resumed f16 run continues from this scale)
        meta["loss_scale"] = absl::StrCat(scaler->scale());
        meta["loss_scale_clean_steps"] = absl::StrCat(scaler->clean_steps());
      }
      std::vector<std::pair<std::string, Tensor*>> all = named;
      all.insert(all.end(), state.begin(), state.end());
      std::vector<std::pair<std::string, Tensor>> whole;
      if (tp_graph)
        whole = GatherTensorParallel(*tp_graph, config, all);
      else
        for (auto& [name, t] : all) whole.emplace_back(name, *t);
      if (pp > 1) {  // every stage's to the first (rank 0's, in the first group)
        std::vector<Tensor*> moved;
        for (auto& [name, t] : whole) {
          t = t.To(devices.front());
          moved.push_back(&t);
        }
        Tensor::RealizeAll(moved);
      }
      if (rank != 0) return;
      if (absl::Status s = SaveTensors(checkpoint, whole, meta); !s.ok()) throw Error(s);
    };
    // One step on (the batch's inputs, its targets, the optimizer's values): its loss and
    // whether it took (the loss and every gradient finite), realized.
    const CapturedStep::Step train_step = [&](const std::vector<Tensor>& in) {
      const Tensor &x = in[0], &y = in[1];
      Tensor loss;
      std::vector<Tensor*> held = model.Parameters();  // (those of this rank's stage)
      if (pp == 1 && micro_batches == 1) {  // one plan a step
        loss = model.Forward(x).Reshape({local * context, config.vocab}).CrossEntropy(y);
        (scaler ? scaler->Scale(loss) : loss).Backward();
      } else {
        const int64_t rows = local / micro_batches;
        loss = RunPipelineSchedule(
            ScheduleOrder(*schedule, static_cast<int>(pp), static_cast<int>(micro_batches)),
            [&](int m, std::vector<Tensor>* crossings) {
              Tensor xm = x.Slice(0, m * rows, (m + 1) * rows),
                     ym = y.Slice(0, m * rows * context, (m + 1) * rows * context);
              return model.Forward(xm, nullptr, crossings)
                  .Reshape({rows * context, config.vocab})
                  .CrossEntropy(ym);
            },
            held);
        std::erase_if(held, [](Tensor* p) { return p->device()->peer_rank() >= 0; });
      }
      if (dp_graph) {
        AverageGradientsInPlan(*dp_graph, held, static_cast<int64_t>(bucket_mb * (1 << 20)), low);
        // (in a plan of its own: the step's plan is then the same on every stage)
        if (pp > 1) RealizeGradients(held);
      }
      if (scaler) scaler->Unscale(held);
      // a step with a non-finite loss or gradient changes nothing (inside the plan)
      Tensor norm = clip > 0 ? ClipGradNorm(model.Parameters(), clip, sharded)
                             : GradNorm(model.Parameters(), sharded);
      Tensor loss_ok = AllFinite(loss).To(norm.device());
      Tensor finite = loss_ok.Where(AllFinite(norm), loss_ok);  // both
      // (a pipeline: each stage's rank gets both, to read)
      std::vector<Tensor> losses = OnEveryStage(loss, devices),
                          finites = OnEveryStage(finite, devices);
      std::vector<Tensor*> also{&loss, &finite};
      if (pp > 1)
        for (int s = 0; s < pp; ++s) also.insert(also.end(), {&losses[s], &finites[s]});
      if (scaler)
        for (Tensor* t : scaler->Update(finite)) also.push_back(t);
      opt.Step(std::vector<Tensor>(in.begin() + 2, in.end()), also, finite);
      if (scaler) scaler->Advance();
      if (pp > 1) loss = losses[stage], finite = finites[stage];
      return std::vector<Tensor>{loss, finite};
    };
    // After the second step, each step runs the second's plan again without building its
    // graph: one plan a step, no dropout (its masks are drawn on the host)
    capture = capture && pp == 1 && micro_batches == 1 && dropout == 0;
    std::vector<Tensor*> state_held = model.Parameters();
    for (auto& [name, t] : state) state_held.push_back(t);
    if (scaler)
      for (Tensor* t : scaler->State()) state_held.push_back(t);
    std::optional<CapturedStep> captured;
    std::vector<int32_t> xs, ys;
    auto t0 = std::chrono::steady_clock::now();
    double tokens = 0;
    const uint64_t sent_before = group ? group->bytes_sent() : 0;
    for (int64_t step = start; step < end; ++step) {
      Batch(corpus->tokens, batch, context, static_cast<uint64_t>(seed), step, &xs, &ys);
      const int64_t first = dp_rank * local * context;  // its group's rows of the step's batch
      Tensor x = Tensor::FromVector(
                 std::vector<int32_t>(xs.begin() + first, xs.begin() + first + local * context),
                 {local, context}, DType::kI32, devices.front()),
             y = Tensor::FromVector(
                 std::vector<int32_t>(ys.begin() + first, ys.begin() + first + local * context),
                 {local * context}, DType::kI32, model.head().device());  // (where the logits are)
      opt.set_lr(CosineLr(step, warmup, steps, lr, min_lr));
      std::vector<Tensor> in{x, y}, values = opt.NextValues();
      in.insert(in.end(), values.begin(), values.end());
      std::vector<Tensor> out;  // the step's loss and whether it took
      if (captured) {
        out = captured->Run(in);
      } else if (capture && step > start) {  // (the first step of a run compiles as it goes)
        absl::StatusOr<CapturedStep> c =
            CapturedStep::CaptureUpdate(train_step, in, state_held, &out);
        if (c.ok())
          captured = *std::move(c);
        else if (rank == 0)
          std::cerr << "gpt_train: each step builds its graph: " << c.status().message() << "\n";
        capture = false;
      } else {
        out = train_step(in);
      }
      Tensor loss = out[0], finite = out[1];
      const bool took = finite.Item<bool>();
      if (!took && scaler) {  // (the scaler's way to find its scale)
        opt.set_steps(opt.steps() - 1);
        if (rank == 0)
          std::cerr << "gpt_train: step " << step + 1
                    << ": a gradient is not finite in f16; skipped, the loss scale halved to "
                    << scaler->scale() << "\n";
      } else if (!took) {
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
          std::printf("step %5lld/%lld  loss %.4f  lr %.2e  %7.0f tok/s  eta %s%s\n",
                      static_cast<long long>(step + 1), static_cast<long long>(steps), value,
                      opt.lr(), rate, Eta((end - step - 1) * batch * context / rate).c_str(),
                      scaler ? absl::StrCat("  scale ", scaler->scale()).c_str() : "");
        std::fflush(stdout);
      }
      if (save_every > 0 && (step + 1) % save_every == 0 && step + 1 < end) save(step + 1);
    }
    if (group && rank == 0 && end > start) {  // what the layout cost on the wire
      // in theory, with ring all-reduces of f32: the gradients of this rank's parameters over
      // the data-parallel groups, and per block two activations forward and two gradients
      // back over the tensor-parallel ranks
      // (a pipeline: of this rank's blocks, and the activations its stage, the first, sends
      // to the next; with tied embeddings, also the gradient of the head's input, which it
      // computes, back to the last)
      double held = 0, blocks = 0;
      for (Tensor* p : model.Parameters())
        if (p->device()->peer_rank() < 0) held += static_cast<double>(p->numel().value());
      for (const auto& b : model.h) blocks += b->ln_1.weight.device()->peer_rank() < 0 ? 1 : 0;
      const double ring_dp = 2.0 * (dp - 1) / dp, ring_tp = 2.0 * (tp - 1) / tp;
      // (a low precision's gradients and tensor-parallel activations go as it: 2 bytes)
      const double low_bytes = static_cast<double>(DTypeSize(low)),
                   activation = static_cast<double>(local * context * dim) * 4;
      const double grads = ring_dp * held * low_bytes,
                   acts = ring_tp * 4.0 * blocks * activation * low_bytes / 4 +
                          (pp > 1 ? activation : 0) +
                          (pp > 1 && tie ? activation : 0);  // (the head's input gradient back)
      const double sent = static_cast<double>(group->bytes_sent() - sent_before);
      std::cout << "gpt_train: sent " << ByteString(static_cast<uint64_t>(sent / (end - start)))
                << " a step to the other ranks (in theory "
                << ByteString(static_cast<uint64_t>(grads + acts)) << ": "
                << ByteString(static_cast<uint64_t>(grads)) << " of gradients over " << dp
                << " data-parallel groups, " << ByteString(static_cast<uint64_t>(acts))
                << " of activations over " << tp << " tensor-parallel ranks"
                << (pp > 1 ? absl::StrCat(" and to the next of ", pp, " pipeline stages") : "")
                << ")\n";
    }
    save(end);
    std::cout << "gpt_train: saved " << checkpoint << " (" << Runtime::Get().plans().size()
              << " plans compiled)\n";
  } catch (const Error& e) {
    // (the step's plan, checked against its devices' memory before it runs, did not fit)
    if (absl::IsResourceExhausted(e.status()))
      return Fail(absl::StrCat(e.what(), ": choose a smaller --layers, --dim, --batch or --context"));
    return Fail(e.what());
  }
  return 0;
}
