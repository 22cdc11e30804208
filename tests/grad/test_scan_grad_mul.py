"""grad.scatter_scan with op="mul" to any order: autograd's check_grads to second order in
float64 (every flag, index kind and layout, src with one and with two zeros in a group, dropped entries), exact
first and second derivatives against plain loops over the group members (products of the other members, no
division), and the first derivative and Hessian-vector products against torch.cumprod's autograd per group."""
import itertools

import numpy as np
import pytest

import cyscatter as cs
from group_cases import LAYOUTS, make_case
from testing import INDEX_DTYPES, INDEX_KINDS

autograd = pytest.importorskip("autograd")
import autograd.numpy as anp  # noqa: E402
from autograd import grad as agrad  # noqa: E402
from autograd.test_util import check_grads  # noqa: E402

import grad as csgrad  # noqa: E402

FLAGS = list(itertools.product((False, True), (False, True)))   # (exclusive, reverse)


def _members(index, dims, mode):
    """Each group's members: positions along the flattened index dims, in index order (dropped entries in none)."""
    dims = dims if isinstance(dims, tuple) else (dims,)
    coords = index if isinstance(index, tuple) else (index,)
    coords = [np.asarray(c).reshape(-1).astype(np.int64) for c in coords]
    inside = np.all([(c >= 0) & (c < d) for c, d in zip(coords, dims)], axis=0)
    if mode == "raise":
        assert inside.all()
    flat = np.where(inside, np.ravel_multi_index([np.where(inside, c, 0) for c in coords], dims), -1)
    return [np.flatnonzero(flat == row) for row in np.unique(flat[inside])]


def _as3(a, axis, ishape):
    axis = axis % a.ndim if a.ndim else 0
    n = int(np.prod(ishape))
    return a.reshape(int(np.prod(a.shape[:axis])), n, -1)


def _loop_grads(x3, g3, v3, groups, exclusive, reverse):
    """(x-bar, H v): the gradient of ``sum(g * scan_mul(x))`` and its Hessian times v, by plain loops over each
    group's members: d y_k / d x_p is the product of the members of y_k other than p (no division)."""
    grad3 = np.zeros_like(x3)
    hv3 = np.zeros_like(x3)
    for members in groups:
        order = members[::-1] if reverse else members
        for o in range(x3.shape[0]):
            for f in range(x3.shape[2]):
                x = x3[o, order, f]
                g = g3[o, order, f]
                v = v3[o, order, f]
                m = len(order)
                for k in range(m):
                    reach = range(k) if exclusive else range(k + 1)
                    for p in reach:
                        others = [q for q in reach if q != p]
                        grad3[o, order[p], f] += g[k] * np.prod(x[others])
                        for q in others:
                            rest = [r for r in others if r != q]
                            hv3[o, order[p], f] += g[k] * np.prod(x[rest]) * v[q]
    return grad3, hv3


def _zeroed(rng, src, axis, ishape, groups, zeros):
    src = src.copy()
    s3 = _as3(src, axis, ishape)   # a view of src's own buffer
    big = max(groups, key=len)
    if zeros:
        pick = rng.choice(big, size=min(zeros, len(big)), replace=False)
        s3[:, pick, :] = 0.0
    return src


@pytest.mark.parametrize("exclusive,reverse", FLAGS)
@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("zeros", (0, 1, 2))
@pytest.mark.parametrize("mode", ("raise", "drop"))
def test_scan_mul_second_order(exclusive, reverse, kind, layout, zeros, mode):
    src, index, dims, axis = make_case(11, kind, layout, mode, "float64")
    ishape = LAYOUTS[layout][0]
    groups = _members(index, dims, mode)
    rng = np.random.default_rng(3)
    src = _zeroed(rng, rng.normal(size=src.shape) * 1.3, axis, ishape, groups, zeros)
    kw = dict(dim_size=dims, axis=axis, mode=mode, exclusive=exclusive, reverse=reverse)

    def f(s):
        return csgrad.scatter_scan(s, index, "mul", **kw)
    check_grads(f, modes=["fwd", "rev"], order=2)(src)

    # exact against the loops: integer-valued src (products and sums of small integers are exact in float64)
    xi = _zeroed(rng, rng.integers(-3, 4, src.shape).astype(np.float64), axis, ishape, groups, zeros)
    g = rng.integers(-3, 4, src.shape).astype(np.float64)
    v = rng.integers(-3, 4, src.shape).astype(np.float64)
    first = agrad(lambda s: anp.sum(g * f(s)))
    want_grad, want_hv = _loop_grads(_as3(xi, axis, ishape), _as3(g, axis, ishape), _as3(v, axis, ishape),
                                     groups, exclusive, reverse)
    np.testing.assert_array_equal(_as3(first(xi), axis, ishape), want_grad)
    np.testing.assert_array_equal(_as3(agrad(lambda s: anp.sum(first(s) * v))(xi), axis, ishape), want_hv)
    # forward over forward: the second directional derivative v' H v
    from autograd import make_jvp
    jvp2 = make_jvp(lambda s: make_jvp(lambda t: anp.sum(g * f(t)))(s)(v)[1])(xi)(v)[1]
    assert jvp2 == np.sum(want_hv * _as3(v, axis, ishape))
    # the first derivative is the core's reverse function's
    np.testing.assert_array_equal(first(xi), cs.scatter_scan_vjp("mul", g, xi, index, **kw))


