"""per_token_group_quant (upstream 0.5.17's contract) against its reference and by hand.

The kernel rounds by hand where the interpreter and the GPU differ (bf16 by its bits, fp8 into
uint8 patterns), so codes and scales are compared for bit equality, not within a unit.
"""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.ops.quantization import per_token_group_quant, per_token_group_quant_ref
from tests.kernels.spy import spy_launches
from tests.kernels.strided import stride2

quant_module = importlib.import_module("sglang.kernels.ops.quantization.per_token_group_quant")

FP8, INT8 = torch.float8_e4m3fn, torch.int8
# (out_dtype, scale_ue8m0): upstream's three formats (ue8m0 implies fp8).
FORMATS = [(INT8, False), (FP8, False), (FP8, True)]


def _bits(t):
    return t.view(torch.uint8) if t.dtype == FP8 else t


def _activations(shape, dtype, seed=0):
    # Channels spanning 6 decades, so groups have very different scales (and fp8 subnormals).
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * torch.logspace(-3, 3, shape[-1])).to(dtype)


def _assert_same(got, want):
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype and a.stride() == b.stride()
        assert torch.equal(_bits(a), _bits(b))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("out_dtype, ue8m0", FORMATS)
@pytest.mark.parametrize("column_major", [False, True])
@pytest.mark.parametrize("fuse", [False, True])
@pytest.mark.parametrize("shape, group_size", [((5, 160), 32), ((3, 256), 128), ((1, 16), 16)])
def test_matches_reference_bit_for_bit(shape, group_size, fuse, column_major, out_dtype, ue8m0, dtype):
    if fuse:
        shape = (*shape[:-1], 2 * shape[-1])
    x = _activations(shape, dtype)
    kw = dict(group_size=group_size, scale_ue8m0=ue8m0, fuse_silu_and_mul=fuse,
              out_dtype=out_dtype, column_major_scales=column_major)
    got = per_token_group_quant(x, **kw)
    _assert_same(got, per_token_group_quant_ref(x, **kw))
    assert got[0].dtype == out_dtype
    assert got[1].dtype == (torch.int32 if ue8m0 else torch.float32)


def test_int8_truncates_and_scales_as_upstream():
    # amax 127: the multiplier 127 / amax is exactly 1, so the codes are x truncated toward 0
    # (upstream's float -> int8 cast), not rounded; the stored scale is amax * float32(1/127).
    row = torch.tensor([127.0, 1.75, -1.75, 0.5, -0.5, 2.5, -125.5, 0.0] * 2, dtype=torch.bfloat16)
    q, s = per_token_group_quant(row[None], group_size=16, out_dtype=INT8)
    assert q[0, :8].tolist() == [127, 1, -1, 0, 0, 2, -125, 0]
    inv = torch.tensor(1 / 127, dtype=torch.float32)
    assert s.tolist() == [[(torch.tensor(127.0) * inv).item()]]


def test_fp8_multiplies_by_qmax_over_amax_and_rounds_to_nearest():
    x = torch.tensor([[448.0, 1.0625, 1.1875, -3.0] + [0.0] * 12], dtype=torch.bfloat16)
    q, s = per_token_group_quant(x, group_size=16)  # fp8 is upstream's default
    # 1.0625 and 1.1875 are ties on the e4m3 grid (step 0.125): to even, 1.0 and 1.25.
    assert q.float()[0, :4].tolist() == [448.0, 1.0, 1.25, -3.0]
    assert s.item() == (torch.tensor(448.0) * torch.tensor(1 / 448, dtype=torch.float32)).item()


@pytest.mark.parametrize("out_dtype, ue8m0", FORMATS)
def test_all_zero_rows_and_groups_use_the_eps_floor(out_dtype, ue8m0):
    x = _activations((3, 64), torch.bfloat16)
    x[0] = 0  # a whole row
    x[1, 16:32] = 0  # one group
    q, s = per_token_group_quant(x, group_size=16, out_dtype=out_dtype, scale_ue8m0=ue8m0)
    assert torch.equal(q.float()[0], torch.zeros(64)) and torch.equal(q.float()[1, 16:32], torch.zeros(16))
    floor = torch.tensor(1e-10, dtype=torch.float32) * torch.tensor(1 / {INT8: 127, FP8: 448}[out_dtype],
                                                                    dtype=torch.float32)
    if ue8m0:
        bits = floor.view(torch.int32).item()
        expo = ((bits >> 23) & 0xFF) + (bits & 0x7FFFFF != 0)
        assert s.view(torch.uint8)[0, :4].tolist() == [expo] * 4
        assert s.view(torch.uint8)[1, 1].item() == expo
    else:
        assert s[0].tolist() == [floor.item()] * 4 and s[1, 1].item() == floor.item()
    assert torch.isfinite(q.float()).all()


