"""Errors that name the cyscatter way for the usual mistakes of a port from torch_scatter, PyG or JAX: their
keywords (reduce=, dim=, num_segments=, device=), an edge_index of shape (2, E) passed whole, an op name in an
index position, a dim_size too small, an index with more dims than src."""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import re

import numpy as np
import pytest

import cyscatter as cs

PACKAGES = {"cyscatter": None, "cyscatter.dask": "dask", "grad": "autograd"}

# keyword of the peer -> what the message must name (written out here, not read from the code under test)
SPELLING = {
    "reduce": "calls it op",
    "dim": "calls it axis",
    "num_segments": "calls it dim_size",
    "num_nodes": "calls it dim_size",
    "device": "pass CuPy arrays",
    "include_self": "scatter_into",
}


def sized_functions():
    """Every public function of cyscatter, cyscatter.dask and grad that takes an axis or a dim_size."""
    for package, needs in PACKAGES.items():
        if needs and importlib.util.find_spec(needs) is None:
            continue
        module = importlib.import_module(package)
        for name in module.__all__:
            fn = getattr(module, name)
            if not callable(fn) or inspect.isclass(fn):
                continue
            params = inspect.signature(fn).parameters
            if "axis" in params or "dim_size" in params:
                yield pytest.param(fn, id=f"{package}.{name}")


def required_positionals(fn) -> list:
    return [None for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]


def test_the_grid_covers_the_families():
    names = {p.id for p in sized_functions()}
    for expected in ("cyscatter.scatter", "cyscatter.gather", "cyscatter.gather_scatter", "cyscatter.segment",
                     "cyscatter.scatter_softmax", "cyscatter.scatter_vjp_src", "cyscatter.scatter_count",
                     "cyscatter.scatter_scan_vjp", "cyscatter.gather_scatter_plan"):
        assert expected in names
    assert len(names) >= 45


@pytest.mark.parametrize("keyword", sorted(SPELLING))
@pytest.mark.parametrize("fn", list(sized_functions()))
def test_a_peer_keyword_names_the_cyscatter_spelling(fn, keyword):
    with pytest.raises(TypeError) as caught:
        fn(*required_positionals(fn), **{keyword: 0})
    message = str(caught.value)
    assert f"unexpected keyword argument '{keyword}'" in message
    assert SPELLING[keyword] in message


@pytest.mark.parametrize("fn", [cs.scatter, cs.gather_scatter_plan, cs.scatter_softmax])
def test_an_unknown_keyword_still_reads_as_python_says_it(fn):
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'bogus'$"):
        fn(*required_positionals(fn), bogus=1)


def test_the_catch_all_is_not_in_the_public_signature():
    for name in cs.__all__:
        fn = getattr(cs, name)
        if inspect.isfunction(fn):
            kinds = {p.kind for p in inspect.signature(fn).parameters.values()}
            assert inspect.Parameter.VAR_KEYWORD not in kinds, name


def test_keywords_that_exist_are_taken():
    """The catch-all takes only what the signature does not: a call with every real keyword still works."""
    src, index = np.arange(4.0), np.array([0, 1, 0, 1])
    got = cs.scatter(src, index, op="add", dim_size=2, axis=0, fill_value=None, dtype=None, out=None,
                     mode="raise", indices_are_sorted=False, num_threads=1)
    np.testing.assert_array_equal(got, [2.0, 4.0])


# ---- PyG's edge_index and an op in an index position -----------------------------------------------------------

EDGE_INDEX = np.array([[0, 1, 2, 3], [1, 2, 3, 0]])


@pytest.mark.parametrize("call", [
    lambda x: cs.gather_scatter(x, EDGE_INDEX),
    lambda x: cs.gather_scatter(x, EDGE_INDEX, "add"),
    lambda x: cs.gather_scatter(x, EDGE_INDEX, op="mean"),
], ids=["edge_index alone", "edge_index then op", "edge_index with op="])
def test_an_edge_index_passed_whole_is_told_to_split(call):
    with pytest.raises(TypeError) as caught:
        call(np.ones((4, 3)))
    message = str(caught.value)
    assert "shape (2, 4)" in message and "edge_index[0], edge_index[1]" in message


