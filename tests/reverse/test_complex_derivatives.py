"""One rule for complex cotangents and tangents in every public reverse function: the derivative w.r.t. a real
input is real (JAX's rule), so a complex ``grad_out`` / ``src_dot`` of a real primal is a TypeError naming it,
never a complex result. The gather-only functions (gather_vjp_src, gather_jvp, gather_segment_vjp_src) are given
no primal: they are linear maps whose complex cotangent belongs to a complex src, and move it as it is."""
import numpy as np
import pytest

import cyscatter as cs

SRC, IDX, INDPTR = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 1, 1, 0]), np.array([0, 2, 4])
GI, WEIGHT = np.array([0, 1, 2, 3]), np.array([1.0, 2.0, 3.0, 4.0])
STARTS, STOPS = np.array([0, 2]), np.array([2, 4])
OPS = ["add", "max"]


def _c(a):
    return a + 1j


def _calls():
    out, seg = cs.scatter(SRC, IDX, "add"), cs.segment(SRC, INDPTR, "add")
    gso = cs.gather_scatter(SRC, GI, IDX, "add")
    gsw = cs.gather_scatter(SRC, GI, IDX, "add", weight=WEIGHT)
    smo, sgo = cs.scatter_multi(SRC, IDX, OPS), cs.segment_multi(SRC, INDPTR, OPS)
    gmo, gmw = cs.gather_scatter_multi(SRC, GI, IDX, OPS), cs.gather_scatter_multi(SRC, GI, IDX, OPS, weight=WEIGHT)
    grp = {n: getattr(cs, n)(SRC, IDX) for n in ("scatter_logsumexp", "scatter_softmax", "scatter_log_softmax")}
    calls = {
        "gather_scatter_jvp": ("src_dot", lambda: cs.gather_scatter_jvp("add", SRC, GI, IDX, gso, _c(SRC))),
        "gather_scatter_vjp_src": ("grad_out", lambda: cs.gather_scatter_vjp_src("add", _c(gso), SRC, GI, IDX, gso)),
        "gather_scatter_vjp_weight": ("grad_out", lambda: cs.gather_scatter_vjp_weight(
            "add", _c(gsw), SRC, GI, IDX, gsw, weight=WEIGHT)),
        "scatter_jvp": ("src_dot", lambda: cs.scatter_jvp("add", SRC, IDX, out, _c(SRC))),
        "scatter_vjp_src": ("grad_out", lambda: cs.scatter_vjp_src("add", _c(out), SRC, IDX, out)),
        "scatter_vjp_dst": ("grad_out", lambda: cs.scatter_vjp_dst("add", _c(out), np.zeros(2), SRC, IDX, out)),
        "scatter_scan_jvp": ("src_dot", lambda: cs.scatter_scan_jvp("add", SRC, IDX, _c(SRC))),
        "scatter_scan_vjp": ("grad_out", lambda: cs.scatter_scan_vjp("add", _c(SRC), SRC, IDX)),
        "segment_jvp": ("src_dot", lambda: cs.segment_jvp("add", SRC, INDPTR, seg, _c(SRC))),
        "segment_vjp_src": ("grad_out", lambda: cs.segment_vjp_src("add", _c(seg), SRC, INDPTR, seg)),
        "segment_ranges_jvp": ("src_dot", lambda: cs.segment_ranges_jvp("add", SRC, STARTS, STOPS, seg, _c(SRC))),
        "segment_ranges_vjp_src": ("grad_out", lambda: cs.segment_ranges_vjp_src(
            "add", _c(seg), SRC, STARTS, STOPS, seg)),
        "scatter_softmax_jvp": ("", lambda: cs.scatter_softmax_jvp(grp["scatter_softmax"], IDX, _c(SRC))),
        "scatter_softmax_vjp": ("", lambda: cs.scatter_softmax_vjp(_c(SRC), grp["scatter_softmax"], IDX)),
        "scatter_log_softmax_jvp": ("", lambda: cs.scatter_log_softmax_jvp(grp["scatter_log_softmax"], IDX,
                                                                           _c(SRC))),
        "scatter_log_softmax_vjp": ("", lambda: cs.scatter_log_softmax_vjp(_c(SRC), grp["scatter_log_softmax"],
                                                                           IDX)),
        "scatter_logsumexp_jvp": ("", lambda: cs.scatter_logsumexp_jvp(SRC, IDX, grp["scatter_logsumexp"],
                                                                       _c(SRC))),
        "scatter_logsumexp_vjp": ("", lambda: cs.scatter_logsumexp_vjp(_c(out), SRC, IDX,
                                                                       grp["scatter_logsumexp"])),
        "scatter_multi_jvp": ("src_dot", lambda: cs.scatter_multi_jvp(OPS, SRC, IDX, smo, _c(SRC))),
        "scatter_multi_vjp_src": ("grad_out", lambda: cs.scatter_multi_vjp_src(OPS, _c(smo), SRC, IDX, smo)),
        "segment_multi_jvp": ("src_dot", lambda: cs.segment_multi_jvp(OPS, SRC, INDPTR, sgo, _c(SRC))),
        "segment_multi_vjp_src": ("grad_out", lambda: cs.segment_multi_vjp_src(OPS, _c(sgo), SRC, INDPTR, sgo)),
        "gather_scatter_multi_jvp": ("src_dot", lambda: cs.gather_scatter_multi_jvp(OPS, SRC, GI, IDX, gmo,
                                                                                    _c(SRC))),
        "gather_scatter_multi_vjp_src": ("grad_out", lambda: cs.gather_scatter_multi_vjp_src(
            OPS, _c(gmo), SRC, GI, IDX, gmo)),
        "gather_scatter_multi_vjp_weight": ("grad_out", lambda: cs.gather_scatter_multi_vjp_weight(
            OPS, _c(gmw), SRC, GI, IDX, gmw, weight=WEIGHT)),
    }
    for m in ("quantile", "nanquantile"):
        calls[f"scatter_{m}_jvp"] = ("", lambda m=m: getattr(cs, f"scatter_{m}_jvp")(SRC, IDX, _c(SRC)))
        calls[f"scatter_{m}_vjp"] = ("", lambda m=m: getattr(cs, f"scatter_{m}_vjp")(_c(out), SRC, IDX))
    for m in ("var", "std", "nanvar", "nanstd"):
        res = getattr(cs, f"scatter_{m}")(SRC, IDX)
        calls[f"scatter_{m}_jvp"] = ("", lambda m=m, res=res: getattr(cs, f"scatter_{m}_jvp")(SRC, IDX, res,
                                                                                               _c(SRC)))
        calls[f"scatter_{m}_vjp"] = ("", lambda m=m, res=res: getattr(cs, f"scatter_{m}_vjp")(_c(res), SRC, IDX,
                                                                                               res))
    return calls