def test_ue8m0_scales_pack_four_groups_per_int32_and_pad_with_zero():
    # Five groups with scales exactly 2**k * 448 / 448: exponents k + 127, bytes 5..7 zero.
    x = torch.zeros(2, 80, dtype=torch.bfloat16)
    for g, k in enumerate([-3, 0, 2, 5, -1]):
        x[:, 16 * g] = 448.0 * 2.0**k
    x[1, 16 * 2] = 448.0 * 2.0**2 * 1.01  # just above a power of two: rounds the exponent up
    q, s = per_token_group_quant(x, group_size=16, scale_ue8m0=True)
    assert s.shape == (2, 2) and s.dtype == torch.int32
    assert s.view(torch.uint8)[0].tolist() == [124, 127, 129, 132, 126, 0, 0, 0]
    assert s.view(torch.uint8)[1].tolist() == [124, 127, 130, 132, 126, 0, 0, 0]
    assert q.float()[0, 16 * 3].item() == 448.0  # x * 2**(127 - e) lands on the top code
    # Column-major packing: int32 [ceil(G/4), aligned T] transposed; byte b of (j, t) = 4j + b.
    _, cm = per_token_group_quant(x, group_size=16, scale_ue8m0=True, column_major_scales=True)
    assert cm.shape == (2, 2) and cm.stride() == (1, 4)
    words = cm.transpose(0, 1).contiguous().view(torch.uint8).reshape(2, 2, 4)  # [j, t, b]
    assert words[:, 0].reshape(-1).tolist() == [124, 127, 129, 132, 126, 0, 0, 0]


def test_masked_m_writes_only_the_live_tokens_of_each_expert():
    x = _activations((3, 4, 64), torch.bfloat16)
    masked_m = torch.tensor([0, 2, 4], dtype=torch.int32)
    q = torch.full((3, 4, 64), 7, dtype=INT8)
    s = torch.full((3, 4, 2), -1.0)
    per_token_group_quant(x, q, s, group_size=32, masked_m=masked_m, expected_m=2)
    full_q, full_s = per_token_group_quant(x, group_size=32, out_dtype=INT8)
    live = torch.arange(4)[None, :] < masked_m[:, None]  # [E, T]
    assert torch.equal(q[live], full_q[live]) and torch.equal(s[live], full_s[live])
    assert (q[~live] == 7).all() and (s[~live] == -1).all()
    want_q, want_s = q.clone().fill_(7), s.clone().fill_(-1)
    per_token_group_quant_ref(x, want_q, want_s, group_size=32, masked_m=masked_m)
    assert torch.equal(q, want_q) and torch.equal(s, want_s)


@pytest.mark.parametrize("out_dtype, ue8m0", FORMATS)
def test_every_tensor_strided_differently(out_dtype, ue8m0):
    # input: every other channel of a wider buffer; output_q: a window of a wider buffer;
    # output_s: column-major. Three tensors, six different strides.
    base = _activations((6, 320), torch.float16)
    x = base[:, ::2]  # [6, 160], strides (320, 2)
    q_buf = torch.zeros(6, 200, dtype=out_dtype)
    q = q_buf[:, 20:180]  # [6, 160], strides (200, 1)
    if ue8m0:
        s = torch.zeros(2, 8, dtype=torch.int32).T[:6]  # [6, 2], strides (1, 8)
    else:
        s = torch.zeros(5, 8).T[:6]  # [6, 5], strides (1, 8)
    per_token_group_quant(x, q, s, group_size=32, scale_ue8m0=ue8m0)
    want = per_token_group_quant_ref(x.contiguous(), group_size=32, out_dtype=out_dtype,
                                     scale_ue8m0=ue8m0)
    assert torch.equal(_bits(q), _bits(want[0])) and torch.equal(s, want[1])
    assert (q_buf.float()[:, :20] == 0).all() and (q_buf.float()[:, 180:] == 0).all()


