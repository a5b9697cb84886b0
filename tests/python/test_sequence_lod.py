"""LoD tensors and the sequence layers: create_lod_tensor, the DataFeeder's
sequences, offsets through embedding and back from fetches, each sequence
op against a NumPy reference on ragged batches (empty sequences, length 1, a
10,000-step sequence), and a bag-of-ids CTR model that trains on LoD ids."""

import re

import numpy as np
import pytest

import flotilla
from flotilla import errors, fluid

from conftest import run_ps_job, run_python

LENGTHS = [3, 0, 1, 10000, 2]


def _offsets(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(int).tolist()


def _exe():
    return fluid.Executor(fluid.CPUPlace())


def _run(feed, fetch):
    return _exe().run(fluid.default_main_program(), feed=feed, fetch_list=fetch, return_numpy=False)


def _ragged(width=3, lengths=LENGTHS, seed=0):
    data = np.random.RandomState(seed).uniform(-1, 1, [sum(lengths), width]).astype("float32")
    return data, fluid.create_lod_tensor(data, [lengths], fluid.CPUPlace())


def _seqs(data, lengths):
    off = _offsets(lengths)
    return [data[off[i]:off[i + 1]] for i in range(len(lengths))]


def test_create_lod_tensor_from_list_array_and_tensor():
    t = fluid.create_lod_tensor([[1, 2], [], [3, 4, 5]], [[2, 0, 3]], fluid.CPUPlace())
    assert t.lod() == [[0, 2, 2, 5]]
    assert t.recursive_sequence_lengths() == [[2, 0, 3]]
    assert np.array(t).shape == (5, 1) and np.array(t).dtype == np.int64
    assert t.has_valid_recursive_sequence_lengths()
    a = fluid.create_lod_tensor(np.arange(6, dtype="float32").reshape(3, 2), [[1, 2]], fluid.CPUPlace())
    assert a.lod() == [[0, 1, 3]] and a.shape() == [3, 2]
    b = fluid.create_lod_tensor(a, [[2, 1]], fluid.CPUPlace())
    assert b.lod() == [[0, 2, 3]] and np.array_equal(np.array(b), np.array(a))
    two = fluid.create_lod_tensor(np.zeros([4, 1], "int64"), [[1, 2], [1, 0, 3]], fluid.CPUPlace())
    assert two.lod() == [[0, 1, 3], [0, 1, 1, 4]]
    for error in (ValueError, AssertionError):  # Paddle asserts; scripts catch AssertionError
        with pytest.raises(error, match="do not match"):
            fluid.create_lod_tensor([[1, 2], [3]], [[1, 2]], fluid.CPUPlace())
    with pytest.raises(errors.InvalidArgumentError, match="invalid LoD"):
        fluid.create_lod_tensor(np.zeros([3, 1], "int64"), [[1, 1]], fluid.CPUPlace())


def test_lengths_on_an_empty_tensor_are_checked_once_it_has_rows():
    t = fluid.LoDTensor()
    t.set_recursive_sequence_lengths([[1, 2, 3]])  # no rows yet: only the levels are checked
    assert t.recursive_sequence_lengths() == [[1, 2, 3]]
    for bad in ([[], [1], [3]], [[0], [2], [3]]):
        with pytest.raises(errors.InvalidArgumentError):
            t.set_recursive_sequence_lengths(bad)
    t.set(np.zeros([6, 1]), fluid.CPUPlace())
    assert t.has_valid_recursive_sequence_lengths()
    t.set(np.zeros([9, 1]), fluid.CPUPlace())
    assert not t.has_valid_recursive_sequence_lengths()


def test_lod_tensor_setters_keep_offsets_across_set():
    t = fluid.LoDTensor()
    t.set(np.arange(4, dtype="int64").reshape(4, 1), fluid.CPUPlace())
    assert t.lod() == [] and t.recursive_sequence_lengths() == []
    t.set_recursive_sequence_lengths([[1, 3]])
    assert t.lod() == [[0, 1, 4]]
    t.set(np.arange(4, dtype="int64").reshape(4, 1), fluid.CPUPlace())
    assert t.lod() == [[0, 1, 4]]
    t.set_lod([[0, 4]])
    assert t.recursive_sequence_lengths() == [[4]]
    with pytest.raises(errors.InvalidArgumentError):
        t.set_lod([[0, 5]])


def test_feeder_packs_sequences_and_fetch_returns_offsets(programs):
    ids = fluid.data(name="ids", shape=[-1, 1], dtype="int64", lod_level=1)
    assert ids.lod_level == 1
    emb = fluid.layers.embedding(ids, size=[10, 4])
    assert emb.lod_level == 1
    _exe().run(fluid.default_startup_program())
    feeder = fluid.DataFeeder(feed_list=[ids], place=fluid.CPUPlace())
    feed = feeder.feed([[[1, 2, 3]], [[]], [[4]]])
    assert feed["ids"].lod() == [[0, 3, 3, 4]]
    out, = _run(feed, [emb])
    assert out.lod() == [[0, 3, 3, 4]] and out.recursive_sequence_lengths() == [[3, 0, 1]]
    assert np.array(out).shape == (4, 4)
    numpy_out, = _exe().run(fluid.default_main_program(), feed=feed, fetch_list=[emb])
    assert numpy_out.shape == (4, 4)


@pytest.mark.parametrize("pool_type", ["sum", "average", "sqrt", "max", "first", "last"])
def test_sequence_pool_matches_numpy(programs, pool_type):
    x = fluid.data(name="x", shape=[-1, 3], dtype="float32", lod_level=1)
    out = fluid.layers.sequence_pool(x, pool_type=pool_type, pad_value=-7.0)
    data, t = _ragged()
    got, = _run({"x": t}, [out])
    ref = {"sum": lambda s: s.sum(0), "average": lambda s: s.mean(0), "sqrt": lambda s: s.sum(0) / np.sqrt(len(s)),
           "max": lambda s: s.max(0), "first": lambda s: s[0], "last": lambda s: s[-1]}[pool_type]
    want = np.stack([ref(s) if len(s) else np.full(3, -7.0) for s in _seqs(data, LENGTHS)])
    np.testing.assert_allclose(np.array(got), want, rtol=1e-4, atol=1e-4)
    assert got.lod() == []


def test_first_and_last_step(programs):
    x = fluid.data(name="x", shape=[-1, 3], dtype="float32", lod_level=1)
    first, last = fluid.layers.sequence_first_step(x), fluid.layers.sequence_last_step(x)
    lengths = [2, 1, 10000]
    data, t = _ragged(lengths=lengths)
    f, la = _run({"x": t}, [first, last])
    seqs = _seqs(data, lengths)
    np.testing.assert_array_equal(np.array(f), np.stack([s[0] for s in seqs]))
    np.testing.assert_array_equal(np.array(la), np.stack([s[-1] for s in seqs]))


def test_paddle_2_names(programs):
    nn = flotilla.static.nn
    for name in ["sequence_pool", "sequence_conv", "sequence_softmax", "sequence_expand", "sequence_expand_as",
                 "sequence_pad", "sequence_unpad", "sequence_reshape", "sequence_concat", "sequence_slice",
                 "sequence_reverse", "sequence_enumerate", "sequence_first_step", "sequence_last_step"]:
        assert getattr(nn, name) is getattr(nn.sequence_lod, name) is getattr(fluid.layers, name)
    import flotilla.static.nn.sequence_lod as by_path
    assert by_path is nn.sequence_lod


def test_sequence_softmax_and_reverse(programs):
    x = fluid.data(name="x", shape=[-1, 1], dtype="float32", lod_level=1)
    soft = fluid.layers.sequence_softmax(x)
    rev = flotilla.static.nn.sequence_lod.sequence_reverse(x)
    data, t = _ragged(width=1)
    s, r = _run({"x": t}, [soft, rev])
    seqs = _seqs(data, LENGTHS)
    want = np.concatenate([np.exp(q - q.max()) / np.exp(q - q.max()).sum() for q in seqs if len(q)])
    np.testing.assert_allclose(np.array(s), want, rtol=1e-4, atol=1e-7)
    np.testing.assert_array_equal(np.array(r), np.concatenate([q[::-1] for q in seqs]))
    assert s.lod() == r.lod() == [_offsets(LENGTHS)]


def test_sequence_expand_and_expand_as(programs):
    x = fluid.data(name="x", shape=[-1, 2], dtype="float32")
    y = fluid.data(name="y", shape=[-1, 1], dtype="float32", lod_level=1)
    expanded = fluid.layers.sequence_expand(x, y)
    expanded_as = fluid.layers.sequence_expand_as(x, y)
    xs = np.arange(10, dtype="float32").reshape(5, 2)
    _, yt = _ragged(width=1)
    e, ea = _run({"x": xs, "y": yt}, [expanded, expanded_as])
    want = np.repeat(xs, LENGTHS, axis=0)
    np.testing.assert_array_equal(np.array(e), want)
    np.testing.assert_array_equal(np.array(ea), want)
    assert ea.lod() == [_offsets(LENGTHS)] and e.lod() == []


def test_sequence_pad_unpad_and_mask(programs):
    x = fluid.data(name="x", shape=[-1, 3], dtype="float32", lod_level=1)
    pad = fluid.layers.fill_constant(shape=[1], dtype="float32", value=-1.0)
    padded, length = fluid.layers.sequence_pad(x, pad)
    back = fluid.layers.sequence_unpad(padded, length)
    mask = fluid.layers.sequence_mask(length, dtype="float32")
    lengths = [3, 0, 1, 7]
    data, t = _ragged(lengths=lengths)
    p, n, b, m = _run({"x": t}, [padded, length, back, mask])
    want = np.full([4, 7, 3], -1.0, dtype="float32")
    for i, s in enumerate(_seqs(data, lengths)):
        want[i, :len(s)] = s
    np.testing.assert_array_equal(np.array(p), want)
    np.testing.assert_array_equal(np.array(n), lengths)
    np.testing.assert_array_equal(np.array(b), data)
    assert b.lod() == [_offsets(lengths)]
    np.testing.assert_array_equal(np.array(m), (np.arange(7)[None, :] < np.array(lengths)[:, None]).astype("float32"))


def test_sequence_enumerate(programs):
    x = fluid.data(name="x", shape=[-1, 1], dtype="int64", lod_level=1)
    out = fluid.layers.sequence_enumerate(x, win_size=3, pad_value=-1)
    ids = [[1, 2, 3, 4], [], [5]]
    got, = _run({"x": fluid.create_lod_tensor(ids, [[4, 0, 1]], fluid.CPUPlace())}, [out])
    want = [[1, 2, 3], [2, 3, 4], [3, 4, -1], [4, -1, -1], [5, -1, -1]]
    np.testing.assert_array_equal(np.array(got), want)


def test_sequence_conv_matches_numpy(programs):
    x = fluid.data(name="x", shape=[-1, 2], dtype="float32", lod_level=1)
    out = fluid.layers.sequence_conv(x, num_filters=3, filter_size=3, bias_attr=False,
                                     param_attr=fluid.ParamAttr(name="conv_w"))
    lengths = [3, 0, 1, 40]
    data, t = _ragged(width=2, lengths=lengths)
    exe = _exe()
    exe.run(fluid.default_startup_program())
    got, = _run({"x": t}, [out])
    w = np.array(fluid.global_scope().find_var("conv_w").get_tensor())
    want = []
    for seq in _seqs(data, lengths):
        padded = np.concatenate([np.zeros([1, 2]), seq, np.zeros([1, 2])])
        want += [padded[r:r + 3].reshape(-1) @ w for r in range(len(seq))]
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-4, atol=1e-5)
    assert got.lod() == [_offsets(lengths)]


