/* The backend's renderer: a kernel's form (uopc's backends/kernel_form.h) as a C function,
 *   void NAME(void* const* bufs, const int64_t* vars)
 * that runs the whole kernel on the calling thread: buffers by slot, VARs sorted by name.
 * Every dtype but f16 and bf16 (backend_supports says so); ops by kernel_form.h's meanings.
 */
#define _GNU_SOURCE
#include "render_c.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a growing string ---- */

typedef struct text {
  char* p;
  size_t n, cap;
  int failed; /* out of memory */
} text;

static void put(text* t, const char* fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int len = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
    va_end(ap);
    if (len < 0 || t->failed) return;
    if (t->p && t->n + (size_t)len < t->cap) {
      t->n += (size_t)len;
      return;
    }
    size_t cap = 2 * (t->n + (size_t)len + 64);
    char* p = (char*)realloc(t->p, cap);
    if (!p) {
      t->failed = 1;
      return;
    }
    t->p = p, t->cap = cap;
  }
}

/* A formatted string of its own (free it). */
static char* str(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char* s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) s = NULL;
  va_end(ap);
  return s;
}

/* ---- dtypes ---- */

/* C type of a value, of an element in memory, and the helpers' suffix; NULL: not rendered */
static const char* const kValue[] = {"void",     "_Bool",   "int8_t",   "uint8_t", "int16_t",
                                     "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
                                     NULL,       NULL,      "float",    "double"};
static const char* const kMemory[] = {"void",     "uint8_t", "int8_t",   "uint8_t", "int16_t",
                                      "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
                                      NULL,       NULL,      "float",    "double"};
static const char* const kUnsigned[] = {"void",     "_Bool",    "uint8_t",  "uint8_t",  "uint16_t",
                                        "uint16_t", "uint32_t", "uint32_t", "uint64_t", "uint64_t",
                                        NULL,       NULL,       "float",    "double"};
static const char* const kSuffix[] = {"v",   "b",   "i8",  "u8",  "i16",  "u16", "i32",
                                      "u32", "i64", "u64", "f16", "bf16", "f32", "f64"};

int filemap_renders_dtype(uopc_dtype t) {
  return t >= UOPC_DTYPE_VOID && t <= UOPC_DTYPE_F64 && kValue[t] != NULL;
}

static int is_float(uopc_dtype t) { return t == UOPC_DTYPE_F32 || t == UOPC_DTYPE_F64; }
static int is_int(uopc_dtype t) { return t >= UOPC_DTYPE_I8 && t <= UOPC_DTYPE_U64; }

/* ---- the helpers every kernel may call, defined once a binary ---- */