@pytest.mark.parametrize("call", [
    lambda x: cs.gather_scatter(x, EDGE_INDEX.tolist(), "add"),
    lambda x: cs.gather_scatter_plan(EDGE_INDEX, src_size=4, dim_size=4),
    lambda x: cs.gather_scatter_plan(EDGE_INDEX.tolist(), src_size=4, dim_size=4),
], ids=["edge_index as a list", "plan of edge_index", "plan of an edge_index list"])
def test_an_edge_index_list_or_plan_is_told_to_split(call):
    with pytest.raises(TypeError) as caught:
        call(np.ones((4, 3)))
    message = str(caught.value)
    assert "shape (2, 4)" in message and "edge_index[0], edge_index[1]" in message


@pytest.mark.parametrize("call", [
    lambda x: cs.gather_scatter(x, EDGE_INDEX.T, "add"),
    lambda x: cs.gather_scatter(x, EDGE_INDEX.T.tolist(), "add"),
    lambda x: cs.gather_scatter_plan(EDGE_INDEX.T, src_size=4, dim_size=4),
], ids=["array", "list", "plan"])
def test_a_transposed_edge_index_is_told_to_split_its_columns(call):
    with pytest.raises(TypeError) as caught:
        call(np.ones((4, 3)))
    message = str(caught.value)
    assert "shape (4, 2)" in message and "[:, 0]" in message and "[:, 1]" in message


def test_a_plan_without_scatter_index_says_it_is_missing():
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'scatter_index'") as caught:
        cs.gather_scatter_plan(np.array([0, 1, 2]), dim_size=3)
    assert "edge_index" not in str(caught.value)   # a 1-D index is no edge_index


def test_an_op_in_the_scatter_index_position_names_the_op_position():
    with pytest.raises(TypeError, match=r"scatter_index='add' is a string: the op goes in the op position"):
        cs.gather_scatter(np.ones((4, 3)), np.array([0, 1]), "add")


@pytest.mark.parametrize("call", [
    lambda: cs.scatter(np.ones(4), "add"),
    lambda: cs.gather(np.ones(4), "max"),
    lambda: cs.scatter_softmax(np.ones(4), "add"),
    lambda: cs.scatter_count("add"),
], ids=["scatter", "gather", "scatter_softmax", "scatter_count"])
def test_an_op_where_an_index_belongs_is_named(call):
    with pytest.raises(TypeError, match=r"='(add|max)' is a string where an index array is expected: an op name "
                                        r"goes in the op position"):
        call()


# ---- a dim_size too small ------------------------------------------------------------------------------------

SRC, INDEX = np.arange(4.0), np.array([0, 1, 5, 1])


@pytest.mark.parametrize("call, label", [
    (lambda mode: cs.scatter(SRC, INDEX, "add", dim_size=3, mode=mode), "index[2] = 5"),
    (lambda mode: cs.scatter(SRC, INDEX, "max", dim_size=3, mode=mode), "index[2] = 5"),
    (lambda mode: cs.scatter(SRC, (INDEX, INDEX), "add", dim_size=(3, 9), mode=mode), "index[0][2] = 5"),
    (lambda mode: cs.scatter_count(INDEX, 3, mode=mode), "index[2] = 5"),
    (lambda mode: cs.scatter_argmax(SRC, INDEX, dim_size=3, mode=mode), "index[2] = 5"),
    (lambda mode: cs.scatter_var(SRC, INDEX, dim_size=3, mode=mode), "index[2] = 5"),
    (lambda mode: cs.scatter_logsumexp(SRC, INDEX, dim_size=3, mode=mode), "index[2] = 5"),
    (lambda mode: cs.scatter_softmax(SRC, INDEX, dim_size=3, mode=mode), "index[2] = 5"),
    (lambda mode: cs.scatter_any(SRC, INDEX, dim_size=3, mode=mode), "index[2] = 5"),
    (lambda mode: cs.scatter_scan(SRC, INDEX, dim_size=3, mode=mode), "index[2] = 5"),
    (lambda mode: cs.scatter_scan_vjp("add", np.ones(4), SRC, INDEX, dim_size=3, mode=mode), "index[2] = 5"),
    (lambda mode: cs.gather_scatter(np.ones((6, 2)), np.arange(4), INDEX, dim_size=3, mode=mode),
     "scatter_index[2] = 5"),
    (lambda mode: cs.gather_scatter_plan(INDEX, np.arange(4), src_size=3, dim_size=9, mode=mode),
     "gather_index[2] = 5"),
], ids=["scatter", "scatter max", "tuple index", "count", "argmax", "var", "logsumexp", "softmax", "any", "scan",
        "scan_vjp", "gather_scatter", "plan src_size"])
