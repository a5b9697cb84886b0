"""A PaddleRec-style script, as written for Paddle 2.x static mode: a
wide&deep ``nn.Layer`` trained for 20 steps, saved and reloaded with
``paddle.static.save/load`` and ``save/load_inference_model``, run through
``fluid.compiler.CompiledProgram``. Run it under ``python3 -m
flotilla.paddle_compat``; it prints ``STEP <n> <loss>``, then ``OK <what>``
for each reload that gave back the same numbers."""
import math
import os
import sys

import numpy as np
import paddle
import paddle.fluid as fluid
import paddle.nn as nn
import paddle.nn.functional as F


class WideDeepLayer(nn.Layer):
    def __init__(self, sparse_feature_number, sparse_feature_dim, dense_feature_dim, num_field, layer_sizes):
        super(WideDeepLayer, self).__init__()
        self.sparse_feature_dim = sparse_feature_dim
        self.wide_part = paddle.nn.Linear(
            in_features=dense_feature_dim, out_features=1,
            weight_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Normal(
                mean=0.0, std=1.0 / math.sqrt(dense_feature_dim))))
        self.embedding = paddle.nn.Embedding(
            sparse_feature_number, sparse_feature_dim, sparse=True,
            weight_attr=paddle.ParamAttr(name="SparseFeatFactors", initializer=paddle.nn.initializer.Uniform()))
        sizes = [sparse_feature_dim * num_field + dense_feature_dim] + layer_sizes + [1]
        acts = ["relu" for _ in range(len(layer_sizes))] + [None]
        self._mlp_layers = []
        for i in range(len(layer_sizes) + 1):
            linear = paddle.nn.Linear(
                in_features=sizes[i], out_features=sizes[i + 1],
                weight_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Normal(std=1.0 / math.sqrt(sizes[i]))))
            self.add_sublayer('linear_%d' % i, linear)
            self._mlp_layers.append(linear)
            if acts[i] == 'relu':
                act = paddle.nn.ReLU()
                self.add_sublayer('act_%d' % i, act)
                self._mlp_layers.append(act)

    def forward(self, sparse_inputs, dense_inputs):
        wide_output = self.wide_part(dense_inputs)
        sparse_embs = []
        for s_input in sparse_inputs:
            emb = self.embedding(s_input)
            emb = paddle.reshape(emb, shape=[-1, self.sparse_feature_dim])
            sparse_embs.append(emb)
        deep_output = paddle.concat(x=sparse_embs + [dense_inputs], axis=1)
        for n_layer in self._mlp_layers:
            deep_output = n_layer(deep_output)
        return paddle.add(x=wide_output, y=deep_output)


def main(out_dir):
    paddle.enable_static()
    paddle.seed(2021)
    main_program, startup = paddle.static.default_main_program(), paddle.static.default_startup_program()
    dense = paddle.static.data(name="dense_input", shape=[None, 13], dtype="float32")
    sparse = [paddle.static.data(name="C" + str(i), shape=[None, 1], lod_level=1, dtype="int64") for i in range(26)]
    label = paddle.static.data(name="label", shape=[None, 1], dtype="int64")
    model = WideDeepLayer(1000, 9, 13, 26, [32, 16])
    logit = model(sparse, dense)
    pred = F.sigmoid(logit)
    cost = F.binary_cross_entropy_with_logits(logit, paddle.cast(label, dtype="float32"))
    test_program = main_program.clone(for_test=True)
    paddle.optimizer.Adam(learning_rate=0.01, parameters=model.parameters()).minimize(cost)

    place = paddle.CPUPlace()
    exe = paddle.static.Executor(place)
    exe.run(startup)
    rng = np.random.RandomState(1)
    compiled = fluid.compiler.CompiledProgram(main_program).with_data_parallel(loss_name=cost.name)
    for step in range(20):
        feed = {"dense_input": rng.uniform(-1, 1, (32, 13)).astype("float32")}
        feed["label"] = (feed["dense_input"][:, :1] > 0).astype("int64")
        for i in range(26):
            feed["C" + str(i)] = rng.randint(0, 1000, (32, 1)).astype("int64")
        loss, = exe.run(compiled, feed=feed, fetch_list=[cost])
        print("STEP", step, float(loss), flush=True)

    infer_feed = {k: v for k, v in feed.items() if k != "label"}
    want, = exe.run(test_program, feed=feed, fetch_list=[pred])
    paddle.static.save(main_program, os.path.join(out_dir, "ckpt", "model"))
    state = model.state_dict()
    exe.run(startup)  # forget the training
    paddle.static.load(main_program, os.path.join(out_dir, "ckpt", "model"), exe)
    got, = exe.run(test_program, feed=feed, fetch_list=[pred])
    print("OK static.load" if np.array_equal(got, want) else "DIFFERENT static.load", flush=True)

    paddle.static.save_inference_model(os.path.join(out_dir, "infer", "wide_deep"), [dense] + sparse, [pred], exe)
    program, feed_names, fetch_targets = paddle.static.load_inference_model(
        os.path.join(out_dir, "infer", "wide_deep"), exe)
    got, = exe.run(program, feed=infer_feed, fetch_list=fetch_targets)
    print("OK inference model" if np.array_equal(got, want) and len(feed_names) == 27 else "DIFFERENT inference",
          flush=True)
    print("STATE", ",".join(k for k in state if not k.startswith("linear")), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
