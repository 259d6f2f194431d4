#include "frontend/safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "core/alu.h"
#include "core/element.h"
#include "core/file.h"
#include "core/json.h"

namespace uopc {
namespace {

const std::pair<DType, const char*> kNames[] = {
    {DType::kBool, "BOOL"}, {DType::kU8, "U8"},   {DType::kI8, "I8"},     {DType::kI16, "I16"},
    {DType::kU16, "U16"},   {DType::kI32, "I32"}, {DType::kU32, "U32"},   {DType::kI64, "I64"},
    {DType::kU64, "U64"},   {DType::kF16, "F16"}, {DType::kBF16, "BF16"}, {DType::kF32, "F32"},
    {DType::kF64, "F64"}};

const char* Name(DType t) {
  for (auto [d, n] : kNames)
    if (d == t) return n;
  return "?";
}

bool FromName(const std::string& s, DType* t) {
  for (auto [d, n] : kNames)
    if (s == n) {
      *t = d;
      return true;
    }
  return false;
}

int64_t Numel(const TensorShape& s) {
  int64_t n = 1;
  for (const SymInt& d : s) n *= d.value();
  return n;
}

// The first element of a float tensor that is nan or inf; -1 if none (or not float).
int64_t FirstNonFinite(const HostTensor& h) {
  if (!IsFloat(h.dtype)) return -1;
  const int64_t n = Numel(h.shape);
  if (h.dtype == DType::kF32) {  // the common case, without an Arg per element
    for (int64_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, h.bytes.data() + 4 * i, 4);
      if (!std::isfinite(v)) return i;
    }
    return -1;
  }
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(CastValue(LoadElement(h.bytes.data(), h.dtype, i), h.dtype, DType::kF64)
                           .Get<double>()))
      return i;
  return -1;
}

std::string ValueText(const HostTensor& h, int64_t i) {
  double v = CastValue(LoadElement(h.bytes.data(), h.dtype, i), h.dtype, DType::kF64).Get<double>();
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

}  // namespace

const HostTensor* Checkpoint::Find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

absl::Status SaveSafetensors(const std::string& path, const Checkpoint& ckpt) {
  std::vector<std::string> entries;
  uint64_t offset = 0;
  for (const auto& [name, t] : ckpt.tensors) {
    if (static_cast<int64_t>(t.bytes.size()) != Numel(t.shape) * DTypeSize(t.dtype))
      return absl::InvalidArgumentError(absl::StrCat("checkpoint ", path, ": tensor '", name,
                                                     "' has ", t.bytes.size(), " bytes for shape ",
                                                     ShapeString(t.shape)));
    entries.push_back(absl::StrCat(JsonQuote(name), ":{\"dtype\":\"", Name(t.dtype),
                                   "\",\"shape\":[", absl::StrJoin(t.shape, ",",
                                                 [](std::string* o, const SymInt& d) {
                                                   absl::StrAppend(o, d.value());
                                                 }),
                                   "],\"data_offsets\":[", offset, ",", offset + t.bytes.size(),
                                   "]}"));
    offset += t.bytes.size();
  }
  if (!ckpt.metadata.empty()) {
    std::vector<std::string> kv;
    for (const auto& [k, v] : ckpt.metadata) kv.push_back(JsonQuote(k) + ":" + JsonQuote(v));
    entries.insert(entries.begin(),
                   absl::StrCat("\"__metadata__\":{", absl::StrJoin(kv, ","), "}"));
  }
  std::string header = "{" + absl::StrJoin(entries, ",") + "}";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  uint64_t n = header.size();
  char len[8];
  for (int k = 0; k < 8; ++k) len[k] = static_cast<char>((n >> (8 * k)) & 0xff);
  std::vector<absl::string_view> pieces = {absl::string_view(len, 8), header};
  for (const auto& [name, t] : ckpt.tensors) pieces.push_back(t.bytes);
  if (absl::Status s = WriteFileAtomic(path, pieces); !s.ok())
    return absl::Status(s.code(), absl::StrCat("checkpoint ", path, ": ", s.message()));
  return absl::OkStatus();
}

