// Every Tensor op against a plain C++ reference on random inputs: broadcasting, empty and
// size-1 axes, non-contiguous views, dtype promotion, and the errors ops raise.
#include "frontend/tensor.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "core/exp2_f32.h"
#include "tests/testing/error_of.h"

namespace uopc {
namespace {

using testing::ErrorOf;

// ---- a reference n-d array, in doubles ----
// Shapes of the plain C++ references (a Tensor's shape is a vector of SymInt).
using Dims = std::vector<int64_t>;
TensorShape Shape(const Dims& d) { return TensorShape(d.begin(), d.end()); }

struct Ref {
  Dims shape;
  std::vector<double> v;
  int64_t n() const { return static_cast<int64_t>(v.size()); }
};

int64_t Numel(const Dims& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<int64_t> Unflat(int64_t i, const Dims& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = s[d] ? i % s[d] : 0;
    i = s[d] ? i / s[d] : 0;
  }
  return idx;
}

// the element of `a` that broadcasts to index `idx` of a tensor of `rank` dims
double At(const Ref& a, const std::vector<int64_t>& idx) {
  int64_t flat = 0;
  size_t off = idx.size() - a.shape.size();
  for (size_t d = 0; d < a.shape.size(); ++d)
    flat = flat * a.shape[d] + (a.shape[d] == 1 ? 0 : idx[off + d]);
  return a.v[flat];
}

Dims BShape(const Dims& a, const Dims& b) {
  size_t r = std::max(a.size(), b.size());
  Dims out(r, 1);
  for (size_t d = 0; d < r; ++d) {
    int64_t x = d + a.size() >= r ? a[d + a.size() - r] : 1,
            y = d + b.size() >= r ? b[d + b.size() - r] : 1;
    out[d] = x == 1 ? y : x;
  }
  return out;
}

Ref Binary(const Ref& a, const Ref& b, const std::function<double(double, double)>& f) {
  Ref o{BShape(a.shape, b.shape), {}};
  for (int64_t i = 0; i < Numel(o.shape); ++i) {
    auto idx = Unflat(i, o.shape);
    o.v.push_back(f(At(a, idx), At(b, idx)));
  }
  return o;
}

Ref Unary(const Ref& a, const std::function<double(double)>& f) {
  Ref o = a;
  for (double& x : o.v) x = f(x);
  return o;
}

Ref Reduce(const Ref& a, std::vector<int> axes, bool keepdim, double init,
           const std::function<double(double, double)>& f) {
  if (axes.empty())
    for (size_t d = 0; d < a.shape.size(); ++d) axes.push_back(static_cast<int>(d));
  Dims kept = a.shape, dropped;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    bool r = std::find(axes.begin(), axes.end(), static_cast<int>(d)) != axes.end();
    if (r)
      kept[d] = 1;
    else
      dropped.push_back(a.shape[d]);
  }
  Ref o{keepdim ? kept : dropped, std::vector<double>(Numel(kept), init)};
  for (int64_t i = 0; i < a.n(); ++i) {
    auto idx = Unflat(i, a.shape);
    int64_t flat = 0;
    for (size_t d = 0; d < kept.size(); ++d) flat = flat * kept[d] + (kept[d] == 1 ? 0 : idx[d]);
    o.v[flat] = f(o.v[flat], a.v[i]);
  }
  return o;
}

Ref Random(Dims s, uint32_t seed, double lo = -2, double hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Ref r{s, {}};
  for (int64_t i = 0; i < Numel(s); ++i) r.v.push_back(static_cast<float>(u(rng)));
  return r;
}

Tensor T(const Ref& r, DType t = DType::kF32) { return Tensor::FromVector(r.v, Shape(r.shape), t); }

void Expect(const Tensor& got, const Ref& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), Shape(want.shape))
      << ShapeString(got.shape()) << " vs " << ShapeString(Shape(want.shape));
  std::vector<double> g = got.ToVector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want.v[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << "element " << i;
      continue;
    }
    if (g[i] == want.v[i]) continue;  // also infinities
    EXPECT_NEAR(g[i], want.v[i], tol * std::max(1.0, std::abs(want.v[i]))) << "element " << i;
  }
}

