"""SwiGlu, PixelShuffle / PixelUnshuffle, CosineSimilarity, PairwiseDistance, GaussianNoise and
LocalResponseNorm: against their torch.nn counterparts (forward and backward, float32 and
float64) where torch has one, burn's own tests transcribed (names cited, commit 2c06be35),
and float64 finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nn_support import AD, DTYPES, TOL, assert_burn_approx, leaf, rng_array, tensor
from test_kernels_support import finite_difference

from harness.engine import seed
from harness.engine.errors import ShapeError
from harness.engine.nn import (
    CosineSimilarityConfig,
    GaussianNoiseConfig,
    Initializer,
    LocalResponseNormConfig,
    PairwiseDistanceConfig,
    PixelShuffleConfig,
    PixelUnshuffleConfig,
    SwiGluConfig,
)

PLAIN = AD.inner()


def _torch_vs_engine(engine_fn, torch_fn, inputs, cot, dtype):
    """Forward and the input gradients of `sum(f(*inputs) * cot)` on both sides."""
    tensors = [torch.tensor(a, dtype=DTYPES[dtype], requires_grad=True) for a in inputs]
    out_t = torch_fn(*tensors)
    (out_t * torch.tensor(cot, dtype=DTYPES[dtype])).sum().backward()
    leaves = [leaf(a, dtype) for a in inputs]
    out_e = engine_fn(*leaves)
    grads = (out_e * tensor(cot, dtype)).sum().backward()
    assert out_e.shape == tuple(out_t.shape)
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), **TOL[dtype])
    for e, t in zip(leaves, tensors, strict=True):
        np.testing.assert_allclose(e.grad(grads).numpy(), t.grad.numpy(), **TOL[dtype])


def _fd_check(engine_fn, inputs, cot, plain_fn=None):
    """float64 input gradients against central finite differences of the plain forward
    (`plain_fn`, a module's `valid()`, or `engine_fn` itself for a module without params)."""
    plain_fn = engine_fn if plain_fn is None else plain_fn
    leaves = [leaf(a, "float64") for a in inputs]
    grads = (engine_fn(*leaves) * tensor(cot, "float64")).sum().backward()
    numeric = finite_difference(
        lambda *v: plain_fn(*(tensor(a, "float64", PLAIN) for a in v)).numpy(), inputs, cot
    )
    for e, n in zip(leaves, numeric, strict=True):
        np.testing.assert_allclose(e.grad(grads).numpy(), n, rtol=1e-6, atol=1e-8)


# ---- SwiGlu (burn-only) ------------------------------------------------------------------


def test_burn_swiglu_forward_vectors():
    """swiglu.rs `test_swiglu_forward_no_bias` and `test_swiglu_forward_with_bias`,
    Tolerance::default()."""
    x = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    config = SwiGluConfig(3, 3, initializer=Initializer.Constant(0.5))
    expected = [[8.5732] * 3, [56.2189] * 3]
    assert_burn_approx(config.init(AD)(x).numpy(), expected)
    expected = [[11.8909] * 3, [63.9785] * 3]
    assert_burn_approx(config.with_bias(True).init(AD)(x).numpy(), expected)


def test_swiglu_defaults_and_params():
    config = SwiGluConfig(3, 5)
    assert config.bias is False
    assert config.initializer == Initializer.KaimingUniform(1 / np.sqrt(3.0), False)
    assert config.init(AD).num_params() == 30  # swiglu.rs `display`: params: 30
    weight = config.init(AD).linear_inner.weight.val().numpy()
    assert weight.shape == (3, 5) and np.abs(weight).max() <= 1 / np.sqrt(3.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_swiglu_matches_torch_composite(dtype):
    """burn's SwiGlu is torch's `F.silu(w1(x)) * w3(x)` with the same weights."""
    seed(3)
    model = SwiGluConfig(4, 6, bias=True).init(AD)
    w = {path: p.val().numpy().astype(dtype) for path, p in model.params()}
    model = model.map(lambda p: type(p)(p.id, tensor(p.val().numpy(), dtype)))
    x, cot = rng_array(1, (2, 3, 4)), rng_array(2, (2, 3, 6))

    def torch_fn(xt):
        def lin(name):
            weight = torch.tensor(w[f"{name}.weight"])
            return xt @ weight + torch.tensor(w[f"{name}.bias"])

        return torch.nn.functional.silu(lin("linear_inner")) * lin("linear_outer")

    _torch_vs_engine(model, torch_fn, [x], cot, dtype)
    if dtype == "float64":
        _fd_check(model, [x], cot, model.valid())


# ---- PixelShuffle / PixelUnshuffle -------------------------------------------------------


def _sample_input() -> np.ndarray:
    return np.arange(16.0).reshape(1, 4, 2, 2)


def test_burn_pixel_shuffle_vectors():
    """pixel_shuffle.rs `pixel_shuffle_known_values`, `pixel_unshuffle_inverts_pixel_shuffle`,
    `pixel_shuffle_inverts_pixel_unshuffle`, `pixel_shuffle_round_trip_factor_3`."""
    x = tensor(_sample_input())
    shuffle, unshuffle = PixelShuffleConfig(2).init(), PixelUnshuffleConfig(2).init()
    expected = [
        [0.0, 4.0, 1.0, 5.0],
        [8.0, 12.0, 9.0, 13.0],
        [2.0, 6.0, 3.0, 7.0],
        [10.0, 14.0, 11.0, 15.0],
    ]
    np.testing.assert_array_equal(shuffle(x).numpy(), [[expected]])
    np.testing.assert_array_equal(unshuffle(shuffle(x)).numpy(), x.numpy())
    np.testing.assert_array_equal(shuffle(unshuffle(x)).numpy(), x.numpy())
    nine = tensor(np.arange(9.0).reshape(1, 9, 1, 1))
    three = PixelUnshuffleConfig(3).init()(PixelShuffleConfig(3).init()(nine))
    np.testing.assert_array_equal(three.numpy(), nine.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("factor", [2, 3])
def test_pixel_shuffle_and_unshuffle_match_torch(dtype, factor):
    x = rng_array(3, (2, 2 * factor * factor, 3, 4))
    cot = rng_array(4, (2, 2, 3 * factor, 4 * factor))
    shuffle = PixelShuffleConfig(factor).init()
    _torch_vs_engine(shuffle, torch.nn.PixelShuffle(factor), [x], cot, dtype)
    y = rng_array(5, (2, 3, 2 * factor, 3 * factor))
    cot = rng_array(6, (2, 3 * factor * factor, 2, 3))
    unshuffle = PixelUnshuffleConfig(factor).init()
    _torch_vs_engine(unshuffle, torch.nn.PixelUnshuffle(factor), [y], cot, dtype)


def test_pixel_shuffle_errors_name_the_module():
    with pytest.raises(ValueError, match=r"^PixelShuffle: input channels \(6\) must be "):
        PixelShuffleConfig(2).init()(tensor(np.zeros((1, 6, 2, 2))))
    with pytest.raises(ValueError, match=r"^PixelUnshuffle: input width \(3\) must be"):
        PixelUnshuffleConfig(2).init()(tensor(np.zeros((1, 1, 2, 3))))
    with pytest.raises(ValueError, match="upscale_factor must be greater than 0"):
        PixelShuffleConfig(0).init()(tensor(np.zeros((1, 4, 2, 2))))
    expected = (
        r"^PixelShuffle: expected an input of shape \[batch_size, channels, height, width\], "
        r"got shape \[4, 2, 2\]$"
    )
    with pytest.raises(ShapeError, match=expected):
        PixelShuffleConfig(2).init()(tensor(np.zeros((4, 2, 2))))


# ---- CosineSimilarity / PairwiseDistance -------------------------------------------------


def test_burn_cosine_similarity_and_pairwise_distance_vectors():
    """cosine_similarity.rs `cosine_similarity_dim1`, `cosine_similarity_negative_dim`;
    pairwise_distance.rs `pairwise_distance_p2`, `pairwise_distance_p1`
    (Tolerance::default())."""
    x1, x2 = tensor([[1.0, 0.0], [1.0, 1.0]]), tensor([[1.0, 0.0], [0.0, 1.0]])
    for dim in (1, -1):
        assert_burn_approx(CosineSimilarityConfig(dim=dim).init()(x1, x2).numpy(), [1, 0.707107])
    x1, x2 = tensor([[1.0, 2.0], [3.0, 4.0]]), tensor([[1.0, 1.0], [0.0, 0.0]])
    assert_burn_approx(PairwiseDistanceConfig().init()(x1, x2).numpy(), [1.0, 5.0])
    assert_burn_approx(PairwiseDistanceConfig(p=1.0).init()(x1, x2).numpy(), [1.0, 7.0])
    assert (CosineSimilarityConfig().dim, CosineSimilarityConfig().eps) == (1, 1e-8)
    assert (PairwiseDistanceConfig().p, PairwiseDistanceConfig().eps) == (2.0, 1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cosine_similarity_matches_torch(dtype, dim):
    x1, x2 = rng_array(7, (4, 5)), rng_array(8, (4, 5))
    cot = rng_array(9, (5 if dim == 0 else 4,))
    module = CosineSimilarityConfig(dim=dim).init()
    _torch_vs_engine(module, torch.nn.CosineSimilarity(dim=dim), [x1, x2], cot, dtype)
    if dtype == "float64":
        _fd_check(module, [x1, x2], cot)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 4.0, 1.5, float("inf")])
def test_pairwise_distance_matches_torch(dtype, p):
    x1, x2 = rng_array(10, (4, 5)), rng_array(11, (4, 5))
    cot = rng_array(12, (4,))
    module = PairwiseDistanceConfig(p=p).init()
    _torch_vs_engine(module, torch.nn.PairwiseDistance(p=p), [x1, x2], cot, dtype)
    if dtype == "float64":
        _fd_check(module, [x1, x2], cot)


def test_distance_modules_refuse_other_ranks():
    with pytest.raises(ShapeError, match=r"^CosineSimilarity: expected two inputs"):
        CosineSimilarityConfig().init()(tensor(np.ones((2, 3, 4))), tensor(np.ones((2, 3, 4))))
    with pytest.raises(ShapeError, match=r"^PairwiseDistance: expected two inputs"):
        PairwiseDistanceConfig().init()(tensor(np.ones((2, 3))), tensor(np.ones((2, 4))))
    with pytest.raises(ShapeError, match="dim 2 is out of range"):
        CosineSimilarityConfig(dim=2).init()(tensor(np.ones((2, 3))), tensor(np.ones((2, 3))))


# ---- GaussianNoise (burn-only) -----------------------------------------------------------


def test_burn_gaussian_noise():
    """noise.rs `with_ad_backend_should_mark_input`, `without_ad_backend_should_not_change_
    input`, `negative_std_should_panic`."""
    noise = GaussianNoiseConfig(0.5).init()
    ones = np.ones((100, 100), np.float32)
    assert not np.array_equal(noise(tensor(ones)).numpy(), ones)
    np.testing.assert_array_equal(noise(tensor(ones, device=PLAIN)).numpy(), ones)
    for std in (-0.5, -0.0):
        with pytest.raises(ValueError, match=r"^Standard deviation is required to be non-negative"):
            GaussianNoiseConfig(std).init()


def test_gaussian_noise_statistics_dtype_and_gradient():
    seed(5)
    x = leaf(np.zeros((200, 200)), "float64")
    out = GaussianNoiseConfig(0.5).init()(x)
    assert out.dtype.name == "float64"
    sample = out.numpy()
    # 40,000 draws: the standard error of the mean is 0.5 / 200 = 0.0025 and that of the std
    # about 0.5 / sqrt(2 * 40,000) = 0.0018; the bounds are ~5 standard errors.
    assert abs(sample.mean()) < 0.0125 and abs(sample.std() - 0.5) < 0.009
    cot = rng_array(13, (200, 200))
    grad = x.grad((out * tensor(cot, "float64")).sum().backward()).numpy()
    np.testing.assert_array_equal(grad, cot)
    zero = GaussianNoiseConfig(0.0).init()
    np.testing.assert_array_equal(zero(tensor(np.ones(3))).numpy(), np.ones(3))


# ---- LocalResponseNorm -------------------------------------------------------------------

_LRN_INPUT = [
    [
        [1.9269, 1.4873, 0.9007, -2.1055],
        [0.6784, -1.2345, -0.0431, -1.6047],
        [-0.7521, 1.6487, -0.3925, -1.4036],
        [-0.7279, -0.5594, -0.7688, 0.7624],
    ],
    [
        [1.6423, -0.1596, -0.4974, 0.4396],
        [-0.7581, 1.0783, 0.8008, 1.6806],
        [1.2791, 1.2964, 0.6105, 1.3347],
        [-0.2316, 0.0418, -0.2516, 0.8599],
    ],
    [
        [-1.3847, -0.8712, -0.2234, 1.7174],
        [0.3189, -0.4245, 0.3057, -0.7746],
        [-1.5576, 0.9956, -0.8798, -0.6011],
        [-1.2742, 2.1228, -1.2347, -0.4879],
    ],
]
_LRN_TOLERANCE = (5e-3, 1e-4)  # Tolerance::rel_abs(5e-3, 1e-4), burn's LRN tests


def test_burn_lrn_forward_default_params_and_backward():
    """local_response.rs `forward_default_params` and `backward`."""
    x = leaf([_LRN_INPUT])
    out = LocalResponseNormConfig(5).init()(x)
    expected = [
        [
            [1.9267, 1.4872, 0.9007, -2.1053],
            [0.6784, -1.2345, -0.0431, -1.6045],
            [-0.7521, 1.6486, -0.3925, -1.4035],
            [-0.7279, -0.5594, -0.7688, 0.7624],
        ],
        [
            [1.6421, -0.1596, -0.4974, 0.4395],
            [-0.7581, 1.0783, 0.8008, 1.6805],
            [1.2790, 1.2963, 0.6105, 1.3347],
            [-0.2316, 0.0418, -0.2516, 0.8598],
        ],
        [
            [-1.3845, -0.8712, -0.2234, 1.7172],
            [0.3189, -0.4245, 0.3057, -0.7745],
            [-1.5575, 0.9956, -0.8798, -0.6011],
            [-1.2741, 2.1226, -1.2346, -0.4879],
        ],
    ]
    assert_burn_approx(out.numpy(), [expected], _LRN_TOLERANCE)
    grad = x.grad(out.sum().backward()).numpy()
    expected_grad = [
        [
            [0.9997, 0.9999, 1.0000, 0.9999],
            [1.0000, 0.9999, 1.0000, 0.9999],
            [0.9999, 0.9997, 1.0000, 0.9999],
            [0.9999, 1.0000, 0.9999, 1.0000],
        ],
        [
            [0.9998, 1.0000, 1.0000, 0.9999],
            [1.0000, 1.0000, 1.0000, 0.9999],
            [1.0000, 0.9998, 1.0000, 1.0000],
            [1.0000, 0.9999, 1.0000, 0.9999],
        ],
        [
            [1.0000, 1.0000, 1.0000, 0.9999],
            [1.0000, 1.0000, 1.0000, 0.9999],
            [0.9999, 0.9998, 1.0000, 0.9999],
            [0.9999, 0.9998, 0.9999, 1.0000],
        ],
    ]
    assert_burn_approx(grad, [expected_grad], _LRN_TOLERANCE)


def test_burn_lrn_custom_3d_and_even_window():
    """local_response.rs `forward_custom_params`, `forward_3d`, `forward_even_size`,
    `forward_even_size_uses_asymmetric_positive_side_window`."""
    custom = LocalResponseNormConfig(3, alpha=0.001, beta=0.5, k=2.0).init()
    x = [
        [[1.9269, 1.4873, 0.9007], [-2.1055, 0.6784, -1.2345], [-0.0431, -1.6047, -0.7521]],
        [[1.6487, -0.3925, -1.4036], [-0.7279, -0.5594, -0.7688], [0.7624, 1.6423, -0.1596]],
        [[-0.4974, 0.4396, 0.3189], [-0.4245, 0.3057, -0.7746], [0.0349, 0.3211, 1.5736]],
        [[-0.8455, -1.2742, 2.1228], [-1.2347, -0.4879, -1.4181], [0.8963, 0.0499, 2.2667]],
    ]
    expected = [
        [[1.3618, 1.0515, 0.6368], [-1.4882, 0.4797, -0.8728], [-0.0305, -1.1342, -0.5318]],
        [[1.1652, -0.2775, -0.9923], [-0.5145, -0.3955, -0.5435], [0.5391, 1.1608, -0.1128]],
        [[-0.3516, 0.3108, 0.2254], [-0.3001, 0.2162, -0.5476], [0.0247, 0.2270, 1.1120]],
        [[-0.5978, -0.9008, 1.5005], [-0.8729, -0.3450, -1.0025], [0.6337, 0.0353, 1.6018]],
    ]
    assert_burn_approx(custom(tensor([x])).numpy(), [expected], _LRN_TOLERANCE)
    x3 = [
        [1.9269, 1.4873, 0.9007, -2.1055, 0.6784, -1.2345],
        [-0.0431, -1.6047, 0.3559, -0.6866, -0.4934, 0.2415],
        [-1.1109, 0.0915, -2.3169, -0.2168, -0.3097, -0.3957],
        [0.8034, -0.6216, -0.5920, -0.0631, -0.8286, 0.3309],
    ]
    expected3 = [
        [1.9267, 1.4871, 0.9007, -2.1053, 0.6784, -1.2345],
        [-0.0431, -1.6045, 0.3558, -0.6865, -0.4933, 0.2415],
        [-1.1109, 0.0915, -2.3166, -0.2168, -0.3097, -0.3957],
        [0.8034, -0.6216, -0.5919, -0.0631, -0.8285, 0.3309],
    ]
    out3 = LocalResponseNormConfig(3).init()(tensor([x3]))
    assert_burn_approx(out3.numpy(), [expected3], _LRN_TOLERANCE)
    even = LocalResponseNormConfig(2).init()
    x2 = [
        [[0.3367, 0.1288], [0.2345, 0.2303]],
        [[-1.1229, -0.1863], [2.2082, -0.6380]],
        [[0.4617, 0.2674], [0.5349, 0.8094]],
    ]
    expected2 = [
        [[0.3367, 0.1288], [0.2345, 0.2303]],
        [[-1.1228, -0.1863], [2.2078, -0.6380]],
        [[0.4616, 0.2673], [0.5348, 0.8093]],
    ]
    assert_burn_approx(even(tensor([x2])).numpy(), [expected2], _LRN_TOLERANCE)
    window = LocalResponseNormConfig(2, alpha=1.0, beta=1.0, k=0.0).init()
    out = window(tensor([[[1.0], [2.0], [4.0]]])).numpy()
    assert_burn_approx(out, [[[0.4], [0.2], [0.5]]], (1e-5, 1e-6))


def test_burn_lrn_validation():
    """local_response.rs `config_size_zero_panics`, `forward_rank_2_panics`, `display`
    (defaults)."""
    with pytest.raises(ValueError, match=r"^size must be greater than 0\.$"):
        LocalResponseNormConfig(0).init()
    with pytest.raises(ShapeError, match=r"^LocalResponseNorm requires input rank >= 3, got 2$"):
        LocalResponseNormConfig(3).init()(tensor(np.zeros((2, 4))))
    config = LocalResponseNormConfig(5)
    assert (config.alpha, config.beta, config.k) == (0.0001, 0.75, 1.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [1, 3, 5])
@pytest.mark.parametrize("shape", [(2, 4, 6), (2, 3, 4, 4), (1, 3, 2, 2, 3)])
def test_lrn_odd_sizes_match_torch(dtype, size, shape):
    x, cot = rng_array(14, shape, 3.0), rng_array(15, shape)
    module = LocalResponseNormConfig(size, alpha=0.5, beta=0.75, k=1.0).init()
    ref = torch.nn.LocalResponseNorm(size, alpha=0.5, beta=0.75, k=1.0)
    _torch_vs_engine(module, ref, [x], cot, dtype)
    if dtype == "float64" and len(shape) == 4:
        _fd_check(module, [x], cot)


def test_lrn_even_size_window_differs_from_torch_by_one_channel():
    """burn's even window leans to the positive side, torch's to the negative: burn with
    channels reversed is torch with channels reversed back."""
    x = rng_array(16, (2, 5, 3, 3), 3.0)
    module = LocalResponseNormConfig(4, alpha=0.5).init()
    ref = torch.nn.LocalResponseNorm(4, alpha=0.5)
    burn_out = module(tensor(x, "float64")).numpy()
    torch_out = ref(torch.tensor(x)).numpy()
    assert not np.allclose(burn_out, torch_out, atol=1e-3)
    flipped = ref(torch.tensor(x[:, ::-1].copy())).numpy()[:, ::-1]
    np.testing.assert_allclose(burn_out, flipped, **TOL["float64"])
    _fd_check(module, [x], rng_array(17, x.shape))