const char* filemap_c_prelude(void) {
  return "#include <math.h>\n"
         "#include <stdint.h>\n"
         "/* floordiv rounds to -infinity, mod takes the divisor's sign, both 0 by 0; shifts\n"
         "   past the width give 0 (or -1); a float to an integer saturates, NaN to 0 */\n"
         "#define INTS(S, T, U, BITS)                                                       \\\n"
         "  static inline T floordiv_##S(T a, T b) {                                        \\\n"
         "    if (b == 0) return 0;                                                         \\\n"
         "    if ((T)-1 < 0 && b == (T)-1) return (T)(0 - (U)a);                            \\\n"
         "    T q = a / b;                                                                  \\\n"
         "    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;                      \\\n"
         "  }                                                                               \\\n"
         "  static inline T mod_##S(T a, T b) {                                             \\\n"
         "    if (b == 0 || ((T)-1 < 0 && b == (T)-1)) return 0;                            \\\n"
         "    T m = a % b;                                                                  \\\n"
         "    return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;                          \\\n"
         "  }                                                                               \\\n"
         "  static inline T shl_##S(T a, T b) { return (b < 0 || b >= BITS) ? 0 : (T)((U)a << b); "
         "} \\\n"
         "  static inline T shr_##S(T a, T b) {                                             \\\n"
         "    return (b < 0 || b >= BITS) ? (a < 0 ? (T)-1 : 0) : (T)(a >> b);              \\\n"
         "  }                                                                               \\\n"
         "  static inline T max_##S(T a, T b) { return a > b ? a : b; }                     \\\n"
         "  static inline T f2##S(double x) {                                               \\\n"
         "    const double lo = (T)-1 < 0 ? -(double)((U)1 << (BITS - 1)) : 0.0;            \\\n"
         "    const double hi = 2.0 * (double)((U)1 << (BITS - 1)) + lo;                   \\\n"
         "    if (x != x) return 0;                                                         \\\n"
         "    if (x <= lo) return (T)lo;                                                    \\\n"
         "    if (x >= hi) return (T)((U)(T)-1 >> ((T)-1 < 0));                             \\\n"
         "    return (T)x;                                                                  \\\n"
         "  }\n"
         "INTS(i8, int8_t, uint8_t, 8) INTS(u8, uint8_t, uint8_t, 8)\n"
         "INTS(i16, int16_t, uint16_t, 16) INTS(u16, uint16_t, uint16_t, 16)\n"
         "INTS(i32, int32_t, uint32_t, 32) INTS(u32, uint32_t, uint32_t, 32)\n"
         "INTS(i64, int64_t, uint64_t, 64) INTS(u64, uint64_t, uint64_t, 64)\n"
         "static inline _Bool max_b(_Bool a, _Bool b) { return a | b; }\n"
         "static inline float max_f32(float a, float b) { return (a != a || b != b) ? NAN : a > b "
         "? a : b; }\n"
         "static inline double max_f64(double a, double b) { return (a != a || b != b) ? NAN : a > "
         "b ? a : b; }\n";
}

/* ---- the renderer ---- */

typedef struct renderer {
  const uopc_kernel_form* f;
  char** expr;           /* node k's C expression */
  uint32_t* uses;        /* how many nodes use node k */
  uint32_t* branch_uses; /* of them, as a WHERE's second or third source */
  text out;
  int depth;
} renderer;

static const uopc_kernel_node* node(const renderer* r, uint32_t k) { return &r->f->nodes[k]; }
static const char* src(const renderer* r, const uopc_kernel_node* n, uint32_t i) {
  return r->expr[n->src[i]];
}
static int is(const uopc_kernel_node* n, const char* op) { return strcmp(n->op, op) == 0; }

/* The buffer or alloc an index's memory is, past any AFTER. */
static const uopc_kernel_node* memory_of(const renderer* r, const uopc_kernel_node* index) {
  const uopc_kernel_node* b = node(r, index->src[0]);
  while (is(b, "after")) b = node(r, b->src[0]);
  return b;
}

static void line(renderer* r, const char* fmt, ...) {
  put(&r->out, "%*s", 2 * (r->depth + 1), "");
  va_list ap;
  va_start(ap, fmt);
  char* s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) r->out.failed = 1;
  va_end(ap);
  if (s) put(&r->out, "%s\n", s);
  free(s);
}

static char* literal(const uopc_kernel_node* n) {
  if (n->dtype == UOPC_DTYPE_BOOL) return str("((_Bool)%d)", n->i != 0);
  if (is_int(n->dtype)) return str("((%s)0x%llxull)", kValue[n->dtype], (unsigned long long)n->i);
  const char* f = n->dtype == UOPC_DTYPE_F32 ? "f" : "";
  if (isnan(n->f)) return str("__builtin_nan%s(\"\")", f);
  if (isinf(n->f)) return str("(%s__builtin_inf%s())", n->f < 0 ? "-" : "", f);
  return str(n->dtype == UOPC_DTYPE_F32 ? "%af" : "%a",
             n->dtype == UOPC_DTYPE_F32 ? (float)n->f : n->f);
}