const std::vector<std::pair<Dims, Dims>> kBroadcasts = {
    {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {3, 1}}, {{}, {3, 4}},
    {{0, 4}, {4}},    {{1, 1}, {1}}, {{5}, {}},        {{2, 1, 3}, {4, 1}}};

// ---- elementwise ----

// A vector of the tensor's own dtype goes in and comes out as its bits: a signaling NaN
// stays signaling (through a double it would come back quiet), -0 stays -0.
TEST(Tensor, FromVectorAndToVectorOfItsDTypeKeepTheBits) {
  const uint32_t bits[] = {0x7fa00001u, 0x80000000u, 0x3fc00000u};
  std::vector<float> v(3);
  std::memcpy(v.data(), bits, sizeof bits);
  const std::vector<float> back = Tensor::FromVector(v, {3}).ToVector<float>();
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(std::memcmp(back.data(), bits, sizeof bits), 0);
  const std::vector<int64_t> big{(int64_t{1} << 62) + 1, -1};
  EXPECT_EQ(Tensor::FromVector(big, {2}).ToVector<int64_t>(), big);
  // (and another dtype converts: f32 values as i32)
  EXPECT_EQ(
      Tensor::FromVector(std::vector<float>{2.0f, -3.0f}, {2}, DType::kI32).ToVector<int32_t>(),
      (std::vector<int32_t>{2, -3}));
}

TEST(Tensor, BinaryOpsWithBroadcasting) {
  struct Op {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> t;
    std::function<double(double, double)> r;
  };
  std::vector<Op> ops = {
      {"add", [](auto& a, auto& b) { return a + b; }, [](double a, double b) { return a + b; }},
      {"sub", [](auto& a, auto& b) { return a - b; }, [](double a, double b) { return a - b; }},
      {"mul", [](auto& a, auto& b) { return a * b; }, [](double a, double b) { return a * b; }},
      {"div", [](auto& a, auto& b) { return a / b; }, [](double a, double b) { return a / b; }},
      {"maximum", [](auto& a, auto& b) { return a.Maximum(b); },
       [](double a, double b) { return std::max(a, b); }},
      {"minimum", [](auto& a, auto& b) { return a.Minimum(b); },
       [](double a, double b) { return std::min(a, b); }},
      {"lt", [](auto& a, auto& b) { return a.Lt(b); },
       [](double a, double b) { return double(a < b); }},
      {"le", [](auto& a, auto& b) { return a.Le(b); },
       [](double a, double b) { return double(a <= b); }},
      {"gt", [](auto& a, auto& b) { return a.Gt(b); },
       [](double a, double b) { return double(a > b); }},
      {"ge", [](auto& a, auto& b) { return a.Ge(b); },
       [](double a, double b) { return double(a >= b); }},
      {"eq", [](auto& a, auto& b) { return a.Eq(b); },
       [](double a, double b) { return double(a == b); }},
      {"ne", [](auto& a, auto& b) { return a.Ne(b); },
       [](double a, double b) { return double(a != b); }},
  };
  uint32_t seed = 1;
  for (const Op& op : ops)
    for (const auto& [sa, sb] : kBroadcasts) {
      Ref a = Random(sa, seed++), b = Random(sb, seed++);
      if (std::string(op.name) == "eq" || std::string(op.name) == "ne")
        b = Unary(b, [](double x) { return std::round(x); }),
        a = Unary(a, [](double x) { return std::round(x); });
      SCOPED_TRACE(std::string(op.name) + " " + ShapeString(Shape(sa)) + " " + ShapeString(Shape(sb)));
      Expect(op.t(T(a), T(b)), Binary(a, b, op.r));
    }
}