def test_sequence_concat_reshape_and_slice(programs):
    a = fluid.data(name="a", shape=[-1, 2], dtype="float32", lod_level=1)
    b = fluid.data(name="b", shape=[-1, 2], dtype="float32", lod_level=1)
    offset = fluid.data(name="offset", shape=[-1, 1], dtype="int64")
    length = fluid.data(name="length", shape=[-1, 1], dtype="int64")
    cat = fluid.layers.sequence_concat([a, b])
    flat = fluid.layers.sequence_reshape(a, new_dim=1)
    sliced = fluid.layers.sequence_slice(a, offset, length)
    la, lb = [3, 0, 1, 10000, 2], [1, 2, 0, 5, 0]
    da, ta = _ragged(width=2, lengths=la, seed=1)
    db, tb = _ragged(width=2, lengths=lb, seed=2)
    offs = np.array([[1], [0], [0], [9990], [2]], dtype="int64")
    lens = np.array([[2], [0], [1], [10], [0]], dtype="int64")
    c, f, s = _run({"a": ta, "b": tb, "offset": offs, "length": lens}, [cat, flat, sliced])
    sa, sb = _seqs(da, la), _seqs(db, lb)
    np.testing.assert_array_equal(np.array(c), np.concatenate([np.concatenate([p, q]) for p, q in zip(sa, sb)]))
    assert c.recursive_sequence_lengths() == [[p + q for p, q in zip(la, lb)]]
    np.testing.assert_array_equal(np.array(f), da.reshape(-1, 1))
    assert f.recursive_sequence_lengths() == [[2 * n for n in la]]
    np.testing.assert_array_equal(np.array(s), np.concatenate([q[o[0]:o[0] + n[0]] for q, o, n in zip(sa, offs, lens)]))
    assert s.recursive_sequence_lengths() == [lens.reshape(-1).tolist()]