def test_nan_quantizes_as_upstreams_clamps():
    x = torch.ones(1, 16, dtype=torch.bfloat16)
    x[0, 3] = float("nan")
    q8, _ = per_token_group_quant(x, group_size=16, out_dtype=INT8)
    qf, _ = per_token_group_quant(x, group_size=16)
    assert q8[0, 3].item() == -128 and qf.float()[0, 3].item() == 448.0


def test_triton_path_runs_and_agrees_with_torch_path(monkeypatch):
    x = _activations((9, 256), torch.bfloat16)
    grids = spy_launches(monkeypatch, quant_module, "_per_token_group_quant_kernel")
    got = per_token_group_quant(x, group_size=64, out_dtype=INT8)
    assert grids == [(9, 1)]  # one program per token row
    monkeypatch.setattr(quant_module, "use_triton", lambda *t: False)
    _assert_same(got, per_token_group_quant(x, group_size=64, out_dtype=INT8))
    assert len(grids) == 1


def test_empty_input_launches_nothing(monkeypatch):
    grids = spy_launches(monkeypatch, quant_module, "_per_token_group_quant_kernel")
    q, s = per_token_group_quant(torch.empty(0, 128, dtype=torch.bfloat16))
    assert q.shape == (0, 128) and s.shape == (0, 1) and grids == []


def test_compiles_fullgraph_without_a_graph_break():
    x = _activations((4, 128), torch.bfloat16)
    torch._dynamo.reset()
    fn = torch.compile(lambda x: per_token_group_quant(x, group_size=32, out_dtype=INT8),
                       fullgraph=True, backend="aot_eager")
    _assert_same(fn(x), per_token_group_quant_ref(x, group_size=32, out_dtype=INT8))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(input=torch.ones(2, 64, dtype=torch.float64)), "input must be bf16, fp16 or fp32"),
        (dict(input=torch.ones(2, 128), fuse_silu_and_mul=True), "fuse_silu_and_mul needs a bf16 or fp16"),
        (dict(group_size=48), "group_size must be one of"),
        (dict(group_size=128), "multiple of group_size=128"),
        (dict(output_s=torch.ones(2, 2)), "output_s was given without output_q"),
        (dict(out_dtype=torch.int32), "out_dtype must be"),
        (dict(output_q=torch.ones(2, 64, dtype=INT8), output_s=torch.ones(2, 2, dtype=torch.int32)),
         "int32-packed scale buffers require scale_ue8m0=True"),
        (dict(output_q=torch.ones(2, 64, dtype=FP8), output_s=torch.ones(2, 2), scale_ue8m0=True),
         "scale_ue8m0=True requires an int32-packed output_s"),
        (dict(output_q=torch.ones(2, 64, dtype=INT8), output_s=torch.ones(2, 3)),
         r"output_s must have shape \(2, 2\)"),
        (dict(masked_m=torch.ones(2, dtype=torch.int32)), "masked_m needs a 3-D"),
        (dict(output_q=[0], output_s=torch.ones(2, 2)), "output_q must be a torch.Tensor or None"),
        (dict(silu_and_mul_mode="fast"), "silu_and_mul_mode must be 'legacy' or 'dense'"),
        (dict(silu_and_mul_mode="dense"), "silu_and_mul_mode='dense' requires fuse_silu_and_mul"),
        (dict(input=torch.ones(2, 256, dtype=torch.bfloat16), fuse_silu_and_mul=True, out_dtype=INT8,
              silu_and_mul_mode="dense"), "float8_e4m3fn output and group_size=128"),
        (dict(num_tokens_post_padded=torch.ones(1, dtype=torch.int32)), "without sorted_token_ids"),
        (dict(sorted_token_ids=torch.arange(2, dtype=torch.int32)),
         "num_tokens_post_padded must be an int32 tensor of at least 1"),
        (dict(sorted_token_ids=torch.arange(1, dtype=torch.int32),
              num_tokens_post_padded=torch.ones(1, dtype=torch.int32)),
         "sorted_token_ids must be an int32 tensor of at least 2"),
        (dict(sorted_token_ids=torch.arange(2, dtype=torch.int32),
              num_tokens_post_padded=torch.ones(1, dtype=torch.int32), num_valid_tokens=-1),
         "num_valid_tokens must be an int"),
    ],
)
def test_rejects_bad_inputs(kwargs, match):
    args = dict(input=torch.ones(2, 64, dtype=torch.bfloat16), group_size=32) | kwargs
    with pytest.raises(ValueError, match=match):
        per_token_group_quant(**args)