TEST(Tensor, UnaryOps) {
  struct Op {
    const char* name;
    std::function<Tensor(const Tensor&)> t;
    std::function<double(double)> r;
    double lo = -3, hi = 3;
  };
  std::vector<Op> ops = {
      {"exp", [](auto& a) { return a.Exp(); }, [](double x) { return std::exp(x); }},
      {"log", [](auto& a) { return a.Log(); }, [](double x) { return std::log(x); }, 0.01, 5},
      {"sqrt", [](auto& a) { return a.Sqrt(); }, [](double x) { return std::sqrt(x); }, 0, 9},
      {"sin", [](auto& a) { return a.Sin(); }, [](double x) { return std::sin(x); }},
      {"cos", [](auto& a) { return a.Cos(); }, [](double x) { return std::cos(x); }},
      {"tanh", [](auto& a) { return a.Tanh(); }, [](double x) { return std::tanh(x); }},
      {"sigmoid", [](auto& a) { return a.Sigmoid(); },
       [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"relu", [](auto& a) { return a.Relu(); }, [](double x) { return std::max(x, 0.0); }},
      {"gelu", [](auto& a) { return a.Gelu(); },
       [](double x) {
         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
       }},
      {"abs", [](auto& a) { return a.Abs(); }, [](double x) { return std::abs(x); }},
      {"neg", [](auto& a) { return -a; }, [](double x) { return -x; }},
      {"reciprocal", [](auto& a) { return a.Reciprocal(); }, [](double x) { return 1 / x; }, 0.5,
       3},
      {"pow 3", [](auto& a) { return a.Pow(3); }, [](double x) { return x * x * x; }},
      {"pow 2.5", [](auto& a) { return a.Pow(2.5); }, [](double x) { return std::pow(x, 2.5); },
       0.1, 3},
      {"pow -2", [](auto& a) { return a.Pow(-2); }, [](double x) { return 1 / (x * x); }, 0.5, 3},
      {"square", [](auto& a) { return a.Square(); }, [](double x) { return x * x; }},
  };
  uint32_t seed = 100;
  for (const Op& op : ops)
    for (Dims s : {Dims{7}, Dims{2, 3}, Dims{}, Dims{0}}) {
      SCOPED_TRACE(std::string(op.name) + " " + ShapeString(Shape(s)));
      Ref a = Random(s, seed++, op.lo, op.hi);
      Expect(op.t(T(a)), Unary(a, op.r), 2e-5);
    }
}

// exp2 of a float on the device is core/exp2_f32.h's, as the interpreter (and constant
// folding) computes it: over half a million floats across its range, and its edges.
TEST(Tensor, Exp2IsTheInterpretersBitForBit) {
  std::vector<float> x{0.0f, -0.0f, 1.0f, -1.0f, 127.99999f, 128.0f, -126.0f, -149.0f, -150.0f,
                       INFINITY, -INFINITY};
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
    const uint32_t u = static_cast<uint32_t>(bits);
    float v;
    std::memcpy(&v, &u, sizeof v);
    if (v >= -160.0f && v <= 130.0f) x.push_back(v);
  }
  ASSERT_GT(x.size(), 500000u);
  std::vector<float> got = Tensor::FromVector(x, {static_cast<int64_t>(x.size())}).Exp2().ToVector<float>();
  ASSERT_EQ(got.size(), x.size());
  int wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = Exp2F32(x[i]);
    if (std::memcmp(&want, &got[i], sizeof want) != 0 && wrong++ < 5)
      ADD_FAILURE() << "exp2(" << std::hexfloat << x[i] << ") = " << got[i] << ", interpreter "
                    << want;
  }
  EXPECT_EQ(wrong, 0);
}

// The same where the operand may be infinite (a causal mask's -inf): every float (one in
// 4099, and the edges), every third masked.
TEST(Tensor, Exp2OfAMaskedValueIsTheInterpretersBitForBit) {
  std::vector<float> x{-INFINITY, INFINITY, NAN,     -1e30f,  1e30f,     -1000.0f, 1000.0f,
                       -160.5f,   -160.0f,  -151.0f, -150.0f, -149.5f,   129.5f,   130.0f,
                       130.5f,    200.0f,   -0.0f,   0.0f,    -126.125f, 127.875f};
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
    const uint32_t u = static_cast<uint32_t>(bits);
    float v;
    std::memcpy(&v, &u, sizeof v);
    x.push_back(v);
  }
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> masked(x.size());
  for (size_t i = 0; i < x.size(); ++i) masked[i] = i % 3 == 2 ? 1.0f : 0.0f;
  std::vector<float> got = Tensor::FromVector(masked, {n})
                               .Gt(0.0)
                               .Where(-INFINITY, Tensor::FromVector(x, {n}))
                               .Exp2()
                               .ToVector<float>();
  ASSERT_EQ(got.size(), x.size());
  int wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = masked[i] > 0 ? 0.0f : Exp2F32(x[i]);
    if (std::memcmp(&want, &got[i], sizeof want) != 0 &&
        !(std::isnan(want) && std::isnan(got[i])) && wrong++ < 5)
      ADD_FAILURE() << "exp2(" << std::hexfloat << x[i] << ") = " << got[i] << ", interpreter "
                    << want;
  }
  EXPECT_EQ(wrong, 0);
}

