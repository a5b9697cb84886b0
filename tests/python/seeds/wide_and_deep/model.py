# The wide&deep network of seed 004's examples/wide_and_deep/model.py, in
# Paddle 2.x static names: 13 dense features, 26 categorical slots (one id
# each), a wide linear part and a deep MLP over the slot embeddings.
import paddle

SPARSE_SLOTS = 26
DENSE_DIM = 13
SPARSE_FEATURE_NUMBER = 1000001
EMBEDDING_SIZE = 9


def net():
    dense_input = paddle.static.data(name="dense_input", shape=[None, DENSE_DIM], dtype="float32")
    sparse_inputs = [paddle.static.data(name="C" + str(i), shape=[None, 1], dtype="int64")
                     for i in range(1, SPARSE_SLOTS + 1)]
    label = paddle.static.data(name="label", shape=[None, 1], dtype="int64")

    # wide: one weight per id, summed with the dense features' linear part
    wide = [paddle.static.nn.sparse_embedding(input=s, size=[SPARSE_FEATURE_NUMBER, 1]) for s in sparse_inputs]
    wide_out = paddle.add(paddle.sum(paddle.concat(wide, axis=1), axis=1, keepdim=True),
                          paddle.static.nn.fc(x=dense_input, size=1))

    # deep: slot embeddings and dense features through an MLP
    embs = [paddle.static.nn.sparse_embedding(input=s, size=[SPARSE_FEATURE_NUMBER, EMBEDDING_SIZE])
            for s in sparse_inputs]
    deep = paddle.concat(embs + [dense_input], axis=1)
    for size in (64, 32):
        deep = paddle.static.nn.fc(x=deep, size=size, activation="relu")
    deep_out = paddle.static.nn.fc(x=deep, size=1)

    logit = paddle.add(wide_out, deep_out)
    predict_1 = paddle.nn.functional.sigmoid(logit)
    predict_0 = 1 - predict_1
    predict = paddle.concat([predict_0, predict_1], axis=1)
    cost = paddle.nn.functional.binary_cross_entropy_with_logits(logit, paddle.cast(label, "float32"),
                                                                 reduction="none")
    avg_cost = paddle.mean(cost)
    auc, batch_auc, _ = paddle.static.auc(input=predict, label=label, num_thresholds=2 ** 12, slide_steps=20)
    feeds = [dense_input] + sparse_inputs + [label]
    return feeds, predict, avg_cost, auc