absl::StatusOr<Checkpoint> LoadSafetensors(const std::string& path) {
  auto bad = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat("checkpoint ", path, ": ", why));
  };
  absl::StatusOr<std::string> read = ReadFile(path);
  if (!read.ok())
    return absl::Status(read.status().code(), absl::StrCat("checkpoint ", read.status().message()));
  const std::string& file = *read;
  if (file.size() < 8)
    return bad(absl::StrCat(file.size(), " bytes; a safetensors file has at least 8 (truncated?)"));
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= uint64_t{static_cast<unsigned char>(file[k])} << (8 * k);
  if (n > file.size() - 8 || n > (uint64_t{100} << 20))
    return bad(absl::StrCat("a header of ", n, " bytes does not fit in the file (", file.size(),
                            " bytes; truncated?)"));
  absl::StatusOr<Json> header = ParseJson(absl::string_view(file).substr(8, n));
  if (!header.ok())
    return bad(absl::StrCat("the header is not valid JSON: ", header.status().message()));
  if (header->kind != Json::Kind::kObject) return bad("the header is not a JSON object");
  const uint64_t data_size = file.size() - 8 - n;
  const char* data = file.data() + 8 + n;
  Checkpoint ckpt;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, e] : header->object) {
    if (name == "__metadata__") {
      if (e.kind != Json::Kind::kObject) return bad("__metadata__ is not an object");
      for (const auto& [k, v] : e.object) {
        if (v.kind != Json::Kind::kString)
          return bad(absl::StrCat("metadata '", k, "' is not a string"));
        ckpt.metadata[k] = v.str;
      }
      continue;
    }
    auto bad_tensor = [&](const std::string& why) {
      return bad(absl::StrCat("tensor '", name, "': ", why));
    };
    if (name.empty()) return bad("a tensor with an empty name");
    if (e.kind != Json::Kind::kObject) return bad_tensor("its entry is not an object");
    const Json *dt = e.Find("dtype"), *shape = e.Find("shape"), *off = e.Find("data_offsets");
    HostTensor t;
    if (!dt || dt->kind != Json::Kind::kString || !FromName(dt->str, &t.dtype))
      return bad_tensor(absl::StrCat("unknown dtype ", dt && dt->kind == Json::Kind::kString
                                                           ? "'" + dt->str + "'"
                                                           : "(missing)"));
    if (!shape || shape->kind != Json::Kind::kArray || shape->array.size() > 16)
      return bad_tensor("no valid shape");
    int64_t numel = 1;
    for (const Json& d : shape->array) {
      if (!d.IsInt(0, int64_t{1} << 40))
        return bad_tensor("a dimension that is not a non-negative integer");
      t.shape.push_back(static_cast<int64_t>(d.number));
      numel *= t.shape.back().value();
      if (numel > (int64_t{1} << 40)) return bad_tensor("too many elements");
    }
    if (!off || off->kind != Json::Kind::kArray || off->array.size() != 2 ||
        !off->array[0].IsInt(0, int64_t{1} << 50) || !off->array[1].IsInt(0, int64_t{1} << 50))
      return bad_tensor("no valid data_offsets");
    uint64_t b = static_cast<uint64_t>(off->array[0].number),
             en = static_cast<uint64_t>(off->array[1].number);
    if (b > en || en > data_size)
      return bad_tensor(absl::StrCat("data_offsets [", b, ", ", en, ") past the end of the data (",
                                     data_size, " bytes; truncated?)"));
    if (en - b != static_cast<uint64_t>(numel) * DTypeSize(t.dtype))
      return bad_tensor(absl::StrCat(en - b, " bytes for shape ", ShapeString(t.shape), " of ",
                                     Name(t.dtype), "; expected ", numel * DTypeSize(t.dtype)));
    ranges.push_back({b, en});
    t.bytes.assign(data + b, en - b);
    ckpt.tensors.emplace_back(name, std::move(t));
  }
  // the tensors tile the data section exactly, as the reference loader requires: a header
  // length off by a byte shows as a gap or as bytes left over, never as shifted tensors
  std::sort(ranges.begin(), ranges.end());
  uint64_t at = 0;
  for (const auto& [b, en] : ranges) {
    if (b < at) return bad("two tensors overlap in the data");
    if (b > at)
      return bad(absl::StrCat("a gap of ", b - at, " bytes in the data at offset ", at,
                              " (a wrong header length?)"));
    at = en;
  }
  if (at != data_size)
    return bad(absl::StrCat(data_size - at, " bytes after the last tensor (a wrong header length?)"));
  return ckpt;
}