def test_sequence_op_on_dense_input_names_the_op(programs):
    x = fluid.data(name="x", shape=[-1, 3], dtype="float32")
    out = fluid.layers.sequence_pool(x, "sum")
    with pytest.raises(errors.InvalidArgumentError, match="sequence_pool.*LoD tensor"):
        _run({"x": np.zeros([2, 3], "float32")}, [out])


def test_bag_of_ids_ctr_model_trains_on_lod_ids(programs):
    """embedding(LoD ids, sparse) + sequence_pool + fc: the label says whether
    a "clicky" id (0..4) occurs among the slot's ids."""
    ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    emb = fluid.layers.embedding(ids, size=[50, 8], is_sparse=True)
    bag = fluid.layers.sequence_pool(emb, pool_type="sum")
    hidden = fluid.layers.fc(bag, size=16, act="relu")
    predict = fluid.layers.fc(hidden, size=2, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(predict, label))
    fluid.optimizer.Adam(learning_rate=0.02).minimize(loss)
    exe = _exe()
    exe.run(fluid.default_startup_program())
    feeder = fluid.DataFeeder(feed_list=[ids, label], place=fluid.CPUPlace())
    rng = np.random.RandomState(1)

    def batch():
        samples = []
        for _ in range(32):
            seq = rng.randint(0, 50, rng.randint(0, 6)).tolist()
            samples.append((seq, [int(any(i < 5 for i in seq))]))
        return samples

    losses = [float(exe.run(feed=feeder.feed(batch()), fetch_list=[loss])[0][0]) for _ in range(150)]
    first, last = np.mean(losses[:15]), np.mean(losses[-15:])
    assert last < 0.5 * first, (first, last)