@pytest.mark.parametrize("exclusive,reverse", FLAGS)
@pytest.mark.parametrize("zeros", (0, 1, 2, 3))
def test_scan_mul_grads_match_torch_cumprod(exclusive, reverse, zeros):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5 + zeros)
    index = np.array([1, 0, 1, 1, 2, 0, 1, 1, 0, 1, 2])
    src = rng.normal(size=(index.size, 3))
    members = np.flatnonzero(index == 1)
    src[rng.choice(members, size=zeros, replace=False), :] = 0.0
    g = rng.normal(size=src.shape)
    v = rng.normal(size=src.shape)
    kw = dict(exclusive=exclusive, reverse=reverse)
    first = agrad(lambda s: anp.sum(g * csgrad.scatter_scan(s, index, "mul", **kw)))
    hv = agrad(lambda s: anp.sum(first(s) * v))(src)

    want_grad = np.zeros_like(src)
    want_hv = np.zeros_like(src)
    for row in np.unique(index):
        pos = np.flatnonzero(index == row)
        if reverse:
            pos = pos[::-1]
        x = torch.tensor(src[pos], dtype=torch.float64, requires_grad=True)
        prod_in = torch.cat([torch.ones_like(x[:1]), x[:-1]]) if exclusive else x
        y = torch.cumprod(prod_in, dim=0)
        (gx,) = torch.autograd.grad((y * torch.tensor(g[pos])).sum(), x, create_graph=True)
        (hx,) = torch.autograd.grad((gx * torch.tensor(v[pos])).sum(), x, allow_unused=True)
        want_grad[pos] = gx.detach().numpy()
        want_hv[pos] = 0.0 if hx is None else hx.numpy()
    np.testing.assert_allclose(first(src), want_grad, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(hv, want_hv, rtol=1e-11, atol=1e-12)
    assert np.isfinite(first(src)).all() and np.isfinite(hv).all()


def test_scan_mul_third_order_and_zero_cotangent_exact():
    """Third order by check_grads; a zero's cotangent is the product of the others, two zeros give 0 exactly."""
    index = np.array([0, 0, 1, 0, 1, 0])
    x = np.array([2.0, 0.0, 3.0, 5.0, 4.0, 7.0])
    check_grads(lambda s: csgrad.scatter_scan(s, index, "mul"), modes=["fwd", "rev"], order=3)(x + 0.1)
    last = agrad(lambda s: csgrad.scatter_scan(s, index, "mul")[5])
    np.testing.assert_array_equal(last(x), [0.0, 2 * 5 * 7, 0.0, 0.0, 0.0, 0.0])
    x2 = x.copy()
    x2[3] = 0.0
    np.testing.assert_array_equal(last(x2), np.zeros(6))
    # second derivative through the two zeros: d2 y_5 / dx_1 dx_3 = 2 * 7
    h = agrad(lambda s: last(s)[1])(x2)
    np.testing.assert_array_equal(h, [0.0, 0.0, 0.0, 14.0, 0.0, 0.0])


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_scan_mul_second_order_index_dtypes(index_dtype):
    index = np.array([2, 0, 2, 2, 1, 0, 2], index_dtype)
    x = np.array([1.5, -0.5, 0.0, 2.0, 0.7, 1.1, -1.2])
    for exclusive, reverse in FLAGS:
        kw = dict(dim_size=3, exclusive=exclusive, reverse=reverse)
        check_grads(lambda s: csgrad.scatter_scan(s, index, "mul", **kw), modes=["fwd", "rev"], order=2)(x)
        g = np.arange(1.0, 8.0)
        got = agrad(lambda s: anp.sum(g * csgrad.scatter_scan(s, index, "mul", **kw)))(x)
        np.testing.assert_array_equal(got, cs.scatter_scan_vjp("mul", g, x, index.astype(np.int64), **kw))