TEST(Tensor, Where) {
  Ref c = Random({3, 4}, 7), a = Random({4}, 8), b = Random({3, 1}, 9);
  Tensor cond = T(c).Gt(0.0);
  Ref want{{3, 4}, {}};
  for (int64_t i = 0; i < 12; ++i) {
    auto idx = Unflat(i, {3, 4});
    want.v.push_back(At(c, idx) > 0 ? At(a, idx) : At(b, idx));
  }
  Expect(cond.Where(T(a), T(b)), want);
  Expect(cond.Where(1.5, T(b)), Binary(c, b, [](double x, double y) { return x > 0 ? 1.5 : y; }));
}

TEST(Tensor, DTypePromotion) {
  Tensor i = Tensor::FromVector<int32_t>({1, 2, 3}, {3}),
         f = Tensor::FromVector<float>({0.5f, 1, 2}, {3});
  Tensor b = Tensor::FromVector<bool>({true, false, true}, {3});
  EXPECT_EQ((i + f).dtype(), DType::kF32);
  EXPECT_EQ((i + 1.0).dtype(), DType::kI32);
  EXPECT_EQ((i + 1.5).dtype(), DType::kF32);
  EXPECT_EQ((i / i).dtype(), DType::kF32);  // true division
  EXPECT_EQ((b + b).dtype(), DType::kI32);
  EXPECT_EQ(i.Lt(f).dtype(), DType::kBool);
  EXPECT_EQ((i * 2.0).ToVector<int32_t>(), (std::vector<int32_t>{2, 4, 6}));
  EXPECT_EQ((i + 1.5).ToVector<float>(), (std::vector<float>{2.5f, 3.5f, 4.5f}));
  EXPECT_EQ((b + b).ToVector<int32_t>(), (std::vector<int32_t>{2, 0, 2}));
  Tensor h = f.Cast(DType::kF16);
  EXPECT_EQ((h * h).dtype(), DType::kF16);
  EXPECT_EQ((h * h).ToVector<float>(), (std::vector<float>{0.25f, 1, 4}));
}

// ---- reductions ----

TEST(Tensor, Reductions) {
  uint32_t seed = 300;
  for (Dims s : {Dims{5}, Dims{3, 4}, Dims{2, 3, 4}, Dims{3, 0},
                        Dims{1, 1}})
    for (std::vector<int> axes : std::vector<std::vector<int>>{{}, {0}, {-1}, {0, 1}})
      for (bool keep : {false, true}) {
        if (!axes.empty() && axes.back() >= static_cast<int>(s.size())) continue;
        if (axes.size() > s.size()) continue;
        SCOPED_TRACE(ShapeString(Shape(s)) + " axes " + std::to_string(axes.size()) +
                     (keep ? " keepdim" : ""));
        Ref a = Random(s, seed++);
        std::vector<int> ra = axes;
        for (int& x : ra) x = x < 0 ? x + static_cast<int>(s.size()) : x;
        Expect(T(a).Sum(axes, keep),
               Reduce(a, ra, keep, 0, [](double x, double y) { return x + y; }), 1e-5);
        Expect(T(a).Max(axes, keep),
               Reduce(a, ra, keep, -INFINITY, [](double x, double y) { return std::max(x, y); }));
        Expect(T(a).Min(axes, keep),
               Reduce(a, ra, keep, INFINITY, [](double x, double y) { return std::min(x, y); }));
        Ref cnt = Reduce(a, ra, keep, 0, [](double x, double) { return x + 1; });
        Ref sum = Reduce(a, ra, keep, 0, [](double x, double y) { return x + y; });
        Expect(T(a).Mean(axes, keep), Binary(sum, cnt, [](double x, double n) { return x / n; }),
               1e-5);
      }
}

