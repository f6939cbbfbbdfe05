#include "runtime/cublaslt_matmul.h"

#include <algorithm>

#include "codegen/schedule.h"
#include "runtime/cublaslt_api.h"
#include "ir/error.h"
#include "ir/matmul.h"

namespace kforge {

void check_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw UserError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                  cublaslt().cublasLtGetStatusName(s) + " (" + cublaslt().cublasLtGetStatusString(s) + ")");
}

namespace {

cublasLtEpilogue_t lt_epilogue(Epilogue e) {
  switch (e) {
    case Epilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::relu: return CUBLASLT_EPILOGUE_RELU;
    case Epilogue::bias_relu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Epilogue::gelu: return CUBLASLT_EPILOGUE_GELU;
    case Epilogue::bias_gelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

template <class T>
void set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, T v) {
  KF_CUBLAS(cublaslt().cublasLtMatmulDescSetAttribute(d, a, &v, sizeof v));
}

// An operand's element type: f32, the 16-bit copies of fp16 and fp16x3 steps (f16), or a half-precision task's own
// tensors read directly (f16, bf16).
cudaDataType_t operand_type(const nlohmann::json& operand) {
  const std::string dtype = operand.value("dtype", "f32");
  if (dtype == "f32") return CUDA_R_32F;
  if (dtype == "f16") return CUDA_R_16F;
  if (dtype == "bf16") return CUDA_R_16BF;
  throw UserError("operand dtype '" + dtype + "' (f32, f16 or bf16)");
}

// Bytes into its buffer an operand is read from (a triangular product's row blocks).
size_t offset_bytes(const nlohmann::json& operand) {
  return operand.value("offset", size_t(0)) * (operand_type(operand) == CUDA_R_32F ? 4 : 2);
}

// The column-major layout of a stored row-major matrix that the product reads as `rows` x `cols`
// (transposed: the stored matrix is cols x rows). A row-major R x C matrix with leading dim ld is, read
// column-major, the C x R matrix with the same leading dim: its transpose, for free.
cublasLtMatrixLayout_t layout(const nlohmann::json& operand, int64_t rows, int64_t cols, int64_t batch) {
  bool t = operand.value("transposed", false);
  int64_t stored_rows = t ? cols : rows, stored_cols = t ? rows : cols;
  int64_t ld = operand.at("ld").get<int64_t>();  // at least stored_cols: check_library_step
  cublasLtMatrixLayout_t l;
  KF_CUBLAS(cublaslt().cublasLtMatrixLayoutCreate(&l, operand_type(operand), uint64_t(stored_cols),
                                                  uint64_t(stored_rows), ld));
  int32_t count = int32_t(batch);
  int64_t stride = operand.at("batch_stride").get<int64_t>();
  KF_CUBLAS(cublaslt().cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
  KF_CUBLAS(cublaslt().cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  return l;
}

}  // namespace

// PyTorch's tensors are row-major, cuBLASLt's matrices column-major. The standard trick: a row-major
// matrix is its own transpose in column-major, so C = A @ B (row-major, M x N) is computed as
// C^T = B^T A^T (column-major, N x M): cuBLASLt's "A" is our B, its "B" our A, its m, n = our n, m, and C
// needs no transposition at all. A transposed operand (a permute view) just flips that operand's op flag.
LtMatmul::LtMatmul(cublasLtHandle_t handle, const nlohmann::json& lib, const std::string& step) : step_(step) {
  try {
    int64_t m = lib.at("m"), n = lib.at("n"), k = lib.at("k"), batch = lib.at("batch");
    Epilogue e = epilogue_from_string(lib.at("epilogue"));
    bias_ = has_bias(e);
    accumulate_ = lib.value("accumulate", false);
    workspace_bytes_ = size_t(std::max<int64_t>(0, lib.at("workspace_bytes").get<int64_t>()));  // checked: [0, 4 GiB]
    const Precision p = precision_from_string(lib.at("precision"));
    // fp16 and fp16x3 read 16-bit copies (the layouts' types) and sum in fp32 (CUBLAS_COMPUTE_32F): tensor cores.
    KF_CUBLAS(cublaslt().cublasLtMatmulDescCreate(&desc_, p == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                                  CUDA_R_32F));
    // Their alpha (the copies' scales undone) is computed on the device: alpha and beta are device pointers. A
    // direct product of a task's half-precision tensors (bf16 too) has no copies: alpha 1 from the host.
    device_alpha_ = reads_half_copies(p) && !lib.value("direct", false);
    if (device_alpha_) set(desc_, CUBLASLT_MATMUL_DESC_POINTER_MODE, CUBLASLT_POINTER_MODE_DEVICE);

    const auto &a = lib.at("a"), &b = lib.at("b");
    set(desc_, CUBLASLT_MATMUL_DESC_TRANSA, b.value("transposed", false) ? CUBLAS_OP_T : CUBLAS_OP_N);  // lt A = our B
    set(desc_, CUBLASLT_MATMUL_DESC_TRANSB, a.value("transposed", false) ? CUBLAS_OP_T : CUBLAS_OP_N);  // lt B = our A
    set(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(e));
    // The bias runs along cuBLASLt's rows, our columns (n): Linear's bias. One bias for every batch entry.
    if (bias_) set(desc_, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, int64_t(0));
    lt_a_ = layout(b, k, n, batch);  // our B, read k x n
    lt_b_ = layout(a, m, k, batch);  // our A, read m x k
    lt_c_ = layout(lib.at("c"), m, n, batch);

    offset_a_ = offset_bytes(a);
    offset_b_ = offset_bytes(b);
    offset_c_ = offset_bytes(lib.at("c"));
    cublasLtMatmulPreference_t pref;
    KF_CUBLAS(cublaslt().cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = workspace_bytes_;
    KF_CUBLAS(cublaslt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    // Plans promise 16-byte-aligned buffers (LoadedPlan::run checks), not the 256 bytes cuBLASLt assumes; an
    // offset keeps the largest power of two (up to 16) dividing it. (cuBLASLt's A is our B: see below.)
    auto aligned = [](size_t offset) { return uint32_t(offset % 16 == 0 ? 16 : offset & (~offset + 1)); };
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, aligned(offset_b_)}, {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, aligned(offset_a_)},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, aligned(offset_c_)}, {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, aligned(offset_c_)}};
    for (auto [attr, align] : alignments)
      KF_CUBLAS(cublaslt().cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof align));
    // A 16-bit result's split-K pieces are summed in fp32 (the compute type), never in the result's 16 bits (in place,
    // or in the output type): each piece rounded to 16 bits before the sum adds their roundings, where PyTorch's
    // product rounds once.
    if (lib.at("c").value("dtype", "f32") != "f32") {
      const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      KF_CUBLAS(cublaslt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes));
    }
    cublasLtMatmulHeuristicResult_t found[kMatmulAlgos];
    int returned = 0;
    cublasStatus_t s = cublaslt().cublasLtMatmulAlgoGetHeuristic(handle, desc_, lt_a_, lt_b_, lt_c_, lt_c_, pref, kMatmulAlgos,
                                                      found, &returned);
    cublaslt().cublasLtMatmulPreferenceDestroy(pref);
    KF_CUBLAS(s);
    if (returned == 0)
      throw UserError("cuBLASLt has no algorithm for this product (m " + std::to_string(m) + ", n " + std::to_string(n) +
                      ", k " + std::to_string(k) + ", epilogue " + to_string(e) + ")");
    candidates_ = returned;
    algo_used_ = std::clamp(lib.value("algo", 0), 0, returned - 1);
    algo_ = found[algo_used_].algo;
  } catch (const UserError& err) {
    throw UserError("library step '" + step + "': " + err.what());
  } catch (const nlohmann::json::exception& err) {
    throw UserError("library step '" + step + "': malformed parameters: " + err.what());
  }
}