def test_registry_entry():
    assert registry.load("quantization.per_token_group_quant") is per_token_group_quant
    assert registry.load("quantization.per_token_group_quant", "torch") is per_token_group_quant_ref


def test_masked_m_is_read_at_its_stride():
    # The same counts as a stride-2 view whose gaps hold other valid counts: read without its
    # stride, expert 1 would write 4 tokens and expert 2 one.
    x = _activations((3, 4, 64), torch.bfloat16)
    masked_m = torch.tensor([0, 2, 3], dtype=torch.int32)
    outs = []
    for counts in (masked_m, stride2(masked_m, torch.tensor([4, 1, 0], dtype=torch.int32))):
        q, s = torch.full((3, 4, 64), 7, dtype=INT8), torch.full((3, 4, 2), -1.0)
        per_token_group_quant(x, q, s, group_size=32, masked_m=counts)
        outs.append((q, s))
    _assert_same(outs[1], outs[0])
    want = (torch.full((3, 4, 64), 7, dtype=INT8), torch.full((3, 4, 2), -1.0))
    per_token_group_quant_ref(x, *want, group_size=32, masked_m=masked_m)
    _assert_same(outs[1], want)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_int8_inf_gives_upstreams_minus_128(dtype):
    # Upstream (per_token_group_quant.cuh, 0.5.17 and 0.5.23): amax = inf, so the multiplier
    # 127 / inf is 0; inf * 0 is NaN, and static_cast<int8_t>(fminf(fmaxf(NaN, -128), 127))
    # is -128 (fmaxf returns the non-NaN operand). Finite values * 0 give 0; the scale is inf.
    x = torch.ones(2, 32, dtype=dtype)
    x[0, 5], x[1, 9] = float("inf"), float("-inf")
    q, s = per_token_group_quant(x, group_size=32, out_dtype=INT8)
    assert q[0, 5].item() == -128 and q[1, 9].item() == -128
    assert not q[0].ne(0).logical_and(torch.arange(32) != 5).any() and not q[1, :9].any()
    assert torch.isinf(s).all()
    _assert_same((q, s), per_token_group_quant_ref(x, group_size=32, out_dtype=INT8))
    # fp8 takes fminf(NaN, 448) = +448 for both signs, as upstream's WeightTrait<fp8> comment says.
    qf, _ = per_token_group_quant(x, group_size=32)
    assert qf.float()[0, 5].item() == 448.0 and qf.float()[1, 9].item() == 448.0


@pytest.mark.parametrize("out_dtype, ue8m0", FORMATS)
def test_nan_is_left_out_of_the_absmax_by_kernel_and_reference_alike(out_dtype, ue8m0):
    # Upstream's absmax is __hmax over the group, which returns the non-NaN operand: a NaN
    # element does not make the group's scale NaN, and the other elements keep their codes.
    x = _activations((2, 64), torch.bfloat16)
    clean = per_token_group_quant_ref(x, group_size=32, out_dtype=out_dtype, scale_ue8m0=ue8m0)
    x[0, 3] = float("nan")
    x[1, 32:] = float("nan")  # a whole group of NaN: the absmax is the 1e-10 floor
    got = per_token_group_quant(x, group_size=32, out_dtype=out_dtype, scale_ue8m0=ue8m0)
    _assert_same(got, per_token_group_quant_ref(x, group_size=32, out_dtype=out_dtype, scale_ue8m0=ue8m0))
    if not ue8m0:
        assert torch.equal(got[1][0], clean[1][0]) and not torch.isnan(got[1]).any()
        assert got[1][1, 1].item() == torch.tensor(1e-10) * torch.tensor(1 / _QMAX[out_dtype])
    keep = torch.arange(64) != 3
    assert torch.equal(_bits(got[0])[0, keep], _bits(clean[0])[0, keep])