PADDLE_SCRIPT = """
import numpy as np
import paddle
import paddle.fluid as fluid
from paddle.fluid.lod_tensor import create_lod_tensor
from paddle.static.nn import sequence_lod

paddle.enable_static()
ids = paddle.static.data(name="ids", shape=[None, 1], dtype="int64", lod_level=1)
emb = paddle.static.nn.embedding(ids, size=[10, 2], param_attr=fluid.ParamAttr(
    initializer=fluid.initializer.Constant(1.0)))
pooled = sequence_lod.sequence_pool(emb, pool_type="sum")
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
t = create_lod_tensor(np.array([[1], [2], [3]], dtype="int64"), [[2, 0, 1]], fluid.CPUPlace())
out, = exe.run(feed={"ids": t}, fetch_list=[pooled])
print(out.tolist())
"""


def test_paddle_names_under_the_compat_switch(tmp_path):
    script = tmp_path / "seq.py"
    script.write_text(PADDLE_SCRIPT)
    proc = run_python(["-m", "flotilla.paddle_compat", str(script)])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]]"


def test_dataloader_feeds_variable_length_slots(programs):
    """Paddle's CTR scripts read their slots through DataLoader.from_generator."""
    ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    lengths = fluid.layers.sequence_pool(fluid.layers.cast(ids, "float32"), pool_type="sum")
    loader = fluid.io.DataLoader.from_generator(feed_list=[ids, label], capacity=4, iterable=False)

    def samples():
        for n in [2, 0, 3, 1]:
            yield list(range(1, n + 1)), [n % 2]
    loader.set_sample_generator(samples, batch_size=2)
    exe = _exe()
    loader.start()
    got = []
    try:
        while True:
            got.append(exe.run(fluid.default_main_program(), fetch_list=[lengths])[0].reshape(-1).tolist())
    except fluid.core.EOFException:
        loader.reset()
    assert got == [[3.0, 0.0], [6.0, 1.0]]


