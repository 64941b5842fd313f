#include "io/gemm_shapes.h"

#include "engine/error.h"

namespace megasim::io {

void read_fast_accum(JsonReader& r, hw::GemmShape& g) {
  g.fast_accum = r.boolean_or("fast_accum", false);
  if (g.fast_accum && g.dtype != hw::DType::kFp8) {
    r.fail("fast_accum", std::string("true on a ") + hw::to_string(g.dtype) +
                             " GEMM: only fp8 GEMMs take cuBLASLt's fast accumulation");
  }
}

Json gemm_shapes_to_json(const std::vector<hw::GemmShape>& shapes, const std::string& source) {
  Json list = Json::array();
  for (const auto& g : shapes) {
    list.push_back({{"m", g.m},
                    {"n", g.n},
                    {"k", g.k},
                    {"batch", g.batch},
                    {"dtype", hw::to_string(g.dtype)},
                    {"transpose_a", g.transpose_a},
                    {"transpose_b", g.transpose_b}});
    if (g.fast_accum) list.back()["fast_accum"] = true;
  }
  return Json{{"source", source}, {"gemm_shapes", list}};
}

std::vector<hw::GemmShape> read_gemm_shapes(const std::filesystem::path& file) {
  const Json doc = parse_json_file(file);
  JsonReader r(doc, "", file.string());
  r.string("source");
  std::vector<hw::GemmShape> out;
  constexpr std::int64_t kMaxDim = std::int64_t{1} << 30;
  for (JsonReader s : r.object_array("gemm_shapes")) {
    hw::GemmShape g;
    g.m = s.integer("m", 1, kMaxDim);
    g.n = s.integer("n", 1, kMaxDim);
    g.k = s.integer("k", 1, kMaxDim);
    g.batch = s.integer_or("batch", 1, 1, kMaxDim);
    const std::string t = s.choice_or("dtype", "bf16", {"fp32", "tf32", "bf16", "fp16", "fp8"});
    g.dtype = t == "fp32"   ? hw::DType::kFp32
              : t == "tf32" ? hw::DType::kTf32
              : t == "fp16" ? hw::DType::kFp16
              : t == "fp8"  ? hw::DType::kFp8
                            : hw::DType::kBf16;
    g.transpose_a = s.boolean_or("transpose_a", false);
    g.transpose_b = s.boolean_or("transpose_b", false);
    read_fast_accum(s, g);
    s.finish();
    out.push_back(g);
  }
  r.finish();
  if (out.empty()) throw InputError(file.string() + ": gemm_shapes: the list is empty");
  return out;
}

}  // namespace megasim::io