_QMAX = {INT8: 127.0, FP8: 448.0}


def test_sorted_layout_leaves_the_padding_rows_unwritten():
    # 0.5.23: rows at or past num_tokens_post_padded, or whose sorted id is >= num_valid_tokens
    # (moe_align_block_size's padding sentinel), are left as they were; the rest as the flat op.
    x = _activations((6, 64), torch.bfloat16)
    ids = torch.tensor([0, 5, 1, 3, 2, 4], dtype=torch.int32)  # 5 is padding with 5 valid tokens
    n_post = torch.tensor([4], dtype=torch.int32)  # rows 4 and 5 past it
    live = torch.tensor([True, False, True, True, False, False])
    flat = per_token_group_quant(x, group_size=32, out_dtype=INT8)
    outs = []
    for sorted_ids in (ids, stride2(ids, torch.tensor([5, 0, 5, 5, 0, 1], dtype=torch.int32))):
        q, s = torch.full((6, 64), 7, dtype=INT8), torch.full((6, 2), -1.0)
        per_token_group_quant(x, q, s, group_size=32, sorted_token_ids=sorted_ids,
                              num_tokens_post_padded=n_post, num_valid_tokens=5)
        assert torch.equal(q[live], flat[0][live]) and torch.equal(s[live], flat[1][live])
        assert (q[~live] == 7).all() and (s[~live] == -1).all()
        outs.append((q, s))
    _assert_same(outs[1], outs[0])
    want = (torch.full((6, 64), 7, dtype=INT8), torch.full((6, 2), -1.0))
    per_token_group_quant_ref(x, *want, group_size=32, sorted_token_ids=ids, num_tokens_post_padded=n_post,
                              num_valid_tokens=5)
    _assert_same(outs[0], want)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_dense_silu_and_mul_rounds_once(dtype):
    x = _activations((4, 512), dtype, seed=3)
    dense = per_token_group_quant(x, fuse_silu_and_mul=True, silu_and_mul_mode="dense")
    _assert_same(dense, per_token_group_quant_ref(x, fuse_silu_and_mul=True, silu_and_mul_mode="dense"))
    legacy = per_token_group_quant(x, fuse_silu_and_mul=True)
    _assert_same(legacy, per_token_group_quant(x, fuse_silu_and_mul=True, silu_and_mul_mode="legacy"))
    # The by-hand model of upstream's dense path: fp32 silu and product, one rounding.
    gate, up = x.float()[:, :256], x.float()[:, 256:]
    act = (gate * torch.sigmoid(gate) * up).to(dtype)
    _assert_same(dense, per_token_group_quant_ref(act))
    assert not torch.equal(_bits(dense[0]), _bits(legacy[0]))  # the two modes differ here


@pytest.mark.parametrize("out_dtype, ue8m0", FORMATS)
def test_fp32_input_as_upstream_0_5_23(out_dtype, ue8m0):
    # 0.5.23's run_fp32: the 16-bit path's absmax, scale and clamps on fp32 values.
    x = _activations((3, 64), torch.float32, seed=5)
    got = per_token_group_quant(x, group_size=32, out_dtype=out_dtype, scale_ue8m0=ue8m0)
    _assert_same(got, per_token_group_quant_ref(x, group_size=32, out_dtype=out_dtype, scale_ue8m0=ue8m0))
    if not ue8m0:  # by hand: amax / qmax, and the codes of x * (qmax / amax)
        amax = x.view(3, 2, 32).abs().amax(-1)
        assert torch.equal(got[1], amax * torch.tensor(1 / _QMAX[out_dtype]))
        # An IEEE division (a Python scalar over a tensor is reciprocal-then-multiply in torch).
        y = (x.view(3, 2, 32) * (torch.tensor(_QMAX[out_dtype]) / amax)[..., None]).view(3, 64)
        want = torch.trunc(y).to(INT8) if out_dtype == INT8 else y.to(FP8)
        assert torch.equal(_bits(got[0]), _bits(want))