/* An ALU node's expression, or NULL for an op this renderer does not know. */
static char* alu(const renderer* r, const uopc_kernel_node* n) {
  const uopc_dtype t = n->dtype, in = n->num_src ? node(r, n->src[0])->dtype : t;
  const char *T = kValue[t], *S = kSuffix[t], *a = n->num_src > 0 ? src(r, n, 0) : "",
             *b = n->num_src > 1 ? src(r, n, 1) : "";
  const int f64 = t == UOPC_DTYPE_F64;
  static const char* const kBinary[][2] = {{"fdiv", "/"},   {"cmplt", "<"}, {"cmpne", "!="},
                                           {"cmpeq", "=="}, {"and", "&"},   {"or", "|"},
                                           {"xor", "^"}};
  for (size_t i = 0; i < sizeof kBinary / sizeof kBinary[0]; ++i)
    if (is(n, kBinary[i][0])) return str("(%s %s %s)", a, kBinary[i][1], b);
  if (is(n, "add") || is(n, "mul")) {
    const char* op = is(n, "add") ? "+" : "*";
    if (is_float(t)) return str("(%s %s %s)", a, op, b);
    return str("((%s)((%s)%s %s (%s)%s))", T, kUnsigned[t], a, op, kUnsigned[t], b); /* wraps */
  }
  static const char* const kHelpers[] = {"floordiv", "mod", "shl", "shr", "max"};
  for (size_t i = 0; i < sizeof kHelpers / sizeof kHelpers[0]; ++i)
    if (is(n, kHelpers[i])) return str("%s_%s(%s, %s)", kHelpers[i], S, a, b);
  static const char* const kMath[][3] = {{"log2", "log2f", "log2"},
                                         {"sin", "sinf", "sin"},
                                         {"sqrt", "sqrtf", "sqrt"},
                                         {"trunc", "truncf", "trunc"}};
  for (size_t i = 0; i < sizeof kMath / sizeof kMath[0]; ++i)
    if (is(n, kMath[i][0])) return str("%s(%s)", kMath[i][1 + f64], a);
  /* (exp2 of a float: the double's, rounded, as uopc's reference computes it) */
  if (is(n, "exp2")) return f64 ? str("exp2(%s)", a) : str("((float)exp2((double)%s))", a);
  if (is(n, "recip")) return str("((%s)1 / %s)", T, a);
  if (is(n, "where")) return str("(%s ? %s : %s)", a, b, src(r, n, 2));
  if (is(n, "mulacc")) return str("%s(%s, %s, %s)", f64 ? "fma" : "fmaf", a, b, src(r, n, 2));
  if (is(n, "cast")) {
    if (t == UOPC_DTYPE_BOOL) return str("(%s != 0)", a);
    if (is_int(t) && is_float(in)) return str("f2%s((double)%s)", S, a);
    return str("((%s)%s)", T, a);
  }
  if (is(n, "bitcast"))
    return str("({ %s to_; %s from_ = %s; __builtin_memcpy(&to_, &from_, sizeof to_); to_; })", T,
               kValue[in], a);
  return NULL;
}