LtMatmul::~LtMatmul() {
  if (lt_c_) cublaslt().cublasLtMatrixLayoutDestroy(lt_c_);
  if (lt_b_) cublaslt().cublasLtMatrixLayoutDestroy(lt_b_);
  if (lt_a_) cublaslt().cublasLtMatrixLayoutDestroy(lt_a_);
  if (desc_) cublaslt().cublasLtMatmulDescDestroy(desc_);
}

void LtMatmul::run(cublasLtHandle_t handle, const std::vector<CUdeviceptr>& args, CUstream stream) {
  const size_t want = 4 + bias_ + device_alpha_;
  if (args.size() != want)
    throw UserError("library step '" + step_ + "' takes " + std::to_string(want) + " buffers, got " + std::to_string(args.size()));
  auto ptr = [&](size_t i) { return reinterpret_cast<void*>(args[i]); };
  if (bias_) set(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(ptr(3)));
  // beta: 0, or 1 where this step adds its product to c (a piece of a cut reduction); on the device: the
  // alpha buffer's [alpha, 0, 1].
  const float host_alpha = 1.0f, host_beta = accumulate_ ? 1.0f : 0.0f;
  const float* alpha = device_alpha_ ? static_cast<const float*>(ptr(args.size() - 2)) : &host_alpha;
  const float* beta = device_alpha_ ? alpha + (accumulate_ ? 2 : 1) : &host_beta;
  const char* a = static_cast<const char*>(ptr(0)) + offset_a_;
  const char* b = static_cast<const char*>(ptr(1)) + offset_b_;
  char* c = static_cast<char*>(ptr(2)) + offset_c_;
  // Operands swapped: see the column-major note above the constructor.
  KF_CUBLAS(cublaslt().cublasLtMatmul(handle, desc_, alpha, b, lt_a_, a, lt_b_, beta, c, lt_c_, c, lt_c_,
                           &algo_, ptr(args.size() - 1), workspace_bytes_, reinterpret_cast<cudaStream_t>(stream)));
}

}  // namespace kforge