def test_a_bound_error_names_the_size_that_was_given(call, label):
    with pytest.raises(IndexError) as caught:
        call("raise")
    message = str(caught.value)
    assert label in message
    given = "src_size=3" if "plan" in label or "gather_index" in label else \
        "dim_size=(3, 9)" if "[0][2]" in label else "dim_size=3"
    assert f"{given} was given: it may be too small" in message
    call("drop")   # the same call is valid once the entry may be dropped


def test_a_bound_error_blames_a_zero_dim_size():
    with pytest.raises(IndexError) as caught:
        cs.scatter(np.ones(2), np.array([0, 3]), dim_size=0)
    assert "index[0] = 0" in str(caught.value) and "dim_size=0 was given: it may be too small" in str(caught.value)


@pytest.mark.parametrize("fn", [cs.scatter_quantile_vjp, cs.scatter_nanquantile_vjp])
def test_a_reverse_bound_error_names_grad_out_not_dim_size(fn):
    # the size comes from grad_out's shape: the function has no dim_size to blame
    with pytest.raises(IndexError) as caught:
        fn(np.ones(2), np.array([2., 5, 5, 1]), np.array([0, 0, 0, 2]), 0.5)
    message = str(caught.value)
    assert "index[3] = 2" in message and "dim_size" not in message
    assert "read from grad_out's shape" in message and "it may be too small" in message


def test_a_bound_error_without_dim_size_does_not_blame_it():
    with pytest.raises(IndexError) as caught:
        cs.scatter_into(np.zeros(3), SRC, INDEX)
    assert "dim_size" not in str(caught.value) and "index[2] = 5" in str(caught.value)


# ---- an index with more dims than src --------------------------------------------------------------------------

@pytest.mark.parametrize("call, src_dims, index_dims", [
    (lambda: cs.scatter_softmax(np.ones(4), np.zeros((2, 2), int)), 1, 2),
    (lambda: cs.scatter_softmax(np.ones(4), np.zeros((2, 2), int), axis=-1), 1, 2),
    (lambda: cs.scatter_log_softmax(np.float64(1.0), np.zeros(3, int)), 0, 1),
    (lambda: cs.gather(np.float64(1.0), np.zeros(3, int)), 0, 1),
])
def test_an_index_with_more_dims_than_src_says_so(call, src_dims, index_dims):
    with pytest.raises(ValueError) as caught:
        call()
    message = str(caught.value)
    assert f"src has {src_dims} dims but the index has {index_dims}" in message
    assert not re.search(r"valid: -?\d+ \.\. -\d", message)   # no empty range such as "-1 .. -1" or "0 .. -1"


def test_a_negative_entry_does_not_blame_dim_size():
    with pytest.raises(IndexError) as caught:
        cs.scatter(SRC, np.array([0, -1, 0, 1]), dim_size=3)
    assert "index[1] = -1" in str(caught.value) and "dim_size" not in str(caught.value)
