// Safetensors checkpoints: bit-identical round trips, atomic writes, and a clear error
// (never a crash) for every way a file can be broken.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <gtest/gtest.h>

#include "core/file.h"
#include "frontend/gpt2_checkpoint.h"
#include "frontend/safetensors.h"

namespace uopc {
namespace {

std::string Tmp(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
}

void Write(const std::string& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// A file with `header` as its JSON and `data` after it.
std::string File(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int k = 0; k < 8; ++k) out[k] = static_cast<char>((n >> (8 * k)) & 0xff);
  return out + header + data;
}

TEST(Checkpoint, RoundTripIsBitIdentical) {
  Tensor::ManualSeed(1);
  GptConfig c{7, 5, 8, 2, 1, 0.0};
  Gpt a(c);
  std::string path = Tmp("a.safetensors");
  ASSERT_TRUE(SaveModel(path, a, {{"vocab", "abc\n\"x"}, {"step", "3"}}).ok());
  Tensor::ManualSeed(2);
  Gpt b(c);
  absl::StatusOr<Checkpoint> ck = LoadSafetensors(path);
  ASSERT_TRUE(ck.ok()) << ck.status();
  EXPECT_EQ(ck->metadata.at("vocab"), "abc\n\"x");
  EXPECT_EQ(ck->metadata.at("step"), "3");
  ASSERT_TRUE(LoadModel(*ck, b).ok());
  NamedParams pa = a.NamedParameters(), pb = b.NamedParameters();
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_EQ(ToHost(*pa[i].second).bytes, ToHost(*pb[i].second).bytes) << pa[i].first;
}

TEST(Checkpoint, EveryDTypeRoundTrips) {
  Checkpoint c;
  for (DType t :
       {DType::kBool, DType::kI8, DType::kU8, DType::kI16, DType::kU16, DType::kI32, DType::kU32,
        DType::kI64, DType::kU64, DType::kF16, DType::kBF16, DType::kF32, DType::kF64}) {
    HostTensor h{t, {2, 1}, std::string(2 * DTypeSize(t), '\x01')};
    c.tensors.emplace_back(std::string(DTypeName(t)), h);
  }
  c.tensors.emplace_back("empty", HostTensor{DType::kF32, {0, 3}, ""});
  ASSERT_TRUE(SaveSafetensors(Tmp("all.safetensors"), c).ok());
  absl::StatusOr<Checkpoint> back = LoadSafetensors(Tmp("all.safetensors"));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->tensors.size(), c.tensors.size());
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    EXPECT_EQ(back->tensors[i].first, c.tensors[i].first);
    EXPECT_EQ(back->tensors[i].second.dtype, c.tensors[i].second.dtype);
    EXPECT_EQ(back->tensors[i].second.shape, c.tensors[i].second.shape);
    EXPECT_EQ(back->tensors[i].second.bytes, c.tensors[i].second.bytes);
  }
  EXPECT_EQ(static_cast<unsigned char>(ReadFile(Tmp("all.safetensors")).value_or("")[0]) % 8,
            0);  // the header is padded to 8 bytes
}

TEST(Checkpoint, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  Checkpoint c;
  c.tensors.emplace_back("x", HostTensor{DType::kF32, {1}, std::string(4, '\0')});
  EXPECT_EQ(SaveSafetensors("/no/such/dir/x.safetensors", c).code(),
            absl::StatusCode::kUnavailable);
  std::string path = Tmp("keep.safetensors");
  ASSERT_TRUE(SaveSafetensors(path, c).ok());
  std::string before = ReadFile(path).value_or("");
  Checkpoint bad = c;
  bad.tensors[0].second.bytes = "123";  // wrong size: refused before anything is written
  EXPECT_FALSE(SaveSafetensors(path, bad).ok());
  EXPECT_EQ(ReadFile(path).value_or(""), before);
}

struct Broken {
  const char* what;
  std::string bytes;
  const char* message;  // after "checkpoint PATH: "
};