@pytest.mark.parametrize("mode", ["sync", "async", "geo"])
def test_parameter_server_sparse_tables_take_lod_ids(tmp_path, mode):
    """1 server + 1 worker: two ragged id slots looked up in the server's
    sparse tables, pooled per sample; the loss falls in every mode."""
    text = run_ps_job(tmp_path, "lod_ps_train.py", mode)[0]
    losses = [float(x) for x in re.findall(r"^STEP \d+ ([-\d.e]+)$", text, re.M)]
    assert len(losses) == 100, text[-2000:]
    assert np.mean(losses[-50:]) < 0.8 * np.mean(losses[:10]), losses


def test_nets_sequence_conv_pool(programs):
    x = fluid.data(name="x", shape=[-1, 2], dtype="float32", lod_level=1)
    out = fluid.nets.sequence_conv_pool(x, num_filters=4, filter_size=3, act="tanh", pool_type="max")
    exe = _exe()
    exe.run(fluid.default_startup_program())
    _, t = _ragged(width=2, lengths=[3, 1, 5])
    got, = _run({"x": t}, [out])
    assert np.array(got).shape == (3, 4) and np.all(np.abs(np.array(got)) < 1)


def test_lod_reset_and_append(programs):
    x = fluid.data(name="x", shape=[-1, 1], dtype="float32", lod_level=1)
    y = fluid.data(name="y", shape=[-1, 1], dtype="float32", lod_level=1)
    by_attr = fluid.layers.lod_reset(x, target_lod=[0, 2, 5])
    by_y = fluid.layers.lod_reset(x, y)
    flat = fluid.data(name="flat", shape=[-1, 1], dtype="float32")
    appended = fluid.layers.lod_append(flat, [0, 3, 5])
    pooled = fluid.layers.sequence_pool(by_attr, "sum")
    data = np.arange(5, dtype="float32").reshape(5, 1)
    xt = fluid.create_lod_tensor(data, [[5]], fluid.CPUPlace())
    yt = fluid.create_lod_tensor(data, [[1, 0, 4]], fluid.CPUPlace())
    a, b, c, p = _run({"x": xt, "y": yt, "flat": data}, [by_attr, by_y, appended, pooled])
    assert a.lod() == [[0, 2, 5]] and b.lod() == [[0, 1, 1, 5]] and c.lod() == [[0, 3, 5]]
    np.testing.assert_array_equal(np.array(a), data)
    np.testing.assert_array_equal(np.array(p).reshape(-1), [1, 9])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_sequence_pool_matches_torch_embedding_bag(programs, mode):
    """embedding → sequence_pool, forward and the table's gradient, against
    PyTorch 1.13's EmbeddingBag on a ragged batch with an empty bag."""
    torch = pytest.importorskip("torch", reason="PyTorch 1.13 (python3-torch, scripts/install-deps.sh --bench)")
    main, startup, scope = programs
    vocab, dim, lengths = 50, 4, [3, 0, 1, 7, 2]
    rng = np.random.RandomState(1)
    ids = rng.randint(0, vocab, sum(lengths)).astype("int64")
    weights = rng.uniform(-1, 1, [len(lengths), dim]).astype("float32")
    x = fluid.data(name="ids", shape=[-1, 1], dtype="int64", lod_level=1)
    r = fluid.data(name="r", shape=[-1, dim], dtype="float32")
    emb = fluid.layers.embedding(x, size=[vocab, dim], param_attr=fluid.ParamAttr(name="table"))
    pooled = fluid.layers.sequence_pool(emb, pool_type={"mean": "average"}.get(mode, mode))
    loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(pooled, r))
    fluid.optimizer.SGD(learning_rate=1.0).minimize(loss)
    exe = _exe()
    exe.run(startup)
    table = np.array(scope.find_var("table").get_tensor()).copy()
    feed = {"ids": fluid.create_lod_tensor(ids.reshape(-1, 1), [lengths], fluid.CPUPlace()), "r": weights}
    got, = exe.run(main, feed=feed, fetch_list=[pooled])
    grad = table - np.array(scope.find_var("table").get_tensor())

    bag = torch.nn.EmbeddingBag(vocab, dim, mode=mode)
    with torch.no_grad():
        bag.weight.copy_(torch.from_numpy(table))
    offsets = torch.tensor(_offsets(lengths)[:-1])
    want = bag(torch.from_numpy(ids), offsets)
    (want * torch.from_numpy(weights)).sum().backward()
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad, bag.weight.grad.numpy(), rtol=1e-5, atol=1e-6)
