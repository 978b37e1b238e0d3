"""Kernel categories (issue 12 §4), decided by reading the names.

TABLE holds every kernel that has >= 1 % of kernel time in a trace under shared/traces (copies in
tests/data: nsys and Kineto): each demangled name with >= 1 % of its trace's kernel time, and, for nsys
exports, the most time-consuming demangled instance of each short name with >= 1 %. An entry is a
prefix of the demangled name (for PyTorch's generic elementwise launchers, up to the functor that names
the operation) and the expected category. The test fails when a kernel of that share has no entry, when
an entry matches nothing (stale), or when the rules disagree with the table.
"""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard.analysis.categories import categorize, default_rules, parse_rules
from dashboard.analysis.kernel_times import kernel_durations
from dashboard.data.trace import load_trace

from paths import DATA

TRACES = sorted((DATA / "nsys").glob("*.sqlite")) + sorted((DATA / "kineto").glob("*.json.gz"))


def _stem(path) -> str:
    return path.name.removesuffix(".sqlite").removesuffix(".json.gz")


TABLE: dict[str, list[tuple[str, str]]] = {
    'nsys2022.2_a100_saxpy_mpi_backtraces': [
        ('saxpy(double *, double *, double *, double, int)', 'elementwise/activation'),
    ],
    'nsys2024.5_a100_cloverleaf': [
        ('void clover::par_ranged2d_kernel<PdV_kernel(bool, int, int, int, int, double, cl', 'other'),
        ('void clover::par_reduce_kernel<calc_dt_kernel(global_variables &, int, int, int,', 'elementwise/activation'),
        ('void clover::par_ranged2d_kernel<accelerate_kernel(int, int, int, int, double, c', 'other'),
        ('void clover::par_ranged2d_kernel<viscosity_kernel(int, int, int, int, clover::Bu', 'other'),
        ('void clover::par_ranged2d_kernel<advec_mom_kernel(int, int, int, int, clover::Bu', 'other'),
        ('void clover::par_ranged2d_kernel<ideal_gas_kernel(int, int, int, int, clover::Bu', 'other'),
        ('void clover::par_ranged2d_kernel<advec_cell_kernel(int, int, int, int, int, int,', 'other'),
        ('void clover::par_ranged2d_kernel<flux_calc_kernel(int, int, int, int, double, cl', 'other'),
        ('void clover::par_ranged2d_kernel<reset_field_kernel(int, int, int, int, clover::', 'other'),
        ('void clover::par_ranged2d_kernel<revert_kernel(int, int, int, int, clover::Buffe', 'other'),
        ('void clover::par_reduce_kernel<field_summary(global_variables &, parallel_ &)::[', 'elementwise/activation'),
        ('void clover::par_ranged1d_kernel<update_halo_kernel(int, int, int, int, const st', 'other'),
    ],
    'nsys2024.6_h100_nvfuser': [
        ('<unnamed>::nvfuser_none_f0_c0_r0_g0(<unnamed>::Tensor<<unnamed>::__half, (int)3,', 'other'),
        ('nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN', 'GEMM'),
        ('void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<float, (', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<(int)4, at::native::AbsFunctor<c1', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<(int)4, at::native::BinaryFunctor', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_a', 'elementwise/activation'),
        ('void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<bool, at::', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<(int)4, at::native::<unnamed>::Co', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctorOn', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<(int)4, at::native::AUnaryFunctor', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<c', 'elementwise/activation'),
    ],
    'nsys2025.5_rtx3060_cuda_graph_launch': [
        ('add_one(const float *, float *, int)', 'other'),
    ],
    'nsys2026.2_2gpu_nccl_after': [
        ('void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64', 'attention'),
        ('nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN', 'GEMM'),
        ('ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)', 'communication'),
        (
            'void at::native::elementwise_kernel<(int)128, (int)2, void '
            'at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<floa',
            'elementwise/activation',
        ),
        ('void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda', 'memory'),
        ('void at::native::vectorized_elementwise_kernel<(int)8, at::native::bfloat16_copy', 'memory'),
        (
            'void at::native::elementwise_kernel<(int)128, (int)4, void '
            'at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel',
            'memory',
        ),
        ('nvjet_tst_192x208_64x4_1x1_h_bz_coopB_bias_TNT', 'GEMM'),
        (
            'void at::native::elementwise_kernel<(int)128, (int)2, void '
            'at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel',
            'memory',
        ),
        (
            'void at::native::elementwise_kernel<(int)128, (int)4, void '
            'at::native::gpu_kernel_impl<at::native::BinaryFunctor<float, floa',
            'elementwise/activation',
        ),
        ('void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<float>,', 'elementwise/activation'),
        ('void at::native::<unnamed>::vectorized_layer_norm_kernel<float, float, (bool)0>(', 'normalisation'),
        (
            'void at::native::elementwise_kernel<(int)128, (int)4, void '
            'at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10:',
            'elementwise/activation',
        ),
        ('void at::native::vectorized_elementwise_kernel<(int)4, void at::native::<unnamed', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_a', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<(int)8, at::native::GeluCUDAKerne', 'elementwise/activation'),
        (
            'void at::native::elementwise_kernel<(int)128, (int)2, void '
            'at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<fl',
            'elementwise/activation',
        ),
        ('void at::native::<unnamed>::CatArrayBatchedCopy_vectorized<at::native::<unnamed>', 'memory'),
    ],
    'nsys2026.2_2gpu_nccl_before': [
        ('void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64', 'attention'),
        ('nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN', 'GEMM'),
        (
            'void at::native::elementwise_kernel<(int)128, (int)2, void '
            'at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<floa',
            'elementwise/activation',
        ),
        ('ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)', 'communication'),
        ('void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda', 'memory'),
        ('void at::native::vectorized_elementwise_kernel<(int)8, at::native::bfloat16_copy', 'memory'),
        (
            'void at::native::elementwise_kernel<(int)128, (int)4, void '
            'at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel',
            'memory',
        ),
        ('nvjet_tst_192x208_64x4_1x1_h_bz_coopB_bias_TNT', 'GEMM'),
        (
            'void at::native::elementwise_kernel<(int)128, (int)2, void '
            'at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel',
            'memory',
        ),
        (
            'void at::native::elementwise_kernel<(int)128, (int)4, void '
            'at::native::gpu_kernel_impl<at::native::BinaryFunctor<float, floa',
            'elementwise/activation',
        ),
        ('void at::native::<unnamed>::vectorized_layer_norm_kernel<float, float, (bool)0>(', 'normalisation'),
        ('void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<float>,', 'elementwise/activation'),
        (
            'void at::native::elementwise_kernel<(int)128, (int)4, void '
            'at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10:',
            'elementwise/activation',
        ),
        ('void at::native::vectorized_elementwise_kernel<(int)4, void at::native::<unnamed', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_a', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<(int)8, at::native::GeluCUDAKerne', 'elementwise/activation'),
        (
            'void at::native::elementwise_kernel<(int)128, (int)2, void '
            'at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<fl',
            'elementwise/activation',
        ),
        ('void at::native::<unnamed>::CatArrayBatchedCopy_vectorized<at::native::<unnamed>', 'memory'),
    ],
    'nsys2026.2_h100_2gpu_torchrun_1s': [
        ('sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma', 'GEMM'),
        ('sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffm', 'GEMM'),
        ('void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at:', 'elementwise/activation'),
        (
            'void at::native::elementwise_kernel<(int)128, (int)2, void '
            'at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<floa',
            'elementwise/activation',
        ),
        ('void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_a', 'elementwise/activation'),
    ],
    'a100_3streams_event_sync': [
        ('ampere_sgemm_128x64_nn', 'GEMM'),
    ],
    'b200_eager': [
        ('bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp2', 'GEMM'),
        ('void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::B', 'communication'),
        ('bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16d', 'GEMM'),
        ('std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::ty', 'normalisation'),
        (
            'void at::native::elementwise_kernel<128, 4, '
            'at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda',
            'memory',
        ),
        ('nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT', 'GEMM'),
        ('fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentCon', 'attention'),
        ('void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<', 'MoE'),
        ('nvjet_tst_64x16_64x16_2x4_2cta_h_bz_bias_TNT', 'GEMM'),
        ('nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN', 'GEMM'),
        ('fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvSlidingOrChunkedCausalP16VarSeqQ128Kv', 'attention'),
        ('void moe::dev::routing::routingIndicesHistogramKernel<moe::dev::routing::routing', 'MoE'),
        ('void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQu', 'elementwise/activation'),
        ('void moe::dev::routing::routingIndicesOffsetsKernel<moe::dev::routing::routingRe', 'MoE'),
        ('void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::F', 'memory'),
        ('void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::B', 'elementwise/activation'),
    ],
    'h100_qwen1.5_0.5b_chat': [
        ('sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_e', 'GEMM'),
        (
            'void at::native::elementwise_kernel<128, 4, '
            'at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFlo',
            'elementwise/activation',
        ),
        (
            'void at::native::elementwise_kernel<128, 4, '
            'at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda',
            'memory',
        ),
        ('void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, ', 'attention'),
        ('void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymo', 'memory'),
        (
            'void at::native::elementwise_kernel<128, 4, '
            'at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BF',
            'elementwise/activation',
        ),
        (
            'void at::native::elementwise_kernel<128, 2, '
            'at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, fl',
            'elementwise/activation',
        ),
        ('void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda', 'memory'),
        ('void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespa', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10:', 'elementwise/activation'),
        ('void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kern', 'memory'),
        ('void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c1', 'elementwise/activation'),
        ('void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::M', 'elementwise/activation'),
        (
            'void at::native::elementwise_kernel<128, 4, '
            'at::native::gpu_kernel_impl_nocast<at::native::neg_kernel_cuda(at::Ten',
            'elementwise/activation',
        ),
    ],
    'rocm_vllm_decode_graph_replay': [
        ('_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1', 'GEMM'),
        ('_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu', 'GEMM'),
        ('kernel_unified_attention_3d', 'attention'),
        ('Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1_SN_LDSB1_AFC1', 'GEMM'),
        ('_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineOnePassINS_27R', 'normalisation'),
        ('triton_poi_fused__to_copy_1', 'memory'),
        ('Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT448x32x64_MI16x16x1_SN_LDSB1_AFC1', 'GEMM'),
        ('Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x256_MI16x16x1_SN_LDSB1_AFC1', 'GEMM'),
        ('kernel_unified_attention_2d', 'attention'),
        ('void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat', 'elementwise/activation'),
        ('_finalize_matmul_scatter_bf16', 'MoE'),
        ('void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, (vllm:', 'memory'),
        ('_combined_routing_compute', 'MoE'),
        ('_combined_routing_memset', 'MoE'),
        ('triton_poi_fused_constant_pad_nd_moe_forward_0', 'MoE'),
        ('_sum_bitmatrix_rows', 'MoE'),
        ('_topk_forward', 'MoE'),
    ],
    'v100_ns_resolution_rank0.pt.trace': [
        ('void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<fl', 'elementwise/activation'),
        ('void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, flo', 'normalisation'),
        ('void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 32, true, 1>(float, floa', 'normalisation'),
        ('void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int', 'convolution'),
        ('void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<floa', 'elementwise/activation'),
        ('volta_sgemm_64x64_nt', 'GEMM'),
        ('volta_sgemm_64x64_tn', 'GEMM'),
        ('volta_sgemm_32x128_tn', 'GEMM'),
        ('cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1', 'convolution'),
        ('cudnn_infer_volta_scudnn_128x64_stridedB_interior_nn_v1', 'convolution'),
        ('volta_sgemm_32x128_nt', 'GEMM'),
        ('void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespa', 'elementwise/activation'),
        ('volta_sgemm_32x128_nn', 'GEMM'),
        ('cudnn_train_volta_scudnn_128x128_stridedB_splitK_medium_nn_v1', 'convolution'),
        ('void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 128, true, 1, true>(cud', 'normalisation'),
        ('volta_sgemm_64x64_nn', 'GEMM'),
        ('void wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, int, flo', 'convolution'),
        ('cudnn_infer_volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1', 'convolution'),
        ('cudnn_infer_volta_scudnn_128x64_relu_small_nn_v1', 'convolution'),
        ('void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 32, true, 1, true>(cudn', 'normalisation'),
        ('volta_sgemm_128x32_nt', 'GEMM'),
        ('cudnn_infer_volta_scudnn_128x64_stridedB_small_nn_v1', 'convolution'),
        ('void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_fw_tr_', 'normalisation'),
        ('cudnn_train_volta_scudnn_128x64_stridedB_splitK_xregs_large_nn_v1', 'convolution'),
        ('cudnn_infer_volta_scudnn_128x64_relu_xregs_large_nn_v1', 'convolution'),
        ('void at::native::(anonymous namespace)::max_pool_backward_nchw<float, float>(flo', 'other'),
        ('cudnn_infer_volta_scudnn_128x128_stridedB_small_nn_v1', 'convolution'),
        ('void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, flo', 'normalisation'),
    ],
}


def _selected(path) -> dict[str, str]:
    """Demangled name -> short name of the kernels the table must cover (see the module docstring)."""
    k = load_trace(path).bundle.kernels
    if k.empty:
        return {}
    df = pd.DataFrame({"s": k["short_name"].astype(str), "f": k["name"].astype(str), "d": kernel_durations(k)})
    total = df["d"].sum()
    by_full = df.groupby("f")["d"].sum() * 100 / total
    chosen = set(by_full[by_full >= 1].index)
    if path.suffix == ".sqlite":  # nsys short names are nsys' own: each >= 1 % short name's largest instance
        by_short = df.groupby("s")["d"].sum() * 100 / total
        pairs = df.groupby(["s", "f"])["d"].sum().sort_values(ascending=False, kind="stable")
        largest = pairs[~pairs.index.get_level_values(0).duplicated()]
        chosen |= {f for s, f in largest.index if by_short[s] >= 1}
    short_of = df.groupby("f")["s"].first()
    return {f: short_of[f] for f in chosen}


@pytest.mark.parametrize("path", TRACES, ids=_stem)
def test_kernel_categories_of_every_large_kernel(path):
    entries = TABLE.get(_stem(path), [])
    selected = _selected(path)
    assert selected or not entries
    used = set()
    for full, short in selected.items():
        hits = [(prefix, cat) for prefix, cat in entries if full.startswith(prefix)]
        assert hits, f"no table entry for {full[:160]!r}"
        used.update(p for p, _ in hits)
        expected = {cat for _, cat in hits}
        assert len(expected) == 1, f"conflicting entries for {full[:160]!r}"
        assert categorize(short, full)[0] == expected.pop(), full[:160]
    assert used == {p for p, _ in entries}, "stale table entries"


@pytest.mark.parametrize(
    "name, category",
    [
        # GEMM stays GEMM with a fused epilogue; bmm_* is GEMM
        ("bmm_E4m3_E4m3E4m3_Fp32_t128x8x512_s4_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_swiGlu_sm100f", "GEMM"),
        ("bmm_Bfloat16_E2m1E4m3_Fp32_t128x16x256_s3_TN_sm100a", "GEMM"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_relu_kernel", "GEMM"),
        ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", "GEMM"),
        ("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_K1", "GEMM"),
        # custom all-reduce of serving frameworks and expert-parallel dispatch/combine are communication
        (
            "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, "
            "vllm::Signal*, "
            "__nv_bfloat16*, int, int)",
            "communication",
        ),
        (
            "void vllm::cross_device_reduce_2stage<half, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, half*, "
            "int, "
            "int)",
            "communication",
        ),
        (
            "void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8>(...)",
            "communication",
        ),
        ("oneShotAllReduceKernel", "communication"),
        ("twoShotAllReduceKernel", "communication"),
        ("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*)", "communication"),
        ("void deep_ep::internode_ll::combine<false, 7168>(void*, void*, int, int*)", "communication"),
        ("void tensorrt_llm::kernels::moe_comm::moeA2ADispatchKernel<8>(...)", "communication"),
        ("pplx::combineKernel<__nv_bfloat16>", "communication"),
        ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"),
        # MoE routing stays MoE; copies stay memory
        ("void vllm::moe::moe_align_block_size_kernel<int>(int*, int*, int*, int*, int, int, int, int)", "MoE"),
        ("fused_moe_kernel", "MoE"),
        (
            "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda"
            "(at::TensorIteratorBase&)>",
            "memory",
        ),
        # conversions are not convolutions
        (
            "std::enable_if<vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
            "vllm::fused_add_rms_norm_kernel<c10::"
            "BFloat16, 8>(...)",
            "normalisation",
        ),
        ("implicit_convolve_sgemm", "convolution"),
    ],
)
def test_category_rules(name, category):
    assert categorize(name, name)[0] == category


def test_generic_launcher_uses_the_demangled_name():
    """An nsys export (short name elementwise_kernel) and a Kineto trace (demangled name only) agree."""
    full = (
        "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
        "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}>(at::TensorIteratorBase&)"
    )
    assert categorize("elementwise_kernel", full)[0] == categorize(full, full)[0] == "memory"
    assert categorize("flash_fwd_kernel", "void flash::flash_fwd_kernel<cutlass::bfloat16_t>()")[0] == "attention"
    assert default_rules().version == 2 and default_rules().generic is not None
    with pytest.raises(ValueError, match="generic_short_names"):
        parse_rules("version = 1\ngeneric_short_names = '('\n")


def test_categories_found_a_part_of_the_rows_at_a_time_are_the_one_pass_categories(monkeypatch):
    """10M kernels are categorised 2M rows at a time: parts of 1,000 rows give the same categories and rules."""
    from dashboard.analysis import categories

    from paths import nsys_trace

    kernels = load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")).bundle.kernels
    whole = categories.categorize_kernels(kernels)
    assert whole["category"].value_counts().to_dict()["communication"] == 66
    monkeypatch.setattr(categories, "PART_ROWS", 1000)
    assert categories.categorize_kernels(kernels).equals(whole)