TEST(Tensor, VarAndArgmax) {
  Ref a = Random({4, 6}, 11);
  std::vector<double> want;
  for (int r = 0; r < 4; ++r) {
    double m = 0, v = 0;
    for (int c = 0; c < 6; ++c) m += a.v[r * 6 + c] / 6;
    for (int c = 0; c < 6; ++c) v += (a.v[r * 6 + c] - m) * (a.v[r * 6 + c] - m) / 5;
    want.push_back(v);
  }
  Expect(T(a).Var({1}), Ref{{4}, want}, 1e-5);
  Tensor x = Tensor::FromVector<float>({1, 5, 5, 2, 9, 0, 3, 3}, {2, 4});
  EXPECT_EQ(x.Argmax(1).ToVector<int32_t>(),
            (std::vector<int32_t>{1, 0}));  // first of equal maxima
  EXPECT_EQ(x.Argmax(0).ToVector<int32_t>(), (std::vector<int32_t>{1, 0, 0, 1}));
  EXPECT_EQ(x.Argmax(1, true).shape(), (TensorShape{2, 1}));
}

// ---- movement ----

TEST(Tensor, Movement) {
  Ref a = Random({2, 3, 4}, 21);
  Tensor t = T(a);
  auto at = [&](int i, int j, int k) { return a.v[(i * 3 + j) * 4 + k]; };
  Ref perm{{4, 2, 3}, {}};
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) perm.v.push_back(at(i, j, k));
  Expect(t.Permute({2, 0, 1}), perm);
  Expect(t.Reshape({6, -1}), Ref{{6, 4}, a.v});
  Ref tr{{2, 4, 3}, {}};
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 3; ++j) tr.v.push_back(at(i, j, k));
  Expect(t.Transpose(), tr);
  Ref flip{{2, 3, 4}, {}};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) flip.v.push_back(at(1 - i, j, 3 - k));
  Expect(t.Flip({0, 2}), flip);
  Ref shr{{1, 2, 2}, {at(1, 1, 1), at(1, 1, 2), at(1, 2, 1), at(1, 2, 2)}};
  Expect(t.Shrink({{1, 2}, {1, 3}, {1, 3}}), shr);
  Ref sl{{2, 3, 2}, {}};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k : {0, 2}) sl.v.push_back(at(i, j, k));
  Expect(t.Slice(2, 0, 4, 2), sl);
  Ref neg{{2, 1, 4}, {}};
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) neg.v.push_back(at(i, 2, k));
  Expect(t.Slice(1, -1, 3), neg);
  Expect(t.Unsqueeze(1).Squeeze(1), a);
  Expect(Tensor::FromVector<float>({1, 2}, {2, 1}).Expand({2, 3}), Ref{{2, 3}, {1, 1, 1, 2, 2, 2}});
}

TEST(Tensor, PadCatStack) {
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
  Expect(x.Pad({{1, 0}, {0, 2}}), Ref{{3, 4}, {0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0}});
  Expect(x.Pad({{0, 1}, {1, 0}}, 7), Ref{{3, 3}, {7, 1, 2, 7, 3, 4, 7, 7, 7}});
  Tensor y = Tensor::FromVector<float>({5, 6}, {1, 2});
  Expect(Tensor::Cat({x, y}, 0), Ref{{3, 2}, {1, 2, 3, 4, 5, 6}});
  Expect(Tensor::Cat({x, x}, 1), Ref{{2, 4}, {1, 2, 1, 2, 3, 4, 3, 4}});
  Expect(Tensor::Stack({x, x * 2.0}, 0), Ref{{2, 2, 2}, {1, 2, 3, 4, 2, 4, 6, 8}});
  Expect(Tensor::Stack({x, x * 2.0}, 2), Ref{{2, 2, 2}, {1, 2, 2, 4, 3, 6, 4, 8}});
}

TEST(Tensor, NonContiguousViewsCompose) {
  Ref a = Random({3, 4}, 31), b = Random({4, 3}, 32);
  // transpose, add, reshape, flip: a chain of views over arithmetic
  Tensor got = (T(a).Transpose() + T(b)).Reshape({2, 6}).Flip({1}).Slice(1, 1, 6, 2);
  Ref want{{2, 3}, {}};
  std::vector<double> sum;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) sum.push_back(a.v[j * 4 + i] + b.v[i * 3 + j]);
  for (int r = 0; r < 2; ++r)
    for (int c : {1, 3, 5}) want.v.push_back(sum[r * 6 + (5 - c)]);
  Expect(got, want);
}

// ---- linear algebra and nn ----