/* Node k: a line of the function, or an expression its users take. Returns an error. */
static const char* emit(renderer* r, uint32_t k) {
  const uopc_kernel_node* n = node(r, k);
  char* e = NULL;
  if (n->dtype != UOPC_DTYPE_VOID && !filemap_renders_dtype(n->dtype) && !is(n, "index"))
    return "a dtype this backend does not render (f16 or bf16)";
  if (is(n, "sink")) return NULL;
  if (is(n, "const")) {
    e = literal(n);
  } else if (is(n, "var")) {
    e = str("%s", n->name);
  } else if (is(n, "buffer")) {
    e = str("b%lld", (long long)n->i);
  } else if (is(n, "alloc")) {
    e = str("a%u", k);
    line(r, "%s %s[%lld];", kValue[n->dtype], e, (long long)n->size);
  } else if (is(n, "after")) {
    e = str("%s", src(r, n, 0));
  } else if (is(n, "barrier")) {
    /* nothing to wait for: every range is a loop here, a block's threads run in turn */
  } else if (is(n, "range")) {
    e = str("r%u", k);
    line(r, "for (%s %s = 0; %s < %s; %s++) {", kValue[n->dtype], e, e, src(r, n, 0), e);
    r->depth++;
  } else if (is(n, "end")) {
    for (uint32_t i = 1; i < n->num_src; ++i)
      if (is(node(r, n->src[i]), "range")) r->depth--, line(r, "}");
  } else if (is(n, "index")) {
    e = str("%s[%s]", src(r, n, 0), src(r, n, 1));
  } else if (is(n, "load")) {
    const int bool_in_memory =
        n->dtype == UOPC_DTYPE_BOOL && is(memory_of(r, node(r, n->src[0])), "buffer");
    char* value = str(bool_in_memory ? "(%s != 0)" : "(%s)", src(r, n, 0));
    /* read only where a WHERE picks it, where that is its only use: the index of a load a
       WHERE does not pick may be out of range (a pad's) */
    if (r->uses[k] > 0 && r->uses[k] == r->branch_uses[k]) {
      e = value;
    } else {
      e = str("v%u", k);
      line(r, "%s %s = %s;", kValue[n->dtype], e, value);
      free(value);
    }
  } else if (is(n, "store")) {
    line(r, "%s = %s;", src(r, n, 0), src(r, n, 1));
  } else {
    char* value = alu(r, n);
    if (!value) return "an op this backend does not render";
    e = str("x%u", k);
    line(r, "%s %s = %s;", kValue[n->dtype], e, value);
    free(value);
  }
  r->expr[k] = e;
  return NULL;
}

char* filemap_render_c(const uopc_kernel_form* f, const char* name, char* why, size_t why_size) {
  renderer r = {.f = f};
  r.expr = (char**)calloc(f->num_nodes + 1, sizeof *r.expr);
  r.uses = (uint32_t*)calloc(f->num_nodes + 1, sizeof *r.uses);
  r.branch_uses = (uint32_t*)calloc(f->num_nodes + 1, sizeof *r.branch_uses);
  const char* error = !r.expr || !r.uses || !r.branch_uses ? "out of memory" : NULL;
  for (uint32_t k = 0; !error && k < f->num_nodes; ++k)
    for (uint32_t i = 0; i < f->nodes[k].num_src; ++i) {
      r.uses[f->nodes[k].src[i]]++;
      if (i > 0 && is(&f->nodes[k], "where")) r.branch_uses[f->nodes[k].src[i]]++;
    }
  if (!error) {
    put(&r.out, "void %s(void* const* bufs, const int64_t* vars) {\n", name);
    put(&r.out, "  (void)bufs; (void)vars;\n");
    for (uint32_t s = 0; s < f->num_buffers; ++s)
      if (f->buffers[s] != UINT32_MAX) {
        const char* m = kMemory[f->nodes[f->buffers[s]].dtype];
        if (!m)
          error = "a buffer of a dtype this backend does not render (f16 or bf16)";
        else
          put(&r.out, "  %s* restrict b%u = (%s*)bufs[%u];\n", m, s, m, s);
      }
    for (uint32_t v = 0; v < f->num_vars; ++v)
      put(&r.out, "  const int32_t %s = (int32_t)vars[%u];\n", f->nodes[f->vars[v]].name, v);
  }
  uint32_t k = 0;
  for (; !error && k < f->num_nodes; ++k) error = emit(&r, k);
  if (!error && r.out.failed) error = "out of memory";
  if (error) {
    snprintf(why, why_size, "filemap: render %s: %s%s%s", name, error, k ? " (a " : "",
             k ? f->nodes[k - 1].op : "");
    if (k && strlen(why) + 2 < why_size) strcat(why, ")");
  }
  put(&r.out, "}\n");
  for (uint32_t i = 0; i < f->num_nodes; ++i) free(r.expr[i]);
  free(r.expr), free(r.uses), free(r.branch_uses);
  if (error || r.out.failed) {
    free(r.out.p);
    return NULL;
  }
  return r.out.p;
}
