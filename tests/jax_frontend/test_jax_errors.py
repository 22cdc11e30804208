"""cyscatter.jax's errors: the argument the user passed is named (total_size, num_segments, a peer's keyword), a
value check that runs inside the host callback under jit still carries cyscatter's message, and the porting hints
of the core reach the JAX frontend."""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp

import cyscatter as cs
import cyscatter.jax as cj

SRC, INDPTR = jnp.array([1.0, 2.0]), jnp.array([0, 3, 4])


# ---- gather_segment's total_size -------------------------------------------------------------------------------

def test_gather_segment_total_size_not_indptr_end_names_both():
    with pytest.raises(ValueError, match=r"total_size=5 .*indptr\[-1\] = 4"):
        cj.gather_segment(SRC, INDPTR, total_size=5)
    # the right size, and the size read from indptr, give np.repeat's rows
    expected = np.repeat(np.asarray(SRC), np.diff(np.asarray(INDPTR)))
    np.testing.assert_array_equal(cj.gather_segment(SRC, INDPTR, total_size=4), expected)
    np.testing.assert_array_equal(cj.gather_segment(SRC, INDPTR), expected)


def test_gather_segment_total_size_under_jit_carries_the_message():
    f = jax.jit(lambda s, p: cj.gather_segment(s, p, total_size=5))
    with pytest.raises(RuntimeError, match=r"ValueError: .*total_size=5 .*indptr\[-1\] = 4") as caught:
        f(SRC, INDPTR)
    assert "AssertionError" not in str(caught.value)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: cj.gather_segment(SRC, INDPTR, total_size=-1), ValueError, "total_size"),
    (lambda: cj.gather_segment(SRC, INDPTR, total_size=4.0), TypeError, "total_size"),
    (lambda: cj.gather_segment(jnp.ones(3), INDPTR), ValueError, "one row per segment"),
    (lambda: cj.gather_segment(SRC, jnp.array([0, 3, 1])), ValueError, "must not decrease"),
], ids=["negative", "float", "src rows", "decreasing"])
def test_gather_segment_bad_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_gather_segment_src_rows_checked_at_trace_time():
    with pytest.raises(ValueError, match="one row per segment"):
        jax.jit(lambda s, p: cj.gather_segment(s, p, total_size=4))(jnp.ones(3), INDPTR)


# ---- value errors under jit --------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda s: cj.scatter(s, jnp.array([0, 5]), "add", dim_size=2),
     "IndexError: index[1] = 5 is out of bounds for an indexed axis of size 2"),
    (lambda s: cj.gather(s, jnp.array([0, 7])), "IndexError: index[1] = 7 is out of bounds"),
    (lambda s: cj.segment(s, jnp.array([0, 2, 1, 2]), "add"),
     "ValueError: indptr must not decrease, but indptr[1] = 2 > indptr[2] = 1"),
], ids=["scatter raise", "gather raise", "segment decreasing indptr"])
def test_a_value_error_under_jit_holds_cyscatters_message(call, message):
    # JAX does not carry an exception's type out of a callback (docs/jax.rst says so): the message must survive
    with pytest.raises(RuntimeError) as caught:
        jax.jit(call)(jnp.ones(2))
    assert message in str(caught.value)
    with pytest.raises((IndexError, ValueError), match=message.split(": ", 1)[1][:30].replace("[", r"\[")):
        call(jnp.ones(2))   # eagerly the documented type


# ---- num_segments is named, and an int -----------------------------------------------------------------------

@pytest.mark.parametrize("fn", [cj.segment_sum, cj.segment_max, cj.segment_min, cj.segment_prod])
def test_num_segments_is_named_not_dim_size(fn):
    data, ids = jnp.ones(3), jnp.array([0, 0, 1])
    with pytest.raises(ValueError, match="num_segments") as caught:
        fn(data, ids, -1)
    assert "dim_size" not in str(caught.value)
    with pytest.raises(TypeError, match="num_segments"):   # jax.ops.segment_* raise TypeError for a float too
        fn(data, ids, 2.0)
    with pytest.raises(TypeError, match="num_segments"):
        fn(data, ids, True)
    with pytest.raises(TypeError):
        jax.ops.segment_sum(data, ids, 2.0)
    np.testing.assert_array_equal(fn(data, ids, np.int64(2)), fn(data, ids, 2))


def test_num_segments_too_large_names_num_segments():
    with pytest.raises(MemoryError, match="num_segments=1099511627776") as caught:
        cj.segment_sum(jnp.ones(3), jnp.array([0, 0, 1]), 2**40)
    assert "dim_size" not in str(caught.value)


def test_dim_size_float_is_a_type_error():
    with pytest.raises(TypeError, match="dim_size"):
        cj.scatter(jnp.ones(3), jnp.array([0, 0, 1]), "add", dim_size=2.0)