Ref MatmulRef(const Ref& a, const Ref& b) {
  int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = b.shape.back();
  int64_t batch = a.n() / (m * k);
  Ref o{a.shape, {}};
  o.shape.back() = n;
  for (int64_t z = 0; z < batch; ++z)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += a.v[z * m * k + i * k + q] * b.v[(b.shape.size() > 2 ? z * k * n : 0) + q * n + j];
        o.v.push_back(s);
      }
  return o;
}

TEST(Tensor, Matmul) {
  Ref a = Random({3, 4}, 41), b = Random({4, 5}, 42);
  Expect(T(a).Matmul(T(b)), MatmulRef(a, b), 1e-5);
  Ref ba = Random({2, 3, 4}, 43), bb = Random({2, 4, 5}, 44);
  Expect(T(ba).Matmul(T(bb)), MatmulRef(ba, bb), 1e-5);
  Expect(T(ba).Matmul(T(b)), MatmulRef(ba, b), 1e-5);  // broadcast batch
  Ref v = Random({4}, 45);
  Ref av = MatmulRef(a, Ref{{4, 1}, v.v});
  Expect(T(a).Matmul(T(v)), Ref{{3}, av.v}, 1e-5);
  Expect(T(Ref{{0, 4}, {}}).Matmul(T(b)), Ref{{0, 5}, {}});
}

TEST(Tensor, SoftmaxLogSoftmaxCrossEntropyOneHot) {
  Ref x = Random({3, 5}, 51);
  Ref sm{{3, 5}, {}}, lsm{{3, 5}, {}};
  for (int r = 0; r < 3; ++r) {
    double m = -INFINITY, s = 0;
    for (int c = 0; c < 5; ++c) m = std::max(m, x.v[r * 5 + c]);
    for (int c = 0; c < 5; ++c) s += std::exp(x.v[r * 5 + c] - m);
    for (int c = 0; c < 5; ++c) {
      sm.v.push_back(std::exp(x.v[r * 5 + c] - m) / s);
      lsm.v.push_back(x.v[r * 5 + c] - m - std::log(s));
    }
  }
  Expect(T(x).Softmax(), sm);
  Expect(T(x).LogSoftmax(-1), lsm);
  std::vector<int32_t> y = {4, 0, 2};
  double ce = -(lsm.v[4] + lsm.v[5] + lsm.v[12]) / 3;
  Expect(T(x).CrossEntropy(Tensor::FromVector(y, {3})), Ref{{}, {ce}});
  EXPECT_EQ(Tensor::FromVector(y, {3}).OneHot(5).ToVector<int32_t>(),
            (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0}));
}

// ---- creation ----