CALLS = _calls()
PRIMAL_FREE = ("gather_jvp", "gather_vjp_src", "gather_segment_vjp_src")


def test_every_public_reverse_function_is_covered():
    public = {n for n in cs.__all__ if "vjp" in n or "jvp" in n}
    assert public == set(CALLS) | set(PRIMAL_FREE)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_complex_derivative_of_a_real_primal_is_refused(name):
    arg, call = CALLS[name]
    # the group functions refuse complex arrays altogether ("differentiates real inputs only")
    match = rf"^{arg} is complex \(complex128\)" if arg else "real"
    with pytest.raises(TypeError, match=match):
        call()


def test_primal_free_gathers_move_a_complex_cotangent_as_it_is():
    g = np.array([1 + 2j, 3 - 1j, 0.5j, 2.0])
    expected = np.zeros(2, complex)
    np.add.at(expected, IDX, g)
    np.testing.assert_array_equal(cs.gather_vjp_src(g, IDX, 2), expected)
    np.testing.assert_array_equal(cs.gather_jvp(g, IDX), g[IDX])
    np.testing.assert_array_equal(cs.gather_segment_vjp_src(g, INDPTR), [g[0] + g[1], g[2] + g[3]])


def test_complex_primal_takes_a_complex_cotangent():
    src = SRC * (1 + 1j)
    out = cs.scatter(src, IDX, "add")
    g = np.array([2 - 1j, 1j])
    np.testing.assert_array_equal(cs.scatter_vjp_src("add", g, src, IDX, out), g[IDX])
    np.testing.assert_array_equal(cs.scatter_jvp("add", src, IDX, out, _c(SRC)),
                                  np.bincount(IDX, SRC) + 1j * np.bincount(IDX))
    # a real tangent of a complex primal is fine too (it is the real direction)
    np.testing.assert_array_equal(cs.scatter_jvp("add", src, IDX, out, SRC), np.bincount(IDX, SRC))