TEST(Checkpoint, BrokenFilesAreClearErrors) {
  const std::string ok_entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  std::vector<Broken> cases = {
      {"empty", "", "0 bytes; a safetensors file has at least 8 (truncated?)"},
      {"short", "abc", "3 bytes; a safetensors file has at least 8 (truncated?)"},
      {"header too long", File("{}", "").substr(0, 8) + "{",
       "a header of 2 bytes does not fit in the file (9 bytes; truncated?)"},
      {"not json", File("{nope}", ""),
       "the header is not valid JSON: JSON at byte 1: expected a string"},
      {"not an object", File("[1]", ""), "the header is not a JSON object"},
      {"unknown dtype", File(R"({"w":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}})", "xx"),
       "tensor 'w': unknown dtype 'F8'"},
      {"bad shape",
       File(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", std::string(8, 0)),
       "tensor 'w': a dimension that is not a non-negative integer"},
      {"past the end", File("{" + ok_entry + "}", std::string(4, 0)),
       "tensor 'w': data_offsets [0, 8) past the end of the data (4 bytes; truncated?)"},
      {"wrong size",
       File(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, 0)),
       "tensor 'w': 8 bytes for shape (3) of F32; expected 12"},
      {"overlap",
       File(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           std::string(8, 0)),
       "two tensors overlap in the data"},
      {"duplicate", File("{" + ok_entry + "," + ok_entry + "}", std::string(8, 0)),
       "the header is not valid JSON: JSON at byte 106: key \"w\" twice"},
      {"bad metadata", File(R"({"__metadata__":{"k":1}})", ""), "metadata 'k' is not a string"},
      // padding is spaces (as every writer pads); NUL bytes are not JSON (issue 33's probe)
      {"nul padding", File(std::string(R"({"__metadata__":{"k":"v"}})") + std::string(6, '\0'), ""),
       "the header is not valid JSON: JSON at byte 26: text after the JSON value"},
  };
  for (const Broken& b : cases) {
    std::string path = Tmp(std::string("broken_") + std::to_string(&b - &cases[0]));
    Write(path, b.bytes);
    absl::StatusOr<Checkpoint> c = LoadSafetensors(path);
    ASSERT_FALSE(c.ok()) << b.what;
    EXPECT_EQ(std::string(c.status().message()), "checkpoint " + path + ": " + b.message) << b.what;
  }
  EXPECT_EQ(LoadSafetensors(Tmp("missing")).status().code(), absl::StatusCode::kNotFound);
}

TEST(Checkpoint, TruncatingAValidFileAnywhereIsAnError) {
  Tensor::ManualSeed(1);
  Gpt model(GptConfig{5, 4, 8, 2, 1, 0.0});
  std::string path = Tmp("t.safetensors");
  ASSERT_TRUE(SaveModel(path, model, {}).ok());
  std::string full = ReadFile(path).value_or("");
  for (size_t cut = 0; cut < full.size(); cut += 97) {
    Write(Tmp("cut"), full.substr(0, cut));
    EXPECT_FALSE(LoadSafetensors(Tmp("cut")).ok()) << "cut at " << cut;
  }
}

TEST(Checkpoint, AModelRefusesMissingOrMisshapenTensors) {
  Tensor::ManualSeed(1);
  Gpt small(GptConfig{5, 4, 8, 2, 1, 0.0}), wider(GptConfig{5, 4, 16, 2, 1, 0.0});
  ASSERT_TRUE(SaveModel(Tmp("s.safetensors"), small, {}).ok());
  absl::StatusOr<Checkpoint> c = LoadSafetensors(Tmp("s.safetensors"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(LoadModel(*c, wider).message(),
            "checkpoint tensor 'wte.weight' has shape (5, 8); the model's is (5, 16)");
  c->tensors.erase(c->tensors.begin());
  EXPECT_EQ(LoadModel(*c, small).message(), "checkpoint has no tensor 'wte.weight' ((5, 8))");
}

TEST(Checkpoint, TheTensorsMustTileTheDataExactly) {
  const std::string t = R"("t":{"dtype":"U8","shape":[2],"data_offsets":)";
  Write(Tmp("gap"), File("{" + t + "[1,3]}}", "xab"));
  EXPECT_EQ(LoadSafetensors(Tmp("gap")).status().message(),
            "checkpoint " + Tmp("gap") +
                ": a gap of 1 bytes in the data at offset 0 (a wrong header length?)");
  Write(Tmp("trail"), File("{" + t + "[0,2]}}", "abX"));
  EXPECT_EQ(LoadSafetensors(Tmp("trail")).status().message(),
            "checkpoint " + Tmp("trail") +
                ": 1 bytes after the last tensor (a wrong header length?)");
  // a header length one byte short: the padding's last space is read as data
  std::string good = File("{" + t + "[0,2]}} ", "ab"), shifted = good;
  shifted[0] = static_cast<char>(shifted[0] - 1);
  Write(Tmp("short"), shifted);
  EXPECT_FALSE(LoadSafetensors(Tmp("short")).ok());
  Write(Tmp("good"), good);
  EXPECT_TRUE(LoadSafetensors(Tmp("good")).ok());
}

TEST(Checkpoint, NonFiniteWeightsAreNeitherSavedNorLoaded) {
  Tensor::ManualSeed(1);
  GptConfig c{7, 5, 8, 2, 1, 0.0};
  Gpt a(c);
  const std::string path = Tmp("finite.safetensors");
  ASSERT_TRUE(SaveModel(path, a, {{"step", "1"}}).ok());
  std::string before = *ReadFile(path);
  std::vector<float> w = a.ln_f.bias.ToVector<float>();
  w[3] = NAN;
  a.ln_f.bias.Assign(Tensor::FromVector(w, {8}));
  absl::Status s = SaveModel(path, a, {{"step", "2"}});
  EXPECT_EQ(s.message(), "checkpoint " + path +
                             ": tensor 'ln_f.bias' holds nan at element 3; not saved (the file on "
                             "disk is unchanged)");
  EXPECT_EQ(*ReadFile(path), before);
  // a file holding inf is refused on load, naming the tensor
  Checkpoint ck = *LoadSafetensors(path);
  for (auto& [name, t] : ck.tensors)
    if (name == "wpe.weight") {
      float inf = INFINITY;
      std::memcpy(t.bytes.data() + 4, &inf, 4);
    }
  Gpt b(c);
  EXPECT_EQ(LoadModel(ck, b).message(),
            "checkpoint tensor 'wpe.weight' holds inf at element 1; a model's weights must be "
            "finite");
}

TEST(Checkpoint, ATensorTheModelDoesNotHaveIsRefused) {
  Tensor::ManualSeed(1);
  GptConfig c{7, 5, 8, 2, 1, 0.0};
  Gpt a(c);
  ASSERT_TRUE(SaveModel(Tmp("two.safetensors"), a, {}).ok());
  GptConfig smaller = c;
  smaller.layers = 0;  // as if the file's metadata had lied about its layers
  Gpt b(smaller);
  absl::Status s = LoadModel(*LoadSafetensors(Tmp("two.safetensors")), b);
  EXPECT_EQ(s.message().rfind("checkpoint has a tensor 'h.0.", 0), 0u) << s;
}

}  // namespace
}  // namespace uopc