# ---- porting hints -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("keyword, value, says", [
    ("reduce", "sum", "calls it op"),
    ("num_segments", 3, "calls it dim_size"),
    ("dim", 0, "calls it axis"),
    ("device", "cpu", "host"),
])
@pytest.mark.parametrize("fn", [
    lambda **kw: cj.scatter(jnp.ones(2), jnp.array([0, 1]), **kw),
    lambda **kw: cj.scatter_softmax(jnp.ones(2), jnp.array([0, 1]), **kw),
    lambda **kw: cj.gather_scatter(jnp.ones(2), jnp.array([0, 1]), jnp.array([1, 0]), **kw),
], ids=["scatter", "scatter_softmax", "gather_scatter"])
def test_a_peer_keyword_names_the_cyscatter_spelling(fn, keyword, value, says, request):
    if keyword == "dim" and "gather_scatter" in request.node.callspec.id:
        says = "jnp.moveaxis"   # gather_scatter has no axis: it indexes axis 0
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'") as caught:
        fn(**{keyword: value})
    assert says in str(caught.value)


def test_an_unknown_keyword_reads_as_python_says_it():
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'nope'$"):
        cj.scatter(jnp.ones(2), jnp.array([0, 1]), nope=1)


def test_an_edge_index_passed_whole_is_told_to_split():
    edge_index = jnp.array([[0, 1, 2], [1, 2, 0]])
    with pytest.raises(TypeError, match=r"the op goes in the op position") as caught:
        cj.gather_scatter(jnp.ones(3), edge_index, "add")
    assert "edge_index[0], edge_index[1]" in str(caught.value)
    with pytest.raises(ValueError, match=r"edge_index\[0\], edge_index\[1\]"):
        cj.gather_scatter(jnp.ones(3), edge_index, op="add")


# ---- a tuple or list index: cyscatter reads a tuple as per-axis indices, jnp.asarray as one stacked array ----------

_I0, _I1 = jnp.array([0, 1, 1, 0]), jnp.array([1, 1, 0, 2])
_SRC4 = jnp.arange(4.0)
_TUPLE_CALLS = {
    "gather": (lambda ix: cj.gather(jnp.arange(15.0).reshape(3, 5), ix), "index"),
    "gather_scatter (gather_index)": (lambda ix: cj.gather_scatter(_SRC4, ix, _I0), "gather_index"),
    "gather_scatter (scatter_index)": (lambda ix: cj.gather_scatter(_SRC4, _I0, ix), "scatter_index"),
    "gather_segment": (lambda ix: cj.gather_segment(_SRC4, ix), "indptr"),
    "segment": (lambda ix: cj.segment(_SRC4, ix), "indptr"),
    "scatter_count": (lambda ix: cj.scatter_count(ix), "index"),
    "scatter_into": (lambda ix: cj.scatter_into(jnp.zeros((3, 3)), _SRC4, ix), "index"),
    "scatter_scan": (lambda ix: cj.scatter_scan(_SRC4, ix), "index"),
    **{name: (lambda ix, name=name: getattr(cj, name)(jnp.arange(8.0).reshape(2, 4), ix), "index")
       for name in ("scatter", "scatter_all", "scatter_any", "scatter_argmax", "scatter_argmin", "scatter_nanargmax",
                    "scatter_nanargmin", "scatter_log_softmax", "scatter_logsumexp", "scatter_softmax",
                    "scatter_std", "scatter_var", "scatter_nanstd", "scatter_nanvar")},
    **{name: (lambda ix, name=name: getattr(cj, name)(_SRC4, ix, 3), "segment_ids")
       for name in ("segment_sum", "segment_max", "segment_min", "segment_prod")},
}


def test_every_index_taking_function_is_covered():
    covered = {name.split(" ")[0] for name in _TUPLE_CALLS}
    assert covered == set(cj.__all__)


# the functions whose index is one array (CSR offsets, jax.ops's segment ids) refuse a tuple; every function refuses
# a list (jnp.asarray would read a list of arrays as one stacked index)
_ONE_ARRAY = {"gather_segment", "segment", "segment_sum", "segment_max", "segment_min", "segment_prod"}


@pytest.mark.parametrize("name, container", [(name, list) for name in sorted(_TUPLE_CALLS)]
                         + [(name, tuple) for name in sorted(_ONE_ARRAY)])
def test_tuple_or_list_index_is_refused_naming_the_argument(name, container):
    call, arg = _TUPLE_CALLS[name]
    with pytest.raises(TypeError, match=rf"^{arg} must be a jax\.Array of integers.*, got {container.__name__}"):
        call(container((_I0, _I1)))


def test_tuple_index_is_not_read_as_a_stacked_index():
    # a stacked (2, 4) index would give a 1-d answer that cyscatter never gives for this tuple
    src = np.arange(8.0).reshape(2, 4)
    stacked = cj.scatter(jnp.asarray(src), jnp.stack((_I0, _I1)))
    assert stacked.ndim == 1
    per_axis = cj.scatter(jnp.asarray(src[0]), (_I0, _I1))
    np.testing.assert_array_equal(per_axis, cs.scatter(src[0], (np.asarray(_I0), np.asarray(_I1))))
    assert per_axis.shape == (2, 3)
    with pytest.raises(TypeError, match="index"):
        cj.scatter(jnp.asarray(src), [_I0, _I1])