HostTensor ToHost(const Tensor& t) {
  for (const SymInt& d : t.shape())
    if (d.is_symbolic())
      ThrowInvalid("safetensors: a tensor of symbolic shape " + ShapeString(t.shape()) +
                   "; expected a shape of numbers");
  Tensor r = t;
  r.Realize();
  HostTensor h{t.dtype(), t.shape(), std::string(r.data()->buffer.bytes(), '\0')};
  ThrowIfError(r.device()->CopyOut(h.bytes.data(), r.data()->buffer, h.bytes.size()));
  return h;
}

Tensor FromHost(const HostTensor& h, DeviceRef device) {
  std::vector<double> v(Numel(h.shape));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = CastValue(LoadElement(h.bytes.data(), h.dtype, static_cast<int64_t>(i)), h.dtype,
                     DType::kF64)
               .Get<double>();
  if (IsFloat(h.dtype) || v.empty()) return Tensor::FromVector(v, h.shape, h.dtype, device);
  std::vector<int64_t> iv(v.begin(), v.end());
  return Tensor::FromVector(iv, h.shape, h.dtype, device);
}

absl::Status SaveModel(const std::string& path, Module& model,
                       const std::map<std::string, std::string>& metadata,
                       const std::vector<std::pair<std::string, Tensor*>>& extra) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (auto& [name, t] : model.NamedParameters()) tensors.emplace_back(name, *t);
  for (auto& [name, t] : extra) tensors.emplace_back(name, *t);
  return SaveTensors(path, tensors, metadata);
}

absl::Status SaveTensors(const std::string& path,
                         const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  Checkpoint c;
  c.metadata = metadata;
  try {
    for (const auto& [name, t] : tensors) c.tensors.emplace_back(name, ToHost(t));
  } catch (const Error& e) {
    return e.status();
  }
  for (const auto& [name, h] : c.tensors)
    if (int64_t bad = FirstNonFinite(h); bad >= 0)
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", path, ": tensor '", name, "' holds ", ValueText(h, bad), " at element ",
          bad, "; not saved (the file on disk is unchanged)"));
  return SaveSafetensors(path, c);
}

absl::Status LoadModel(const Checkpoint& ckpt, Module& model,
                       const std::vector<std::pair<std::string, Tensor*>>& extra,
                       const std::vector<std::string>& ignore) {
  NamedParams all = model.NamedParameters();
  all.insert(all.end(), extra.begin(), extra.end());
  for (const auto& [name, h] : ckpt.tensors)
    if (std::none_of(all.begin(), all.end(), [&](const auto& p) { return p.first == name; }) &&
        std::none_of(ignore.begin(), ignore.end(),
                     [&](const std::string& i) { return name.rfind(i, 0) == 0; }))
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint has a tensor '", name, "' ", ShapeString(h.shape),
          " that the model does not (a checkpoint of another model, or of another layout?)"));
  std::vector<std::pair<Tensor*, const HostTensor*>> plan;
  for (auto& [name, t] : all) {
    const HostTensor* h = ckpt.Find(name);
    if (!h)
      return absl::NotFoundError(
          absl::StrCat("checkpoint has no tensor '", name, "' (", ShapeString(t->shape()), ")"));
    if (h->shape != t->shape())
      return absl::InvalidArgumentError(absl::StrCat("checkpoint tensor '", name, "' has shape ",
                                                     ShapeString(h->shape), "; the model's is ",
                                                     ShapeString(t->shape())));
    if (int64_t bad = FirstNonFinite(*h); bad >= 0)
      return absl::DataLossError(absl::StrCat("checkpoint tensor '", name, "' holds ",
                                              ValueText(*h, bad), " at element ", bad,
                                              "; a model's weights must be finite"));
    plan.push_back({t, h});
  }
  try {
    // (made where it goes: on another rank's device, nothing is copied, that rank loads it)
    for (auto& [t, h] : plan) t->Assign(FromHost(*h, t->device()).Cast(t->dtype()));
  } catch (const Error& e) {
    return e.status();
  }
  return absl::OkStatus();
}

}  // namespace uopc