TEST(Tensor, Creation) {
  EXPECT_EQ(Tensor::Zeros({2, 2}).ToVector<float>(), std::vector<float>(4, 0));
  EXPECT_EQ(Tensor::Ones({3}, DType::kI32).ToVector<int32_t>(), std::vector<int32_t>(3, 1));
  EXPECT_EQ(Tensor::Full({2}, 2.5).ToVector<float>(), (std::vector<float>{2.5f, 2.5f}));
  EXPECT_EQ(Tensor::Arange(2, 8, 2).ToVector<int32_t>(), (std::vector<int32_t>{2, 4, 6}));
  EXPECT_EQ(Tensor::Arange(0, 1, 0.25).ToVector<float>(),
            (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(Tensor::Eye(2).ToVector<float>(), (std::vector<float>{1, 0, 0, 1}));
  EXPECT_EQ(Tensor::Scalar(3).shape(), TensorShape{});
  EXPECT_EQ(Tensor::Scalar(3).Item<float>(), 3.0f);
}

TEST(Tensor, SeededRandomNumbersRepeat) {
  Tensor::ManualSeed(42);
  std::vector<float> a = Tensor::Rand({1000}).ToVector<float>(),
                     n = Tensor::Randn({1000}).ToVector<float>();
  std::vector<int32_t> k = Tensor::Randint(3, 9, {1000}).ToVector<int32_t>();
  Tensor::ManualSeed(42);
  EXPECT_EQ(Tensor::Rand({1000}).ToVector<float>(), a);
  EXPECT_EQ(Tensor::Randn({1000}).ToVector<float>(), n);
  EXPECT_EQ(Tensor::Randint(3, 9, {1000}).ToVector<int32_t>(), k);
  double mean = 0, var = 0;
  for (float x : a) EXPECT_TRUE(x >= 0 && x < 1);
  for (float x : n) mean += x / 1000;
  for (float x : n) var += (x - mean) * (x - mean) / 1000;
  EXPECT_NEAR(mean, 0, 0.1);
  EXPECT_NEAR(var, 1, 0.15);
  for (int32_t x : k) EXPECT_TRUE(x >= 3 && x < 9);
  Tensor::ManualSeed(43);
  EXPECT_NE(Tensor::Rand({1000}).ToVector<float>(), a);
}

// ---- errors and printing ----

TEST(Tensor, ShapeErrorsAreRaisedWhenTheOpIsBuilt) {
  Tensor a = Tensor::Zeros({2, 3}), b = Tensor::Zeros({4, 3});
  EXPECT_EQ(
      ErrorOf([&] { a + b; }),
      "add: shapes (2, 3) and (4, 3) do not broadcast; expected equal dims or 1 in each position");
  EXPECT_EQ(ErrorOf([&] {
              a.Reshape({4, 2});
            }),
            "reshape: shape (2, 3) (6 elements) to (4, 2) (8 elements); expected the same number "
            "of elements");
  EXPECT_EQ(ErrorOf([&] { a.Matmul(a); }),
            "matmul: shapes (2, 3) and (2, 3); expected the last dim of the first (3) to equal the "
            "second-to-last of the second (2)");
  EXPECT_EQ(ErrorOf([&] { a.Sum({2}); }),
            "sum: axis 2 of a tensor of shape (2, 3); expected -2 <= axis < 2");
  EXPECT_EQ(ErrorOf([&] {
              Tensor::FromVector<float>({1, 2, 3}, {2, 2});
            }),
            "tensor: 3 values for shape (2, 2) (4 elements)");
  EXPECT_EQ(ErrorOf([&] { a.Item<float>(); }),
            "item: a tensor of shape (2, 3) has 6 elements; expected 1");
  EXPECT_EQ(ErrorOf([&] {
              a.Expand({3, 3});
            }),
            "expand: shape (2, 3) to (3, 3); expected each dim equal or 1");
}

TEST(Tensor, Printing) {
  EXPECT_EQ(Tensor::FromVector<float>({1, 2.5, 3, 4}, {2, 2}).ToString(),
            "tensor([[1.0000, 2.5000],\n        [3.0000, 4.0000]], dtype=f32)");
  EXPECT_EQ(Tensor::FromVector<int32_t>({1, -2}, {2}).ToString(), "tensor([1, -2], dtype=i32)");
  EXPECT_EQ(Tensor::FromVector<float>({1, 2}, {2}).ToString(), "tensor([1., 2.], dtype=f32)");
  EXPECT_EQ(Tensor::FromVector<float>({1e-6f, 2}, {2}).ToString(),
            "tensor([1.0000e-06, 2.0000e+00], dtype=f32)");
  EXPECT_EQ(Tensor::Scalar(1).Lt(2.0).ToString(), "tensor(true, dtype=bool)");
}

}  // namespace
}  // namespace uopc

namespace uopc {
namespace {

// A null Tensor (default-made, or the grad() of a tensor without one) is a clear error in
// every use, never a crash.
TEST(Tensor, ANullTensorIsAClearErrorNeverACrash) {
  Tensor null, x = Tensor::FromVector(std::vector<float>{1, 2}, {2});
  EXPECT_FALSE(static_cast<bool>(null));
  EXPECT_FALSE(static_cast<bool>(x.grad()));
  auto fails = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what()).find("a null Tensor") != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(fails([&] { (void)null.dtype(); }));
  EXPECT_TRUE(fails([&] { (void)x.grad().shape(); }));
  EXPECT_TRUE(fails([&] { (void)x.grad().ToVector<float>(); }));
  EXPECT_TRUE(fails([&] { (void)(x + null); }));
  EXPECT_TRUE(fails([&] { (void)(null * 2.0); }));
  EXPECT_TRUE(fails([&] { null.Realize(); }));
  EXPECT_TRUE(fails([&] { null.Backward(); }));
  EXPECT_TRUE(fails([&] { null.ZeroGrad(); }));
}

}  // namespace
}  // namespace uopc
