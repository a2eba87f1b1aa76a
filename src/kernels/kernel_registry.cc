// The traits of every weight dtype and the vector ops, per kernel set (see kernel_registry.h). Adding an
// instruction set is a column here (the entries it speeds up) and a folder of sources; adding a weight dtype is one
// entry here.
#include "kernels/kernel_registry.h"

#include "kernels/amx/amx_kernels.h"
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx_vnni/avx_vnni_kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/row_int8.h"

namespace pagoda::kernels {
namespace {

const WeightTypeTraits kWeightTypes[] = {
    {.dtype = DType::kF32,
     .kernels = {.ref = {.f32 = ref::matmul_f32},
                 .avx2 = {.f32 = avx2::matmul_f32},
                 .avx512 = {.f32 = avx512::matmul_f32}}},
    {.dtype = DType::kF16,
     .kernels = {.ref = {.f32 = ref::matmul_f16},
                 .avx2 = {.f32 = avx2::matmul_f16},
                 .avx512 = {.f32 = avx512::matmul_f16}}},
    {.dtype = DType::kBF16,
     .kernels = {.ref = {.f32 = ref::matmul_bf16},
                 .avx2 = {.f32 = avx2::matmul_bf16},
                 .avx512 = {.f32 = avx512::matmul_bf16},
                 .avx512_bf16 = {.f32 = avx512_bf16::matmul_bf16}}},
    // GGUF's blocks as stored; every level multiplies them repacked.
    {.dtype = DType::kQ8_0,
     .kernels = {.ref = {ref::matmul_q8_0, ref::matmul_q8_0_q8_0}, .avx2 = {avx2::matmul_q8_0, avx2::matmul_q8_0_q8_0}},
     .layouts = {.ref = {DType::kQ8_0x8}, .avx512 = {DType::kQ8_0x16, DType::kQ8_0x8}}},
    {.dtype = DType::kQ4_0,
     .kernels = {.ref = {ref::matmul_q4_0, ref::matmul_q4_0_q8_0}, .avx2 = {avx2::matmul_q4_0, avx2::matmul_q4_0_q8_0}},
     .layouts = {.ref = {DType::kQ4_0x8}, .avx512 = {DType::kQ4_0x16, DType::kQ4_0x8}}},
    {.dtype = DType::kInt8,
     .kernels = {.ref = {.f32 = ref::matmul_int8, .int8 = ref::matmul_int8_int8},
                 .avx2 = {.f32 = avx2::matmul_int8, .int8 = avx2::matmul_int8_int8}},
     .layouts = {.ref = {DType::kInt8x8}, .avx512 = {DType::kInt8x16, DType::kInt8x8}}},
    {.dtype = DType::kAwqInt4G32,
     .kernels = {.ref = {ref::matmul_awq_int4_g32, ref::matmul_awq_int4_g32_q8_0},
                 .avx2 = {avx2::matmul_awq_int4_g32, avx2::matmul_awq_int4_g32_q8_0}},
     .layouts = {.ref = {DType::kAwqInt4x8}, .avx512 = {DType::kAwqInt4x16, DType::kAwqInt4x8}}},
    {.dtype = DType::kAwqInt4G64,
     .kernels = {.ref = {ref::matmul_awq_int4_g64, ref::matmul_awq_int4_g64_q8_0},
                 .avx2 = {avx2::matmul_awq_int4_g64, avx2::matmul_awq_int4_g64_q8_0}},
     .layouts = {.ref = {DType::kAwqInt4x8}, .avx512 = {DType::kAwqInt4x16, DType::kAwqInt4x8}}},
    {.dtype = DType::kAwqInt4G128,
     .kernels = {.ref = {ref::matmul_awq_int4_g128, ref::matmul_awq_int4_g128_q8_0},
                 .avx2 = {avx2::matmul_awq_int4_g128, avx2::matmul_awq_int4_g128_q8_0}},
     .layouts = {.ref = {DType::kAwqInt4x8}, .avx512 = {DType::kAwqInt4x16, DType::kAwqInt4x8}}},
    // The layouts made at load.
    {.dtype = DType::kQ4_0x8,
     .kernels = {.ref = {ref::matmul_q4_0x8, ref::matmul_q4_0x8_q8_0},
                 .avx2 = {avx2::matmul_q4_0x8, avx2::matmul_q4_0x8_q8_0},
                 .avx_vnni = {avx_vnni::matmul_q4_0x8, avx_vnni::matmul_q4_0x8_q8_0},
                 .avx_vnni_evex = {avx_vnni_evex::matmul_q4_0x8, avx_vnni_evex::matmul_q4_0x8_q8_0}}},
    {.dtype = DType::kQ8_0x8,
     .kernels = {.ref = {ref::matmul_q8_0x8, ref::matmul_q8_0x8_q8_0},
                 .avx2 = {avx2::matmul_q8_0x8, avx2::matmul_q8_0x8_q8_0},
                 .avx_vnni = {avx_vnni::matmul_q8_0x8, avx_vnni::matmul_q8_0x8_q8_0},
                 .avx_vnni_evex = {avx_vnni_evex::matmul_q8_0x8, avx_vnni_evex::matmul_q8_0x8_q8_0}}},
    {.dtype = DType::kInt8x8,
     .kernels = {.ref = {.f32 = ref::matmul_int8x8, .int8 = ref::matmul_int8x8_int8},
                 .avx2 = {.f32 = avx2::matmul_int8x8, .int8 = avx2::matmul_int8x8_int8},
                 .avx_vnni = {.f32 = avx_vnni::matmul_int8x8, .int8 = avx_vnni::matmul_int8x8_int8},
                 .avx_vnni_evex = {.f32 = avx_vnni_evex::matmul_int8x8, .int8 = avx_vnni_evex::matmul_int8x8_int8}}},
    {.dtype = DType::kAwqInt4x8,
     .kernels = {.ref = {ref::matmul_awq_int4x8, ref::matmul_awq_int4x8_q8_0},
                 .avx2 = {avx2::matmul_awq_int4x8, avx2::matmul_awq_int4x8_q8_0},
                 .avx_vnni = {avx_vnni::matmul_awq_int4x8, avx_vnni::matmul_awq_int4x8_q8_0},
                 .avx_vnni_evex = {avx_vnni_evex::matmul_awq_int4x8, avx_vnni_evex::matmul_awq_int4x8_q8_0}}},
    {.dtype = DType::kQ4_0x16,
     .kernels = {.ref = {ref::matmul_q4_0x16, ref::matmul_q4_0x16_q8_0},
                 .avx512 = {avx512::matmul_q4_0x16, avx512::matmul_q4_0x16_q8_0}}},
    {.dtype = DType::kQ8_0x16,
     .kernels = {.ref = {ref::matmul_q8_0x16, ref::matmul_q8_0x16_q8_0},
                 .avx512 = {avx512::matmul_q8_0x16, avx512::matmul_q8_0x16_q8_0}}},
    {.dtype = DType::kAwqInt4x16,
     .kernels = {.ref = {ref::matmul_awq_int4x16, ref::matmul_awq_int4x16_q8_0},
                 .avx512 = {avx512::matmul_awq_int4x16, avx512::matmul_awq_int4x16_q8_0}}},
    {.dtype = DType::kInt8x16,
     .kernels = {.ref = {.f32 = ref::matmul_int8x16, .int8 = ref::matmul_int8x16_int8},
                 .avx512 = {.f32 = avx512::matmul_int8x16, .int8 = avx512::matmul_int8x16_int8},
                 .amx = {.f32 = amx::matmul_int8x16, .int8 = amx::matmul_int8x16_int8}}},
};

const PerKernelSet<VectorKernels> kVectorKernels{
    .ref = {.quantize_row_q8_0 = quant::quantize_row_q8_0,
            .quantize_row_int8 = quant::quantize_int8_values,
            .rmsnorm = ref::rmsnorm,
            .rmsnorm_q8_0 = ref::rmsnorm_q8_0,
            .dot = ref::dot,
            .axpy = ref::axpy,
            .silu_mul = ref::silu_mul,
            .gelu_mul = ref::gelu_mul,
            .paged_attention = ref::paged_attention,
            .softmax = ref::softmax,
            .rope = ref::rope},
    .avx2 = {.quantize_row_q8_0 = avx2::quantize_row_q8_0,
             .quantize_row_int8 = avx2::quantize_row_int8,
             .rmsnorm = avx2::rmsnorm,
             .rmsnorm_q8_0 = avx2::rmsnorm_q8_0,
             .dot = avx2::dot,
             .axpy = avx2::axpy,
             .silu_mul = avx2::silu_mul,
             .gelu_mul = avx2::gelu_mul,
             .paged_attention = avx2::paged_attention,
             .softmax = avx2::softmax,
             .rope = avx2::rope},
    .avx512 = {.quantize_row_q8_0 = avx512::quantize_row_q8_0,
               .quantize_row_int8 = avx512::quantize_row_int8,
               .rmsnorm = avx512::rmsnorm,
               .rmsnorm_q8_0 = avx512::rmsnorm_q8_0,
               .dot = avx512::dot,
               .axpy = avx512::axpy,
               .silu_mul = avx512::silu_mul,
               .gelu_mul = avx512::gelu_mul,
               .paged_attention = avx512::paged_attention,
               .softmax = avx512::softmax,
               .rope = avx512::rope},
};

}  // namespace

std::span<const WeightTypeTraits> weight_type_traits() { return kWeightTypes; }
const PerKernelSet<VectorKernels>& vector_kernels() { return kVectorKernels; }

}  // namespace pagoda::kernels