namespace uopc {
namespace {

void ExpectNear(const std::vector<float>& a, const std::vector<float>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << i;
}

Tensor Idx() { return Tensor::FromVector(std::vector<int32_t>{1, 4, 2, 6, 0}, {1, 5}); }

TEST(TiedEmbeddings, OneTensorWhoseGradientHasBothUses) {
  Tensor::ManualSeed(3);
  GptConfig c{7, 5, 8, 2, 1, 0.0, true};
  Gpt tied(c);
  for (const auto& [name, t] : tied.NamedParameters()) EXPECT_NE(name, "lm_head.weight");
  EXPECT_FALSE(tied.lm_head);
  EXPECT_EQ(tied.NamedParameters().size(), Gpt(GptConfig{7, 5, 8, 2, 1, 0.0}).NamedParameters().size() - 1);
  // the same model untied, its head a copy of wte
  c.tie_embeddings = false;
  Gpt untied(c);
  auto from = tied.NamedParameters();
  auto to = untied.NamedParameters();
  for (size_t i = 0; i < from.size(); ++i) to[i].second->Assign(from[i].second->Detach());
  untied.lm_head.Assign(tied.wte.weight.Detach());
  auto loss = [](Gpt& m) { return m.Forward(Idx()).Reshape({5, 7}).CrossEntropy(
                               Tensor::FromVector(std::vector<int32_t>{4, 2, 6, 0, 3}, {5})); };
  Tensor lt = loss(tied), lu = loss(untied);
  EXPECT_NEAR(lt.Item<float>(), lu.Item<float>(), 1e-6);
  lt.Backward();
  lu.Backward();
  std::vector<float> gu = (untied.wte.weight.grad() + untied.lm_head.grad()).ToVector<float>();
  ExpectNear(tied.wte.weight.grad().ToVector<float>(), gu, 1e-6);
}

TEST(Gpt2Checkpoint, TheHuggingFaceNamingLoadsTiedWithoutTheMaskBuffers) {
  Tensor::ManualSeed(4);
  GptConfig c{7, 5, 8, 2, 2, 0.0, true};
  Gpt a(c);
  Checkpoint hf;
  hf.metadata = {{"format", "pt"}};
  for (auto& [name, t] : a.NamedParameters()) hf.tensors.emplace_back("transformer." + name, ToHost(*t));
  for (int l = 0; l < 2; ++l) {
    std::string h = "transformer.h." + std::to_string(l) + ".attn.";
    hf.tensors.emplace_back(h + "bias", ToHost(Tensor::Ones({1, 1, 5, 5})));
    hf.tensors.emplace_back(h + "masked_bias", ToHost(Tensor::Full({}, -1e4)));
  }
  std::string path = Tmp("hf.safetensors");
  ASSERT_TRUE(SaveSafetensors(path, hf).ok());
  absl::StatusOr<Checkpoint> loaded = LoadSafetensors(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  Checkpoint ck = FromGpt2Naming(*loaded);
  absl::StatusOr<GptConfig> config = Gpt2Config(ck, 2);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->vocab, 7);
  EXPECT_EQ(config->context, 5);
  EXPECT_EQ(config->dim, 8);
  EXPECT_EQ(config->layers, 2);
  EXPECT_TRUE(config->tie_embeddings);
  Tensor::ManualSeed(5);
  Gpt b(*config);
  ASSERT_TRUE(LoadModel(ck, b).ok());
  EXPECT_EQ(b.Forward(Idx()).ToVector<float>(), a.Forward(Idx()).ToVector<float>());
  EXPECT_EQ(Gpt2Config(ck, 3).status().message(),
            "gpt-2 checkpoint: dim 8 with 3 heads; expected heads dividing dim (GPT-2: dim / 64 "
            "= 0)");
}

}  // namespace
}  // namespace uopc
